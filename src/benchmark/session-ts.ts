// The tsddp side of one benchmark case on one rank: the case's model (a ResNet, or a ViT
// for bench/ddp.ts) wrapped in DistributedDataParallel, SGD, and one fixed synthetic
// batch, stepped like the PyTorch side (bench/reference/ddp.py) steps its model.
import { autocast } from '../amp/index.ts';
import * as t from '../core/index.ts';
import { type CommHook, DistributedDataParallel } from '../distributed/index.ts';
import { GPT, resnet18, resnet34, resnet50, resnet101, resnet152, vitB16, vitTiny } from '../models/index.ts';
import type { Module } from '../nn/module.ts';
import { SGD } from '../optim/index.ts';
import type { BenchCase, BenchModelName } from './cases.ts';
import type { CommSample, StepSample, StepsAnswer } from './protocol.ts';

const resnet =
  (build: typeof resnet18) =>
  (c: BenchCase, numClasses: number): Module =>
    build({ numClasses, stem: c.stem, widthMultiplier: c.widthMultiplier });
const vit =
  (build: typeof vitTiny) =>
  (c: BenchCase, numClasses: number): Module => {
    if (c.channelsLast) throw new RangeError('ViT cases run channels-first only');
    return build({ imageSize: c.size, numClasses });
  };
const BUILDERS: Record<BenchModelName, (c: BenchCase, numClasses: number) => Module> = {
  resnet18: resnet(resnet18),
  resnet34: resnet(resnet34),
  resnet50: resnet(resnet50),
  resnet101: resnet(resnet101),
  resnet152: resnet(resnet152),
  vit_tiny: vit(vitTiny),
  vit_b_16: vit(vitB16),
  gpt_small: (c, vocabSize) =>
    new GPT({ blockSize: c.size, vocabSize, nLayer: 6, nHead: 6, nEmbd: 384, dropout: 0, bias: false }),
};
const GPT_VOCAB = 65;

export class TsDdpSession {
  private readonly model: Module;
  private readonly ddp: DistributedDataParallel<Module>;
  private readonly opt: SGD;
  private readonly x: t.Tensor;
  private readonly y: t.Tensor;
  private readonly device: string | null;
  private lastIteration = 0;
  private lastLoss = Number.NaN;
  readonly params: number;

  constructor(
    readonly c: BenchCase,
    rank: number,
  ) {
    t.manualSeed(0);
    const gpt = c.model === 'gpt_small';
    const numClasses = gpt ? GPT_VOCAB : (c.numClasses ?? (c.stem === 'cifar' ? 10 : 1000));
    this.model = BUILDERS[c.model](c, numClasses);
    this.model.train();
    // One GPU per rank where there are GPUs (worker.ts made it the current device).
    this.device = t.cuda.isAvailable() ? `cuda:${t.cuda.currentDevice()}` : null;
    if (this.device !== null) this.model.to(this.device);
    if (c.channelsLast) this.model.to({ memoryFormat: 'channelsLast' });
    this.params = this.model.parameters().length;
    const hook: CommHook | undefined = c.hook === 'none' ? undefined : c.hook;
    this.ddp = new DistributedDataParallel(this.model, {
      bucketCapMb: c.bucketCapMb,
      commHook: hook,
      powerSGD:
        c.hook === 'powerSGD'
          ? { matrixApproximationRank: c.powerSGDRank ?? 1, startPowerSGDIter: 2 }
          : undefined,
      deviceIds: this.device === null ? undefined : [t.cuda.currentDevice()],
    });
    this.opt = new SGD(this.model.parameters(), { lr: 0.01, momentum: 0.9, weightDecay: 5e-4 });
    // A different fixed batch per rank, made once: the model and DDP are measured, not data.
    t.manualSeed(1 + rank);
    const device = this.device ?? 'cpu';
    this.x = t.tidy(() => {
      if (gpt) return t.randint(numClasses, [c.batch, c.size]).to(device);
      const x = t.randn([c.batch, 3, c.size, c.size]);
      return x.to({ device, memoryFormat: c.channelsLast ? 'channelsLast' : undefined });
    });
    this.x.keep();
    this.y = t.tidy(() => t.randint(numClasses, gpt ? [c.batch, c.size] : [c.batch]).to(device)).keep();
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
        const forward = () =>
          this.model instanceof GPT
            ? ((ddp.forward(x, y) as ReturnType<GPT['forward']>).loss as t.Tensor)
            : t.crossEntropy(ddp.forward(x) as t.Tensor, y);
        const loss =
          c.amp === 'bf16'
            ? autocast({ deviceType: this.device === null ? 'cpu' : 'cuda', dtype: 'bfloat16' }, forward)
            : forward();
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
    if (this.device !== null) t.cuda.synchronize(); // the step's GPU work is done: its time is real
    const t2 = performance.now();
    // zeroGrad's share is counted with the forward, as on the PyTorch side.
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

  [Symbol.dispose](): void {
    this.close();
  }

  close(): void {
    this.ddp.close();
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
