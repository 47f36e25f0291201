// --tune's bucket trial: DDP with the run's model, batch and tuned format/dtype on `world`
// local processes (the DDP benchmark's workers, src/benchmark/session-ts.ts, on a
// synthetic batch), once per bucket size, the sizes taking turns over rounds. Each size
// is reported with its throughput and DDP's own measure of the all-reduce: its span per
// batch, the part overlapped with backward and the part backward waited for. Bucket size
// changes only how gradients are grouped for the all-reduce: with two ranks the sums are
// the same numbers; with more, Gloo's ring may add them in another order (last-bit
// differences, as between any two DDP layouts).
import { type BenchCase, type BenchModelName, MODELS, VIT_MODELS } from '../benchmark/cases.ts';
import { runBench } from '../benchmark/runner.ts';
import { imageSizeOf, resolveStem, type TrainConfig } from './config.ts';

export interface BucketMeasurement {
  bucketCapMb: number;
  imgPerS: number;
  /** DDP's Logger, medians over the timed iterations of all ranks, ms per batch. */
  commMs: number | null;
  exposedMs: number | null;
}

/** The sizes tried, MiB: around PyTorch's default 25 and the 50 often tried next. */
export const BUCKET_CANDIDATES = [5, 10, 25, 50, 100];
/** PyTorch's default is kept unless another size is this much faster (the trial's noise). */
const MARGIN = 1.02;

/** Why the run's model cannot be timed by the bucket trial, or null when it can. */
export function bucketTrialUnsupported(c: TrainConfig): string | null {
  const models: readonly string[] = [...MODELS, ...VIT_MODELS];
  if (!models.includes(c.model)) return `the DDP benchmark does not build ${c.model}`;
  if (c.commHook === 'powerSGD') return 'the DDP benchmark does not run the powerSGD hook';
  return null;
}

export interface BucketTrialOptions {
  world: number;
  threads: number;
  channelsLast: boolean;
  amp: 'off' | 'bf16';
  numClasses: number;
  rounds: number;
  log: (line: string) => void;
}

export async function bucketTrial(c: TrainConfig, o: BucketTrialOptions): Promise<BucketMeasurement[]> {
  const base: Omit<BenchCase, 'bucketCapMb'> = {
    model: c.model as BenchModelName,
    stem: c.model.startsWith('vit') ? 'cifar' : resolveStem(c),
    widthMultiplier: c.widthMultiplier,
    size: imageSizeOf(c),
    batch: c.batchSize,
    numClasses: o.numClasses,
    world: o.world,
    threads: o.threads,
    amp: o.amp,
    accum: c.gradAccum,
    hook: c.commHook === 'fp16' || c.commHook === 'bf16' ? c.commHook : 'none',
    channelsLast: c.model.startsWith('vit') ? false : o.channelsLast, // a ViT's patches see no layout
  };
  const cases = BUCKET_CANDIDATES.map((bucketCapMb) => ({ ...base, bucketCapMb }));
  const plan = {
    name: 'bucket' as const,
    title: 'bucket sizes',
    rows: cases.map((k) => ({ label: '', x: 0, case: k })),
  };
  const r = await runBench([plan], {
    warmup: 2,
    steps: 4,
    repeats: o.rounds,
    reference: null,
    log: (line) => o.log(`bucket trial ${line}`),
  });
  return Object.values(r.cases)
    .map((k) => ({
      bucketCapMb: k.case.bucketCapMb,
      imgPerS: round(k.tsddp.imgPerS),
      commMs: k.tsddp.commMs === null ? null : round(k.tsddp.commMs),
      exposedMs: k.tsddp.exposedMs === null ? null : round(k.tsddp.exposedMs),
    }))
    .sort((a, b) => a.bucketCapMb - b.bucketCapMb);
}

/** The fastest size, but PyTorch's 25 MiB unless the fastest beats it by 2%. */
export function chooseBucket(measured: BucketMeasurement[]): number {
  const fastest = measured.reduce((a, b) => (b.imgPerS > a.imgPerS ? b : a));
  const dflt = measured.find((m) => m.bucketCapMb === 25);
  return dflt !== undefined && fastest.imgPerS < MARGIN * dflt.imgPerS ? 25 : fastest.bucketCapMb;
}

const round = (x: number) => Math.round(x * 100) / 100;
