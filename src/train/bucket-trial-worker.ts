// One rank of --tune's bucket trial (tune-buckets.ts starts `world` of them through
// src/host/gang.ts, with RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT and OMP_NUM_THREADS
// set): the run's own model and optimizer (setup.ts) wrapped in DistributedDataParallel
// with the bucket size asked, stepping one fixed synthetic batch. It answers the driver's
// JSON lines ({cmd: 'setup' | 'steps' | 'close'}) until its stdin closes.
import { createInterface } from 'node:readline';
import { autocast } from '../amp/index.ts';
import * as t from '../core/index.ts';
import * as dist from '../distributed/index.ts';
import type { Module } from '../nn/index.ts';
import type { Optimizer } from '../optim/index.ts';
import { disposeState } from '../optim/optimizer.ts';
import type { RunPlan } from './plan.ts';
import type { Placement } from './process-group.ts';
import { buildModel, buildOptimizer } from './setup.ts';

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

class BucketSession {
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
  ) {
    const { plan, numClasses } = s;
    const size = plan.data.imageSize;
    this.model = buildModel(plan, {}, { numClasses, imageSize: size }, on);
    this.ddp = new dist.DistributedDataParallel(this.model, {
      ...plan.ddp,
      bucketCapMb: s.bucketCapMb,
      deviceIds: on.deviceType === 'cuda' ? [t.cuda.currentDevice()] : undefined,
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
    this.ddp.close();
    for (const state of this.optimizer.state.values()) disposeState(state);
    for (const p of this.model.parameters()) p.grad = null;
    for (const p of this.model.parameters()) p.dispose();
    for (const b of this.model.buffers()) b.dispose();
    this.x.dispose();
    this.y.dispose();
  }
}

/** The rank's loop: join the group, say ready, answer each request. */
async function serve(): Promise<void> {
  const rank = Number(process.env.RANK);
  const threads = Number(process.env.OMP_NUM_THREADS);
  if (Number.isInteger(threads) && threads > 0) t.setNumThreads(threads);
  const useCuda = t.cuda.isAvailable();
  if (useCuda) t.cuda.setDevice(Number(process.env.LOCAL_RANK ?? rank));
  dist.initProcessGroup({ backend: 'auto', initMethod: 'env://', timeoutMs: 10 * 60_000 });
  const answer = (obj: object) => process.stdout.write(`${JSON.stringify(obj)}\n`);
  answer({ ready: true, rank });
  let session: BucketSession | null = null;
  for await (const line of createInterface({ input: process.stdin })) {
    if (line.trim() === '') continue;
    try {
      const req = JSON.parse(line) as { cmd: string; setup?: BucketSetup; n?: number };
      if (req.cmd === 'setup') {
        session?.close();
        session = null;
        const s = req.setup as BucketSetup;
        const amp = s.plan.amp.dtype;
        // As the run sets it (setup.ts): cuDNN times its kernels at the first step and keeps the fastest.
        if (useCuda) t.backends.cudnn.benchmark = s.plan.launch.cudnnBenchmark;
        const on: Placement = {
          device: useCuda ? `cuda:${t.cuda.currentDevice()}` : 'cpu',
          deviceType: useCuda ? 'cuda' : 'cpu',
          ampDtype: amp,
        };
        session = new BucketSession(s, on, rank);
        answer({ ok: true });
      } else if (req.cmd === 'steps' && session !== null) {
        const steps: BucketStep[] = [];
        for (let i = 0; i < (req.n ?? 1); i++) steps.push(session.step());
        answer({ steps });
      } else if (req.cmd === 'close') {
        session?.close();
        session = null;
        answer({ ok: true });
      } else throw new Error(`unknown or out-of-order request '${req.cmd}'`);
    } catch (e) {
      const err = e as Error;
      answer({ error: `${err.name}: ${err.message}`, traceback: err.stack ?? '' });
    }
  }
  session?.close();
  dist.destroyProcessGroup();
}

await serve();
// Gloo's threads must not keep the process alive after the driver has gone.
process.exit(0);
