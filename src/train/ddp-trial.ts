// One rank's DDP on a fixed synthetic batch, for the trials that time DDP settings: the
// bucket trial's worker processes (bucket-trial-worker.ts) and the in-group communication
// trial (tune-comm.ts). The run's own model and optimizer (setup.ts), wrapped in
// DistributedDataParallel with the plan's DDP options and the bucket size asked.
import { autocast } from '../amp/index.ts';
import * as t from '../core/index.ts';
import * as dist from '../distributed/index.ts';
import type { Module } from '../nn/index.ts';
import type { Optimizer } from '../optim/index.ts';
import { disposeState } from '../optim/optimizer.ts';
import { buildModel, buildOptimizer } from './build.ts';
import type { RunPlan } from './plan.ts';
import type { Placement } from './process-group.ts';
import type { TrainHooks } from './types.ts';

/** What the driver asks a rank to build. */
export interface BucketSetup {
  plan: RunPlan;
  bucketCapMb: number;
  numClasses: number;
}

/**
 * One timed step of a rank: its wall time, and DDP's Logger's measure of that iteration's
 * all-reduce (ms) when it recorded one (the Logger samples some iterations only).
 */
export interface BucketStep {
  stepMs: number;
  comm: { iteration: number; commMs: number; overlapMs: number } | null;
}

export class BucketSession {
  private readonly model: Module;
  private readonly ddp: dist.DistributedDataParallel;
  private readonly optimizer: Optimizer;
  private readonly x: t.Tensor;
  private readonly y: t.Tensor;
  /** The last Logger iteration read, so each sample is counted once. */
  private lastIteration = 0;

  constructor(
    private readonly s: BucketSetup,
    private readonly on: Placement,
    rank: number,
    group?: dist.ProcessGroup,
    hooks: TrainHooks = {},
  ) {
    const { plan, numClasses } = s;
    const size = plan.data.imageSize;
    this.model = buildModel(plan, hooks, { numClasses, imageSize: size }, on);
    this.ddp = new dist.DistributedDataParallel(this.model, {
      ...plan.ddp,
      bucketCapMb: s.bucketCapMb,
      deviceIds: on.deviceType === 'cuda' ? [t.cuda.currentDevice()] : undefined,
      processGroup: group,
    });
    this.optimizer = buildOptimizer(this.model, plan.optim, 0.01);
    // A different fixed batch per rank, made once: the model and DDP are measured, not data.
    t.manualSeed(1 + rank);
    const memoryFormat = plan.model.channelsLast ? 'channelsLast' : undefined;
    const batch = plan.data.batchSize;
    this.x = t.tidy(() => t.randn([batch, 3, size, size]).to({ device: on.device, memoryFormat })).keep();
    this.y = t.tidy(() => t.randint(numClasses, [batch]).to(on.device)).keep();
  }

  /** One optimizer step of `gradAccum` micro-batches; all but the last skip the all-reduce. */
  step(): BucketStep {
    const { gradAccum } = this.s.plan.loop;
    const { deviceType, ampDtype } = this.on;
    const t0 = performance.now();
    this.optimizer.zeroGrad();
    for (let m = 0; m < gradAccum; m++) {
      const micro = (): void => {
        using _ = t.scope();
        const forward = () => t.crossEntropy(this.ddp.forward(this.x) as t.Tensor, this.y);
        const loss = ampDtype === null ? forward() : autocast({ deviceType, dtype: ampDtype }, forward);
        (gradAccum > 1 ? loss.div(gradAccum) : loss).backward();
      };
      if (m < gradAccum - 1) this.ddp.noSync(micro);
      else micro();
    }
    this.optimizer.step();
    if (deviceType === 'cuda') t.cuda.synchronize(); // the step's GPU work is done: its time is real
    return { stepMs: performance.now() - t0, comm: this.comm() };
  }

  /** The Logger's numbers for the iteration that finished last, if they are new (ns in, ms out). */
  private comm(): BucketStep['comm'] {
    const ints = this.ddp.stats().raw.ints;
    const iteration = ints.iteration ?? 0;
    if (iteration <= this.lastIteration || ints.backward_comm_time === undefined) return null;
    this.lastIteration = iteration;
    const overlap = ints.backward_compute_comm_overlap_time ?? 0;
    return { iteration, commMs: ints.backward_comm_time / 1e6, overlapMs: overlap / 1e6 };
  }

  close(): void {
    disposeTrial(this.model, this.optimizer, this.ddp);
    this.x.dispose();
    this.y.dispose();
  }
}

/** Frees what a trial built: its DDP (if made), the optimizer's state (if made), the model's tensors. */
export function disposeTrial(
  model: Module,
  optimizer: Optimizer | null,
  ddp: dist.DistributedDataParallel | null,
): void {
  ddp?.close();
  for (const state of optimizer?.state.values() ?? []) disposeState(state);
  for (const p of model.parameters()) p.grad = null;
  for (const p of model.parameters()) p.dispose();
  for (const b of model.buffers()) b.dispose();
}
