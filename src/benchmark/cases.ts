// What one measurement of the DDP benchmark is (a BenchCase), and the scenarios that
// vary one setting of a base case: scaling over world sizes, the bucket-size sweep,
// AMP, gradient accumulation, comm hooks and channels-last.
import { TsddpError } from '../errors/index.ts';

/** The models `tsddp bench --model` offers. */
export const MODELS = ['resnet18', 'resnet34', 'resnet50', 'resnet101', 'resnet152'] as const;
export type ResNetName = (typeof MODELS)[number];
/**
 * Also measurable, by bench/ddp.ts (not offered by `tsddp bench`: their PyTorch side,
 * bench/reference/transformer_models.py, does not ship): tsddp's vitTiny (32 px, 4 px
 * patches; the 'cifar' stem setting means 10 classes) and torchvision's vit_b_16.
 */
export const VIT_MODELS = ['vit_tiny', 'vit_b_16'] as const;
/**
 * And, for bench/network.ts, nanoGPT's baby GPT (6 layers, 6 heads, width 384, its 65
 * characters, no biases or dropout; `size` is the block, `batch` the sequences): tsddp's
 * models.gpt against bench/reference/transformer_models.py's gpt_small.
 */
export const GPT_MODELS = ['gpt_small'] as const;
export type BenchModelName = ResNetName | (typeof VIT_MODELS)[number] | (typeof GPT_MODELS)[number];
export const HOOKS = ['none', 'allreduce', 'fp16', 'bf16', 'powerSGD'] as const;
export type BenchHook = (typeof HOOKS)[number];
export const SCENARIOS = ['scaling', 'bucket', 'amp', 'accum', 'hooks', 'channels-last'] as const;
export type ScenarioName = (typeof SCENARIOS)[number];

/** The model and data of a benchmark: the same on every rank and on both sides. */
export interface ModelSpec {
  model: BenchModelName;
  /** 'cifar': 3x3 stride-1 stem and 10 classes; 'imagenet': the 7x7 stem and 1000 classes. */
  stem: 'cifar' | 'imagenet';
  widthMultiplier: number;
  /** Height and width of the square synthetic images. */
  size: number;
  /** Images per process per micro-batch. */
  batch: number;
  /** Classes of the last layer; default 10 with the 'cifar' stem, else 1000 (`tsddp tune` sets the run's). */
  numClasses?: number;
}

/** One measured configuration. Every field is mirrored by bench/reference/ddp.py. */
export interface BenchCase extends ModelSpec {
  world: number;
  /** Intra-op threads per process (OMP_NUM_THREADS and set_num_threads, both sides). */
  threads: number;
  bucketCapMb: number;
  amp: 'off' | 'bf16';
  /** Micro-batches per optimizer step; all but the last run under noSync / no_sync. */
  accum: number;
  hook: BenchHook;
  /**
   * With hook 'powerSGD': the approximation rank (compressing from iteration 2, so every
   * timed step after the warm-up is compressed). PyTorch's hook runs over Gloo only with
   * one bucket (docs/guide/ddp.md), so its side puts every gradient in one.
   */
  powerSGDRank?: number;
  channelsLast: boolean;
}

/** A row of a scenario: the label shown in the table and the case measured for it. */
export interface ScenarioRow {
  label: string;
  /** A shorter label for chart categories. */
  short?: string;
  /** The value on the scenario's x axis (world size, bucket MiB, ...), for charts. */
  x: number;
  case: BenchCase;
}

export interface ScenarioPlan {
  name: ScenarioName;
  title: string;
  rows: ScenarioRow[];
}

export interface PlanOptions {
  /** Cores to share among the processes of one world: threads = max(1, floor(cores / world)). */
  cores: number;
  /** The largest world size; every scenario but scaling runs at this size. */
  maxWorld: number;
  bucketCaps: number[];
}

export class BenchOptionError extends TsddpError {
  override name = 'BenchOptionError';
  readonly code = 'BENCH_OPTION';
}

export function modelLabel(m: ModelSpec): string {
  const width = m.widthMultiplier === 1 ? '' : ` x${m.widthMultiplier}`;
  const stem = m.stem === 'cifar' ? '-cifar' : '';
  return `${m.model}${stem}${width} ${m.size}x${m.size}, batch ${m.batch}/process`;
}

/** e.g. 'resnet18-cifar/32': for chart titles and categories. */
export function shortModel(m: ModelSpec): string {
  const width = m.widthMultiplier === 1 ? '' : `x${m.widthMultiplier}`;
  return `${m.model}${m.stem === 'cifar' ? '-cifar' : ''}${width}/${m.size}`;
}

/** A stable identity: the same case in two scenarios is measured once. */
export function caseKey(c: BenchCase): string {
  return [
    c.model,
    c.stem,
    c.widthMultiplier,
    c.size,
    `b${c.batch}`,
    `w${c.world}`,
    `t${c.threads}`,
    `cap${c.bucketCapMb}`,
    c.amp,
    `acc${c.accum}`,
    c.hook === 'powerSGD' ? `powerSGD${c.powerSGDRank ?? 1}` : c.hook,
    c.channelsLast ? 'cl' : 'cf',
    ...(c.numClasses === undefined ? [] : [`k${c.numClasses}`]),
  ].join('/');
}

export function threadsFor(cores: number, world: number): number {
  return Math.max(1, Math.floor(cores / world));
}

/** The cases of the named scenarios on one model; the base case is shared between them. */
export function planScenarios(model: ModelSpec, names: ScenarioName[], o: PlanOptions): ScenarioPlan[] {
  const base: BenchCase = {
    ...model,
    world: o.maxWorld,
    threads: threadsFor(o.cores, o.maxWorld),
    bucketCapMb: 25,
    amp: 'off',
    accum: 1,
    hook: 'none',
    channelsLast: false,
  };
  const w = `world ${o.maxWorld}`;
  const plans: Record<ScenarioName, () => ScenarioPlan> = {
    scaling: () => ({ name: 'scaling', title: 'Scaling (world size)', rows: scalingRows(base, o) }),
    bucket: () => ({
      name: 'bucket',
      title: `bucketCapMb sweep (${w})`,
      rows: o.bucketCaps.map((cap) => ({ label: `${cap} MiB`, x: cap, case: { ...base, bucketCapMb: cap } })),
    }),
    amp: () => ({
      name: 'amp',
      title: `AMP (${w})`,
      rows: [
        { label: 'fp32', x: 0, case: base },
        { label: 'bf16 autocast', x: 1, case: { ...base, amp: 'bf16' } },
      ],
    }),
    accum: () => ({
      name: 'accum',
      title: `Gradient accumulation (${w})`,
      rows: [1, 4].map((accum) => ({
        label: `${accum} micro-batch(es)`,
        x: accum,
        case: { ...base, accum },
      })),
    }),
    hooks: () => ({
      name: 'hooks',
      title: `Comm hooks (${w})`,
      rows: (['none', 'fp16', 'bf16'] as const).map((hook, i) => ({
        label: hook === 'none' ? 'none (all-reduce)' : `${hook} compression`,
        x: i,
        case: { ...base, hook },
      })),
    }),
    'channels-last': () => ({
      name: 'channels-last',
      title: `Memory format (${w})`,
      rows: [
        { label: 'channels-first', x: 0, case: base },
        { label: 'channels-last', x: 1, case: { ...base, channelsLast: true } },
      ],
    }),
  };
  return names.map((n) => plans[n]());
}

/**
 * World 1..maxWorld with cores / world threads each, plus, for scaling efficiency, world 1
 * with the per-process threads of every larger world (efficiency compares equal threads).
 */
function scalingRows(base: BenchCase, o: PlanOptions): ScenarioRow[] {
  const rows: ScenarioRow[] = [];
  const seen = new Set<string>();
  const add = (world: number, threads: number) => {
    const c = { ...base, world, threads };
    if (seen.has(caseKey(c))) return;
    seen.add(caseKey(c));
    rows.push({
      label: `world ${world} x ${threads} thread(s)`,
      short: `w${world}/t${threads}`,
      x: world,
      case: c,
    });
  };
  for (let world = 1; world <= o.maxWorld; world++) {
    add(world, threadsFor(o.cores, world));
    if (world > 1) add(1, threadsFor(o.cores, world));
  }
  return rows.sort((a, b) => a.case.world - b.case.world || b.case.threads - a.case.threads);
}
