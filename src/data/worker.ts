// A data worker thread: builds the dataset from its spec, then loads batches in the order
// tasks arrive and transfers each collated batch's buffers to the main thread (no copy).
// Plain JS only — the native addon is never loaded here.
import { parentPort, workerData } from 'node:worker_threads';
import { transferables } from './collate.ts';
import { type BatchTask, importRef, loadBatch, loadDataset, setTypeScriptLoader } from './load.ts';
import type { CollateFn, Dataset, DatasetSpec, ModuleRef } from './types.ts';

export interface WorkerInit {
  workerId: number;
  numWorkers: number;
  dataset: DatasetSpec;
  collate?: ModuleRef;
  workerInit?: ModuleRef;
  /** The base seed of the epoch that started the pool; workerInit gets it + workerId, like PyTorch's worker seed. */
  seed: bigint;
  /** tsx's API URL, registered only if a .ts module must be imported; null when tsx is not installed. */
  typescriptLoader?: string | null;
}

/** Messages from the main thread. */
export type ToWorker = { type: 'task'; task: BatchTask } | { type: 'cancel'; epoch: number };

/** Messages to the main thread. */
export type FromWorker =
  | { type: 'ready' }
  | { type: 'init-error'; message: string; stack?: string }
  | { type: 'batch'; id: number; batch: unknown; skipped: import('./load.ts').SampleFailure[] }
  | { type: 'failure'; id: number; failure: import('./load.ts').SampleFailure }
  | { type: 'skipped'; id: number };

const init = workerData as WorkerInit;
const port = parentPort!;
const queue: BatchTask[] = [];
let cancelledBelow = -1; // tasks of epochs <= this were abandoned by the main thread
let dataset: Dataset | undefined;
let collate: CollateFn | undefined;
let busy = false;

async function drain(): Promise<void> {
  if (busy || dataset === undefined) return;
  busy = true;
  try {
    for (let task = queue.shift(); task !== undefined; task = queue.shift()) {
      if (task.epoch <= cancelledBelow) {
        port.postMessage({ type: 'skipped', id: task.id } satisfies FromWorker);
        continue;
      }
      const r = await loadBatch(dataset, task, init.workerId, init.numWorkers, collate);
      if (r.ok) {
        try {
          port.postMessage(
            { type: 'batch', id: task.id, batch: r.batch, skipped: r.skipped } satisfies FromWorker,
            transferables(r.batch),
          );
        } catch (e) {
          // e.g. a custom collate returned something structuredClone cannot copy.
          const failure = { index: task.indices[0], name: 'CollateError', message: (e as Error).message };
          port.postMessage({ type: 'failure', id: task.id, failure } satisfies FromWorker);
        }
      } else {
        port.postMessage({ type: 'failure', id: task.id, failure: r.failure } satisfies FromWorker);
      }
    }
  } finally {
    busy = false;
  }
}

port.on('message', (m: ToWorker) => {
  if (m.type === 'task') {
    queue.push(m.task);
    void drain();
  } else if (m.type === 'cancel') {
    cancelledBelow = Math.max(cancelledBelow, m.epoch);
  }
});

try {
  setTypeScriptLoader(init.typescriptLoader);
  // drain() starts on `dataset`: set it last, so no task is loaded before the collate is
  // imported and workerInit has run (tasks may arrive during those awaits).
  const ds = await loadDataset(init.dataset);
  if (init.collate) collate = (await importRef(init.collate, 'collate')) as CollateFn;
  if (init.workerInit) {
    const fn = (await importRef(init.workerInit, 'workerInit')) as (info: unknown) => unknown;
    await fn({
      workerId: init.workerId,
      numWorkers: init.numWorkers,
      seed: init.seed + BigInt(init.workerId),
      dataset: ds,
    });
  }
  dataset = ds;
  port.postMessage({ type: 'ready' } satisfies FromWorker);
  void drain();
} catch (e) {
  const err = e instanceof Error ? e : new Error(String(e));
  port.postMessage({ type: 'init-error', message: err.message, stack: err.stack } satisfies FromWorker);
}
