// A data worker thread: builds the dataset from its spec, then loads batches in the order
// tasks arrive and transfers each collated batch's buffers to the main thread (no copy).
// Plain JS only — the native addon is never loaded here.
import { parentPort, workerData } from 'node:worker_threads';
import { findTensor, tensorInWorkerMessage, transferables } from './collate.ts';
import {
  type BatchTask,
  buildDataset,
  importRef,
  loadBatch,
  loadStreamBatch,
  type SampleFailure,
  SampleStream,
  type StreamTask,
  setTypeScriptLoader,
} from './load.ts';
import type { CollateFn, Dataset, DatasetSpec, IterableDataset, ModuleRef } from './types.ts';
import { setWorkerInfo } from './worker-info.ts';

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

/** Messages from the main thread: a batch of indices, the next batch of an iterable dataset, or a cancel. */
export type ToWorker =
  | { type: 'task'; task: BatchTask }
  | { type: 'next'; task: StreamTask }
  | { type: 'cancel'; epoch: number };

/** Messages to the main thread. */
export type FromWorker =
  | { type: 'ready' }
  | { type: 'init-error'; message: string; stack?: string }
  | { type: 'batch'; id: number; batch: unknown; skipped: SampleFailure[] }
  /** This worker's copy of the iterable dataset has no more batches this epoch. */
  | { type: 'end'; id: number }
  | { type: 'failure'; id: number; failure: SampleFailure }
  | { type: 'skipped'; id: number };

const init = workerData as WorkerInit;
const port = parentPort!;
type Queued = Extract<ToWorker, { type: 'task' | 'next' }>;
const queue: Queued[] = [];
let cancelledBelow = -1; // tasks of epochs <= this were abandoned by the main thread
let dataset: Dataset | IterableDataset | undefined;
let collate: CollateFn | undefined;
let busy = false;
/** An iterable dataset's iteration: one per epoch, over this worker's copy. */
let stream: { epoch: number; samples: SampleStream } | undefined;

async function drain(): Promise<void> {
  if (busy || dataset === undefined) return;
  busy = true;
  try {
    for (let m = queue.shift(); m !== undefined; m = queue.shift()) {
      const task = m.task;
      if (task.epoch <= cancelledBelow) {
        port.postMessage({ type: 'skipped', id: task.id } satisfies FromWorker);
        continue;
      }
      if (m.type === 'next') {
        await loadFromStream(m.task);
        continue;
      }
      const r = await loadBatch(dataset as Dataset, m.task, init.workerId, init.numWorkers, collate);
      if (r.ok) post(m.task.id, r.batch, r.skipped, m.task.unbatched === true, m.task.indices[0]);
      else port.postMessage({ type: 'failure', id: task.id, failure: r.failure } satisfies FromWorker);
    }
  } finally {
    busy = false;
  }
}

/** The next batch of this worker's iteration of an iterable dataset (a new one for a new epoch). */
async function loadFromStream(task: StreamTask): Promise<void> {
  if (stream?.epoch !== task.epoch) {
    await stream?.samples.close();
    stream = undefined;
    try {
      stream = { epoch: task.epoch, samples: new SampleStream(dataset as IterableDataset) };
    } catch (e) {
      const failure = { index: -1, name: (e as Error).name, message: (e as Error).message };
      port.postMessage({ type: 'failure', id: task.id, failure } satisfies FromWorker);
      return;
    }
  }
  const r = await loadStreamBatch(stream.samples, task, collate, true);
  if (!r.ok) port.postMessage({ type: 'failure', id: task.id, failure: r.failure } satisfies FromWorker);
  else if (r.end) port.postMessage({ type: 'end', id: task.id } satisfies FromWorker);
  else post(task.id, r.batch, [], task.batchSize === null, -1);
}

/**
 * Sends a batch, transferring its buffers. A converted sample (no automatic batching) may
 * hold the dataset's own arrays, which a transfer would detach here: those are copied.
 * A Tensor (from a collate function that makes them: samples are checked before) fails
 * the batch: structuredClone would send its handle number as if it were the data.
 */
function post(id: number, batch: unknown, skipped: SampleFailure[], copy: boolean, index: number): void {
  const tensor = findTensor(batch);
  if (tensor !== undefined) {
    const where = tensor === '' ? 'the collated batch' : `field '${tensor}' of the collated batch`;
    const failure = { index, name: 'DataError', message: tensorInWorkerMessage(where) };
    port.postMessage({ type: 'failure', id, failure } satisfies FromWorker);
    return;
  }
  try {
    port.postMessage(
      { type: 'batch', id, batch, skipped } satisfies FromWorker,
      transferables(batch, { copy }),
    );
  } catch (e) {
    // e.g. a custom collate returned something structuredClone cannot copy.
    const failure = { index, name: 'CollateError', message: (e as Error).message };
    port.postMessage({ type: 'failure', id, failure } satisfies FromWorker);
  }
}

port.on('message', (m: ToWorker) => {
  if (m.type === 'task' || m.type === 'next') {
    queue.push(m);
    void drain();
  } else if (m.type === 'cancel') {
    cancelledBelow = Math.max(cancelledBelow, m.epoch);
  }
});

try {
  setTypeScriptLoader(init.typescriptLoader);
  // drain() starts on `dataset`: set it last, so no task is loaded before the collate is
  // imported and workerInit has run (tasks may arrive during those awaits).
  const ds = await buildDataset(init.dataset);
  if (init.collate) collate = (await importRef(init.collate, 'collate')) as CollateFn;
  const seed = init.seed + BigInt(init.workerId);
  setWorkerInfo({ id: init.workerId, numWorkers: init.numWorkers, seed, dataset: ds });
  if (init.workerInit) {
    const fn = (await importRef(init.workerInit, 'workerInit')) as (info: unknown) => unknown;
    await fn({
      workerId: init.workerId,
      numWorkers: init.numWorkers,
      seed,
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
