// --tune across nodes (--tune-comm): a trial inside the run's own process group, on the
// links the run will train over, that picks the gradient communication by measurement.
// tune.ts's bucket trial runs on this machine's processes and so never sees the network
// between nodes; this one runs on every rank of the run, before DDP is built:
//   1. the link: an all-reduce of the run's gradient size, timed (bus bandwidth, as
//      nccl-tests reports it);
//   2. the comm hooks at the plan's bucket size: plain all-reduce, fp16 and bf16
//      compression, PowerSGD at ranks 1, 2 and 4 (compressing from the trial's third step),
//      each a few DDP steps of the run's model on a fixed batch, the slowest rank's time;
//   3. equal accuracy: a hook that loses precision is taken only if a short training trial
//      on the run's own data, from the same seed, ends within LOSS_MARGIN of plain
//      all-reduce's loss (PowerSGD's error feedback is what keeps it there);
//   4. the bucket sizes for the chosen hook.
// A candidate must beat the default (plain all-reduce, the plan's buckets) by SPEED_MARGIN,
// the trial's noise. Every rank takes the slowest rank's numbers (an all-reduce MAX), so all
// choose the same without another message. A --comm-hook the run names is kept: then only the
// bucket size is tuned.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { autocast } from '../amp/index.ts';
import * as t from '../core/index.ts';
import type * as data from '../data/index.ts';
import * as dist from '../distributed/index.ts';
import { ensureSafeDir, writeFileAtomicSync } from '../files/index.ts';
import type { Module } from '../nn/index.ts';
import type { Optimizer } from '../optim/index.ts';
import { buildModel, buildOptimizer } from './build.ts';
import { buildLoaders, type DataSetup, epochBatches, prepareImages } from './data.ts';
import { BucketSession, disposeTrial } from './ddp-trial.ts';
import { type RunPlan, withOptions } from './plan.ts';
import type { Placement } from './process-group.ts';
import { TuneError } from './tune.ts';
import type { TrainHooks } from './types.ts';

/** A lossy hook is kept only if its trial loss is at most this much above plain all-reduce's. */
export const LOSS_MARGIN = 0.05;
/** A candidate replaces the default only if this much faster. */
export const SPEED_MARGIN = 1.02;
const WARMUP = 2;
const STEPS = 3;
/** The accuracy trial: optimizer steps, and the last ones whose mean loss is compared. */
const LOSS_STEPS = 24;
const LOSS_TAIL = 8;
const LOSS_BATCHES = 8;
const BUCKETS = [5, 25, 50, 100];
const POWERSGD_RANKS = [1, 2, 4];

export type CommHookChoice = 'none' | 'allreduce' | 'fp16' | 'bf16' | 'powerSGD';

export interface CommCandidate {
  commHook: CommHookChoice;
  /** With powerSGD: the approximation rank. */
  powersgdRank?: number;
  bucketCapMb: number;
}

export interface CommMeasurement extends CommCandidate {
  /** The slowest rank's median step, ms. */
  msPerStep: number;
}

export interface LinkMeasurement {
  /** Bytes all-reduced: the run's gradients in float32. */
  bytes: number;
  /** The slowest rank's median time for it, ms. */
  ms: number;
  /** Bus bandwidth: bytes x 2(n-1)/n / time, in Gbit/s. */
  busGbitPerS: number;
}

export interface LossCheck {
  candidate: string;
  /** Mean loss of the last LOSS_TAIL steps, averaged over the ranks. */
  plainLoss: number;
  loss: number;
  accepted: boolean;
}

export interface CommTuneResult {
  link: LinkMeasurement;
  measured: CommMeasurement[];
  lossChecks: LossCheck[];
  choice: CommCandidate;
  /** Why, one line each. */
  notes: string[];
}

export function describeCandidate(c: CommCandidate): string {
  const hook =
    c.commHook === 'none' || c.commHook === 'allreduce'
      ? 'plain all-reduce'
      : c.commHook === 'powerSGD'
        ? `PowerSGD rank ${c.powersgdRank}`
        : `${c.commHook} compression`;
  return `${hook}, ${c.bucketCapMb} MiB buckets`;
}

const lossless = (c: CommCandidate) => c.commHook === 'none' || c.commHook === 'allreduce';

/**
 * The fastest measured candidate that beats `fallback` by SPEED_MARGIN and passes its
 * accuracy check (`accepts`, asked only of lossy hooks, fastest first), else `fallback`.
 */
export async function chooseComm(
  measured: CommMeasurement[],
  fallback: CommCandidate,
  accepts: (c: CommCandidate) => Promise<boolean>,
): Promise<CommCandidate> {
  const base = measured.find((m) => same(m, fallback));
  if (base === undefined) return fallback;
  const faster = measured
    .filter((m) => m.msPerStep * SPEED_MARGIN < base.msPerStep)
    .sort((a, b) => a.msPerStep - b.msPerStep);
  for (const m of faster) if (lossless(m) || (await accepts(m))) return strip(m);
  return fallback;
}

function same(a: CommCandidate, b: CommCandidate): boolean {
  return a.commHook === b.commHook && a.bucketCapMb === b.bucketCapMb && a.powersgdRank === b.powersgdRank;
}

function strip(m: CommMeasurement): CommCandidate {
  const { commHook, bucketCapMb, powersgdRank } = m;
  return powersgdRank === undefined ? { commHook, bucketCapMb } : { commHook, bucketCapMb, powersgdRank };
}

export interface CommTrialContext {
  group: dist.ProcessGroup;
  rank: number;
  worldSize: number;
  on: Placement;
  setup: DataSetup;
  /** The run's learning rate (the accuracy trial trains with it). */
  lr: number;
  /** The run's hooks: a `model` hook's model is the one timed. */
  hooks: TrainHooks;
  log: (line: string) => void;
}

/**
 * Runs the trial on every rank of `ctx.group`; every rank returns the same choice (checked:
 * a TuneError on every rank otherwise).
 */
export async function tuneComm(plan: RunPlan, ctx: CommTrialContext): Promise<CommTuneResult> {
  // The trial seeds its models as the run does. The CPU generator's state is put back, so
  // the run's CPU random stream goes on as if it had not run (a CUDA generator is left reseeded).
  const rng = t.getRngState();
  try {
    const r = await new CommTrial(plan, ctx).run();
    agree(r.choice, ctx.group);
    return r;
  } finally {
    t.setRngState(rng);
    rng.dispose();
  }
}

const HOOK_CODES: CommHookChoice[] = ['none', 'allreduce', 'fp16', 'bf16', 'powerSGD'];

/** The file in the checkpoint folder that keeps the choice for restarts and resumes. */
export const TUNE_COMM_FILE = 'tune-comm.json';

/** What the choice depends on besides the links: the world, the model and its batch. */
function commKey(plan: RunPlan, worldSize: number): string {
  const { model, widthMultiplier, imageSize, batchSize, gradAccum, amp, channelsLast, optimizer, strategy } =
    plan.options;
  return JSON.stringify({
    worldSize,
    model,
    widthMultiplier,
    imageSize,
    batchSize,
    gradAccum,
    amp,
    channelsLast,
    optimizer,
    strategy,
  });
}

/**
 * The choice kept in the checkpoint folder for this key (a restarted or resumed run trains
 * as it started, rather than choosing again on new noise), else the trial's, kept there by
 * rank 0. Rank 0 reads the file and tells the others, which may not share the folder.
 */
export async function tuneCommOrReuse(
  plan: RunPlan,
  ctx: CommTrialContext,
): Promise<Pick<CommTuneResult, 'choice' | 'notes'>> {
  const dir = plan.io.checkpointDir;
  const file = dir === undefined ? null : join(dir, TUNE_COMM_FILE);
  const key = commKey(plan, ctx.worldSize);
  const kept: [{ choice?: CommCandidate; error?: string } | null] = [null];
  if (ctx.rank === 0 && file !== null) kept[0] = readKept(file, key);
  await dist.broadcastObjectList(kept, 0, { group: ctx.group });
  const k = kept[0];
  if (k?.error !== undefined) throw new TuneError(k.error);
  if (k?.choice !== undefined)
    return { choice: k.choice, notes: [`choice: ${describeCandidate(k.choice)}, kept in ${file}`] };
  const r = await tuneComm(plan, ctx);
  if (ctx.rank === 0 && dir !== undefined && file !== null) {
    ensureSafeDir(dir, 'the checkpoint folder');
    const saved = {
      version: 1,
      key: JSON.parse(key),
      choice: r.choice,
      link: r.link,
      measured: r.measured,
      lossChecks: r.lossChecks,
      notes: r.notes,
      date: new Date().toISOString(),
    };
    writeFileAtomicSync(file, `${JSON.stringify(saved, null, 2)}\n`);
  }
  return r;
}

/** The kept choice when the file is there for this key; an error naming the file when it is unreadable. */
function readKept(file: string, key: string): { choice?: CommCandidate; error?: string } | null {
  if (!existsSync(file)) return null;
  try {
    const saved = JSON.parse(readFileSync(file, 'utf8')) as {
      version?: number;
      key?: unknown;
      choice?: CommCandidate;
    };
    if (
      saved.version !== 1 ||
      typeof saved.choice?.commHook !== 'string' ||
      !HOOK_CODES.includes(saved.choice.commHook) ||
      !(saved.choice.bucketCapMb > 0)
    )
      return { error: `${file} is not a tune-comm file of version 1 (delete it to choose again)` };
    return JSON.stringify(saved.key) === key ? { choice: saved.choice } : null;
  } catch (e) {
    return { error: `${file} cannot be read: ${(e as Error).message} (delete it to choose again)` };
  }
}

/** Throws on every rank unless all ranks hold the same choice (their MIN and MAX agree). */
function agree(c: CommCandidate, group: dist.ProcessGroup): void {
  const code = [HOOK_CODES.indexOf(c.commHook), c.powersgdRank ?? 0, c.bucketCapMb];
  const lo = t.tensor(
    code.map((x) => -x),
    { dtype: 'float64' },
  );
  const hi = t.tensor(code, { dtype: 'float64' });
  try {
    dist.allReduce(lo, dist.ReduceOp.MAX, { group });
    dist.allReduce(hi, dist.ReduceOp.MAX, { group });
    const [a, b] = [lo.toArray() as number[], hi.toArray() as number[]];
    if (a.some((x, i) => -x !== b[i]))
      throw new TuneError(`the ranks chose different comm settings (${describeCandidate(c)} on this one)`);
  } finally {
    lo.dispose();
    hi.dispose();
  }
}

class CommTrial {
  private readonly measured: CommMeasurement[] = [];
  private readonly lossChecks: LossCheck[] = [];
  private plainLoss: number | null = null;
  private batches: { x: t.Tensor; y: t.Tensor }[] | null = null;

  constructor(
    private readonly plan: RunPlan,
    private readonly ctx: CommTrialContext,
  ) {}

  async run(): Promise<CommTuneResult> {
    const { plan, ctx } = this;
    const notes: string[] = [];
    try {
      const link = this.link();
      notes.push(
        `link: an all-reduce of the gradients (${(link.bytes / 1e6).toFixed(1)} MB) takes ${link.ms.toFixed(0)} ms: ` +
          `${link.busGbitPerS.toPrecision(3)} Gbit/s bus bandwidth over ${ctx.worldSize} ranks`,
      );
      const { commHook, powersgdRank } = plan.options;
      // 'none' is the option's default: a run that names another hook keeps it.
      const given = commHook !== 'none';
      const fallback: CommCandidate =
        commHook === 'powerSGD'
          ? { commHook, powersgdRank, bucketCapMb: plan.ddp.bucketCapMb }
          : { commHook, bucketCapMb: plan.ddp.bucketCapMb };
      if (given) notes.push(`comm hook: ${commHook}, as given (only the bucket size is tuned)`);
      const hooks: CommCandidate[] = given
        ? [fallback]
        : [
            fallback,
            { commHook: 'fp16', bucketCapMb: fallback.bucketCapMb },
            { commHook: 'bf16', bucketCapMb: fallback.bucketCapMb },
            ...POWERSGD_RANKS.map((r) => ({
              commHook: 'powerSGD' as const,
              powersgdRank: r,
              bucketCapMb: fallback.bucketCapMb,
            })),
          ];
      for (const c of hooks) this.time(c);
      const hook = await chooseComm(this.measured, fallback, (c) => this.accepts(c));
      const sizes = BUCKETS.filter((b) => b !== hook.bucketCapMb).map((bucketCapMb) => ({
        ...hook,
        bucketCapMb,
      }));
      for (const c of sizes) this.time(c);
      const ofHook = this.measured.filter(
        (m) => m.commHook === hook.commHook && m.powersgdRank === hook.powersgdRank,
      );
      // Bucket size changes only the grouping, not the numbers sent: no accuracy check.
      const choice = await chooseComm(ofHook, hook, async () => true);
      const timings = this.measured
        .map((m) => `${describeCandidate(m)} ${m.msPerStep.toFixed(0)} ms`)
        .join('; ');
      notes.push(`steps: ${timings}`);
      for (const l of this.lossChecks)
        notes.push(
          `accuracy: ${l.candidate}: loss ${l.loss.toFixed(4)} after ${LOSS_STEPS} steps against plain all-reduce's ` +
            `${l.plainLoss.toFixed(4)}: ${l.accepted ? 'kept' : `refused (more than ${LOSS_MARGIN * 100}% above)`}`,
        );
      const base = this.measured.find((m) => same(m, fallback));
      const won = this.measured.find((m) => same(m, choice));
      const speedup = base && won ? base.msPerStep / won.msPerStep : 1;
      const from =
        choice.commHook === 'powerSGD'
          ? `; it compresses from step ${plan.options.powersgdStartIter} (--powersgd-start-iter), plain all-reduce before`
          : '';
      notes.push(
        `choice: ${describeCandidate(choice)} (${speedup.toFixed(2)}x ${describeCandidate(fallback)}${from}; ` +
          `another setting must be ${((SPEED_MARGIN - 1) * 100).toFixed(0)}% faster, a lossy one within ${LOSS_MARGIN * 100}% of its loss)`,
      );
      return { link, measured: this.measured, lossChecks: this.lossChecks, choice, notes };
    } finally {
      for (const b of this.batches ?? []) {
        b.x.dispose();
        b.y.dispose();
      }
    }
  }

  /** The slowest rank's value of `x` (every rank gets the same number). */
  private slowest(x: number): number {
    return reduceScalar(x, dist.ReduceOp.MAX, this.ctx.group);
  }

  private link(): LinkMeasurement {
    const { group, worldSize, on } = this.ctx;
    const model = buildModel(this.plan, this.ctx.hooks, this.ctx.setup, on);
    const numel = model.parameters().reduce((n, p) => n + p.numel(), 0);
    for (const p of model.parameters()) p.dispose();
    for (const b of model.buffers()) b.dispose();
    const x = t.zeros([numel], { device: on.device });
    const ms: number[] = [];
    try {
      for (let i = 0; i < 4; i++) {
        dist.barrier({ group });
        const t0 = performance.now();
        dist.allReduce(x, dist.ReduceOp.SUM, { group });
        if (on.deviceType === 'cuda') t.cuda.synchronize();
        if (i > 0) ms.push(performance.now() - t0);
      }
    } finally {
      x.dispose();
    }
    const time = this.slowest(median(ms));
    const bytes = numel * 4;
    const busGbitPerS = ((bytes * 8 * 2 * (worldSize - 1)) / worldSize / (time / 1000)) * 1e-9;
    return { bytes, ms: round(time), busGbitPerS: Number(busGbitPerS.toPrecision(4)) };
  }

  /** The plan with a candidate's DDP settings (PowerSGD compressing once the warm-up is done). */
  private planFor(c: CommCandidate): RunPlan {
    return withOptions(this.plan, {
      commHook: c.commHook,
      bucketCapMb: c.bucketCapMb,
      ...(c.commHook === 'powerSGD' ? { powersgdRank: c.powersgdRank, powersgdStartIter: WARMUP } : {}),
    });
  }

  private time(c: CommCandidate): void {
    const { ctx } = this;
    const setup = {
      plan: this.planFor(c),
      bucketCapMb: c.bucketCapMb,
      numClasses: ctx.setup.numClasses,
    };
    const session = new BucketSession(setup, ctx.on, ctx.rank, ctx.group, ctx.hooks);
    try {
      for (let i = 0; i < WARMUP; i++) session.step();
      const ms = Array.from({ length: STEPS }, () => session.step().stepMs);
      const m = { ...c, msPerStep: round(this.slowest(median(ms))) };
      this.measured.push(m);
      if (ctx.rank === 0)
        ctx.log(`tune: comm trial: ${describeCandidate(c)}: ${m.msPerStep.toFixed(0)} ms per step`);
    } finally {
      session.close();
    }
  }

  /** Whether a lossy candidate trains to within LOSS_MARGIN of plain all-reduce's loss. */
  private async accepts(c: CommCandidate): Promise<boolean> {
    this.plainLoss ??= await this.trainLoss({ commHook: 'none', bucketCapMb: c.bucketCapMb });
    const loss = await this.trainLoss(c);
    const accepted = loss <= this.plainLoss * (1 + LOSS_MARGIN);
    this.lossChecks.push({
      candidate: describeCandidate(c),
      plainLoss: round4(this.plainLoss),
      loss: round4(loss),
      accepted,
    });
    if (this.ctx.rank === 0)
      this.ctx.log(
        `tune: comm trial: ${describeCandidate(c)}: loss ${loss.toFixed(4)}, plain ${this.plainLoss.toFixed(4)}`,
      );
    return accepted;
  }

  /** LOSS_STEPS optimizer steps from the run's seed on this rank's first batches; the ranks' mean tail loss. */
  private async trainLoss(c: CommCandidate): Promise<number> {
    const { ctx } = this;
    const batches = await this.realBatches();
    const plan = this.planFor(c);
    // The run's model (unsharded: the trial is for DDP) and a plain optimizer: ZeRO-1
    // shards the same update, it does not change it.
    const model: Module = buildModel(plan, ctx.hooks, ctx.setup, ctx.on);
    let optimizer: Optimizer | null = null;
    let ddp: dist.DistributedDataParallel | null = null;
    const { deviceType, ampDtype } = ctx.on;
    const losses: number[] = [];
    try {
      const opt = buildOptimizer(model, plan.optim, ctx.lr);
      optimizer = opt;
      const wrapped = new dist.DistributedDataParallel(model, {
        ...plan.ddp,
        deviceIds: ctx.on.deviceType === 'cuda' ? [t.cuda.currentDevice()] : undefined,
        processGroup: ctx.group,
      });
      ddp = wrapped;
      for (let s = 0; s < LOSS_STEPS; s++) {
        using _ = t.scope();
        const { x, y } = batches[s % batches.length];
        opt.zeroGrad();
        const forward = () => t.crossEntropy(wrapped.forward(x) as t.Tensor, y);
        const loss = ampDtype === null ? forward() : autocast({ deviceType, dtype: ampDtype }, forward);
        loss.backward();
        opt.step();
        losses.push(loss.item());
      }
    } finally {
      disposeTrial(model, optimizer, ddp);
    }
    const tail = losses.slice(-LOSS_TAIL).reduce((a, b) => a + b, 0) / LOSS_TAIL;
    return reduceScalar(tail, dist.ReduceOp.SUM, ctx.group) / ctx.worldSize;
  }

  /** This rank's first LOSS_BATCHES batches of epoch 0 (no augmentation), on the device. */
  private async realBatches(): Promise<{ x: t.Tensor; y: t.Tensor }[]> {
    if (this.batches !== null) return this.batches;
    const { ctx, plan } = this;
    const inline = { ...plan, data: { ...plan.data, workers: 0, persistentWorkers: false } };
    const loaders = buildLoaders(inline, ctx.setup, ctx.rank, ctx.worldSize);
    const out: { x: t.Tensor; y: t.Tensor }[] = [];
    try {
      const it = epochBatches(loaders, 0, { batch: 0 });
      while (out.length < LOSS_BATCHES) {
        const next: IteratorResult<data.Batch> = await it.next();
        if (next.done) break;
        const { image, label } = next.value;
        const channelsLast = plan.model.channelsLast;
        const x = t.tidy(() =>
          prepareImages(image, ctx.setup, { augment: false, channelsLast }).to(ctx.on.device),
        );
        const y = t.tidy(() => label.to(ctx.on.device));
        out.push({ x: x.keep(), y: y.keep() });
        image.dispose();
        label.dispose();
      }
    } finally {
      await loaders.train.close();
      await loaders.val.close();
    }
    // Every rank steps as often as the one with the fewest batches can (uneven shares).
    const n = reduceScalar(out.length, dist.ReduceOp.MIN, ctx.group);
    for (const b of out.splice(n)) {
      b.x.dispose();
      b.y.dispose();
    }
    this.batches = out;
    if (n === 0) throw new TuneError('a rank has no full training batch for the communication trial');
    return out;
  }
}

/** The middle value (the upper one of an even count, as tune.ts and tune-buckets.ts take it). */
function median(v: number[]): number {
  const s = [...v].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

/** `x` reduced over the group's ranks with `op` (every rank gets the result). */
function reduceScalar(x: number, op: dist.ReduceOp, group: dist.ProcessGroup): number {
  const v = t.tensor([x], { dtype: 'float64' });
  try {
    dist.allReduce(v, op, { group });
    return v.item();
  } finally {
    v.dispose();
  }
}

const round = (x: number) => Math.round(x * 100) / 100;
const round4 = (x: number) => Math.round(x * 1e4) / 1e4;
