// The run plan: `tsddp train`'s options (flags, a --config file, or the object given to
// train()) validated once (config.ts) and resolved once into typed sections, each with the
// values derived from the options already computed (the stem, the image size, the betas,
// the warm-up, the autocast dtype, the tune file). Everything after the CLI reads the plan:
// a launching `tsddp train` hands it to its workers as JSON (PLAN_ENV), which they take as
// it is, without parsing flags or validating again. Values that depend on the world (the
// learning rate under the linear scaling rule, the global batch) or on the data (steps per
// epoch) are computed once on each rank by setup.ts, from the plan. Architecture §9.
import { resolve } from 'node:path';
import type { CommHook } from '../distributed/index.ts';
import {
  ConfigError,
  imageSizeOf,
  parseBetas,
  parseConfig,
  resolveStem,
  resolveWarmupEpochs,
  type TrainConfig,
  type TrainConfigInput,
} from './config.ts';

/** The plan (JSON) that `tsddp train --nproc-per-node` gives each of its workers. */
export const PLAN_ENV = 'TSDDP_TRAIN_PLAN';
/** Bumped when the plan's shape changes: a worker refuses a plan of another shape. */
const PLAN_VERSION = 2;

export interface ModelPlan {
  arch: TrainConfig['model'];
  /** The ResNet stem, 'auto' resolved from the image size. */
  stem: 'imagenet' | 'cifar';
  widthMultiplier: number;
  zeroInitResidual: boolean;
  channelsLast: boolean;
  /** --sync-bn: the BatchNorms become SyncBatchNorms over the world. */
  syncBn: boolean;
  /** --activation-checkpointing: each block recomputes its activations in backward. */
  activationCheckpointing: boolean;
}

export interface DataPlan {
  dataset: TrainConfig['dataset'];
  /** --data: the data folder. */
  root: string | undefined;
  download: boolean;
  /** The training crop size: --image-size or the dataset's own. */
  imageSize: number;
  trainSize: number | undefined;
  valSize: number | undefined;
  numClasses: number | undefined;
  augment: boolean;
  /** Images per rank per micro-batch. */
  batchSize: number;
  /** --eval-batch-size, else twice the training batch. */
  evalBatchSize: number;
  workers: number;
  pinMemory: boolean;
  persistentWorkers: boolean;
  prefetch: number;
  skipBadSamples: number | undefined;
  /** --uneven: pad every rank's share to equal batches, or leave them unequal and train in Join. */
  uneven: 'pad' | 'join';
}

export interface SchedulePlan {
  kind: TrainConfig['schedule'];
  /** --warmup-epochs, else Goyal et al.'s 5 but at most a tenth of the run. */
  warmupEpochs: number;
  warmupStartFactor: number;
  stepEpochs: number;
  gamma: number;
}

export interface OptimPlan {
  name: TrainConfig['optimizer'];
  /** --strategy: zero1 shards the optimizer state over the ranks (ZeroRedundancyOptimizer), fsdp the parameters too (strategy.ts). */
  strategy: TrainConfig['strategy'];
  impl: TrainConfig['optimizerImpl'];
  /** --lr, or undefined for the linear scaling rule (baseLr x global batch / baseBatch). */
  lr: number | undefined;
  baseLr: number;
  baseBatch: number;
  momentum: number;
  nesterov: boolean;
  weightDecay: number;
  betas: [number, number];
  clipGradNorm: number | undefined;
  labelSmoothing: number;
  schedule: SchedulePlan;
}

/** The loop: how long, in what steps, and how often it evaluates and logs. */
export interface LoopPlan {
  epochs: number;
  maxSteps: number | undefined;
  /** Micro-batches per optimizer step. */
  gradAccum: number;
  evalEvery: number;
  logEvery: number;
  seed: number;
}

export interface AmpPlan {
  mode: TrainConfig['amp'];
  /** The autocast dtype; null runs in full precision. */
  dtype: 'bfloat16' | 'float16' | null;
  /** fp16 scales the loss (GradScaler). */
  scaler: boolean;
}

export interface DdpPlan {
  bucketCapMb: number;
  gradientAsBucketView: boolean;
  staticGraph: boolean;
  findUnusedParameters: boolean;
  commHook: CommHook | undefined;
  powerSGD: { matrixApproximationRank: number; startPowerSGDIter: number } | undefined;
}

/** Checkpoints, resumes, metrics and the dashboard. */
export interface IoPlan {
  checkpointDir: string | undefined;
  checkpointEvery: number;
  checkpointKeep: number;
  resume: string;
  overwrite: boolean;
  allowDataChange: boolean;
  reshard: boolean;
  metricsFile: string | undefined;
  /** --tensorboard: rank 0's event files (run-log.ts). */
  tensorboard: string | undefined;
  dashboard: number | undefined;
}

/** How this process runs: the process group, threads, the CUDA autotuner, --tune. */
export interface LaunchPlan {
  backend: TrainConfig['backend'];
  /** --timeout in seconds (undefined: the process group's default, process-group.ts). */
  timeout: number | undefined;
  threads: number | undefined;
  cudnnBenchmark: boolean;
  tune: boolean;
  /** --tune-comm: the in-group communication trial (tune-comm.ts): never, across nodes only, always. */
  tuneComm: 'off' | 'nodes' | 'on';
  /** Where --tune keeps its choice: --tune-file, else <checkpoint-dir>/tune.json, else none. */
  tuneFile: string | undefined;
}

export interface RunPlan {
  version: typeof PLAN_VERSION;
  /** The options as validated, defaults filled in: what checkpoints record and ranks compare. */
  options: TrainConfig;
  model: ModelPlan;
  data: DataPlan;
  optim: OptimPlan;
  loop: LoopPlan;
  amp: AmpPlan;
  ddp: DdpPlan;
  io: IoPlan;
  launch: LaunchPlan;
}

/** Validates `input` (throws a ConfigError naming every bad option) and resolves the plan. */
export function planRun(input: TrainConfig | TrainConfigInput, source = 'config'): RunPlan {
  return resolvePlan(parseConfig(input, source));
}

/** The plan with some options changed (--tune's choice, the launcher's metrics file): validated again, resolved again. */
export function withOptions(plan: RunPlan, patch: Partial<TrainConfig>): RunPlan {
  return planRun({ ...plan.options, ...patch });
}

function resolvePlan(c: TrainConfig): RunPlan {
  return {
    version: PLAN_VERSION,
    options: c,
    model: {
      arch: c.model,
      stem: resolveStem(c),
      widthMultiplier: c.widthMultiplier,
      zeroInitResidual: c.zeroInitResidual,
      channelsLast: c.channelsLast,
      syncBn: c.syncBn,
      activationCheckpointing: c.activationCheckpointing,
    },
    data: {
      dataset: c.dataset,
      root: c.data,
      download: c.download,
      imageSize: imageSizeOf(c),
      trainSize: c.trainSize,
      valSize: c.valSize,
      numClasses: c.numClasses,
      augment: c.augment,
      batchSize: c.batchSize,
      evalBatchSize: c.evalBatchSize ?? 2 * c.batchSize,
      workers: c.workers,
      pinMemory: c.pinMemory,
      persistentWorkers: c.persistentWorkers,
      prefetch: c.prefetch,
      skipBadSamples: c.skipBadSamples,
      uneven: c.uneven,
    },
    optim: {
      name: c.optimizer,
      strategy: c.strategy,
      impl: c.optimizerImpl,
      lr: c.lr,
      baseLr: c.baseLr,
      baseBatch: c.baseBatch,
      momentum: c.momentum,
      nesterov: c.nesterov,
      weightDecay: c.weightDecay,
      betas: parseBetas(c.betas),
      clipGradNorm: c.clipGradNorm,
      labelSmoothing: c.labelSmoothing,
      schedule: {
        kind: c.schedule,
        warmupEpochs: resolveWarmupEpochs(c),
        warmupStartFactor: c.warmupStartFactor,
        stepEpochs: c.stepEpochs,
        gamma: c.gamma,
      },
    },
    loop: {
      epochs: c.epochs,
      maxSteps: c.maxSteps,
      gradAccum: c.gradAccum,
      evalEvery: c.evalEvery,
      logEvery: c.logEvery,
      seed: c.seed,
    },
    amp: {
      mode: c.amp,
      dtype: c.amp === 'bf16' ? 'bfloat16' : c.amp === 'fp16' ? 'float16' : null,
      scaler: c.amp === 'fp16',
    },
    ddp: {
      bucketCapMb: c.bucketCapMb,
      gradientAsBucketView: c.gradientAsBucketView,
      staticGraph: c.staticGraph,
      findUnusedParameters: c.findUnusedParameters,
      commHook: c.commHook === 'none' ? undefined : c.commHook,
      powerSGD:
        c.commHook === 'powerSGD'
          ? { matrixApproximationRank: c.powersgdRank, startPowerSGDIter: c.powersgdStartIter }
          : undefined,
    },
    io: {
      checkpointDir: c.checkpointDir,
      checkpointEvery: c.checkpointEvery,
      checkpointKeep: c.checkpointKeep,
      resume: c.resume,
      overwrite: c.overwrite,
      allowDataChange: c.allowDataChange,
      reshard: c.reshard,
      metricsFile: c.metricsFile,
      tensorboard: c.tensorboard,
      dashboard: c.dashboard,
    },
    launch: {
      backend: c.backend,
      timeout: c.timeout,
      threads: c.threads,
      cudnnBenchmark: c.cudnnBenchmark,
      tune: c.tune,
      tuneComm: c.tuneComm,
      tuneFile: tuneFileOf(c),
    },
  };
}

/** --tune-file, else tune.json in the checkpoint folder, else none (the choice is not kept). */
function tuneFileOf(c: TrainConfig): string | undefined {
  if (c.tuneFile !== undefined) return resolve(c.tuneFile);
  return c.checkpointDir === undefined ? undefined : resolve(c.checkpointDir, 'tune.json');
}

/** The sections every plan has (RunPlan's keys but `version`). */
const SECTIONS = ['options', 'model', 'data', 'optim', 'loop', 'amp', 'ddp', 'io', 'launch'] as const;

/**
 * Whether `x` is meant as a resolved plan rather than options to resolve: options have
 * neither `version` nor `options` (the option table has no such names).
 */
export function isRunPlan(x: unknown): x is RunPlan {
  return typeof x === 'object' && x !== null && ('version' in x || 'options' in x);
}

/**
 * `x` as a run plan of this tsddp, or a ConfigError naming `source` when it is another
 * version's or misses a section: a plan is taken as it is, so its shape is checked.
 */
export function checkedPlan(x: unknown, source: string): RunPlan {
  const plan = x as Record<string, unknown>;
  if (plan?.version !== PLAN_VERSION)
    throw planError(
      `${source} holds no run plan of this tsddp (version ${PLAN_VERSION}, got ${JSON.stringify(plan?.version)}): ` +
        'a worker takes the plan of the tsddp train that launched it; a script makes one with planRun(options)',
    );
  const missing = SECTIONS.filter((k) => typeof plan[k] !== 'object' || plan[k] === null);
  if (missing.length > 0) throw planError(`${source} is not a whole run plan: no ${missing.join(', ')}`);
  return plan as unknown as RunPlan;
}

/** Images of one optimizer step on one rank: batch x micro-batches. */
export function imagesPerRankStep(plan: Pick<RunPlan, 'data' | 'loop'>): number {
  return plan.data.batchSize * plan.loop.gradAccum;
}

/** The global batch of one optimizer step. */
export function globalBatchOf(plan: Pick<RunPlan, 'data' | 'loop'>, worldSize: number): number {
  return imagesPerRankStep(plan) * worldSize;
}

/** --lr, else the linear scaling rule: base-lr x global batch / base-batch. */
export function lrOf(plan: RunPlan, worldSize: number): number {
  const o = plan.optim;
  return o.lr ?? (o.baseLr * globalBatchOf(plan, worldSize)) / o.baseBatch;
}

/** The plan a launching `tsddp train` gave this worker (PLAN_ENV), or null when none was given. */
export function launchedPlan(env: NodeJS.ProcessEnv = process.env): RunPlan | null {
  const json = env[PLAN_ENV];
  if (json === undefined || json === '') return null;
  let plan: unknown;
  try {
    plan = JSON.parse(json);
  } catch (e) {
    throw planError(`${PLAN_ENV} is not valid JSON: ${(e as Error).message}`);
  }
  return checkedPlan(plan, PLAN_ENV);
}

function planError(message: string): ConfigError {
  return new ConfigError(message, [message]);
}
