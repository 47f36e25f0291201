// `tsddp bench` options: the raw strings commander hands over, validated into a plan.
// Every bad value is a BenchOptionError naming the option.
import { availableParallelism } from 'node:os';
import {
  BenchOptionError,
  MODELS,
  type ModelSpec,
  type PlanOptions,
  SCENARIOS,
  type ScenarioName,
} from './cases.ts';

export interface RawBenchOptions {
  model?: string;
  stem?: string;
  widthMultiplier?: string;
  imageSize?: string;
  batchSize?: string;
  scenarios?: string;
  maxWorld?: string;
  cores?: string;
  bucketCaps?: string;
  warmup?: string;
  steps?: string;
  repeats?: string;
  reference?: boolean;
  python?: string;
  out?: string;
}

export interface BenchOptions extends PlanOptions {
  model: ModelSpec;
  scenarios: ScenarioName[];
  warmup: number;
  steps: number;
  repeats: number;
  reference: boolean;
  python?: string;
  out: string;
}

export const DEFAULTS = {
  model: 'resnet50',
  imageSize: '64',
  batchSize: '8',
  maxWorld: '2',
  bucketCaps: '1,5,25,50,100',
  warmup: '2',
  steps: '4',
  repeats: '3',
  out: 'runs/bench',
};

function int(name: string, raw: string, min: number): number {
  const n = Number(raw);
  if (!(raw.trim() !== '' && Number.isInteger(n) && n >= min)) {
    throw new BenchOptionError(`--${name} ${raw}: expected an integer >= ${min}`);
  }
  return n;
}

function positive(name: string, raw: string): number {
  const n = Number(raw);
  if (!(raw.trim() !== '' && Number.isFinite(n) && n > 0)) {
    throw new BenchOptionError(`--${name} ${raw}: expected a number > 0`);
  }
  return n;
}

function list(raw: string): string[] {
  return raw
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
}

/**
 * `gpus`: the CUDA devices of this machine. With GPUs the bench runs one process per GPU
 * (NCCL), so the world defaults to, and cannot exceed, their number.
 */
export function parseBenchOptions(o: RawBenchOptions, gpus = 0): BenchOptions {
  // 'resnet18-cifar' is shorthand for --model resnet18 --stem cifar.
  const rawModel = o.model ?? DEFAULTS.model;
  const [name, suffix] = rawModel.endsWith('-cifar')
    ? [rawModel.slice(0, -6), 'cifar']
    : [rawModel, undefined];
  if (!(MODELS as readonly string[]).includes(name)) {
    throw new BenchOptionError(
      `--model ${rawModel}: expected one of ${MODELS.join(', ')} (optionally with -cifar)`,
    );
  }
  const stem = o.stem ?? suffix ?? 'imagenet';
  if (stem !== 'cifar' && stem !== 'imagenet') {
    throw new BenchOptionError(`--stem ${stem}: expected cifar or imagenet`);
  }
  const scenarios = list(o.scenarios ?? SCENARIOS.join(','));
  const unknown = scenarios.filter((s) => !(SCENARIOS as readonly string[]).includes(s));
  if (unknown.length > 0 || scenarios.length === 0) {
    throw new BenchOptionError(
      `--scenarios ${o.scenarios}: unknown scenario ${unknown.join(', ') || '(none given)'}; expected some of ${SCENARIOS.join(', ')}`,
    );
  }
  const caps = list(o.bucketCaps ?? DEFAULTS.bucketCaps).map((c) => positive('bucket-caps', c));
  if (caps.length === 0) throw new BenchOptionError('--bucket-caps: expected a list such as 1,5,25');
  const model: ModelSpec = {
    model: name as ModelSpec['model'],
    stem,
    widthMultiplier: positive('width-multiplier', o.widthMultiplier ?? '1'),
    size: int('image-size', o.imageSize ?? DEFAULTS.imageSize, 8),
    batch: int('batch-size', o.batchSize ?? DEFAULTS.batchSize, 1),
  };
  const maxWorld = int('max-world', o.maxWorld ?? (gpus > 0 ? String(gpus) : DEFAULTS.maxWorld), 1);
  if (gpus > 0 && maxWorld > gpus) {
    throw new BenchOptionError(
      `--max-world ${maxWorld}: this machine has ${gpus} CUDA device(s), and the bench runs one process per GPU`,
    );
  }
  return {
    model,
    scenarios: [...new Set(scenarios)] as ScenarioName[],
    cores: int('cores', o.cores ?? String(availableParallelism()), 1),
    maxWorld,
    bucketCaps: caps,
    // At least one warm-up step: the first iteration runs on one bucket and rebuilds them.
    warmup: int('warmup', o.warmup ?? DEFAULTS.warmup, 1),
    steps: int('steps', o.steps ?? DEFAULTS.steps, 1),
    repeats: int('repeats', o.repeats ?? DEFAULTS.repeats, 1),
    reference: o.reference ?? false,
    python: o.python,
    out: o.out ?? DEFAULTS.out,
  };
}
