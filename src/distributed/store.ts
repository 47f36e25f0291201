// Key-value stores for rendezvous: libtorch's TCPStore and FileStore. Like PyTorch's, the
// TCPStore is unauthenticated: bind it to loopback for single-node jobs.
import { native } from '../core/native.ts';

export class Store {
  private closed = false;
  private constructor(
    readonly h: number,
    /** The port a TCPStore listens on / connects to (the bound port when 0 was asked). */
    readonly port: number,
  ) {}

  /** A TCPStore: the server when `isServer`, else a client that retries until `timeoutMs`. */
  static tcp(opts: {
    host: string;
    port: number;
    isServer: boolean;
    worldSize?: number;
    timeoutMs?: number;
    /**
     * Join the store's count of workers ("init/"), as torch.distributed's stores do
     * (wait_for_workers=True); a server then also waits until worldSize have joined.
     */
    waitWorkers?: boolean;
  }): Store {
    const [h, port] = native.tcpStoreNew(
      opts.host,
      opts.port,
      opts.isServer,
      opts.worldSize,
      opts.timeoutMs ?? 300_000,
      opts.waitWorkers ?? false,
    );
    return new Store(h, port);
  }

  static file(path: string, worldSize: number, timeoutMs = 300_000): Store {
    return new Store(native.fileStoreNew(path, worldSize, timeoutMs), 0);
  }

  set(key: string, value: string): void {
    native.storeSet(this.h, key, value);
  }
  /** Waits for the key (up to the store's timeout) and returns its value. */
  get(key: string, timeoutMs?: number): Promise<string> {
    return native.storeGet(this.h, key, timeoutMs);
  }
  add(key: string, delta: number): number {
    return native.storeAdd(this.h, key, delta);
  }
  check(key: string): boolean {
    return native.storeCheck(this.h, key);
  }
  /** Disconnects from the store (a server stops serving). Idempotent. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    native.storeDestroy(this.h);
  }

  [Symbol.dispose](): void {
    this.close();
  }
}
