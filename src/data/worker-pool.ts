// The main thread's side of the data workers: starts worker_threads, hands them batch
// tasks, collects results by task id, and turns a worker's death, an exception or
// silence into an error for whoever waits — never a hang. No tensors here.
import { Worker } from 'node:worker_threads';
import { isCompiled, siblingModule } from '../core/module-url.ts';
import {
  DataLoaderError,
  DataLoaderTimeoutError,
  DataLoaderWorkerError,
  DataLoaderWorkerExitError,
} from './errors.ts';
import type { BatchTask, Loaded, SampleFailure, StreamTask } from './load.ts';
import type { FromWorker, ToWorker, WorkerInit } from './worker.ts';
import { dataWorkerBundle } from './worker-bundle.ts';

const entry = siblingModule('./worker.ts', import.meta.url);
let live = 0;

/** Worker threads of all DataLoaders that have started and not yet exited (for tests and leak checks). */
export function liveWorkers(): number {
  return live;
}

/** tsx's API, for a user's TypeScript dataset module; undefined when tsx is not installed. */
function optionalTsx(): string | null {
  try {
    return import.meta.resolve('tsx/esm/api');
  } catch {
    return null;
  }
}

/**
 * Starts the worker script. The pre-built worker (worker-bundle.ts) starts without a
 * TypeScript loader and registers tsx only if a user's .ts module must be imported. In the
 * compiled package without the bundle, the worker is plain JavaScript; from the sources
 * without the bundle, the worker registers tsx itself — hooks from `--import tsx` do not
 * reach worker threads in Node 20.
 */
function spawn(init: WorkerInit): Worker {
  const bundle = dataWorkerBundle();
  if (bundle !== null) {
    const workerData = { ...init, typescriptLoader: optionalTsx() };
    return new Worker(bundle.url, { workerData, execArgv: withoutTsx(process.execArgv) });
  }
  if (isCompiled(import.meta.url)) {
    const workerData = { ...init, typescriptLoader: optionalTsx() };
    return new Worker(entry, { workerData, execArgv: withoutTsx(process.execArgv) });
  }
  const tsx = import.meta.resolve('tsx/esm/api');
  const code = `import(${JSON.stringify(tsx)}).then((m) => { m.register(); return import(${JSON.stringify(entry.href)}); });`;
  return new Worker(code, { eval: true, workerData: init });
}

/**
 * The parent's Node flags without its `--import tsx`: a worker inherits them, and that
 * preload alone costs ~0.1 s per worker, which the pre-built worker does not need.
 */
export function withoutTsx(execArgv: string[]): string[] {
  const isTsx = (spec: string) => /^(tsx|file:.*\/node_modules\/tsx\/|.*\/node_modules\/tsx\/)/.test(spec);
  const out: string[] = [];
  for (let i = 0; i < execArgv.length; i++) {
    const a = execArgv[i];
    if (
      (a === '--import' || a === '--loader' || a === '--require' || a === '-r') &&
      isTsx(execArgv[i + 1] ?? '')
    )
      i++;
    else if (!/^--(import|loader|require)=/.test(a) || !isTsx(a.slice(a.indexOf('=') + 1))) out.push(a);
  }
  return out;
}

/** A task's outcome; `batch: null` is the end of a worker's iteration of an iterable dataset. */
type Result = { ok: true; batch: Loaded | null; skipped: SampleFailure[] } | { ok: false; error: Error };

/** What the pool remembers of a task a worker holds: the indices, for error messages. */
interface Outstanding {
  indices?: number[];
}

interface Slot {
  worker: Worker;
  id: number;
  alive: boolean;
  /** The worker has built its dataset; timeouts count from then (startup is not a stall). */
  ready: boolean;
  onReady: (() => void)[];
  exitError?: Error;
  lastError?: string;
  outstanding: Map<number, Outstanding>;
}

export interface PoolOptions extends Omit<WorkerInit, 'workerId'> {}

export class WorkerPool {
  private readonly slots: Slot[];
  private readonly results = new Map<number, Result>();
  private readonly taskEpoch = new Map<number, number>();
  private cancelledBelow = -1;
  private waiter: (() => boolean) | null = null;
  private closing = false;
  /** Set when the pool cannot go on (a worker died or stalled); every wait then fails with it. */
  broken: Error | null = null;

  constructor(readonly opts: PoolOptions) {
    this.slots = Array.from({ length: opts.numWorkers }, (_, id) => this.startWorker(id));
  }

  get size(): number {
    return this.slots.length;
  }

  private startWorker(id: number): Slot {
    const worker = spawn({ ...this.opts, workerId: id });
    live++;
    const slot: Slot = { worker, id, alive: true, ready: false, onReady: [], outstanding: new Map() };
    worker.on('message', (m: FromWorker) => this.onMessage(slot, m));
    worker.on('error', (e: Error) => {
      slot.lastError = `${e.name}: ${e.message}`;
    });
    worker.on('exit', (code: number) => {
      live--;
      slot.alive = false;
      if (this.closing) return;
      const err = new DataLoaderWorkerExitError(
        id,
        code,
        slot.outstanding.values().next().value?.indices,
        slot.lastError,
      );
      slot.exitError = err;
      // A dead worker's batches will never come; the epoch cannot finish in order.
      for (const taskId of slot.outstanding.keys()) this.results.set(taskId, { ok: false, error: err });
      slot.outstanding.clear();
      this.broken ??= err;
      this.wake();
    });
    return slot;
  }

  private onMessage(slot: Slot, m: FromWorker): void {
    switch (m.type) {
      case 'ready': {
        slot.ready = true;
        const callbacks = slot.onReady.splice(0);
        for (const f of callbacks) f();
        return;
      }
      case 'init-error': {
        const err = new DataLoaderError(
          `DataLoader worker ${slot.id} could not build the dataset: ${m.message}` +
            (m.stack ? `\n\nOriginal traceback:\n${m.stack}` : ''),
        );
        slot.lastError = m.message;
        for (const taskId of slot.outstanding.keys()) this.results.set(taskId, { ok: false, error: err });
        slot.outstanding.clear();
        this.broken ??= err;
        this.wake();
        return;
      }
      case 'batch':
      case 'end':
      case 'failure':
      case 'skipped': {
        const task = slot.outstanding.get(m.id);
        slot.outstanding.delete(m.id);
        const epoch = this.taskEpoch.get(m.id);
        this.taskEpoch.delete(m.id);
        if (
          task === undefined ||
          epoch === undefined ||
          epoch <= this.cancelledBelow ||
          m.type === 'skipped'
        ) {
          this.wake();
          return;
        }
        if (m.type === 'batch')
          this.results.set(m.id, { ok: true, batch: m.batch as Loaded, skipped: m.skipped });
        else if (m.type === 'end') this.results.set(m.id, { ok: true, batch: null, skipped: [] });
        else {
          const f = m.failure;
          this.results.set(m.id, {
            ok: false,
            error: new DataLoaderWorkerError(slot.id, f.index, f.path, f.name, f.message, f.stack, false),
          });
        }
        this.wake();
        return;
      }
    }
  }

  private wake(): void {
    if (this.waiter?.()) this.waiter = null;
  }

  /** Queues a batch on worker `workerId`; the result is collected with take(task.id). */
  submit(workerId: number, task: BatchTask): void {
    this.post(workerId, task.id, task.epoch, task.indices, { type: 'task', task });
  }

  /**
   * Asks worker `workerId` for the next batch of its iteration of an iterable dataset;
   * take(task.id) gives it, or a null batch when that worker's iteration has ended.
   */
  submitNext(workerId: number, task: StreamTask): void {
    this.post(workerId, task.id, task.epoch, undefined, { type: 'next', task });
  }

  private post(
    workerId: number,
    id: number,
    epoch: number,
    indices: number[] | undefined,
    m: ToWorker,
  ): void {
    const slot = this.slots[workerId];
    this.taskEpoch.set(id, epoch);
    if (this.broken || !slot.alive) {
      const error =
        this.broken ??
        slot.exitError ??
        new DataLoaderWorkerExitError(workerId, -1, indices, 'the worker is no longer running');
      this.results.set(id, { ok: false, error });
      return;
    }
    slot.outstanding.set(id, { indices });
    slot.worker.postMessage(m);
  }

  /**
   * Waits for task `taskId` (queued on worker `workerId`, batch `batchNumber`, loading
   * `indices`, none for an iterable dataset): its batch, or the error that ended it; a DataLoaderTimeoutError after `timeoutMs`
   * counted from when the worker is ready (0 = wait as long as it takes — a dead worker
   * still ends the wait).
   */
  take(
    taskId: number,
    indices: number[],
    workerId: number,
    batchNumber: number,
    timeoutMs: number,
  ): Promise<{ batch: Loaded | null; skipped: SampleFailure[] }> {
    return new Promise((resolve, reject) => {
      let timer: NodeJS.Timeout | undefined;
      let settled = false;
      const check = (): boolean => {
        const r = this.results.get(taskId);
        if (r === undefined && this.broken === null) return false;
        settled = true;
        if (timer) clearTimeout(timer);
        this.results.delete(taskId);
        if (r === undefined) reject(this.broken);
        else if (r.ok) resolve({ batch: r.batch, skipped: r.skipped });
        else reject(r.error);
        return true;
      };
      if (check()) return;
      this.waiter = check;
      const startTimer = (): void => {
        if (settled) return;
        timer = setTimeout(() => {
          settled = true;
          this.waiter = null;
          const err = new DataLoaderTimeoutError(timeoutMs, workerId, batchNumber, indices);
          // A stalled worker may hold anything; the pool is not reused after this.
          this.broken ??= err;
          reject(err);
        }, timeoutMs);
      };
      if (timeoutMs > 0) {
        const slot = this.slots[workerId];
        if (slot.ready) startTimer();
        else slot.onReady.push(startTimer);
      }
    });
  }

  /** Abandons an epoch's remaining tasks (after `break`): queued ones are skipped, results dropped. */
  cancelEpoch(epoch: number): void {
    this.cancelledBelow = Math.max(this.cancelledBelow, epoch);
    for (const [id, e] of this.taskEpoch) if (e <= epoch) this.results.delete(id);
    for (const s of this.slots)
      if (s.alive) s.worker.postMessage({ type: 'cancel', epoch } satisfies ToWorker);
  }

  /** While an epoch runs the workers keep the process alive; idle persistent ones must not. */
  ref(): void {
    for (const s of this.slots) s.worker.ref();
  }
  unref(): void {
    for (const s of this.slots) s.worker.unref();
  }

  /** Stops every worker and waits until their threads are gone. */
  async close(): Promise<void> {
    this.closing = true;
    this.broken ??= new DataLoaderError('DataLoader: the worker pool was closed');
    this.wake();
    await Promise.all(this.slots.map((s) => (s.alive ? s.worker.terminate() : undefined)));
  }
}
