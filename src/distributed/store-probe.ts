// Whether anything answers at the rendezvous store's address yet: a plain TCP connect
// from Node, before libtorch's TCPStore client blocks the thread (retrying, silently,
// until its timeout). A rank that finds nothing there says so at once instead of
// waiting in silence for minutes.
import { connect } from 'node:net';

/** Resolves true when a TCP connection to host:port opens within `ms`, false otherwise. */
export function storeAnswers(host: string, port: number, ms: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host, port });
    const done = (ok: boolean) => {
      clearTimeout(timer);
      socket.destroy();
      resolve(ok);
    };
    const timer = setTimeout(() => done(false), ms);
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}

/**
 * Waits up to `graceMs` for the store; if it is not there by then, tells stderr which
 * address this rank is waiting for and for how long, and returns (the TCPStore client
 * keeps trying until its own timeout).
 */
export async function announceStoreWait(
  host: string,
  port: number,
  rank: number,
  timeoutS: number,
  graceMs = 3000,
): Promise<void> {
  const deadline = Date.now() + graceMs;
  while (Date.now() < deadline) {
    if (await storeAnswers(host, port, Math.max(1, deadline - Date.now()))) return;
    await new Promise((r) => setTimeout(r, 200));
  }
  process.stderr.write(
    `tsddp: rank ${rank} is waiting for the rendezvous store at ${host}:${port} (MASTER_ADDR:MASTER_PORT): ` +
      `nothing answers there yet; rank 0 or the launcher should be serving it. Giving up after ${timeoutS} s\n`,
  );
}
