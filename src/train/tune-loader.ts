// --tune's DataLoader trial: how long the run's own training loader takes per batch with
// 0, 1, 2, ... worker threads, and the fewest workers that keep ahead of the measured
// training step. Workers change only speed, never what a batch holds (the sampler and the
// seeded augmentation decide that), so every choice trains the same batches.
import { availableParallelism } from 'node:os';
import { buildLoaders, type DataSetup, epochBatches } from './data.ts';
import type { RunPlan } from './plan.ts';

export interface LoaderMeasurement {
  workers: number;
  /** Median wall time per batch after the first (worker start-up excluded), ms. */
  msPerBatch: number;
}

/** Loading in the main thread is free enough below this share of a step: no workers needed. */
const INLINE_SHARE = 0.02;
/** With workers, a batch must be ready in this share of a step, so a slow batch does not stall it. */
const AHEAD_SHARE = 0.5;

/** The worker counts tried: 0, 1, 2, 4, ... up to the cores, at most 8. */
export function workerCandidates(cores = availableParallelism()): number[] {
  const out = [0];
  for (let k = 1; k <= Math.min(8, cores); k *= 2) out.push(k);
  return out;
}

/** Times `batches` batches of rank 0 of `world` with `workers` loader workers. */
export async function timeLoader(
  plan: Pick<RunPlan, 'data' | 'loop'>,
  setup: DataSetup,
  world: number,
  workers: number,
  batches: number,
): Promise<LoaderMeasurement> {
  const loading = { ...plan, data: { ...plan.data, workers, persistentWorkers: false } };
  const loaders = buildLoaders(loading, setup, 0, world);
  const n = Math.min(batches, loaders.batchesPerEpoch - 1);
  const ms: number[] = [];
  try {
    const it = epochBatches(loaders, 0, { batch: 0 });
    let t0 = performance.now();
    for (let b = 0; b <= n; b++) {
      const next = await it.next();
      if (next.done) break;
      next.value[Symbol.dispose]();
      const t1 = performance.now();
      if (b > 0) ms.push(t1 - t0);
      t0 = t1;
    }
    await it.return?.(undefined);
  } finally {
    await loaders.train.close();
    await loaders.val.close();
  }
  const sorted = ms.sort((a, b) => a - b);
  return { workers, msPerBatch: sorted.length === 0 ? Number.NaN : sorted[sorted.length >> 1] };
}

/**
 * The fewest workers for a step of `stepMs`: none when loading in the main thread adds at
 * most 2% to a step; else the fewest whose batches come at least twice as fast as steps;
 * else the fastest measured.
 */
export function chooseWorkers(
  measured: LoaderMeasurement[],
  stepMs: number,
): { workers: number; why: string } {
  const inline = measured.find((m) => m.workers === 0);
  if (inline !== undefined && inline.msPerBatch <= INLINE_SHARE * stepMs)
    return {
      workers: 0,
      why: `loading a batch in the main thread takes ${inline.msPerBatch.toFixed(1)} ms, <= 2% of a ${stepMs.toFixed(0)} ms step`,
    };
  const ahead = measured.filter((m) => m.workers > 0 && m.msPerBatch <= AHEAD_SHARE * stepMs);
  if (ahead.length > 0) {
    const w = ahead.reduce((a, b) => (b.workers < a.workers ? b : a));
    return {
      workers: w.workers,
      why: `the fewest workers that make a batch in half a ${stepMs.toFixed(0)} ms step (${w.msPerBatch.toFixed(1)} ms)`,
    };
  }
  const fastest = measured.reduce((a, b) => (b.msPerBatch < a.msPerBatch ? b : a));
  return {
    workers: fastest.workers,
    why: `no worker count makes a batch in half a ${stepMs.toFixed(0)} ms step: the fastest (${fastest.msPerBatch.toFixed(1)} ms/batch)`,
  };
}
