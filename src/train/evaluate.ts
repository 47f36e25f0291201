// Distributed evaluation: each rank evaluates its share of the validation set (a
// DistributedEvalSampler: no padding, so every sample is counted exactly once), then
// the sums — loss, top-1 and top-5 hits, sample count — are all-reduced. The inner
// module is called, not the DDP wrapper: ranks may have different batch counts, and
// DDP's forward would run collectives. A fully sharded model's forward is a collective
// (it gathers the parameters), so there every rank runs the most batches any rank has,
// the extra ones on a placeholder image that counts nothing.
import { autocast } from '../amp/index.ts';
import { noGradAsync } from '../autograd/index.ts';
import * as t from '../core/index.ts';
import type { DataLoader } from '../data/index.ts';
import { allReduce, broadcast, type ProcessGroup } from '../distributed/index.ts';
import type { Module } from '../nn/index.ts';
import { type DataSetup, prepareImages } from './data.ts';
import type { RunPlan } from './plan.ts';
import type { Placement } from './process-group.ts';
import { shardedRoot } from './strategy.ts';

export interface EvalResult {
  /** Mean cross-entropy over all validation samples (no label smoothing). */
  loss: number;
  top1: number;
  top5: number;
  /** Samples evaluated across all ranks. */
  count: number;
  /** Samples this rank evaluated. */
  localCount: number;
}

export interface EvaluateOptions {
  /** uint8 [B, H, W, C] images to the model's input. */
  prepare: (image: t.Tensor) => t.Tensor;
  /** Autocast dtype, or null for full precision. */
  amp: 'bfloat16' | 'float16' | null;
  deviceType?: 'cpu' | 'cuda';
  device?: string;
  /** Sum across this group (null: one process). */
  group: ProcessGroup | null;
  /**
   * The model's forward is a collective (fullyShard): every rank runs as many forwards as
   * the rank with the most batches, the missing ones on this input (counted nowhere).
   */
  lockstep?: () => t.Tensor;
}

export async function evaluate(
  model: Module,
  loader: DataLoader,
  opts: EvaluateOptions,
): Promise<EvalResult> {
  const wasTraining = model.training;
  model.eval();
  // [loss sum, top-1 hits, top-5 hits, count]: float64 sums are exact for counts.
  const sums = [0, 0, 0, 0];
  const group = opts.group !== null && opts.group.size > 1 ? opts.group : null;
  const forwards = opts.lockstep && group ? await mostBatches(loader.length, group) : 0;
  try {
    await noGradAsync(async () => {
      let ran = 0;
      for await (using batch of loader) {
        ran++;
        using _ = t.scope();
        let x = opts.prepare(batch.image);
        let y = batch.label;
        if (opts.device !== undefined && opts.device !== 'cpu') {
          x = x.to(opts.device);
          y = y.to(opts.device);
        }
        const forward = () => model.forward(x) as t.Tensor;
        const logits = (
          opts.amp === null
            ? forward()
            : autocast({ deviceType: opts.deviceType ?? 'cpu', dtype: opts.amp }, forward)
        ).to('float32');
        const k = Math.min(5, logits.shape[1]);
        const [, top] = t.topk(logits, k, 1);
        const hits = top.eq(y.view([-1, 1]));
        sums[0] += t.crossEntropy(logits, y, { reduction: 'sum' }).item();
        sums[1] += hits.narrow(1, 0, 1).sum().item();
        sums[2] += hits.sum().item();
        sums[3] += y.shape[0];
      }
      for (; ran < forwards; ran++) {
        using _ = t.scope();
        model.forward((opts.lockstep as () => t.Tensor)());
      }
    });
  } finally {
    if (wasTraining) model.train();
  }
  const localCount = sums[3];
  let total = sums;
  if (group !== null) {
    total = await t.tidyAsync(async () => {
      const buf = t.tensor(Float64Array.from(sums), { dtype: 'float64' });
      await allReduce(buf, 'sum', { group });
      return Array.from(buf.toTypedArray() as Float64Array);
    });
  }
  const n = total[3];
  return {
    loss: n > 0 ? total[0] / n : Number.NaN,
    top1: n > 0 ? total[1] / n : Number.NaN,
    top5: n > 0 ? total[2] / n : Number.NaN,
    count: n,
    localCount,
  };
}

/** The most batches any rank of `group` has (`own`: this rank's). */
async function mostBatches(own: number, group: ProcessGroup): Promise<number> {
  return t.tidyAsync(async () => {
    const n = t.tensor([own], { dtype: 'int64' });
    await allReduce(n, 'max', { group });
    return Number((n.toTypedArray() as BigInt64Array)[0]);
  });
}

/** What the recipe's evaluation uses of a run's parts (setup.ts RunParts). */
export interface EvalParts {
  model: Module;
  plan: Pick<RunPlan, 'model'>;
  setup: DataSetup;
  on: Placement;
  pg: { group: ProcessGroup | null };
  loaders: { val: DataLoader };
}

/** The recipe's evaluation of rank 0's model on the validation set; every rank takes part. */
export async function evaluateRun(parts: EvalParts): Promise<EvalResult> {
  const { model, setup, on, plan } = parts;
  const { group } = parts.pg;
  // Each rank's BatchNorm running statistics took its own last batch; DDP would
  // broadcast rank 0's before the next forward. Do that now, so every rank evaluates
  // the same model: rank 0's, the one its checkpoints hold.
  if (group !== null && group.size > 1)
    await Promise.all(model.buffers().map((b) => broadcast(b, 0, { group })));
  const channelsLast = plan.model.channelsLast;
  const prepare = (image: t.Tensor) => prepareImages(image, setup, { augment: false, channelsLast });
  const size = setup.imageSize;
  const placeholder = () => {
    const x = prepare(t.zeros([1, size, size, 3], { dtype: 'uint8' }));
    return on.device === 'cpu' ? x : x.to(on.device);
  };
  return evaluate(model, parts.loaders.val, {
    prepare,
    lockstep: shardedRoot(model) === null ? undefined : placeholder,
    amp: on.ampDtype,
    deviceType: on.deviceType,
    device: on.device,
    group,
  });
}
