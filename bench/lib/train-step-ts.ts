// The tsddp side of bench/train_step.ts: one measurement of a configuration, the same
// training step bench/reference/train_step.py runs in PyTorch.
//
// `t` is passed in rather than imported: the benchmark sets OMP_NUM_THREADS before
// libtorch (and its OpenMP runtime) loads, which a static import here would precede.
import type * as Tsddp from '../../src/index.ts';
import { median } from './stats.ts';
import { NUM_CLASSES, type TrainConfig } from './train-configs.ts';

type T = typeof Tsddp;

export interface StepMeasurement {
  config: string;
  warmup: number;
  steps: number;
  /** Seconds per measured step, and its phases: fwd = zeroGrad + forward + loss, bwd, opt. */
  stepS: number[];
  fwdS: number[];
  bwdS: number[];
  optS: number[];
  /** batch / median step time. */
  imgPerS: number;
  loss: number;
  /** Live tensors (t.memory().tensors) after each measured step: flat when nothing leaks. */
  liveTensors: number[];
}

function buildModel(t: T, c: TrainConfig): Tsddp.models.ResNet {
  const numClasses = NUM_CLASSES[c.model];
  return c.model === 'resnet18-cifar'
    ? t.models.resnet18({ numClasses, stem: 'cifar' })
    : t.models.resnet50({ numClasses });
}

/**
 * Builds a fresh model (seed 0), SGD and a synthetic batch, runs `warmup` steps, then
 * times `steps` steps phase by phase, and frees everything it made.
 */
export function measureTs(t: T, c: TrainConfig, warmup: number, steps: number): StepMeasurement {
  const before = t.memory().tensors;
  t.manualSeed(0);
  const model = buildModel(t, c);
  model.train();
  const cl = c.format === 'cl';
  if (cl) model.to({ memoryFormat: 'channelsLast' });
  const params = model.parameters();
  const opt = new t.optim.SGD(params, { lr: 0.01, momentum: 0.9, weightDecay: 5e-4 });
  const x0 = t.randn([c.batch, 3, c.size, c.size]);
  const x = cl ? x0.to({ memoryFormat: 'channelsLast' }).keep() : x0.keep();
  if (x !== x0) x0.dispose();
  const y = t.randint(NUM_CLASSES[c.model], [c.batch]).keep();
  const forward = (): Tsddp.Tensor => t.crossEntropy(model.call(x), y);
  const region = { deviceType: 'cpu', dtype: 'bfloat16' } as const;

  const m: StepMeasurement = {
    config: c.name,
    warmup,
    steps,
    stepS: [],
    fwdS: [],
    bwdS: [],
    optS: [],
    imgPerS: Number.NaN,
    loss: Number.NaN,
    liveTensors: [],
  };
  try {
    for (let i = 0; i < warmup + steps; i++) {
      const t0 = performance.now();
      opt.zeroGrad();
      // The graph's JS handles (activations, logits, loss) are freed when the scope ends,
      // after backward: the same point where PyTorch drops them.
      let t1: number;
      {
        using _ = t.scope();
        const loss = c.dtype === 'bf16' ? t.autocast(region, forward) : forward();
        t1 = performance.now();
        loss.backward();
        if (i === warmup + steps - 1) m.loss = loss.item();
      }
      const t2 = performance.now();
      opt.step();
      const t3 = performance.now();
      if (i >= warmup) {
        m.fwdS.push((t1 - t0) / 1000);
        m.bwdS.push((t2 - t1) / 1000);
        m.optS.push((t3 - t2) / 1000);
        m.stepS.push((t3 - t0) / 1000);
        m.liveTensors.push(t.memory().tensors - before);
      }
    }
  } finally {
    // Optimizer state, gradients, parameters and buffers: all kept tensors, freed here so
    // the next measurement starts from the same count.
    for (const state of opt.state.values()) {
      for (const v of Object.values(state)) if (v instanceof t.Tensor) v.dispose();
    }
    for (const p of params) p.grad = null;
    for (const p of params) p.dispose();
    for (const b of model.buffers()) b.dispose();
    x.dispose();
    y.dispose();
  }
  m.imgPerS = c.batch / median(m.stepS);
  return m;
}
