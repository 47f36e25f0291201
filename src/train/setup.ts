// Setting a training run up on one rank (architecture §9): everything the Trainer needs,
// built in the order the classic PyTorch DDP recipe builds it, with the pre-flight checks in between.
import { GradScaler } from '../amp/index.ts';
import * as t from '../core/index.ts';
import * as dist from '../distributed/index.ts';
import { Heartbeat, SETUP_STEP } from '../launch/heartbeat.ts';
import { METRICS_FILE_ENV } from '../metrics/index.ts';
import {
  resnet18,
  resnet34,
  resnet50,
  resnet101,
  resnet152,
  vitB16,
  vitB32,
  vitL16,
  vitTiny,
} from '../models/index.ts';
import type { Module } from '../nn/index.ts';
import { AdamW, type lrScheduler, type Optimizer, SGD } from '../optim/index.ts';
import {
  parseBetas,
  parseConfig,
  resolveLr,
  resolveStem,
  type TrainConfig,
  type TrainConfigInput,
} from './config.ts';
import {
  buildDatasets,
  buildLoaders,
  type DataIdentity,
  type DataSetup,
  dataIdentity,
  type Loaders,
} from './data.ts';
import { checkCheckpointFolder, preflight, tensorBytes } from './preflight.ts';
import { guardPriorRun } from './prior-run.ts';
import { joinProcessGroup, type RunPlacement } from './process-group.ts';
import { chooseLatest, findResume, loadResume, type ResumePoint, resumesLatest } from './resume.ts';
import { buildScheduler } from './schedule.ts';
import type { TrainHooks } from './types.ts';

/** Where the math runs: the device, and the autocast dtype (null: full precision). */
export interface Placement {
  device: string;
  deviceType: 'cpu' | 'cuda';
  ampDtype: 'bfloat16' | 'float16' | null;
}

/** What setupRun() builds: everything a Trainer runs. */
export interface RunParts {
  config: TrainConfig;
  hooks: TrainHooks;
  pg: RunPlacement;
  on: Placement;
  setup: DataSetup;
  model: Module;
  optimizer: Optimizer;
  scheduler: lrScheduler.LRScheduler;
  scaler: GradScaler | null;
  loaders: Loaders;
  ddp: dist.DistributedDataParallel | null;
  resume: (ResumePoint & { dir: string }) | null;
  /** The launcher's watchdog file (launch/heartbeat.ts), written from the start of the setup on. */
  heartbeat: Heartbeat | null;
  /** The training set's identity (data.ts), recorded in every checkpoint. */
  dataIdentity: DataIdentity;
  /** performance.now() when the run started. */
  started: number;
}

const RESNETS = { resnet18, resnet34, resnet50, resnet101, resnet152 };
const VITS = { vit_b_16: vitB16, vit_b_32: vitB32, vit_l_16: vitL16, vit_tiny: vitTiny };

const now = () => performance.now();

/**
 * Sets the run up on this rank: process group, pre-flight checks (compared across ranks),
 * datasets and loaders, model, optimizer, schedule, scaler, the resumed checkpoint, DDP.
 * On failure, what it started (loader workers, the process group) is stopped.
 */
export async function setupRun(input: TrainConfig | TrainConfigInput, hooks: TrainHooks): Promise<RunParts> {
  const started = now();
  // The watchdog sees a rank stuck in its setup too, not only one stuck between steps.
  const heartbeat = Heartbeat.fromEnv();
  try {
    return await setupParts(input, hooks, started, heartbeat);
  } catch (e) {
    heartbeat?.close();
    throw e;
  }
}

async function setupParts(
  input: TrainConfig | TrainConfigInput,
  hooks: TrainHooks,
  started: number,
  heartbeat: Heartbeat | null,
): Promise<RunParts> {
  const beat = (phase: string, waiting = false) => heartbeat?.beat(SETUP_STEP, `setup: ${phase}`, waiting);
  const parsed = parseConfig(input);
  // Under a launcher serving the dashboard, metrics go where it reads them.
  const envMetrics = process.env[METRICS_FILE_ENV];
  const c = parsed.metricsFile === undefined && envMetrics ? { ...parsed, metricsFile: envMetrics } : parsed;
  if (c.threads !== undefined) t.setNumThreads(c.threads);
  beat('joining the process group', true);
  const pg = await joinProcessGroup(c);
  let loaders: Loaders | null = null;
  try {
    const on = placementOf(c, pg);
    const lr = resolveLr(c, pg.worldSize);
    // Everything that can fail before the first step, checked on every rank and compared
    // across ranks (preflight.ts), so a bad folder or option fails now, everywhere.
    const restarting = pg.restartCount > 0;
    let latestStep: number | null = null;
    beat('pre-flight checks, data and model');
    const { setup, model, optimizer } = await preflight(c, pg.group, pg.restartCount, async () => {
      guardPriorRun(c, { restarting, rank: pg.rank });
      // Rank 0 picks the checkpoint (or refuses) before anything is built or written.
      if (pg.rank === 0 && resumesLatest(c, pg.restartCount)) latestStep = await chooseLatest(c, restarting);
      const setup = await buildDatasets(c);
      const model = buildModel(c, hooks, setup, on);
      const optimizer = buildOptimizer(model, c, lr);
      if (c.checkpointDir !== undefined)
        checkCheckpointFolder(c.checkpointDir, 2 * checkpointBytes(model, c));
      beat("comparing the ranks' pre-flight checks", true);
      return { setup, model, optimizer };
    });
    loaders = buildLoaders(c, setup, pg.rank, pg.worldSize);
    const stepsPerEpoch = Math.floor(loaders.batchesPerEpoch / c.gradAccum);
    const scheduler = buildScheduler(optimizer, c, stepsPerEpoch, lr);
    const scaler = c.amp === 'fp16' ? new GradScaler({ device: on.deviceType }) : null;
    beat('choosing the checkpoint to resume', true);
    const resumeDir = await findResume(c, pg, latestStep);
    if (resumeDir !== null) beat(`loading ${resumeDir}`);
    const targets = { model, optimizer, scheduler, scaler: scaler ?? undefined };
    const identity = dataIdentity(setup.train);
    const resume =
      resumeDir === null
        ? null
        : { dir: resumeDir, ...(await loadResume(resumeDir, targets, c, pg.worldSize, identity)) };
    beat("DistributedDataParallel (broadcasts rank 0's parameters)", true);
    const ddp = pg.group === null ? null : wrapDdp(model, c, on, pg);
    return {
      config: c,
      hooks,
      pg,
      on,
      setup,
      model,
      optimizer,
      scheduler,
      scaler,
      loaders,
      ddp,
      resume,
      heartbeat,
      dataIdentity: identity,
      started,
    };
  } catch (e) {
    await loaders?.train.close();
    await loaders?.val.close();
    if (pg.created && dist.isInitialized()) dist.destroyProcessGroup();
    throw e;
  }
}

/** Where this rank's math runs: its GPU (LOCAL_RANK's) where CUDA is, else the CPU; the autocast dtype. */
function placementOf(c: TrainConfig, pg: RunPlacement): Placement {
  const useCuda = t.cuda.isAvailable();
  if (useCuda) t.backends.cudnn.benchmark = c.cudnnBenchmark;
  return {
    device: useCuda ? `cuda:${pg.localRank}` : 'cpu',
    deviceType: useCuda ? 'cuda' : 'cpu',
    ampDtype: c.amp === 'bf16' ? 'bfloat16' : c.amp === 'fp16' ? 'float16' : null,
  };
}

/** DistributedDataParallel over the run's group with the config's buckets, graph options and comm hook. */
function wrapDdp(
  model: Module,
  c: TrainConfig,
  on: Placement,
  pg: RunPlacement,
): dist.DistributedDataParallel {
  return new dist.DistributedDataParallel(model, {
    deviceIds: on.deviceType === 'cuda' ? [pg.localRank] : undefined,
    bucketCapMb: c.bucketCapMb,
    gradientAsBucketView: c.gradientAsBucketView,
    staticGraph: c.staticGraph,
    findUnusedParameters: c.findUnusedParameters,
    commHook: c.commHook === 'none' ? undefined : c.commHook,
    powerSGD:
      c.commHook === 'powerSGD'
        ? { matrixApproximationRank: c.powersgdRank, startPowerSGDIter: c.powersgdStartIter }
        : undefined,
    processGroup: pg.group ?? undefined,
  });
}

/** The config's ResNet (or the hook's model), seeded the same on every rank, on the device. */
export function buildModel(c: TrainConfig, hooks: TrainHooks, setup: DataSetup, on: Placement): Module {
  // The same seed on every rank (DDP also broadcasts rank 0's parameters).
  t.manualSeed(c.seed);
  const { numClasses, imageSize } = setup;
  const model =
    hooks.model?.(numClasses) ??
    (c.model in VITS
      ? VITS[c.model as keyof typeof VITS]({ numClasses, imageSize })
      : RESNETS[c.model as keyof typeof RESNETS]({
          numClasses,
          stem: resolveStem(c),
          widthMultiplier: c.widthMultiplier,
          zeroInitResidual: c.zeroInitResidual,
        }));
  if (on.deviceType === 'cuda') model.to(on.device);
  if (c.channelsLast) model.to({ memoryFormat: 'channelsLast' });
  return model;
}

/** SGD with momentum (ResNets), or AdamW (transformers); every parameter decays. */
export function buildOptimizer(model: Module, c: TrainConfig, lr: number): Optimizer {
  // --optimizer-impl: PyTorch's foreach/fused flags; auto leaves both unset (the defaults).
  const impl =
    c.optimizerImpl === 'loop'
      ? { foreach: false }
      : c.optimizerImpl === 'foreach'
        ? { foreach: true }
        : c.optimizerImpl === 'fused'
          ? { fused: true }
          : {};
  if (c.optimizer === 'adamw')
    return new AdamW(model.parameters(), {
      lr,
      betas: parseBetas(c.betas),
      weightDecay: c.weightDecay,
      ...impl,
    });
  return new SGD(model.parameters(), {
    lr,
    momentum: c.momentum,
    nesterov: c.nesterov,
    weightDecay: c.weightDecay,
    ...impl,
  });
}

/** Bytes of one checkpoint: model.safetensors (parameters and buffers) + optimizer.safetensors (momentum, or AdamW's two averages). */
function checkpointBytes(model: Module, c: TrainConfig): number {
  const params = tensorBytes(model.parameters());
  const states = c.optimizer === 'adamw' ? 2 : c.momentum > 0 ? 1 : 0;
  return params + tensorBytes(model.buffers()) + states * params;
}
