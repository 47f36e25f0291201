// `tsddp tune` and `tsddp train --tune`: a short timed trial of the run's own model and
// data on this machine that picks, by measurement and not by rule:
//   1. the memory format (channels-first or channels-last) and the autocast dtype (fp32,
//      or bf16 where the hardware executes it: CPUs with AVX512-BF16 or AMX, CUDA GPUs);
//   2. on that winner, the optimizer implementation: the multi-tensor kernels (foreach)
//      or libtorch's fused kernel;
//   3. the intra-op threads per rank, up to the rank's share of the cores;
//   4. the DataLoader workers, from the loader's measured time per batch against the step
//      (tune-loader.ts);
//   5. with several ranks, the DDP bucket size, from a trial on that many processes
//      (tune-buckets.ts).
// A setting the run names (--optimizer-impl, --workers, --bucket-cap-mb, OMP_NUM_THREADS)
// is kept, not tuned. Each step candidate trains the same steps from the same seed on one
// real batch; candidates alternate in rounds so that drift on a shared machine favours
// none; the fastest median wins. The choice is written to a file that later runs reuse
// when the model, data, machine, ranks and threads match. What is tuned keeps the results
// within the untuned run's tolerance: channels-last changes only the memory layout, bf16
// autocast is the tested AMP path, the fused optimizer is PyTorch's fused=True (its own
// last-bit rounding, tested against PyTorch's), threads and loader workers change no
// number, and bucket size only the grouping of the all-reduce.

import { existsSync, readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { dirname } from 'node:path';
import { autocast } from '../amp/index.ts';
import * as t from '../core/index.ts';
import type * as data from '../data/index.ts';
import { TsddpError } from '../errors/index.ts';
import { ensureSafeDir, writeFileAtomicSync } from '../files/index.ts';
import { cpuFlags, cpuModel, readCpuinfo } from '../host/machine.ts';
import { buildModel, buildOptimizer } from './build.ts';
import { OPTIMIZER_IMPLS, OPTIONS, type TrainConfig } from './config.ts';
import { buildDatasets, buildLoaders, type DataSetup, epochBatches, prepareImages } from './data.ts';
import { type RunPlan, withOptions } from './plan.ts';
import type { Placement } from './process-group.ts';
import { type BucketMeasurement, bucketTrial, bucketTrialUnsupported, chooseBucket } from './tune-buckets.ts';
import { chooseWorkers, type LoaderMeasurement, timeLoader, workerCandidates } from './tune-loader.ts';

export interface TuneCandidate {
  channelsLast: boolean;
  amp: 'off' | 'bf16';
}

export interface TuneMeasurement extends TuneCandidate {
  /** Median training step (zero grads, forward, loss, backward, optimizer step), ms. */
  msPerStep: number;
  imgPerS: number;
}

/** The optimizer implementations --tune compares (on the fastest format and dtype). */
export type TunedOptimizerImpl = 'foreach' | 'fused';

export interface OptimizerMeasurement {
  optimizerImpl: TunedOptimizerImpl;
  msPerStep: number;
  imgPerS: number;
}

export interface ThreadsMeasurement {
  threads: number;
  msPerStep: number;
}

/**
 * What the run trains with. optimizerImpl is the run's own when it was given; threads,
 * workers and bucketCapMb are absent when they were not tuned (given, or not applicable).
 */
export interface TuneChoice extends TuneCandidate {
  optimizerImpl: TrainConfig['optimizerImpl'];
  threads?: number;
  workers?: number;
  bucketCapMb?: number;
}

/** What a tuned choice depends on; a saved choice is reused only when all of it matches. */
export interface TuneKey {
  model: string;
  optimizer: string;
  dataset: string;
  stem: string;
  imageSize: number | null;
  batchSize: number;
  widthMultiplier: number;
  device: string;
  cpu: string;
  /** The threads each rank may use (its share of the cores, or OMP_NUM_THREADS). */
  threads: number;
  /** Ranks on this machine (the bucket trial's world). */
  ranks: number;
}

export interface TuneResult {
  version: 3;
  key: TuneKey;
  choice: TuneChoice;
  measured: TuneMeasurement[];
  /** The optimizer phase; empty when --optimizer-impl was given. */
  optimizers: OptimizerMeasurement[];
  /** The threads phase; empty when the rank has one core or OMP_NUM_THREADS was set. */
  threads: ThreadsMeasurement[];
  /** The loader phase; empty when --workers was given. */
  loaders: LoaderMeasurement[];
  /** The bucket phase; empty with one rank, --bucket-cap-mb given, or a model it cannot run. */
  buckets: BucketMeasurement[];
  /** Why bf16 was or was not tried. */
  bf16: string;
  /** One line per phase after the first: what was chosen or why it was not tuned. */
  notes: string[];
  date: string;
}

/** Raised for a tune file that cannot be read or does not fit this run. */
export class TuneError extends TsddpError {
  override name = 'TuneError';
  readonly code = 'TUNE';
}

/** Whether this machine executes bf16 natively: a CUDA device, or a CPU with AVX512-BF16 or AMX. */
export function nativeBf16(deviceType: 'cpu' | 'cuda', cpuinfo?: string): { yes: boolean; why: string } {
  if (deviceType === 'cuda') return { yes: true, why: 'a CUDA device' };
  const text = cpuinfo ?? readCpuinfo();
  if (text === null) return { yes: false, why: 'no /proc/cpuinfo to read the CPU flags from' };
  const flags = cpuFlags(text);
  const has = ['avx512_bf16', 'amx_bf16'].filter((f) => flags.has(f));
  return has.length > 0
    ? { yes: true, why: `the CPU reports ${has.join(' and ')}` }
    : {
        yes: false,
        why: 'the CPU reports neither avx512_bf16 nor amx_bf16 (bf16 would be emulated, slower than fp32)',
      };
}

export function tuneKey(plan: RunPlan, deviceType: 'cpu' | 'cuda', ranks = 1): TuneKey {
  const { model, options } = plan;
  return {
    model: model.arch,
    optimizer: plan.optim.name,
    dataset: plan.data.dataset,
    stem: model.arch.startsWith('resnet') ? model.stem : 'none',
    imageSize: options.imageSize ?? null,
    batchSize: plan.data.batchSize,
    widthMultiplier: model.widthMultiplier,
    device: deviceType,
    cpu: cpuModel(),
    threads: t.getNumThreads(),
    ranks,
  };
}

const sameKey = (a: TuneKey, b: TuneKey) => (Object.keys(a) as (keyof TuneKey)[]).every((k) => a[k] === b[k]);

/** A saved tune result for this run, or null when the file is missing or was made for another run. */
export function readTuneFile(file: string, key: TuneKey): TuneResult | null {
  if (!existsSync(file)) return null;
  let r: TuneResult;
  try {
    r = JSON.parse(readFileSync(file, 'utf8')) as TuneResult;
  } catch (e) {
    throw new TuneError(
      `tune file ${file} is not valid JSON (${(e as Error).message}): delete it to tune again`,
    );
  }
  if (
    r?.version !== 3 ||
    typeof r.key !== 'object' ||
    r.key === null ||
    typeof r.choice?.channelsLast !== 'boolean' ||
    !['off', 'bf16'].includes(r.choice?.amp) ||
    !(OPTIMIZER_IMPLS as readonly string[]).includes(r.choice?.optimizerImpl)
  )
    throw new TuneError(`tune file ${file} is not a tsddp tune result (version 3): delete it to tune again`);
  checkTunedBounds(file, r.choice);
  return sameKey(r.key, key) ? r : null;
}

/** The tuned settings a run takes from the file without parsing its config again. */
const TUNED_OPTIONS = ['threads', 'workers', 'bucketCapMb'] as const;

/**
 * Holds the file's tuned settings to the bounds of their options (config.ts), so that an
 * edited or damaged file (workers: 100000) is refused by name instead of hanging the run.
 */
function checkTunedBounds(file: string, choice: TuneChoice): void {
  for (const name of TUNED_OPTIONS) {
    const value: unknown = choice[name];
    if (value === undefined) continue; // not tuned
    if (!OPTIONS[name].schema.safeParse(value).success)
      throw new TuneError(
        `tune file ${file}: choice.${name} is ${JSON.stringify(value)}; allowed: ${OPTIONS[name].allowed}: delete it to tune again`,
      );
  }
}

/** Writes the result whole or not at all (a temporary file renamed into place). */
export function writeTuneFile(file: string, r: TuneResult): void {
  ensureSafeDir(dirname(file), "the tune file's folder");
  writeFileAtomicSync(file, `${JSON.stringify(r, null, 2)}\n`);
}

export interface TuneOptions {
  /** Timed steps per candidate and round (default 3), after one untimed step. */
  steps?: number;
  /** Rounds over the candidates (default 2). */
  rounds?: number;
  /** Ranks the run will have on this machine (default 1): with more, bucket sizes are tried. */
  ranks?: number;
  /** Options the run names (TrainArgs.given): those among optimizerImpl, workers, bucketCapMb are not tuned. */
  given?: readonly string[];
  /** The threads were set by the user (OMP_NUM_THREADS): not tuned. */
  threadsGiven?: boolean;
  log?: (line: string) => void;
}

/** Measures every candidate on this machine with the run's model and a batch of its data. */
export async function tune(plan: RunPlan, opts: TuneOptions = {}): Promise<TuneResult> {
  const tuner = await Tuner.start(plan, opts);
  try {
    tuner.formats();
    if (plan.optim.impl === 'auto') tuner.optimizer(); // else the run names one
    tuner.threads();
  } finally {
    tuner.freeBatch();
  }
  await tuner.workers();
  await tuner.buckets();
  return tuner.result();
}

/**
 * One tuning run, step by step (each the fastest of its candidates, timed in alternating
 * rounds): memory format and autocast dtype, the optimizer implementation, threads, loader
 * workers, DDP bucket size. `choice` and `stepMs` carry each step's winner to the next.
 */
class Tuner {
  readonly choice: TuneChoice;
  readonly notes: string[] = [];
  private measured: TuneMeasurement[] = [];
  private readonly optimizers: OptimizerMeasurement[] = [];
  private readonly threadsMeasured: ThreadsMeasurement[] = [];
  private loadersMeasured: LoaderMeasurement[] = [];
  private bucketsMeasured: BucketMeasurement[] = [];
  /** The median ms of a training step with the choice so far. */
  private stepMs = Number.NaN;
  private readonly rounds: number;
  private readonly ranks: number;
  private readonly given: Set<string>;
  private readonly log: (line: string) => void;

  private constructor(
    private readonly plan: RunPlan,
    private readonly opts: TuneOptions,
    private readonly setup: DataSetup,
    private readonly on: Placement,
    private readonly bf16: { yes: boolean; why: string },
    /** One batch of the run's data: its images (uint8) and labels (on the device). */
    private readonly images: t.Tensor,
    private readonly y: t.Tensor,
  ) {
    this.choice = { channelsLast: false, amp: 'off', optimizerImpl: plan.optim.impl };
    this.rounds = opts.rounds ?? 2;
    this.ranks = opts.ranks ?? 1;
    this.given = new Set(opts.given ?? []);
    this.log = opts.log ?? (() => {});
  }

  /** The device, and one real batch of the run's data through its own loader (no worker threads). */
  static async start(plan: RunPlan, opts: TuneOptions): Promise<Tuner> {
    const useCuda = t.cuda.isAvailable();
    const on: Placement = {
      device: useCuda ? 'cuda:0' : 'cpu',
      deviceType: useCuda ? 'cuda' : 'cpu',
      ampDtype: null,
    };
    const setup = await buildDatasets(plan);
    const inline = { ...plan, data: { ...plan.data, workers: 0, persistentWorkers: false } };
    const loaders = buildLoaders(inline, setup, 0, 1);
    let batch: data.Batch;
    try {
      const first = await epochBatches(loaders, 0, { batch: 0 }).next();
      if (first.done) throw new TuneError('the training set has no full batch to tune on');
      batch = first.value;
    } finally {
      await loaders.train.close();
      await loaders.val.close();
    }
    const images = batch.image.keep();
    const y = batch.label.to(on.device).keep();
    return new Tuner(plan, opts, setup, on, nativeBf16(on.deviceType), images, y);
  }

  freeBatch(): void {
    this.images.dispose();
    this.y.dispose();
  }

  /** Images per step. */
  private get n(): number {
    return this.images.shape[0];
  }

  /** ms of each timed step of `cand`, with the run's options changed by `patch`. */
  private time(patch: Partial<TrainConfig>, cand: TuneCandidate): number[] {
    const plan = withOptions(this.plan, patch);
    return measure(plan, cand, this.setup, this.on, this.images, this.y, this.opts.steps ?? 3);
  }

  /** The choice so far, as options. */
  private tuned(): Partial<TrainConfig> {
    return { channelsLast: this.choice.channelsLast, optimizerImpl: this.choice.optimizerImpl };
  }

  /** Rounds over `options`, each timed by `run`; the median ms of each. */
  private alternate<K>(options: K[], run: (k: K) => number[], label: (k: K) => string): number[] {
    const times = options.map(() => [] as number[]);
    for (let r = 0; r < this.rounds; r++)
      options.forEach((k, i) => {
        const ms = run(k);
        times[i].push(...ms);
        this.log(`round ${r + 1}/${this.rounds}: ${label(k)}: ${median(ms).toFixed(1)} ms/step`);
      });
    return times.map(median);
  }

  /** 1. Memory format and autocast dtype (bf16 only where the hardware has it). */
  formats(): void {
    const candidates: TuneCandidate[] = [];
    for (const amp of this.bf16.yes ? (['off', 'bf16'] as const) : (['off'] as const))
      for (const channelsLast of [false, true]) candidates.push({ channelsLast, amp });
    const ms = this.alternate(candidates, (k) => this.time({ channelsLast: k.channelsLast }, k), describe);
    this.measured = candidates.map((k, i) => ({
      ...k,
      msPerStep: round(ms[i]),
      imgPerS: round((1000 * this.n) / ms[i]),
    }));
    const best = this.measured.reduce((a, b) => (b.msPerStep < a.msPerStep ? b : a));
    this.choice.channelsLast = best.channelsLast;
    this.choice.amp = best.amp;
    this.stepMs = best.msPerStep;
  }

  /** 2. The optimizer implementation on the winner: multi-tensor or fused. */
  optimizer(): void {
    const impls: TunedOptimizerImpl[] = ['foreach', 'fused'];
    const ms = this.alternate(
      impls,
      (impl) => this.time({ ...this.tuned(), optimizerImpl: impl }, this.choice),
      (impl) => `${describe(this.choice)}, ${impl} ${this.plan.optim.name}`,
    );
    this.optimizers.push(
      ...impls.map((impl, i) => ({
        optimizerImpl: impl,
        msPerStep: round(ms[i]),
        imgPerS: round((1000 * this.n) / ms[i]),
      })),
    );
    const fastest = this.optimizers.reduce((a, b) => (b.msPerStep < a.msPerStep ? b : a));
    this.choice.optimizerImpl = fastest.optimizerImpl;
    this.stepMs = fastest.msPerStep;
  }

  /** 3. Threads: the rank's share, or half of it when that is at least 2% faster. */
  threads(): void {
    const share = t.getNumThreads();
    if (this.opts.threadsGiven)
      return void this.notes.push(`threads: ${share}, as OMP_NUM_THREADS sets (not tuned)`);
    if (share === 1)
      return void this.notes.push("threads: 1, the rank's share of the cores (nothing to tune)");
    const counts = [share, Math.max(1, Math.floor(share / 2))];
    const ms = this.alternate(
      counts,
      (k) => {
        t.setNumThreads(k);
        try {
          return this.time(this.tuned(), this.choice);
        } finally {
          t.setNumThreads(share);
        }
      },
      (k) => `${describe(this.choice)}, ${k} thread(s)`,
    );
    this.threadsMeasured.push(...counts.map((k, i) => ({ threads: k, msPerStep: round(ms[i]) })));
    this.choice.threads = ms[1] * 1.02 < ms[0] ? counts[1] : share;
    this.stepMs = ms[this.choice.threads === share ? 0 : 1];
    this.notes.push(`threads: ${this.choice.threads} per rank (fewer only when at least 2% faster)`);
  }

  /** 4. DataLoader workers, from the loader's time per batch against the step. */
  async workers(): Promise<void> {
    if (this.given.has('workers'))
      return void this.notes.push(`workers: ${this.plan.data.workers}, as given (not tuned)`);
    for (const workers of workerCandidates())
      this.loadersMeasured.push(await timeLoader(this.plan, this.setup, this.ranks, workers, 8));
    const w = chooseWorkers(this.loadersMeasured, this.stepMs);
    this.choice.workers = w.workers;
    this.notes.push(`workers: ${w.workers} (${w.why})`);
    for (const m of this.loadersMeasured) m.msPerBatch = round(m.msPerBatch);
  }

  /** 5. DDP bucket size, on as many processes as the run has ranks here. */
  async buckets(): Promise<void> {
    const { plan } = this;
    const { bucketCapMb } = plan.ddp;
    const unsupported = bucketTrialUnsupported(plan);
    if (this.ranks === 1)
      return void this.notes.push('bucket size: one rank, no gradient all-reduce (not tuned)');
    if (this.given.has('bucketCapMb'))
      return void this.notes.push(`bucket size: ${bucketCapMb} MiB, as given (not tuned)`);
    if (unsupported !== null)
      return void this.notes.push(`bucket size: ${bucketCapMb} MiB (not tuned: ${unsupported})`);
    const tuned = withOptions(plan, { ...this.tuned(), amp: this.choice.amp });
    this.bucketsMeasured = await bucketTrial(tuned, {
      world: this.ranks,
      threads: this.choice.threads ?? t.getNumThreads(),
      numClasses: this.setup.numClasses,
      rounds: this.rounds,
      log: this.log,
    });
    this.choice.bucketCapMb = chooseBucket(this.bucketsMeasured);
    this.notes.push(
      `bucket size: ${this.choice.bucketCapMb} MiB (the fastest of ${this.ranks} processes; PyTorch's 25 MiB kept unless another is 2% faster)`,
    );
  }

  result(): TuneResult {
    return {
      version: 3,
      key: tuneKey(this.plan, this.on.deviceType, this.ranks),
      choice: this.choice,
      measured: this.measured,
      optimizers: this.optimizers,
      threads: this.threadsMeasured,
      loaders: this.loadersMeasured,
      buckets: this.bucketsMeasured,
      bf16: `bf16 ${this.bf16.yes ? 'tried' : 'not tried'}: ${this.bf16.why}`,
      notes: this.notes,
      date: new Date().toISOString(),
    };
  }
}

/** Milliseconds of each timed step of one candidate, on a fresh model from the run's seed. */
function measure(
  plan: RunPlan,
  cand: TuneCandidate,
  setup: DataSetup,
  on: Placement,
  images: t.Tensor,
  y: t.Tensor,
  steps: number,
): number[] {
  const model = buildModel(plan, {}, setup, on);
  const opt = buildOptimizer(model, plan.optim, plan.optim.lr ?? 0.1);
  const x = t
    .tidy(() =>
      prepareImages(images, setup, { augment: false, channelsLast: cand.channelsLast }).to(on.device),
    )
    .keep();
  const ms: number[] = [];
  try {
    for (let s = 0; s < 1 + steps; s++) {
      using _ = t.scope();
      const t0 = performance.now();
      opt.zeroGrad();
      const forward = () => t.crossEntropy(model.forward(x), y);
      const loss =
        cand.amp === 'bf16' ? autocast({ deviceType: on.deviceType, dtype: 'bfloat16' }, forward) : forward();
      loss.backward();
      opt.step();
      loss.item(); // waits for the device
      if (s > 0) ms.push(performance.now() - t0);
    }
  } finally {
    x.dispose();
  }
  return ms;
}

/** e.g. 'channels-last, bf16 autocast'. */
export function describe(k: TuneCandidate): string {
  return `${k.channelsLast ? 'channels-last' : 'channels-first'}, ${k.amp === 'bf16' ? 'bf16 autocast' : 'fp32'}`;
}

/** The lines printed for a result: every candidate's figures, the choice and why. */
export function describeResult(r: TuneResult): string[] {
  const base = r.measured.find((m) => !m.channelsLast && m.amp === 'off');
  const perStep = (ms: number) => ({ ms, img: (1000 * r.key.batchSize) / ms });
  const rows = [
    ...r.measured.map((m) => ({ label: describe(m), ms: m.msPerStep, img: m.imgPerS })),
    ...r.optimizers.map((m) => ({
      label: `${describe(r.choice)}, ${m.optimizerImpl} ${r.key.optimizer}`,
      ms: m.msPerStep,
      img: m.imgPerS,
    })),
    ...r.threads.map((m) => ({
      label: `${describe(r.choice)}, ${m.threads} thread(s)`,
      ...perStep(m.msPerStep),
    })),
  ];
  const width = Math.max(...rows.map((x) => x.label.length));
  const fmt = (x: number | null) => (x === null ? '-' : x.toFixed(1));
  return [
    `tune: ${r.key.model}, batch ${r.key.batchSize}, ${r.key.threads} thread(s) on ${r.key.cpu}; ${r.bf16}`,
    ...rows.map(
      (x) =>
        `  ${x.label.padEnd(width)} ${x.ms.toFixed(1).padStart(8)} ms/step ${x.img.toFixed(1).padStart(8)} img/s` +
        (base ? `  ${(base.msPerStep / x.ms).toFixed(2)}x` : ''),
    ),
    ...r.loaders.map((m) => `  loader, ${m.workers} worker(s): ${fmt(m.msPerBatch)} ms/batch`),
    ...r.buckets.map(
      (m) =>
        `  DDP ${r.key.ranks} ranks, bucket ${m.bucketCapMb} MiB: ${m.imgPerS.toFixed(1)} img/s, ` +
        `all-reduce ${fmt(m.commMs)} ms/batch, ${fmt(m.exposedMs)} ms not overlapped`,
    ),
    `tune: chose ${describe(r.choice)}, optimizer ${r.choice.optimizerImpl} (fastest median step; 1.00x = channels-first fp32)`,
    ...r.notes.map((x) => `tune: ${x}`),
  ];
}

function median(v: number[]): number {
  const s = [...v].sort((a, b) => a - b);
  return s.length === 0 ? Number.NaN : s[Math.floor(s.length / 2)];
}

const round = (x: number) => Math.round(x * 100) / 100;

/** The intra-op threads tsrun gives each of `nproc` workers (launch/options.ts: ompNumThreads). */
export function workerThreads(nproc: number): number {
  return Math.max(1, Math.floor(availableParallelism() / nproc));
}
