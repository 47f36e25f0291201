// `tsddp tune` and `tsddp train --tune`: a short timed trial of the run's own model and
// data on this machine that picks the memory format (channels-first or channels-last) and
// the autocast dtype (fp32, or bf16 where the hardware executes it: CPUs with AVX512-BF16
// or AMX, CUDA GPUs) by measurement, not by rule, then (unless --optimizer-impl is given)
// the optimizer implementation on that winner: the multi-tensor kernels (foreach) or
// libtorch's fused kernel. Each candidate trains the same steps
// from the same seed on one real batch; the candidates alternate in rounds so that drift
// on a shared machine favours none; the fastest median step wins. The choice is written
// to a file that later runs reuse when the model, data shape, machine and threads match.
// What is tuned keeps the results within the untuned run's tolerance: channels-last
// changes only the memory layout, bf16 autocast is the tested AMP path, and the fused
// optimizer is PyTorch's fused=True (its own last-bit rounding, tested against PyTorch's).
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { dirname } from 'node:path';
import { autocast } from '../amp/index.ts';
import { cpuFlags, cpuModel, readCpuinfo } from '../benchmark/machine.ts';
import * as t from '../core/index.ts';
import type * as data from '../data/index.ts';
import { OPTIMIZER_IMPLS, resolveStem, type TrainConfig } from './config.ts';
import { buildDatasets, buildLoaders, epochBatches, prepareImages } from './data.ts';
import { buildModel, buildOptimizer, type Placement } from './setup.ts';

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

/** What the run trains with; optimizerImpl 'auto' when it was not tuned (given, or an older file). */
export interface TuneChoice extends TuneCandidate {
  optimizerImpl: TrainConfig['optimizerImpl'];
}

/** What a tuned choice depends on; a saved choice is reused only when all of it matches. */
export interface TuneKey {
  model: string;
  optimizer: string;
  stem: string;
  imageSize: number | null;
  batchSize: number;
  widthMultiplier: number;
  device: string;
  cpu: string;
  threads: number;
}

export interface TuneResult {
  version: 2;
  key: TuneKey;
  choice: TuneChoice;
  measured: TuneMeasurement[];
  /** The optimizer phase; empty when --optimizer-impl was given. */
  optimizers: OptimizerMeasurement[];
  /** Why bf16 was or was not tried. */
  bf16: string;
  date: string;
}

/** Raised for a tune file that cannot be read or does not fit this run. */
export class TuneError extends Error {
  override name = 'TuneError';
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

export function tuneKey(c: TrainConfig, deviceType: 'cpu' | 'cuda'): TuneKey {
  return {
    model: c.model,
    optimizer: c.optimizer,
    stem: c.model.startsWith('resnet') ? resolveStem(c) : 'none',
    imageSize: c.imageSize ?? null,
    batchSize: c.batchSize,
    widthMultiplier: c.widthMultiplier,
    device: deviceType,
    cpu: cpuModel(),
    threads: t.getNumThreads(),
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
    r?.version !== 2 ||
    typeof r.key !== 'object' ||
    r.key === null ||
    typeof r.choice?.channelsLast !== 'boolean' ||
    !['off', 'bf16'].includes(r.choice?.amp) ||
    !(OPTIMIZER_IMPLS as readonly string[]).includes(r.choice?.optimizerImpl)
  )
    throw new TuneError(`tune file ${file} is not a tsddp tune result (version 2): delete it to tune again`);
  return sameKey(r.key, key) ? r : null;
}

/** Writes the result whole or not at all (a temporary file renamed into place). */
export function writeTuneFile(file: string, r: TuneResult): void {
  mkdirSync(dirname(file), { recursive: true });
  const tmp = `${file}.tmp-${process.pid}`;
  writeFileSync(tmp, `${JSON.stringify(r, null, 2)}\n`);
  renameSync(tmp, file);
}

export interface TuneOptions {
  /** Timed steps per candidate and round (default 3), after one untimed step. */
  steps?: number;
  /** Rounds over the candidates (default 2). */
  rounds?: number;
  log?: (line: string) => void;
}

/** Measures every candidate on this machine with the run's model and a batch of its data. */
export async function tune(c: TrainConfig, opts: TuneOptions = {}): Promise<TuneResult> {
  const steps = opts.steps ?? 3;
  const rounds = opts.rounds ?? 2;
  const log = opts.log ?? (() => {});
  const useCuda = t.cuda.isAvailable();
  const on: Placement = {
    device: useCuda ? 'cuda:0' : 'cpu',
    deviceType: useCuda ? 'cuda' : 'cpu',
    ampDtype: null,
  };
  const bf16 = nativeBf16(on.deviceType);
  const candidates: TuneCandidate[] = [];
  for (const amp of bf16.yes ? (['off', 'bf16'] as const) : (['off'] as const))
    for (const channelsLast of [false, true]) candidates.push({ channelsLast, amp });

  // One real batch of the run's data, through the run's own loader (no worker threads).
  const setup = await buildDatasets(c);
  const loaders = buildLoaders({ ...c, workers: 0, persistentWorkers: false }, setup, 0, 1);
  let batch: data.Batch;
  try {
    const first = await epochBatches(loaders, 0, { batch: 0 }).next();
    if (first.done) throw new TuneError('the training set has no full batch to tune on');
    batch = first.value;
  } finally {
    await loaders.train.close();
  }
  const images = batch.image.keep();
  const y = batch.label.to(on.device).keep();
  const n = images.shape[0];

  const times = new Map<TuneCandidate, number[]>(candidates.map((k) => [k, []]));
  try {
    for (let r = 0; r < rounds; r++) {
      for (const cand of candidates) {
        const ms = measure({ ...c, channelsLast: cand.channelsLast }, cand, setup, on, images, y, steps);
        times.get(cand)?.push(...ms);
        log(`round ${r + 1}/${rounds}: ${describe(cand)}: ${median(ms).toFixed(1)} ms/step`);
      }
    }
  } catch (e) {
    images.dispose();
    y.dispose();
    throw e;
  }
  const measured = candidates.map((k) => {
    const ms = median(times.get(k) ?? []);
    return { ...k, msPerStep: round(ms), imgPerS: round((1000 * n) / ms) };
  });
  const best = measured.reduce((a, b) => (b.msPerStep < a.msPerStep ? b : a));
  const winner: TuneCandidate = { channelsLast: best.channelsLast, amp: best.amp };

  // The optimizer on the winner, unless the run names one.
  const optimizers: OptimizerMeasurement[] = [];
  if (c.optimizerImpl === 'auto') {
    const impls: TunedOptimizerImpl[] = ['foreach', 'fused'];
    const optTimes = new Map<TunedOptimizerImpl, number[]>(impls.map((k) => [k, []]));
    try {
      for (let r = 0; r < rounds; r++) {
        for (const impl of impls) {
          const cfg = { ...c, channelsLast: winner.channelsLast, optimizerImpl: impl };
          const ms = measure(cfg, winner, setup, on, images, y, steps);
          optTimes.get(impl)?.push(...ms);
          log(
            `round ${r + 1}/${rounds}: ${describe(winner)}, ${impl} ${c.optimizer}: ${median(ms).toFixed(1)} ms/step`,
          );
        }
      }
    } finally {
      images.dispose();
      y.dispose();
    }
    for (const impl of impls) {
      const ms = median(optTimes.get(impl) ?? []);
      optimizers.push({ optimizerImpl: impl, msPerStep: round(ms), imgPerS: round((1000 * n) / ms) });
    }
  } else {
    images.dispose();
    y.dispose();
  }
  const fastestOpt = optimizers.reduce<OptimizerMeasurement | null>(
    (a, b) => (a === null || b.msPerStep < a.msPerStep ? b : a),
    null,
  );
  return {
    version: 2,
    key: tuneKey(c, on.deviceType),
    choice: { ...winner, optimizerImpl: fastestOpt?.optimizerImpl ?? c.optimizerImpl },
    measured,
    optimizers,
    bf16: `bf16 ${bf16.yes ? 'tried' : 'not tried'}: ${bf16.why}`,
    date: new Date().toISOString(),
  };
}

/** Milliseconds of each timed step of one candidate, on a fresh model from the run's seed. */
function measure(
  c: TrainConfig,
  cand: TuneCandidate,
  setup: Awaited<ReturnType<typeof buildDatasets>>,
  on: Placement,
  images: t.Tensor,
  y: t.Tensor,
  steps: number,
): number[] {
  const model = buildModel(c, {}, setup, on);
  const opt = buildOptimizer(model, c, typeof c.lr === 'number' ? c.lr : 0.1);
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
  const rows = [
    ...r.measured.map((m) => ({ label: describe(m), ms: m.msPerStep, img: m.imgPerS })),
    ...r.optimizers.map((m) => ({
      label: `${describe(r.choice)}, ${m.optimizerImpl} ${r.key.optimizer}`,
      ms: m.msPerStep,
      img: m.imgPerS,
    })),
  ];
  const width = Math.max(...rows.map((x) => x.label.length));
  return [
    `tune: ${r.key.model}, batch ${r.key.batchSize}, ${r.key.threads} thread(s) on ${r.key.cpu}; ${r.bf16}`,
    ...rows.map(
      (x) =>
        `  ${x.label.padEnd(width)} ${x.ms.toFixed(1).padStart(8)} ms/step ${x.img.toFixed(1).padStart(8)} img/s` +
        (base ? `  ${(base.msPerStep / x.ms).toFixed(2)}x` : ''),
    ),
    `tune: chose ${describe(r.choice)}, optimizer ${r.choice.optimizerImpl} (fastest median step; 1.00x = channels-first fp32)`,
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
