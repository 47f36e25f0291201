// The tsddp side of bench/train_step.ts: a model, optimizer and synthetic batch for one
// configuration, stepped one training step at a time — the same step
// bench/reference/train_step.py runs in PyTorch. ResNets train with SGD (lr 0.01,
// momentum 0.9, weight decay 5e-4), the transformers (vit_tiny, gpt_small) with AdamW
// (lr 1e-3, defaults otherwise: weight decay 1e-2, a loop over parameters on CPU).
//
// `t` is passed in rather than imported: the benchmark sets OMP_NUM_THREADS before
// libtorch (and its OpenMP runtime) loads, which a static import here would precede.
import type * as Tsddp from '../../src/index.ts';
import { NUM_CLASSES, TRANSFORMERS, type TrainConfig } from './train-configs.ts';

type T = typeof Tsddp;

/** Seconds of one training step and of its phases (CPU ops are synchronous, so the split is exact). */
export interface StepTimes {
  /** optimizer.zeroGrad() + forward + loss (inside autocast for bf16). */
  fwd: number;
  bwd: number;
  opt: number;
  step: number;
  /** Minor page faults during the step (memory the allocator had to get from the kernel). */
  minorFaults: number;
  /** The process's peak resident memory so far, MiB. */
  maxRssMb: number;
}

export class TsTrainSession {
  private readonly before: number;
  private readonly model: Tsddp.nn.Module;
  private readonly params: Tsddp.Tensor[];
  private readonly opt: Tsddp.optim.Optimizer;
  private readonly x: Tsddp.Tensor;
  private readonly y: Tsddp.Tensor;
  /** Forward + loss on (x, y). */
  private readonly forward: () => Tsddp.Tensor;
  private lastLoss: Tsddp.Tensor | null = null;

  /** A fresh model (seed 0) in training mode, its optimizer and one random batch. */
  constructor(
    private readonly t: T,
    readonly config: TrainConfig,
  ) {
    const c = config;
    this.before = t.memory().tensors;
    t.manualSeed(0);
    const numClasses = NUM_CLASSES[c.model];
    if (c.model === 'gpt_small') {
      // nanoGPT's baby GPT (config/train_shakespeare_char.py) without dropout and biases.
      const gpt = t.models.gpt({
        blockSize: c.size,
        vocabSize: numClasses,
        nLayer: 6,
        nHead: 6,
        nEmbd: 384,
        dropout: 0,
        bias: false,
      });
      this.model = gpt;
      this.x = t.randint(numClasses, [c.batch, c.size]).keep();
      this.y = t.randint(numClasses, [c.batch, c.size]).keep();
      this.forward = () => gpt.forward(this.x, this.y).loss as Tsddp.Tensor;
    } else {
      const model =
        c.model === 'vit_tiny'
          ? t.models.vitTiny({ imageSize: c.size, numClasses })
          : c.model === 'resnet18-cifar'
            ? t.models.resnet18({ numClasses, stem: 'cifar' })
            : t.models.resnet50({ numClasses });
      this.model = model;
      const cl = c.format === 'cl';
      if (cl) model.to({ memoryFormat: 'channelsLast' });
      this.x = t.tidy(() => {
        const x = t.randn([c.batch, 3, c.size, c.size]);
        return cl ? x.to({ memoryFormat: 'channelsLast' }) : x;
      });
      this.x.keep();
      this.y = t.randint(numClasses, [c.batch]).keep();
      this.forward = () => t.crossEntropy(model.call(this.x) as Tsddp.Tensor, this.y);
    }
    this.model.train();
    this.params = this.model.parameters();
    this.opt = TRANSFORMERS.includes(c.model)
      ? new t.optim.AdamW(this.params, { lr: 1e-3 })
      : new t.optim.SGD(this.params, { lr: 0.01, momentum: 0.9, weightDecay: 5e-4 });
  }

  /** One training step: zero grads, forward + loss, backward, optimizer step. */
  step(): StepTimes {
    const { t, opt, forward } = this;
    const faults0 = process.resourceUsage().minorPageFault;
    const t0 = performance.now();
    opt.zeroGrad();
    let t1: number;
    {
      // The graph's JS handles (activations, logits, loss) are freed when this block
      // ends, after backward: where PyTorch drops them too.
      using _ = t.scope();
      const loss =
        this.config.dtype === 'bf16'
          ? t.autocast({ deviceType: 'cpu', dtype: 'bfloat16' }, forward)
          : forward();
      t1 = performance.now();
      loss.backward();
      // Kept for the report, read once at the end (item() would add a copy per step).
      this.lastLoss?.dispose();
      this.lastLoss = loss.detach().keep();
    }
    const t2 = performance.now();
    opt.step();
    const t3 = performance.now();
    const usage = process.resourceUsage();
    return {
      fwd: (t1 - t0) / 1000,
      bwd: (t2 - t1) / 1000,
      opt: (t3 - t2) / 1000,
      step: (t3 - t0) / 1000,
      minorFaults: usage.minorPageFault - faults0,
      maxRssMb: usage.maxRSS / 1024,
    };
  }

  /** tsddp tensors alive now beyond those alive before this session was built. */
  liveTensors(): number {
    return this.t.memory().tensors - this.before;
  }

  /** Frees the model, optimizer state and data; returns the last loss. */
  dispose(): number {
    const { t } = this;
    const loss = this.lastLoss?.item() ?? Number.NaN;
    this.lastLoss?.dispose();
    this.lastLoss = null;
    for (const state of this.opt.state.values()) {
      for (const v of Object.values(state)) if (v instanceof t.Tensor) v.dispose();
    }
    for (const p of this.params) p.grad = null;
    for (const p of this.params) p.dispose();
    for (const b of this.model.buffers()) b.dispose();
    this.x.dispose();
    this.y.dispose();
    return loss;
  }
}
