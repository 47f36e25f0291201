// Process groups and collectives, like torch.distributed: initProcessGroup builds a
// TCPStore or FileStore, the backend and a c10d::ProcessGroup in libtorch.
import { native } from '../core/native.ts';
import { checkOptions, optionNames } from '../core/options.ts';
import { cuda } from '../core/runtime.ts';
import { type DistEnv, isLoopback, readDistEnv } from './env.ts';
import { DistributedError } from './errors.ts';
import { Store } from './store.ts';

export type Backend = 'gloo' | 'nccl' | 'auto';

/**
 * torch.distributed.ReduceOp: how a reduction combines the ranks' tensors. Each value is
 * also accepted as its lowercase string (`'sum'`). BAND, BOR and BXOR take integer or
 * bool tensors; on Gloo, AVG takes floating tensors (it sums, then divides by the world
 * size: an integer tensor cannot hold the quotient), as PyTorch's Gloo does. PREMUL_SUM
 * (NCCL's, with a factor) is not offered.
 */
export const ReduceOp = Object.freeze({
  SUM: 'sum',
  AVG: 'avg',
  PRODUCT: 'product',
  MIN: 'min',
  MAX: 'max',
  BAND: 'band',
  BOR: 'bor',
  BXOR: 'bxor',
} as const);
export type ReduceOp = (typeof ReduceOp)[keyof typeof ReduceOp];

export interface InitOptions {
  backend?: Backend;
  /** 'env://' (default), 'tcp://host:port' or 'file:///path'. */
  initMethod?: string;
  rank?: number;
  worldSize?: number;
  /** Collective and rendezvous timeout; PyTorch's default is 30 minutes. */
  timeoutMs?: number;
  /** An existing store (then initMethod is ignored). */
  store?: Store;
  /** The CUDA device NCCL connects on at init (PyTorch's device_id); default: the current one. */
  deviceId?: number;
}

const INIT_OPTIONS = optionNames<InitOptions>({
  backend: true,
  initMethod: true,
  rank: true,
  worldSize: true,
  timeoutMs: true,
  store: true,
  deviceId: true,
});

/** A group of processes that run collectives together. */
export class ProcessGroup {
  constructor(
    readonly h: number,
    readonly rank: number,
    readonly size: number,
    readonly backend: 'gloo' | 'nccl',
    readonly store: Store,
    readonly timeoutMs: number,
    /**
     * Every rank of the group is tsddp (none is a PyTorch process): tsddp may then add
     * its own collectives (DDP's shared verdicts); in a mixed world it issues exactly
     * PyTorch's, or the PyTorch ranks would wait for ones they never join.
     */
    readonly allTsddp = true,
    /** The members' global ranks, in group-rank order (torch's get_process_group_ranks). */
    readonly ranks: readonly number[] = Array.from({ length: size }, (_, r) => r),
    /** torch.distributed's name of the group: '0' for the default group, then '1', '2', ... */
    readonly name = '0',
  ) {}

  /** Whether this process is in the group (newGroup gives non-members a group with rank -1). */
  get isMember(): boolean {
    return this.rank >= 0;
  }

  /**
   * Shuts this group down, as destroyProcessGroup(group): the default group closes its
   * store and every group made from it. Idempotent.
   */
  close(): void {
    destroyProcessGroup(this);
  }

  [Symbol.dispose](): void {
    this.close();
  }
}

/** A collective's failure on `rank`, as thrown (blocking) or rejected (asynchronous). */
export function collectiveFailed(op: string, rank: number, e: unknown): DistributedError {
  const msg = e instanceof Error ? e.message : String(e);
  return new DistributedError(`${op} failed on rank ${rank}: ${msg}`, op, rank);
}

/**
 * The handle of a collective, as PyTorch's: `await` it (or its wait()) for completion. A
 * call with `asyncOp: true` returns one still running; a blocking call (PyTorch's default
 * async_op=False) has waited already and returns one completed, so awaiting either works.
 */
export class Work implements PromiseLike<void> {
  private done = false;
  private readonly promise: Promise<void>;

  /** `promise`'s value, if any, is dropped: a Work resolves to nothing, as PyTorch's wait(). */
  constructor(promise: Promise<unknown>, op: string, rank: number) {
    this.promise = promise.then(
      () => {
        this.done = true;
      },
      (e: unknown) => {
        this.done = true;
        throw collectiveFailed(op, rank, e);
      },
    );
  }

  /** The Work of a call that has already completed (a blocking one). */
  static completed(): Work {
    if (completedWork === null) {
      completedWork = new Work(Promise.resolve(), '', -1);
      completedWork.done = true;
    }
    return completedWork; // one for every blocking call: a completed Work has no state left
  }

  wait(): Promise<void> {
    return this.promise;
  }
  isCompleted(): boolean {
    return this.done;
  }
  // biome-ignore lint/suspicious/noThenProperty: a Work is awaitable, like a promise
  then<A = void, B = never>(
    // biome-ignore lint/suspicious/noConfusingVoidType: the value of the Promise<void> it wraps
    onFulfilled?: ((value: void) => A | PromiseLike<A>) | null,
    onRejected?: ((reason: unknown) => B | PromiseLike<B>) | null,
  ): Promise<A | B> {
    return this.promise.then(onFulfilled, onRejected);
  }
}

let completedWork: Work | null = null;
let defaultGroup: ProcessGroup | null = null;

/** How the default group was made, which newGroup repeats for each new group. */
export interface WorldInit {
  backends: string;
  hostname: string;
  interfaces: string;
  cudaDevice: number;
  /**
   * The default group's store prefix, under which each new group's name goes (PyTorch's
   * new_group uses the default group's prefixed store: 'default_pg/0/' + '/1/').
   */
  storeBase: string;
  /** Groups made so far, the default group included: the next group's name. */
  groupCount: number;
  /** Groups made by newGroup, destroyed with the default group. */
  subgroups: ProcessGroup[];
}

let world: WorldInit | null = null;

/** The default group's construction, for newGroup. */
export function worldInit(): WorldInit {
  if (!world || !defaultGroup)
    throw new DistributedError('no process group: call initProcessGroup() first', 'collective', -1);
  return world;
}

/** torch.distributed's store prefix of the default group: PrefixStore("default_pg") over PrefixStore("0/"). */
const PYTORCH_DEFAULT_PREFIX = 'default_pg/0/';

/**
 * The default group's store prefix under env://: torch.distributed's (PrefixStore
 * "default_pg", then the group name "0/"), so PyTorch and tsddp ranks can share a world.
 * A launcher's store outlives a gang restart, and a restarted gang would read the dead
 * gang's Gloo addresses under the same keys: tsrun's workers, and torchrun's from their
 * first restart on, keep the attempt in the prefix. (PyTorch's workers do not; a restart
 * of a mixed world under torchrun does not rejoin.)
 */
function storePrefix(env: DistEnv): string {
  if (env.tsrunStore) return `default_pg/attempt${env.restartCount}`;
  if (env.agentStore && env.restartCount > 0) return `default_pg/attempt${env.restartCount}/0/`;
  return PYTORCH_DEFAULT_PREFIX;
}

function parseInit(opts: InitOptions): {
  store: Store;
  rank: number;
  worldSize: number;
  hostname: string;
  prefix: string;
} {
  const timeoutMs = opts.timeoutMs ?? 30 * 60_000;
  const method = opts.initMethod ?? 'env://';
  if (opts.store) {
    if (opts.rank === undefined || opts.worldSize === undefined) {
      throw new TypeError('initProcessGroup(): with a store, pass rank and worldSize');
    }
    return {
      store: opts.store,
      rank: opts.rank,
      worldSize: opts.worldSize,
      hostname: '',
      // init_process_group(store=...) uses the store as given, under the group name.
      prefix: '0/',
    };
  }
  if (method === 'env://') {
    const env = readDistEnv();
    const rank = opts.rank ?? env.rank;
    const worldSize = opts.worldSize ?? env.worldSize;
    // Under tsrun the launcher serves the store, so that a restarted gang reconnects to
    // the same one; otherwise rank 0 serves it, as with torchrun's static rendezvous.
    const isServer = rank === 0 && !env.agentStore;
    let store: Store;
    try {
      // Every rank joins the store's worker count, as PyTorch's do: a PyTorch rank 0
      // serving the store waits for all of them.
      store = Store.tcp({
        host: env.masterAddr,
        port: env.masterPort,
        isServer,
        worldSize,
        timeoutMs,
        waitWorkers: true,
      });
    } catch (e) {
      if (isServer) throw e;
      throw storeUnreachable(rank, env.masterAddr, env.masterPort, timeoutMs, (e as Error).message);
    }
    return {
      store,
      rank,
      worldSize,
      hostname: glooHostname(env.masterAddr),
      prefix: storePrefix(env),
    };
  }
  const tcp = /^tcp:\/\/([^:/]+|\[[^\]]+\]):(\d+)\/?$/.exec(method);
  if (tcp) {
    if (opts.rank === undefined || opts.worldSize === undefined) {
      throw new TypeError(`initProcessGroup(): initMethod '${method}' needs rank and worldSize`);
    }
    const host = tcp[1].replace(/^\[|\]$/g, '');
    const store = Store.tcp({
      host,
      port: Number(tcp[2]),
      isServer: opts.rank === 0,
      worldSize: opts.worldSize,
      timeoutMs,
      waitWorkers: true,
    });
    return {
      store,
      rank: opts.rank,
      worldSize: opts.worldSize,
      hostname: glooHostname(host),
      prefix: PYTORCH_DEFAULT_PREFIX,
    };
  }
  if (method.startsWith('file://')) {
    if (opts.rank === undefined || opts.worldSize === undefined) {
      throw new TypeError(`initProcessGroup(): initMethod '${method}' needs rank and worldSize`);
    }
    const store = Store.file(method.slice('file://'.length), opts.worldSize, timeoutMs);
    return {
      store,
      rank: opts.rank,
      worldSize: opts.worldSize,
      hostname: '127.0.0.1',
      prefix: PYTORCH_DEFAULT_PREFIX,
    };
  }
  throw new TypeError(
    `initProcessGroup(): unknown initMethod '${method}'; use env://, tcp://host:port or file:///path`,
  );
}

/** A client rank found nothing at MASTER_ADDR:MASTER_PORT within the timeout; `why` is the last try's reason. */
export function storeUnreachable(
  rank: number,
  addr: string,
  port: number,
  timeoutMs: number,
  why: string,
): DistributedError {
  return new DistributedError(
    `rank ${rank}: nothing answered at the rendezvous store ${addr}:${port} ` +
      `(MASTER_ADDR:MASTER_PORT) within ${timeoutMs / 1000} s: check the address and port, and that ` +
      `rank 0 (or the launcher) is running (${why})`,
    'rendezvous',
    rank,
  );
}

// Gloo binds to the address its device resolves. For single-node jobs that is loopback;
// TSDDP_GLOO_HOSTNAME overrides it (e.g. a multi-homed host).
function glooHostname(masterAddr: string): string {
  if (process.env.TSDDP_GLOO_HOSTNAME) return process.env.TSDDP_GLOO_HOSTNAME;
  return isLoopback(masterAddr) ? '127.0.0.1' : '';
}

/**
 * The backends of the default group, as torch.distributed's: 'auto' is Gloo for CPU
 * tensors plus NCCL for CUDA tensors where CUDA is available (and built into the addon);
 * 'gloo' alone serves both devices; 'nccl' serves CUDA tensors only.
 */
function resolveBackends(requested: Backend, rank: number): string {
  const nccl = cuda.isAvailable() && cuda.isBuilt();
  if (requested === 'auto') return nccl ? 'gloo,nccl' : 'gloo';
  if (requested === 'nccl' && !nccl) {
    const why = !cuda.isAvailable()
      ? 'no CUDA device is available'
      : 'this tsddp addon was built without its CUDA part (no CUDA/NCCL headers at build time)';
    throw new DistributedError(
      `initProcessGroup(): backend 'nccl' needs CUDA: ${why}; use 'gloo'`,
      'init',
      rank,
    );
  }
  return requested;
}

/**
 * Joins the default process group, like torch.distributed.init_process_group. Blocks
 * until every rank has joined (or the timeout passes).
 */
export function initProcessGroup(options?: InitOptions): ProcessGroup {
  const opts = checkOptions('initProcessGroup', options, INIT_OPTIONS, {
    hints: { timeout: "tsddp's is timeoutMs, in milliseconds; PyTorch's timeout is a timedelta" },
  });
  if (defaultGroup)
    throw new DistributedError(
      'initProcessGroup(): the default group is already initialized',
      'init',
      defaultGroup.rank,
    );
  const requested = opts.backend ?? 'auto';
  if (!['gloo', 'nccl', 'auto'].includes(requested)) {
    throw new TypeError(`initProcessGroup(): backend must be 'gloo', 'nccl' or 'auto', got '${requested}'`);
  }
  const backends = resolveBackends(requested, opts.rank ?? -1);
  const backend = backends.includes('nccl') ? 'nccl' : 'gloo';
  // NCCL connects on one device: deviceId (init_process_group's device_id), else the
  // current one (cuda.setDevice). Connecting at init makes every rank meet here.
  const cudaDevice = backend === 'nccl' ? (opts.deviceId ?? cuda.currentDevice()) : -1;
  const timeoutMs = opts.timeoutMs ?? 30 * 60_000;
  const { store, rank, worldSize, hostname, prefix } = parseInit(opts);
  if (!Number.isInteger(rank) || !Number.isInteger(worldSize) || rank < 0 || rank >= worldSize) {
    throw new TypeError(`initProcessGroup(): rank ${rank} is out of range for worldSize ${worldSize}`);
  }
  // GLOO_SOCKET_IFNAME (comma-separated interfaces) wins over the hostname, as in torch.distributed.
  const interfaces = process.env.GLOO_SOCKET_IFNAME ?? '';
  // Count the tsddp ranks: each adds itself before Gloo's full-mesh connect, which no rank
  // finishes before every rank has started it, so afterwards the count is complete.
  const membersKey = `${prefix}tsddp_ranks`;
  store.add(membersKey, 1);
  const h = native.processGroupNew(
    store.h,
    rank,
    worldSize,
    backends,
    timeoutMs,
    hostname,
    prefix,
    interfaces,
    cudaDevice,
    '0',
  );
  const allTsddp = store.add(membersKey, 0) >= worldSize;
  defaultGroup = new ProcessGroup(h, rank, worldSize, backend, store, timeoutMs, allTsddp);
  world = { backends, hostname, interfaces, cudaDevice, storeBase: prefix, groupCount: 1, subgroups: [] };
  return defaultGroup;
}

export function isInitialized(): boolean {
  return defaultGroup !== null;
}

/** `g`, or the default group; throws when there is none. */
export function resolveGroup(g?: ProcessGroup | null): ProcessGroup {
  const pg = g ?? defaultGroup;
  if (!pg) throw new DistributedError('no process group: call initProcessGroup() first', 'collective', -1);
  return pg;
}

export function getDefaultGroup(): ProcessGroup {
  return resolveGroup();
}

/** This process's rank in `group` (default: the world); -1 when it is not a member, as PyTorch's. */
export function getRank(g?: ProcessGroup): number {
  return resolveGroup(g).rank;
}

/** The number of ranks in `group` (default: the world); -1 when this process is not a member. */
export function getWorldSize(g?: ProcessGroup): number {
  const pg = resolveGroup(g);
  return pg.isMember ? pg.size : -1;
}

/** Groups already shut down: destroying one twice does nothing. */
const destroyed = new WeakSet<ProcessGroup>();

/**
 * Shuts `group` down, as torch.distributed.destroy_process_group: without one (or with the
 * default group) every group, the default group last, and its store.
 */
export function destroyProcessGroup(g?: ProcessGroup): void {
  const pg = resolveGroup(g);
  if (pg === defaultGroup) {
    for (const sub of world?.subgroups ?? []) destroyProcessGroup(sub);
    defaultGroup = null;
    world = null;
  }
  if (destroyed.has(pg)) return;
  destroyed.add(pg);
  if (pg.h >= 0) native.processGroupDestroy(pg.h);
  if (pg.name === '0') pg.store.close();
}
