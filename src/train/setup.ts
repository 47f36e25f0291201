// Setting a training run up on one rank (architecture §9): everything the Trainer needs,
// built in the order the classic PyTorch DDP recipe builds it, with the pre-flight checks in between.
import { GradScaler } from '../amp/index.ts';
import * as t from '../core/index.ts';
import * as dist from '../distributed/index.ts';
import { Heartbeat, SETUP_STEP } from '../launch/heartbeat.ts';
import { METRICS_FILE_ENV } from '../metrics/index.ts';
import type { Module } from '../nn/index.ts';
import type { lrScheduler, Optimizer } from '../optim/index.ts';
import { buildModel, buildOptimizer } from './build.ts';
import type { TrainConfig, TrainConfigInput } from './config.ts';
import {
  buildDatasets,
  buildLoaders,
  type DataIdentity,
  type DataSetup,
  dataIdentity,
  type Loaders,
} from './data.ts';
import { checkedPlan, isRunPlan, lrOf, type OptimPlan, planRun, type RunPlan, withOptions } from './plan.ts';
import { checkCheckpointFolder, preflight, tensorBytes } from './preflight.ts';
import { guardPriorRun } from './prior-run.ts';
import { joinProcessGroup, type Placement, type RunPlacement } from './process-group.ts';
import { chooseLatest, findResume, loadResume, type ResumePoint, resumesLatest } from './resume.ts';
import { buildScheduler } from './schedule.ts';
import { loadTargets, shardsParameters } from './strategy.ts';
import type { CommCandidate } from './tune-comm.ts';
import type { TrainHooks } from './types.ts';

/** What setupRun() builds: everything a Trainer runs. */
export interface RunParts {
  plan: RunPlan;
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
  /** The learning rate for this world's global batch (linear scaling rule, plan.ts lrOf). */
  lr: number;
  /** Optimizer steps in an epoch: the world's (the rank with the most batches, with --uneven join). */
  stepsPerEpoch: number;
  /** Optimizer steps in an epoch of this rank's loader (fewer than stepsPerEpoch on a rank that joins early). */
  ownStepsPerEpoch: number;
  /** performance.now() when the run started. */
  started: number;
}

const now = () => performance.now();

/**
 * Sets the run up on this rank: process group, pre-flight checks (compared across ranks),
 * datasets and loaders, model, optimizer, schedule, scaler, the resumed checkpoint, DDP.
 * On failure, what it started (loader workers, the process group) is stopped.
 */
export async function setupRun(
  input: RunPlan | TrainConfig | TrainConfigInput,
  hooks: TrainHooks,
): Promise<RunParts> {
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
  input: RunPlan | TrainConfig | TrainConfigInput,
  hooks: TrainHooks,
  started: number,
  heartbeat: Heartbeat | null,
): Promise<RunParts> {
  const beat = (phase: string, waiting = false) => heartbeat?.beat(SETUP_STEP, `setup: ${phase}`, waiting);
  let plan = underLauncherDashboard(isRunPlan(input) ? checkedPlan(input, 'the plan') : planRun(input));
  if (plan.launch.threads !== undefined) t.setNumThreads(plan.launch.threads);
  beat('joining the process group', true);
  const pg = await joinProcessGroup(plan.launch);
  let loaders: Loaders | null = null;
  try {
    const on = placementOf(plan, pg);
    const lr = lrOf(plan, pg.worldSize);
    // Everything that can fail before the first step, checked on every rank and compared
    // across ranks (preflight.ts), so a bad folder or option fails now, everywhere.
    const restarting = pg.restartCount > 0;
    let latestStep: number | null = null;
    beat('pre-flight checks, data and model');
    const { setup, model, optimizer } = await preflight(plan.options, pg.group, pg.restartCount, async () => {
      guardPriorRun(plan.io, { restarting, rank: pg.rank });
      // Rank 0 picks the checkpoint (or refuses) before anything is built or written.
      if (pg.rank === 0 && resumesLatest(plan.io, pg.restartCount))
        latestStep = await chooseLatest(plan.io, restarting);
      const setup = await buildDatasets(plan);
      const model = buildModel(plan, hooks, setup, on, pg.group);
      const optimizer = buildOptimizer(model, plan.optim, lr, pg.group);
      if (plan.io.checkpointDir !== undefined)
        checkCheckpointFolder(plan.io.checkpointDir, 2 * checkpointBytes(model, plan.optim));
      beat("comparing the ranks' pre-flight checks", true);
      return { setup, model, optimizer };
    });
    loaders = buildLoaders(plan, setup, pg.rank, pg.worldSize);
    const stepsPerEpoch = Math.floor(loaders.maxBatchesPerEpoch / plan.loop.gradAccum);
    const ownStepsPerEpoch = Math.floor(loaders.batchesPerEpoch / plan.loop.gradAccum);
    const scheduler = buildScheduler(optimizer, plan, stepsPerEpoch, lr);
    const scaler = plan.amp.scaler ? new GradScaler({ device: on.deviceType }) : null;
    beat('choosing the checkpoint to resume', true);
    const resumeDir = await findResume(plan.io, pg, latestStep);
    if (resumeDir !== null) beat(`loading ${resumeDir}`);
    const targets = { ...loadTargets(model, optimizer), scheduler, scaler: scaler ?? undefined };
    const identity = dataIdentity(setup.train);
    const resume =
      resumeDir === null
        ? null
        : { dir: resumeDir, ...(await loadResume(resumeDir, targets, plan, pg.worldSize, identity)) };
    // fsdp: the sharded model reduces its own gradients (strategy.ts).
    const usesDdp = pg.group !== null && !shardsParameters(plan, pg.group);
    if (usesDdp && pg.group !== null && commTrialDue(plan, pg.worldSize)) {
      beat('timing the gradient communication on the links (--tune-comm)', true);
      const { tuneCommOrReuse } = await import('./tune-comm.ts');
      const say = (line: string) => process.stderr.write(`tsddp train: ${line}\n`);
      const ctx = { group: pg.group, rank: pg.rank, worldSize: pg.worldSize, on, setup, lr, hooks, log: say };
      const r = await tuneCommOrReuse(plan, ctx);
      if (pg.rank === 0) for (const line of r.notes) say(`tune: comm ${line}`);
      plan = withOptions(plan, commOptions(r.choice));
    }
    beat("DistributedDataParallel (broadcasts rank 0's parameters)", true);
    const ddp = usesDdp ? wrapDdp(model, plan, on, pg) : null;
    return {
      plan,
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
      lr,
      stepsPerEpoch,
      ownStepsPerEpoch,
      started,
    };
  } catch (e) {
    await loaders?.train.close();
    await loaders?.val.close();
    if (pg.created && dist.isInitialized()) dist.destroyProcessGroup();
    throw e;
  }
}

/** --tune-comm on, or 'nodes' (what --tune sets) when the ranks span several machines. */
export function commTrialDue(
  plan: RunPlan,
  worldSize: number,
  env: NodeJS.ProcessEnv = process.env,
): boolean {
  const mode = plan.launch.tuneComm;
  if (worldSize < 2 || mode === 'off') return false;
  return mode === 'on' || Number(env.LOCAL_WORLD_SIZE ?? worldSize) < worldSize;
}

/** The options that train with the trial's choice. */
function commOptions(c: CommCandidate): Partial<TrainConfig> {
  return {
    commHook: c.commHook,
    bucketCapMb: c.bucketCapMb,
    ...(c.powersgdRank === undefined ? {} : { powersgdRank: c.powersgdRank }),
    tuneComm: 'off',
  };
}

/** Where this rank's math runs: its GPU (LOCAL_RANK's) where CUDA is, else the CPU; the autocast dtype. */
function placementOf(plan: RunPlan, pg: RunPlacement): Placement {
  const useCuda = t.cuda.isAvailable();
  if (useCuda) t.backends.cudnn.benchmark = plan.launch.cudnnBenchmark;
  return {
    device: useCuda ? `cuda:${pg.localRank}` : 'cpu',
    deviceType: useCuda ? 'cuda' : 'cpu',
    ampDtype: plan.amp.dtype,
  };
}

/**
 * Under a launcher serving the dashboard, metrics go where it reads them (unless the plan
 * names a file): a path the launcher chose, set in the plan as it is.
 */
function underLauncherDashboard(plan: RunPlan): RunPlan {
  const metricsFile = process.env[METRICS_FILE_ENV];
  if (plan.io.metricsFile !== undefined || !metricsFile) return plan;
  return { ...plan, options: { ...plan.options, metricsFile }, io: { ...plan.io, metricsFile } };
}

/** DistributedDataParallel over the run's group with the plan's buckets, graph options and comm hook. */
function wrapDdp(
  model: Module,
  plan: RunPlan,
  on: Placement,
  pg: RunPlacement,
): dist.DistributedDataParallel {
  return new dist.DistributedDataParallel(model, {
    ...plan.ddp,
    deviceIds: on.deviceType === 'cuda' ? [pg.localRank] : undefined,
    processGroup: pg.group ?? undefined,
  });
}

/** Bytes of one checkpoint: model.safetensors (parameters and buffers) + optimizer.safetensors (momentum, or AdamW's two averages). */
function checkpointBytes(model: Module, c: OptimPlan): number {
  const params = tensorBytes(model.parameters());
  const states = c.name === 'adamw' ? 2 : c.momentum > 0 ? 1 : 0;
  return params + tensorBytes(model.buffers()) + states * params;
}

/** Frees what setupRun started: heartbeat, loader workers, DDP, the process group this run created. */
export async function closeParts(p: Pick<RunParts, 'heartbeat' | 'loaders' | 'ddp' | 'pg'>): Promise<void> {
  p.heartbeat?.close();
  await p.loaders.train.close();
  await p.loaders.val.close();
  p.ddp?.close();
  if (p.pg.created && dist.isInitialized()) dist.destroyProcessGroup();
}
