// The learning-rate schedule, stepped once per optimizer step: a linear warm-up (Goyal et
// al.'s gradual warm-up for large batches) followed by cosine annealing or step decay
// over the rest of the run; or OneCycle, which has its own warm-up phase.
import type { Optimizer } from '../optim/index.ts';
import { lrScheduler } from '../optim/index.ts';
import { resolveWarmupEpochs, type TrainConfig } from './config.ts';

export function buildScheduler(
  optimizer: Optimizer,
  c: TrainConfig,
  stepsPerEpoch: number,
  lr: number,
): lrScheduler.LRScheduler {
  const total = c.epochs * stepsPerEpoch;
  if (c.schedule === 'onecycle') return new lrScheduler.OneCycleLR(optimizer, lr, { totalSteps: total });
  const warm = Math.round(resolveWarmupEpochs(c) * stepsPerEpoch);
  const main =
    c.schedule === 'cosine'
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
