// torch.utils.data.get_worker_info(): which data worker the calling code runs in. Kept on
// the thread's global object under a registry symbol, not in a module variable: a user's
// dataset module in a worker imports its own copy of tsddp (the sources through tsx, or
// dist/), not the pre-built worker bundle that sets it (worker-bundle.ts), and both must
// see one value. Plain JS: workers load this.
import type { Dataset, IterableDataset } from './types.ts';

/** What `getWorkerInfo()` returns inside a DataLoader worker (PyTorch's WorkerInfo). */
export interface WorkerInfo {
  /** This worker's id, 0 .. numWorkers - 1. */
  readonly id: number;
  readonly numWorkers: number;
  /**
   * This worker's seed: the loader's base seed (drawn from its generator when the workers
   * start) plus `id`, as PyTorch's `base_seed + worker_id`.
   */
  readonly seed: bigint;
  /** This worker's copy of the dataset. */
  readonly dataset: Dataset | IterableDataset;
}

const KEY = Symbol.for('tsddp.data.workerInfo');

/**
 * In a DataLoader worker thread, which worker this is (id, numWorkers, seed, dataset);
 * null in the main thread, as PyTorch's `get_worker_info()` returns None there. An
 * IterableDataset calls it in its iterator to yield only its worker's share. It is set
 * once the worker has built its dataset, so a dataset's constructor sees null, as in
 * PyTorch, where the dataset is constructed in the main process.
 */
export function getWorkerInfo(): WorkerInfo | null {
  return ((globalThis as Record<symbol, unknown>)[KEY] as WorkerInfo | undefined) ?? null;
}

/** Set by the worker thread (worker.ts) before it runs workerInit and loads anything. */
export function setWorkerInfo(info: WorkerInfo): void {
  Object.defineProperty(globalThis, KEY, { value: Object.freeze({ ...info }), configurable: true });
}
