// --tune's bucket trial: DDP with the run's own model, optimizer, batch and tuned format and
// dtype on `world` local processes (bucket-trial-worker.ts, on a synthetic batch), once
// per bucket size, the sizes taking turns over rounds. Each size is reported with its
// throughput and DDP's own measure of the all-reduce: its span per batch, and the part
// backward waited for (not overlapped). Bucket size changes only how gradients are grouped
// for the all-reduce: with two ranks the sums are the same numbers; with more, Gloo's ring
// may add them in another order (last-bit differences, as between any two DDP layouts).
import { fileURLToPath } from 'node:url';
import { isCompiled, siblingModule } from '../core/module-url.ts';
import { Gang } from '../host/gang.ts';
import type { BucketSetup, BucketStep } from './ddp-trial.ts';
import { imagesPerRankStep, type RunPlan } from './plan.ts';

export interface BucketMeasurement {
  bucketCapMb: number;
  imgPerS: number;
  /** DDP's Logger, medians over the timed steps of all ranks, ms per batch. */
  commMs: number | null;
  exposedMs: number | null;
}

/** The sizes tried, MiB: around PyTorch's default 25 and the 50 often tried next. */
export const BUCKET_CANDIDATES = [5, 10, 25, 50, 100];
/** PyTorch's default is kept unless another size is this much faster (the trial's noise). */
const MARGIN = 1.02;
/** Untimed steps after each setup (the first one runs on one bucket and rebuilds them). */
const WARMUP = 2;
const STEPS = 4;

const WORKER = fileURLToPath(siblingModule('./bucket-trial-worker.ts', import.meta.url));
/** Node flags for the worker: the sources need tsx, the compiled package does not. */
const WORKER_LOADER = isCompiled(import.meta.url) ? [] : ['--import', import.meta.resolve('tsx')];

/** Why the run cannot be timed by the bucket trial, or null when it can. */
export function bucketTrialUnsupported(plan: RunPlan): string | null {
  if (plan.ddp.commHook === 'powerSGD')
    return "the trial's few steps run before PowerSGD starts compressing (--powersgd-start-iter)";
  return null;
}

export interface BucketTrialOptions {
  world: number;
  threads: number;
  numClasses: number;
  rounds: number;
  log: (line: string) => void;
}

/** Measures every candidate size on `world` processes, `rounds` times each, in turns. */
export async function bucketTrial(plan: RunPlan, o: BucketTrialOptions): Promise<BucketMeasurement[]> {
  const env = {
    ...process.env,
    OMP_NUM_THREADS: String(o.threads),
    TORCH_CPP_LOG_LEVEL: process.env.TORCH_CPP_LOG_LEVEL ?? 'ERROR',
  };
  const args = [...WORKER_LOADER, WORKER];
  const gang = await Gang.start({
    name: 'bucket trial',
    command: process.execPath,
    args,
    world: o.world,
    env,
  });
  const runs = new Map<number, { imgPerS: number[]; steps: BucketStep[] }>();
  try {
    for (let round = 0; round < o.rounds; round++) {
      for (const bucketCapMb of BUCKET_CANDIDATES) {
        const ranks = await timeSize(gang, { plan, bucketCapMb, numClasses: o.numClasses });
        const slowest = Math.max(...ranks.map((steps) => steps.reduce((s, x) => s + x.stepMs, 0)));
        const images = o.world * imagesPerRankStep(plan) * STEPS;
        const run = runs.get(bucketCapMb) ?? { imgPerS: [], steps: [] };
        run.imgPerS.push((1000 * images) / slowest);
        run.steps.push(...ranks.flat());
        runs.set(bucketCapMb, run);
        const last = run.imgPerS[run.imgPerS.length - 1];
        o.log(`bucket trial round ${round + 1}/${o.rounds}: ${bucketCapMb} MiB: ${last.toFixed(2)} img/s`);
      }
    }
  } finally {
    await gang.close().catch(() => {});
  }
  return [...runs.entries()].map(([bucketCapMb, r]) => {
    // Iterations 1..WARMUP are the warm-up's (the first one runs on a single bucket).
    const comm = r.steps.flatMap((s) => (s.comm !== null && s.comm.iteration > WARMUP ? [s.comm] : []));
    return {
      bucketCapMb,
      imgPerS: round(median(r.imgPerS)),
      commMs: comm.length === 0 ? null : round(median(comm.map((c) => c.commMs))),
      exposedMs: comm.length === 0 ? null : round(median(comm.map((c) => c.commMs - c.overlapMs))),
    };
  });
}

/** One size on every rank: build, warm up, time; each rank's timed steps. */
async function timeSize(gang: Gang, setup: BucketSetup): Promise<BucketStep[][]> {
  await gang.request({ cmd: 'setup', setup });
  try {
    await gang.request({ cmd: 'steps', n: WARMUP });
    const answers = await gang.request<{ steps: BucketStep[] }>({ cmd: 'steps', n: STEPS });
    return answers.map((a) => a.steps);
  } finally {
    await gang.request({ cmd: 'close' }).catch(() => {});
  }
}

/** The fastest size, but PyTorch's 25 MiB unless the fastest beats it by 2%. */
export function chooseBucket(measured: BucketMeasurement[]): number {
  const fastest = measured.reduce((a, b) => (b.imgPerS > a.imgPerS ? b : a));
  const dflt = measured.find((m) => m.bucketCapMb === 25);
  return dflt !== undefined && fastest.imgPerS < MARGIN * dflt.imgPerS ? 25 : fastest.bucketCapMb;
}

function median(v: number[]): number {
  const s = [...v].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

const round = (x: number) => Math.round(x * 100) / 100;
