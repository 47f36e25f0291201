// The learning-rate schedule, stepped once per optimizer step: a linear warm-up (Goyal et
// al.'s gradual warm-up for large batches) followed by cosine annealing or step decay
// over the rest of the run; or OneCycle, which has its own warm-up phase.
import type { Optimizer } from '../optim/index.ts';
import { lrScheduler } from '../optim/index.ts';
import type { RunPlan } from './plan.ts';

export function buildScheduler(
  optimizer: Optimizer,
  plan: Pick<RunPlan, 'optim' | 'loop'>,
  stepsPerEpoch: number,
  lr: number,
): lrScheduler.LRScheduler {
  const c = plan.optim.schedule;
  const total = plan.loop.epochs * stepsPerEpoch;
  if (c.kind === 'onecycle') return new lrScheduler.OneCycleLR(optimizer, lr, { totalSteps: total });
  const warm = Math.round(c.warmupEpochs * stepsPerEpoch);
  const main =
    c.kind === 'cosine'
      ? new lrScheduler.CosineAnnealingLR(optimizer, Math.max(1, total - warm))
      : new lrScheduler.StepLR(optimizer, c.stepEpochs * stepsPerEpoch, { gamma: c.gamma });
  if (warm === 0) return main;
  const warmup = new lrScheduler.LinearLR(optimizer, {
    startFactor: c.warmupStartFactor,
    endFactor: 1,
    totalIters: warm,
  });
  return new lrScheduler.SequentialLR(optimizer, [warmup, main], [warm]);
}
