// The recipe's options: one table that gives each option its schema (zod), the values it
// allows (for messages and --help) and its flag (the kebab-case form of its name). The
// defaults are the classic PyTorch ImageNet DDP recipe (Goyal et al. 2017; torchvision's
// references): ResNet-50, SGD with momentum 0.9, lr 0.1 per 256 images (the linear
// scaling rule), weight decay 1e-4, 5 warm-up epochs then a cosine schedule.

import { z } from 'zod';
import { TsddpError } from '../errors/index.ts';

export const MODELS = [
  'resnet18',
  'resnet34',
  'resnet50',
  'resnet101',
  'resnet152',
  'vit_b_16',
  'vit_b_32',
  'vit_l_16',
  'vit_tiny',
] as const;
export const DATASETS = ['shapes', 'cifar10', 'cifar100', 'imagefolder', 'fake'] as const;
export const SCHEDULES = ['cosine', 'step', 'onecycle'] as const;
export const AMP_MODES = ['off', 'bf16', 'fp16'] as const;
export const OPTIMIZERS = ['sgd', 'adamw'] as const;
/** --strategy: how the ranks hold the training state (strategy.ts). */
export const STRATEGIES = ['ddp', 'zero1', 'fsdp'] as const;

/** DDP's options, which a fully sharded model (no DDP) cannot take: option and its default. */
const DDP_ONLY = {
  bucketCapMb: 25,
  gradientAsBucketView: false,
  staticGraph: false,
  findUnusedParameters: false,
  commHook: 'none',
} as const;
export const OPTIMIZER_IMPLS = ['auto', 'loop', 'foreach', 'fused'] as const;

/** --betas "b1,b2" as AdamW's pair; throws a RangeError naming the flag. */
export function parseBetas(text: string): [number, number] {
  const b = text.split(',').map((x) => Number(x.trim()));
  if (b.length !== 2 || b.some((x) => !(x >= 0 && x < 1)))
    throw new RangeError(`--betas must be two numbers in [0, 1) separated by a comma, got '${text}'`);
  return [b[0], b[1]];
}
export const COMM_HOOKS = ['none', 'allreduce', 'fp16', 'bf16', 'powerSGD'] as const;

/** How a flag's text becomes a value before validation. */
export type OptionKind = 'int' | 'number' | 'bool' | 'enum' | 'string';

interface OptionSpec {
  schema: z.ZodType;
  kind: OptionKind;
  /** The values allowed, in words ("one of off, bf16, fp16", "an integer >= 1"). */
  allowed: string;
  help: string;
}

function enumOpt<const V extends readonly [string, ...string[]]>(values: V, def: V[number], help: string) {
  return {
    schema: z.enum(values).default(def as never),
    kind: 'enum' as const,
    allowed: `one of ${values.join(', ')}`,
    help,
  };
}
function intSchema(min: number, max?: number): z.ZodNumber {
  const s = z.number().int().min(min);
  return max === undefined ? s : s.max(max);
}
function intWords(min: number, max?: number): string {
  return max === undefined ? `an integer >= ${min}` : `an integer from ${min} to ${max}`;
}
function intOpt(min: number, def: number, help: string, max?: number) {
  return {
    schema: intSchema(min, max).default(def),
    kind: 'int' as const,
    allowed: intWords(min, max),
    help,
  };
}
function intOptional(min: number, help: string, max?: number) {
  return { schema: intSchema(min, max).optional(), kind: 'int' as const, allowed: intWords(min, max), help };
}
type Range = { gt?: number; min?: number; lt?: number };
function numSchema(r: Range): z.ZodNumber {
  let s = z.number();
  if (r.gt !== undefined) s = s.gt(r.gt);
  if (r.min !== undefined) s = s.min(r.min);
  if (r.lt !== undefined) s = s.lt(r.lt);
  return s;
}
function numWords(r: Range): string {
  const w: string[] = [];
  if (r.gt !== undefined) w.push(`> ${r.gt}`);
  if (r.min !== undefined) w.push(`>= ${r.min}`);
  if (r.lt !== undefined) w.push(`< ${r.lt}`);
  return `a number ${w.join(' and ')}`;
}
function numOpt(def: number, help: string, range: Range) {
  return { schema: numSchema(range).default(def), kind: 'number' as const, allowed: numWords(range), help };
}
function numOptional(help: string, range: Range) {
  return { schema: numSchema(range).optional(), kind: 'number' as const, allowed: numWords(range), help };
}
function boolOpt(def: boolean, help: string) {
  return { schema: z.boolean().default(def), kind: 'bool' as const, allowed: 'true or false', help };
}
function strOpt(help: string, allowed = 'a non-empty string') {
  return { schema: z.string().min(1).optional(), kind: 'string' as const, allowed, help };
}
function strDefault(def: string, help: string, allowed: string) {
  return { schema: z.string().min(1).default(def), kind: 'string' as const, allowed, help };
}

// Upper bounds far above any machine's use, so that a typo (--threads 1e9) is refused by
// name instead of exhausting memory (libgomp allocates per thread) or spawning threads
// until the process hangs. A tune file's choice is held to the same bounds (tune.ts).
/** --threads: more than the cores of any machine tsddp runs on. */
const MAX_THREADS = 1024;
/** --workers: loader worker threads per rank. */
const MAX_WORKERS = 256;
/** --prefetch: batches queued per worker. */
const MAX_PREFETCH = 64;

/** Every option of `tsddp train`, in the order --help lists them. */
export const OPTIONS = {
  // model
  model: enumOpt(MODELS, 'resnet50', 'a torchvision ResNet or ViT (vit_tiny: 4 px patches for 32 px images)'),
  stem: enumOpt(
    ['auto', 'imagenet', 'cifar'],
    'auto',
    'ResNet: auto is cifar for images of 64 pixels or less',
  ),
  widthMultiplier: numOpt(1, 'ResNet: scales the base width 64 (tiny test models)', { gt: 0 }),
  zeroInitResidual: boolOpt(false, 'ResNet: zero the last BN of each residual branch'),
  // data
  dataset: enumOpt(DATASETS, 'shapes', 'imagefolder reads <data>/train and <data>/val'),
  data: strOpt('the data folder (cifar10, cifar100, imagefolder)', 'a folder path'),
  download: boolOpt(false, 'download CIFAR into --data when missing (MD5-checked)'),
  imageSize: intOptional(8, 'training crop size (default: 32 for shapes/CIFAR, 224 otherwise)'),
  trainSize: intOptional(1, 'shapes/fake: training samples'),
  valSize: intOptional(1, 'shapes/fake: validation samples'),
  numClasses: intOptional(2, 'fake: number of classes (default 1000)'),
  augment: boolOpt(true, 'random crop + horizontal flip (random resized crop for imagefolder)'),
  // schedule
  epochs: intOpt(1, 90, 'epochs to train'),
  maxSteps: intOptional(1, 'stop after this many optimizer steps (the schedule still spans --epochs)'),
  batchSize: intOpt(1, 32, 'images per rank per micro-batch'),
  lr: numOptional('absolute learning rate (default: base-lr x global batch / base-batch)', { gt: 0 }),
  baseLr: numOpt(0.1, 'learning rate for a global batch of base-batch images', { gt: 0 }),
  baseBatch: intOpt(1, 256, 'the batch base-lr is given for (linear scaling rule)'),
  warmupEpochs: numOptional(
    'linear warm-up epochs (default: 5, at most a tenth of the run; ignored by onecycle)',
    {
      min: 0,
    },
  ),
  warmupStartFactor: numOpt(0.1, 'warm-up starts at lr x this', { gt: 0 }),
  schedule: enumOpt(SCHEDULES, 'cosine', 'learning-rate schedule after warm-up, stepped every step'),
  stepEpochs: intOpt(1, 30, 'step schedule: epochs between decays'),
  gamma: numOpt(0.1, 'step schedule: decay factor', { gt: 0 }),
  optimizer: enumOpt(
    OPTIMIZERS,
    'sgd',
    'sgd (momentum, nesterov) or adamw (decoupled weight decay; transformers)',
  ),
  optimizerImpl: enumOpt(
    OPTIMIZER_IMPLS,
    'auto',
    "how the optimizer runs: auto (SGD: multi-tensor kernels on CPU, bitwise PyTorch's loop; AdamW: PyTorch's default), loop, foreach (multi-tensor), fused (libtorch's fused kernel: PyTorch's fused=True numbers)",
  ),
  betas: strDefault('0.9,0.999', 'adamw: the two running-average coefficients', 'two numbers, e.g. 0.9,0.95'),
  momentum: numOpt(0.9, 'SGD momentum', { min: 0 }),
  nesterov: boolOpt(false, 'Nesterov momentum'),
  weightDecay: numOpt(1e-4, 'L2 weight decay', { min: 0 }),
  labelSmoothing: numOpt(0, 'cross-entropy label smoothing', { min: 0, lt: 1 }),
  clipGradNorm: numOptional('clip the global gradient norm to this before each step (clip_grad_norm_)', {
    gt: 0,
  }),
  amp: enumOpt(AMP_MODES, 'off', 'autocast dtype; fp16 adds a GradScaler'),
  gradAccum: intOpt(1, 1, 'micro-batches per optimizer step (no all-reduce until the last)'),
  // DDP
  bucketCapMb: numOpt(25, 'DDP gradient bucket size, MiB', { gt: 0 }),
  gradientAsBucketView: boolOpt(false, 'gradients are views into the DDP buckets'),
  staticGraph: boolOpt(false, 'DDP static graph'),
  findUnusedParameters: boolOpt(false, 'DDP searches for parameters without gradients'),
  commHook: enumOpt(
    COMM_HOOKS,
    'none',
    'gradient communication hook (fp16/bf16 compress; powerSGD: low rank)',
  ),
  powersgdRank: intOpt(1, 1, 'powerSGD: rank of the gradient approximation (matrix_approximation_rank)'),
  powersgdStartIter: intOpt(
    2,
    1000,
    'powerSGD: plain all-reduce for this many steps first (start_powerSGD_iter)',
  ),
  channelsLast: boolOpt(false, 'channels-last memory format'),
  syncBn: boolOpt(
    false,
    'nn.SyncBatchNorm: BatchNorm statistics over the global batch of every rank (ResNets; convertSyncBatchnorm)',
  ),
  activationCheckpointing: boolOpt(
    false,
    "recompute each block's activations in backward instead of keeping them (torch.utils.checkpoint): less memory for one more forward",
  ),
  strategy: enumOpt(
    STRATEGIES,
    'ddp',
    'how the ranks hold the training state: ddp (each rank all of it), zero1 (torch.distributed.optim.ZeroRedundancyOptimizer: each rank the optimizer state of its shard of the parameters) or fsdp (fullyShard per block: each rank its rows of every parameter, gradient and optimizer state)',
  ),
  tune: boolOpt(
    false,
    'first time a few steps of each memory format and autocast dtype (bf16 where the hardware has it) and train with the fastest',
  ),
  tuneComm: enumOpt(
    ['off', 'nodes', 'on'],
    'off',
    "time the gradient communication on the run's own links before training (all ranks): the link's all-reduce bandwidth, then plain all-reduce, fp16/bf16 compression and PowerSGD rank 1/2/4, then bucket sizes; a lossy hook only if a short trial's loss stays within 5% of plain all-reduce's. nodes: only when the ranks span several machines (what --tune sets)",
  ),
  tuneFile: strOpt(
    'where --tune keeps its choice, reused while model, batch, machine and threads match (default: <checkpoint-dir>/tune.json)',
    'a file path',
  ),
  backend: enumOpt(
    ['auto', 'gloo', 'nccl'],
    'auto',
    'process-group backend (auto: NCCL for CUDA tensors where CUDA is, Gloo for CPU ones)',
  ),
  cudnnBenchmark: boolOpt(
    true,
    "let cuDNN time its convolution kernels at the first step and keep the fastest (CUDA; PyTorch's torch.backends.cudnn.benchmark)",
  ),
  timeout: intOptional(
    1,
    'seconds a collective or the rendezvous waits for a peer before the run fails (default: 300 on one node, 1800 across nodes; PyTorch: 1800)',
  ),
  threads: intOptional(
    1,
    "intra-op threads per rank (torch.set_num_threads; default: OMP_NUM_THREADS, which tsddp's launcher sets to cores / workers)",
    MAX_THREADS,
  ),
  // loading
  workers: intOpt(0, 2, 'data-loader worker threads per rank', MAX_WORKERS),
  pinMemory: boolOpt(true, 'pinned host memory for batches (with CUDA)'),
  persistentWorkers: boolOpt(true, 'keep the workers between epochs'),
  prefetch: intOpt(1, 2, 'batches queued per worker', MAX_PREFETCH),
  uneven: enumOpt(
    ['pad', 'join'],
    'pad',
    "ranks' unequal shares of an epoch: pad (repeat samples so every rank has as many, DistributedSampler's way) or join (each sample once; a rank that runs out first shadows the others: torch.distributed.algorithms.Join)",
  ),
  skipBadSamples: intOptional(
    0,
    'replace a sample that fails to load by the next one, logging its file, and fail after this many (a bare flag: 100; default: fail on the first)',
  ),
  // evaluation, checkpoints, logs
  evalEvery: intOpt(0, 1, 'evaluate every N epochs and after the last (0: never)'),
  evalBatchSize: intOptional(1, 'validation batch per rank (default: 2 x batch-size)'),
  checkpointDir: strOpt('where checkpoints go (none: no checkpoints)', 'a folder path'),
  checkpointEvery: intOpt(0, 0, 'also checkpoint every N steps (0: at epoch ends only)'),
  checkpointKeep: intOpt(1, 3, 'checkpoints kept'),
  resume: strDefault(
    'none',
    'auto: the latest valid checkpoint; none (refused if an earlier run is in the same places); or a checkpoint folder',
    'auto, none or a checkpoint folder',
  ),
  overwrite: boolOpt(
    false,
    'delete the checkpoints and metrics an earlier run left in the same places, and start again',
  ),
  allowDataChange: boolOpt(
    false,
    'resume although the training data changed since the checkpoint (sample count or files): the epoch goes on at the saved step, or the next one starts if the data shrank below it',
  ),
  reshard: boolOpt(
    false,
    'resume a checkpoint saved with another world size (elastic training): the epoch continues at the same sample, re-sharded over the new ranks',
  ),
  seed: intOpt(0, 0, 'seed of the model init, sampler and augmentations'),
  metricsFile: strOpt('JSONL metrics of all ranks (rank files <file>.rank<N> meanwhile)', 'a file path'),
  tensorboard: strOpt(
    'TensorBoard log folder: rank 0 writes loss, accuracy, lr, throughput and communication time each log interval, and every evaluation',
    'a folder path',
  ),
  dashboard: intOptional(
    0,
    'port of the live dashboard on 127.0.0.1 (0 or a bare flag: a free port; served by the launcher, or by a single process itself)',
    65535,
  ),
  logEvery: intOpt(1, 10, 'steps between progress lines (when not a terminal)'),
} satisfies Record<string, OptionSpec>;

export type OptionName = keyof typeof OPTIONS;

export const TrainConfigSchema = z
  .strictObject(
    Object.fromEntries(Object.entries(OPTIONS).map(([k, o]) => [k, o.schema])) as {
      [K in OptionName]: (typeof OPTIONS)[K]['schema'];
    },
  )
  .superRefine((c, ctx) => {
    if ((c.dataset === 'cifar10' || c.dataset === 'cifar100' || c.dataset === 'imagefolder') && !c.data) {
      ctx.addIssue({
        code: 'custom',
        path: ['data'],
        message: `dataset ${c.dataset} needs a data folder`,
      });
    }
    if (
      (c.dataset === 'cifar10' || c.dataset === 'cifar100') &&
      c.imageSize !== undefined &&
      c.imageSize !== 32
    ) {
      ctx.addIssue({ code: 'custom', path: ['imageSize'], message: 'CIFAR images are 32x32' });
    }
    if (
      c.schedule !== 'onecycle' &&
      c.warmupEpochs !== undefined &&
      c.warmupEpochs >= c.epochs &&
      c.warmupEpochs > 0
    ) {
      ctx.addIssue({
        code: 'custom',
        path: ['warmupEpochs'],
        message: `warm-up (${c.warmupEpochs} epochs) must be shorter than the run (${c.epochs} epochs)`,
      });
    }
    if (c.resume === 'auto' && c.checkpointDir === undefined) {
      ctx.addIssue({
        code: 'custom',
        path: ['resume'],
        message: 'auto needs a checkpoint folder (--checkpoint-dir)',
      });
    }
    if (c.overwrite && c.resume !== 'none') {
      ctx.addIssue({
        code: 'custom',
        path: ['overwrite'],
        message: `deletes the earlier run, which --resume ${c.resume} continues: give one of them`,
      });
    }
    if (c.checkpointEvery > 0 && c.checkpointDir === undefined) {
      ctx.addIssue({
        code: 'custom',
        path: ['checkpointEvery'],
        message: 'needs a checkpoint folder (--checkpoint-dir)',
      });
    }
    if (c.uneven === 'join' && c.checkpointEvery > 0) {
      ctx.addIssue({
        code: 'custom',
        path: ['uneven'],
        message:
          'join checkpoints at epoch ends only, when every rank holds the same state (--checkpoint-every 0)',
      });
    }
    if (c.strategy === 'fsdp')
      for (const [path, message] of fsdpConflicts(c)) ctx.addIssue({ code: 'custom', path: [path], message });
    if (c.syncBn && c.model.startsWith('vit')) {
      ctx.addIssue({
        code: 'custom',
        path: ['syncBn'],
        message: `${c.model} has no BatchNorm to synchronize`,
      });
    }
    if (c.warmupStartFactor > 1) {
      ctx.addIssue({ code: 'custom', path: ['warmupStartFactor'], message: 'must be <= 1' });
    }
    try {
      parseBetas(c.betas);
    } catch (e) {
      ctx.addIssue({
        code: 'custom',
        path: ['betas'],
        message: (e as Error).message.replace(/^--betas /, ''),
      });
    }
  });

/** What --strategy fsdp cannot honour among the other options: [option, why]. */
function fsdpConflicts(c: Record<string, unknown>): [string, string][] {
  const found: [string, string][] = [];
  for (const [k, d] of Object.entries(DDP_ONLY))
    if (c[k] !== d)
      found.push([k, 'is a DistributedDataParallel option; --strategy fsdp shards the model without DDP']);
  if (c.uneven === 'join')
    found.push([
      'strategy',
      'fsdp with --uneven join is not supported (a sharded forward needs every rank): use --uneven pad',
    ]);
  if (c.amp === 'fp16')
    found.push([
      'amp',
      "fp16's GradScaler would skip steps on some ranks only (each sees only its shards' infinities) under --strategy fsdp: use --amp bf16",
    ]);
  if (c.tune)
    found.push([
      'tune',
      "times DDP's buckets and replicated trials: give the options yourself with --strategy fsdp",
    ]);
  return found;
}

/** The validated options, defaults filled in. */
export type TrainConfig = z.output<typeof TrainConfigSchema>;
/** What a config file or the flags may give: any subset of the options. */
export type TrainConfigInput = z.input<typeof TrainConfigSchema>;

/** An invalid configuration: the message names each bad option, its flag and the values it allows. */
export class ConfigError extends TsddpError {
  override name = 'ConfigError';
  readonly code = 'CONFIG';
  constructor(
    message: string,
    readonly problems: string[],
  ) {
    super(message);
  }
}

/** --batch-size for batchSize. */
export function flagOf(name: string): string {
  return `--${name.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`;
}

function show(v: unknown): string {
  return typeof v === 'string' ? `'${v}'` : JSON.stringify(v);
}

/** The option names closest to `name` (for "did you mean"). */
export function closestOptions(name: string, candidates: readonly string[] = Object.keys(OPTIONS)): string[] {
  const norm = (s: string) => s.toLowerCase().replace(/[-_]/g, '');
  const a = norm(name);
  const scored = candidates.map((c) => [c, editDistance(a, norm(c))] as const);
  const best = Math.min(...scored.map(([, d]) => d));
  return best <= Math.max(2, Math.floor(a.length / 3))
    ? scored.filter(([, d]) => d === best).map(([c]) => c)
    : [];
}

function editDistance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    let prev = row[0];
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const cur = row[j];
      row[j] = Math.min(row[j] + 1, row[j - 1] + 1, prev + (a[i - 1] === b[j - 1] ? 0 : 1));
      prev = cur;
    }
  }
  return row[b.length];
}

/** "unknown option --foo (did you mean --bar?)". */
export function unknownOptionMessage(name: string, asFlag: boolean, extra: readonly string[] = []): string {
  const fmt = (n: string) => (asFlag ? flagOf(n) : n);
  const near = closestOptions(name, [...Object.keys(OPTIONS), ...extra]);
  const hint = near.length > 0 ? ` (did you mean ${near.map(fmt).join(' or ')}?)` : '';
  return `unknown option ${asFlag ? flagOf(name) : `'${name}'`}${hint}`;
}

/** The list of allowed option names, for messages about unknown ones. */
export function allowedOptionsLine(asFlag: boolean, extra: readonly string[] = []): string {
  const names = [...Object.keys(OPTIONS), ...extra];
  return `allowed options: ${names.map((n) => (asFlag ? flagOf(n) : n)).join(', ')}`;
}

/** The problems with `input`: one message per bad option, naming its flag and allowed values. */
export function configProblems(input: unknown): string[] {
  const r = TrainConfigSchema.safeParse(input);
  return r.success ? [] : describeIssues(r.error.issues, input);
}

function describeIssues(issues: z.core.$ZodIssue[], input: unknown): string[] {
  const problems: string[] = [];
  let unknown = false;
  for (const issue of issues) {
    if (issue.code === 'unrecognized_keys') {
      for (const k of issue.keys) problems.push(unknownOptionMessage(k, false));
      unknown = true;
      continue;
    }
    const key = String(issue.path[0] ?? '');
    const spec = (OPTIONS as Record<string, OptionSpec>)[key];
    if (spec === undefined) {
      problems.push(issue.message);
      continue;
    }
    const given = (input as Record<string, unknown>)?.[key];
    const why = issue.code === 'custom' ? `: ${issue.message}` : '';
    problems.push(
      given === undefined
        ? `missing option ${key} (${flagOf(key)})${why}; allowed: ${spec.allowed}`
        : `invalid value ${show(given)} for option ${key} (${flagOf(key)})${why}; allowed: ${spec.allowed}`,
    );
  }
  if (unknown) problems.push(allowedOptionsLine(false));
  return problems;
}

/**
 * Validates `input` (from a config file and/or flags) and fills in the defaults. Throws a
 * ConfigError whose message names every bad option with its flag and allowed values.
 */
export function parseConfig(input: unknown, source = 'config'): TrainConfig {
  const r = TrainConfigSchema.safeParse(input);
  if (r.success) return r.data;
  return failWith(describeIssues(r.error.issues, input), source);
}

export function failWith(problems: string[], source: string): never {
  const n = problems.filter((p) => !p.startsWith('allowed options:')).length;
  const head = n === 1 ? `invalid ${source}` : `invalid ${source} (${n} problems)`;
  throw new ConfigError(`${head}:\n  ${problems.join('\n  ')}`, problems);
}

/** The stem a config means: 'auto' picks the CIFAR stem for small images. */
export function resolveStem(c: TrainConfig): 'imagenet' | 'cifar' {
  if (c.stem !== 'auto') return c.stem;
  return imageSizeOf(c) <= 64 ? 'cifar' : 'imagenet';
}

/** The training image size: --image-size, else the dataset's natural size. */
export function imageSizeOf(c: TrainConfig): number {
  if (c.imageSize !== undefined) return c.imageSize;
  return c.dataset === 'shapes' || c.dataset === 'cifar10' || c.dataset === 'cifar100' ? 32 : 224;
}

/** Warm-up epochs: --warmup-epochs, else Goyal et al.'s 5, but at most a tenth of a short run. */
export function resolveWarmupEpochs(c: TrainConfig): number {
  return c.warmupEpochs ?? Math.min(5, c.epochs / 10);
}
