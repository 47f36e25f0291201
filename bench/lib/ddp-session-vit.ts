// The tsddp side of bench/ddp.ts's ViT cases on one rank: torchvision's ViT (vitTiny or
// vitB16 at the case's image size) wrapped in DistributedDataParallel, SGD and one fixed
// synthetic batch, stepped exactly like src/benchmark/session-ts.ts steps its ResNets
// (and bench/reference/ddp.py its PyTorch models). `tsddp bench` itself offers ResNets
// only; this file and bench/workers/ddp.ts add the ViT models for bench/ddp.ts.

import type { BenchCase } from '../../src/benchmark/cases.ts';
import type { CommSample, StepSample, StepsAnswer } from '../../src/benchmark/protocol.ts';
import * as t from '../../src/index.ts';

/** The ViT models bench/ddp.ts measures, by BenchCase.model. */
export const VIT_MODELS = { vit_tiny: t.models.vitTiny, vit_b_16: t.models.vitB16 } as const;
export type VitModelName = keyof typeof VIT_MODELS;

export function isVitModel(name: string): name is VitModelName {
  return Object.hasOwn(VIT_MODELS, name);
}

export class TsVitDdpSession {
  private readonly model: t.models.VisionTransformer;
  private readonly ddp: t.DistributedDataParallel<t.models.VisionTransformer>;
  private readonly opt: t.optim.SGD;
  private readonly x: t.Tensor;
  private readonly y: t.Tensor;
  private lastIteration = 0;
  private lastLoss = Number.NaN;
  readonly params: number;

  constructor(
    readonly c: BenchCase,
    rank: number,
  ) {
    const name = c.model as string;
    if (!isVitModel(name)) throw new RangeError(`not a ViT model: ${name}`);
    if (c.channelsLast) throw new RangeError('ViT cases run channels-first only');
    t.manualSeed(0);
    // As for the ResNets: 10 classes with the 'cifar' stem setting, else ImageNet's 1000.
    const numClasses = c.stem === 'cifar' ? 10 : 1000;
    this.model = VIT_MODELS[name]({ imageSize: c.size, numClasses });
    this.model.train();
    this.params = this.model.parameters().length;
    const hook = c.hook === 'none' ? undefined : c.hook;
    this.ddp = new t.DistributedDataParallel(this.model, { bucketCapMb: c.bucketCapMb, commHook: hook });
    this.opt = new t.optim.SGD(this.model.parameters(), { lr: 0.01, momentum: 0.9, weightDecay: 5e-4 });
    t.manualSeed(1 + rank);
    this.x = t.randn([c.batch, 3, c.size, c.size]).keep();
    this.y = t.randint(numClasses, [c.batch]).keep();
  }

  /** One optimizer step of `accum` micro-batches; all but the last skip gradient sync. */
  private step(): StepSample {
    const { c, ddp, x, y, opt } = this;
    let bwd = 0;
    const faults0 = process.resourceUsage().minorPageFault;
    const t0 = performance.now();
    opt.zeroGrad();
    for (let m = 0; m < c.accum; m++) {
      const micro = (): void => {
        using _ = t.scope();
        const forward = () => t.crossEntropy(ddp.forward(x) as t.Tensor, y);
        const loss =
          c.amp === 'bf16' ? t.autocast({ deviceType: 'cpu', dtype: 'bfloat16' }, forward) : forward();
        const tb = performance.now();
        (c.accum > 1 ? loss.div(c.accum) : loss).backward();
        bwd += performance.now() - tb;
        if (m === c.accum - 1) this.lastLoss = loss.item();
      };
      if (m < c.accum - 1) ddp.noSync(micro);
      else micro();
    }
    const t1 = performance.now();
    opt.step();
    const t2 = performance.now();
    const faults = process.resourceUsage().minorPageFault - faults0;
    return {
      fwd: (t1 - t0 - bwd) / 1000,
      bwd: bwd / 1000,
      opt: (t2 - t1) / 1000,
      step: (t2 - t0) / 1000,
      faults,
    };
  }

  /** The Logger's numbers for the iteration that finished last, if they are new. */
  private comm(): CommSample | null {
    const ints = this.ddp.stats().raw.ints;
    const iteration = ints.iteration ?? 0;
    if (iteration <= this.lastIteration || ints.backward_comm_time === undefined) return null;
    this.lastIteration = iteration;
    return {
      iteration,
      commMs: ints.backward_comm_time / 1e6,
      overlapMs: (ints.backward_compute_comm_overlap_time ?? 0) / 1e6,
    };
  }

  steps(n: number): StepsAnswer {
    const steps: StepSample[] = [];
    const comm: CommSample[] = [];
    for (let i = 0; i < n; i++) {
      steps.push(this.step());
      const s = this.comm();
      if (s) comm.push(s);
    }
    return { steps, comm, loss: this.lastLoss };
  }

  close(): void {
    this.ddp.destroy();
    for (const state of this.opt.state.values()) {
      for (const v of Object.values(state)) if (v instanceof t.Tensor) v.dispose();
    }
    const params = this.model.parameters();
    for (const p of params) p.grad = null;
    for (const p of params) p.dispose();
    for (const b of this.model.buffers()) b.dispose();
    this.x.dispose();
    this.y.dispose();
  }
}
