// The recipe: the classic PyTorch DDP training loop, composed from tsddp's parts.
//
//   process group from the environment (tsrun/torchrun) -> datasets and loaders
//   (DistributedSampler + setEpoch) -> ResNet -> resume -> DDP -> per step: micro-batches
//   under autocast, gradient accumulation with noSync, GradScaler (fp16), SGD, the
//   schedule -> checkpoint on rank 0 then barrier -> distributed evaluation -> metrics.
//
// Every micro-step runs inside a memory scope, so the live-tensor count is flat.
import { basename, join } from 'node:path';
import { autocast, GradScaler } from '../amp/index.ts';
import { CheckpointError, latestCheckpoint, loadCheckpoint, saveCheckpoint } from '../checkpoint/index.ts';
import * as t from '../core/index.ts';
import * as dist from '../distributed/index.ts';
import { announceStoreWait } from '../distributed/store-probe.ts';
import { Heartbeat } from '../launch/heartbeat.ts';
import { resnet18, resnet34, resnet50, resnet101, resnet152 } from '../models/index.ts';
import type { Module } from '../nn/index.ts';
import { type lrScheduler, SGD } from '../optim/index.ts';
import {
  globalBatch,
  parseConfig,
  resolveLr,
  resolveStem,
  type TrainConfig,
  type TrainConfigInput,
} from './config.ts';
import { buildDatasets, buildLoaders, prepareImages, seedBatchGenerator } from './data.ts';
import { type EvalResult, evaluate } from './evaluate.ts';
import {
  type EvalRecord,
  METRICS_FILE_ENV,
  MetricsWriter,
  mergeMetrics,
  mergeRankFiles,
  type StepRecord,
} from './metrics.ts';
import { checkCheckpointFolder, preflight, tensorBytes } from './preflight.ts';
import { guardPriorRun } from './prior-run.ts';
import { Progress } from './progress.ts';
import { buildScheduler } from './schedule.ts';

export interface StepInfo {
  epoch: number;
  /** Optimizer steps done (global, 1-based after the first step). */
  step: number;
  rank: number;
  record: StepRecord;
  /** The checkpoint written after this step, if any. */
  checkpoint: string | null;
}

export interface TrainHooks {
  /** Builds the model instead of the config's ResNet: [B, 3, S, S] images -> [B, numClasses] logits. */
  model?: (numClasses: number) => Module;
  /** After every optimizer step (and its checkpoint). */
  onStep?: (info: StepInfo) => void | Promise<void>;
  /** After every evaluation, on every rank. */
  onEval?: (result: EvalResult & { epoch: number; step: number }) => void;
  /** Rank 0's progress line and messages (default true). */
  progress?: boolean;
  /** Where progress goes (default process.stdout). */
  out?: NodeJS.WritableStream & { isTTY?: boolean };
}

export interface TrainResult {
  rank: number;
  worldSize: number;
  /** Optimizer steps done in total (including those before a resume). */
  steps: number;
  /** Epochs completed. */
  epochs: number;
  /** The step this process started at (0, or the resumed checkpoint's). */
  startStep: number;
  resumedFrom: string | null;
  /** This rank's loss at the last step. */
  lastLoss: number;
  lastEval: EvalResult | null;
  checkpoints: string[];
  wallSec: number;
  /** Images per second over all ranks, for the steps this process ran. */
  imagesPerSec: number;
  lr: number;
}

interface DistSetup {
  group: dist.ProcessGroup | null;
  rank: number;
  worldSize: number;
  localRank: number;
  restartCount: number;
  created: boolean;
}

/**
 * How long a peer may be silent: --timeout, else 5 minutes when every rank is on this
 * node (a stopped or stuck peer is a local fault, no reason to wait PyTorch's half hour)
 * and 30 minutes across nodes, where a slow node or file system is more likely.
 */
export function timeoutSeconds(
  c: Pick<TrainConfig, 'timeout'>,
  env: { worldSize: number; localWorldSize: number },
): number {
  return c.timeout ?? (env.localWorldSize === env.worldSize ? 300 : 1800);
}

/** The process group: the existing one, one from the launcher's environment, or none (one process). */
async function setupDistributed(c: TrainConfig): Promise<DistSetup> {
  const restartCount = Number(process.env.TORCHELASTIC_RESTART_COUNT ?? 0) || 0;
  if (dist.isInitialized()) {
    const g = dist.getDefaultGroup();
    const localRank = Number(process.env.LOCAL_RANK ?? g.rank) || 0;
    return { group: g, rank: g.rank, worldSize: g.size, localRank, restartCount, created: false };
  }
  if (process.env.RANK === undefined && process.env.WORLD_SIZE === undefined) {
    return { group: null, rank: 0, worldSize: 1, localRank: 0, restartCount, created: false };
  }
  const env = dist.readDistEnv();
  const timeoutS = timeoutSeconds(c, env);
  // A client of the store (every rank but a serving rank 0) says at once when nothing is there.
  if (env.rank !== 0 || env.agentStore)
    await announceStoreWait(env.masterAddr, env.masterPort, env.rank, timeoutS);
  const g = dist.initProcessGroup({ backend: c.backend, timeoutMs: timeoutS * 1000 });
  return { group: g, rank: g.rank, worldSize: g.size, localRank: env.localRank, restartCount, created: true };
}

const CKPT_DIR = /^ckpt-(\d+)$/;

/** Which checkpoint to resume from: decided on rank 0 and broadcast, so every rank loads the same. */
async function findResume(c: TrainConfig, d: DistSetup): Promise<string | null> {
  let mode = c.resume;
  // A gang the launcher restarted resumes this run's latest checkpoint.
  if (mode === 'none' && d.restartCount > 0 && c.checkpointDir !== undefined) mode = 'auto';
  if (mode === 'none') return null;
  if (mode !== 'auto') return mode;
  const root = c.checkpointDir as string;
  let step = -1;
  if (d.rank === 0) {
    const dir = await latestCheckpoint(root, {
      onSkip: (skipped, why) => console.warn(`resume: skipping ${skipped}: ${why.message}`),
    });
    if (dir !== null) step = Number(CKPT_DIR.exec(basename(dir))?.[1] ?? -1);
  }
  if (d.group !== null && d.group.size > 1) {
    step = await t.tidyAsync(async () => {
      const buf = t.tensor([step], { dtype: 'int64' });
      await dist.broadcast(buf, 0, { group: d.group as dist.ProcessGroup });
      return Number((buf.toTypedArray() as BigInt64Array)[0]);
    });
  }
  return step < 0 ? null : join(root, `ckpt-${String(step).padStart(6, '0')}`);
}

/** Options that fix the data order and step numbering: a resumed run must keep them. */
const RESUME_KEYS = ['dataset', 'trainSize', 'imageSize', 'batchSize', 'gradAccum', 'seed', 'model'] as const;

function checkResumeConfig(saved: unknown, c: TrainConfig, dir: string): void {
  const s = (saved as { config?: Record<string, unknown> } | null)?.config;
  if (s === undefined) return;
  const changed = RESUME_KEYS.filter((k) => JSON.stringify(s[k] ?? null) !== JSON.stringify(c[k] ?? null));
  if (changed.length > 0) {
    throw new CheckpointError(
      'INCOMPATIBLE',
      dir,
      `cannot resume: ${changed.map((k) => `${k} was ${JSON.stringify(s[k])}, now ${JSON.stringify(c[k])}`).join('; ')} ` +
        '(these fix the data order and the step numbering)',
    );
  }
}

const now = () => performance.now();

const RESNETS = { resnet18, resnet34, resnet50, resnet101, resnet152 };

/**
 * Trains as the config says and returns when done. Under tsrun/torchrun (RANK, WORLD_SIZE,
 * MASTER_ADDR, MASTER_PORT set) it joins the process group and trains with DDP; without
 * them it trains in this process alone.
 */
export async function train(
  input: TrainConfig | TrainConfigInput,
  hooks: TrainHooks = {},
): Promise<TrainResult> {
  const parsed = parseConfig(input);
  // Under a launcher serving the dashboard, metrics go where it reads them.
  const envMetrics = process.env[METRICS_FILE_ENV];
  const c = parsed.metricsFile === undefined && envMetrics ? { ...parsed, metricsFile: envMetrics } : parsed;
  const started = now();
  const d = await setupDistributed(c);
  const { rank, worldSize } = d;
  const show = hooks.progress !== false && rank === 0;
  const progress = new Progress({ out: hooks.out, logEvery: c.logEvery });
  const log = (s: string) => {
    if (show) progress.log(s);
  };
  const useCuda = t.cuda.isAvailable();
  const device = useCuda ? `cuda:${d.localRank}` : 'cpu';
  const deviceType = useCuda ? 'cuda' : 'cpu';
  const ampDtype = c.amp === 'bf16' ? 'bfloat16' : c.amp === 'fp16' ? 'float16' : null;

  // Pre-flight: everything that can fail before the first step, checked on every rank and
  // compared across ranks (preflight.ts), so a bad folder or option fails now, everywhere.
  const lr = resolveLr(c, worldSize);
  const { setup, model, optimizer } = await preflight(c, d.group, d.restartCount, async () => {
    guardPriorRun(c, { restarting: d.restartCount > 0, rank });
    const setup = await buildDatasets(c);
    // Model and optimizer: the same seed on every rank (DDP also broadcasts rank 0's).
    t.manualSeed(c.seed);
    const model =
      hooks.model?.(setup.numClasses) ??
      RESNETS[c.model]({
        numClasses: setup.numClasses,
        stem: resolveStem(c),
        widthMultiplier: c.widthMultiplier,
        zeroInitResidual: c.zeroInitResidual,
      });
    if (useCuda) model.to(device);
    if (c.channelsLast) model.to({ memoryFormat: 'channelsLast' });
    const optimizer = new SGD(model.parameters(), {
      lr,
      momentum: c.momentum,
      nesterov: c.nesterov,
      weightDecay: c.weightDecay,
    });
    if (c.checkpointDir !== undefined) {
      // model.safetensors (parameters and buffers) + optimizer.safetensors (momentum).
      const params = tensorBytes(model.parameters());
      const one = params + tensorBytes(model.buffers()) + (c.momentum > 0 ? params : 0);
      checkCheckpointFolder(c.checkpointDir, 2 * one);
    }
    return { setup, model, optimizer };
  });

  // Data loading.
  const loaders = buildLoaders(c, setup, rank, worldSize);
  const stepsPerEpoch = Math.floor(loaders.batchesPerEpoch / c.gradAccum);
  const totalSteps = c.epochs * stepsPerEpoch;
  const endStep = Math.min(totalSteps, c.maxSteps ?? totalSteps);

  let ddp: dist.DistributedDataParallel | null = null;
  // Whether this run started its metrics (then a failure still merges them), and merged them.
  let metricsOpen = false;
  let merged = false;
  let hb: Heartbeat | null = null;
  try {
    const scheduler: lrScheduler.LRScheduler = buildScheduler(optimizer, c, stepsPerEpoch, lr);
    const scaler = c.amp === 'fp16' ? new GradScaler({ device: deviceType }) : null;

    // Resume: everything the run needs to continue exactly where the checkpoint left it.
    let step = 0;
    let epoch = 0;
    let stepInEpoch = 0;
    const resumeDir = await findResume(c, d);
    if (resumeDir !== null) {
      let loaded: Awaited<ReturnType<typeof loadCheckpoint>>;
      try {
        loaded = await loadCheckpoint(
          resumeDir,
          { model, optimizer, scheduler, scaler: scaler ?? undefined },
          { worldSize },
        );
      } catch (e) {
        if (e instanceof CheckpointError && e.code === 'WORLD_SIZE_MISMATCH') {
          throw new CheckpointError(
            'WORLD_SIZE_MISMATCH',
            resumeDir,
            `cannot resume with world size ${worldSize}: ${e.message.slice(resumeDir.length + 2).split(';')[0]}. ` +
              'Resume with the same number of workers: the data order and the global batch depend on it',
            { cause: e },
          );
        }
        throw e;
      }
      checkResumeConfig(loaded.extra, c, resumeDir);
      step = loaded.step;
      epoch = loaded.epoch;
      stepInEpoch = (loaded.extra as { stepInEpoch?: number } | null)?.stepInEpoch ?? 0;
      log(`resumed from ${resumeDir} (epoch ${epoch + 1}, step ${step})`);
    }
    const startStep = step;

    if (d.group !== null) {
      ddp = new dist.DistributedDataParallel(model, {
        deviceIds: useCuda ? [d.localRank] : undefined,
        bucketCapMb: c.bucketCapMb,
        gradientAsBucketView: c.gradientAsBucketView,
        staticGraph: c.staticGraph,
        findUnusedParameters: c.findUnusedParameters,
        commHook: c.commHook === 'none' ? undefined : c.commHook,
        processGroup: d.group,
      });
    }
    const net = ddp ?? model;

    // Progress for the launcher's watchdog (launch/heartbeat.ts), when tsrun asks for it.
    hb = Heartbeat.fromEnv();
    const metrics = new MetricsWriter(c.metricsFile, rank, resumeDir === null);
    metricsOpen = true;
    if (resumeDir !== null)
      metrics.write({ type: 'resume', rank, step, epoch, checkpoint: resumeDir, time: Date.now() });

    const params = model.parameters().reduce((n, p) => n + p.numel(), 0);
    const gb = globalBatch(c, worldSize);
    log(
      `tsddp train: ${hooks.model ? 'custom model' : `${c.model} (${resolveStem(c)} stem)`}, ` +
        `${(params / 1e6).toFixed(2)}M parameters; ${c.dataset} ${setup.imageSize}x${setup.imageSize}: ` +
        `${setup.train.length} train / ${setup.val.length} val; world ${worldSize} x batch ${c.batchSize} x accum ${c.gradAccum} ` +
        `= ${gb} images/step; lr ${lr.toPrecision(4)}${c.lr === undefined ? ` (${c.baseLr} x ${gb}/${c.baseBatch})` : ''}; ` +
        `${c.epochs} epochs x ${stepsPerEpoch} steps; amp ${c.amp}; ${t.getNumThreads()} thread(s)/rank`,
    );

    const checkpoints: string[] = [];
    const saveNow = async (): Promise<string | null> => {
      if (c.checkpointDir === undefined) return null;
      // A finished epoch is saved as the start of the next one.
      const atEnd = stepInEpoch === stepsPerEpoch;
      const ckEpoch = atEnd ? epoch + 1 : epoch;
      let dir: string | null = null;
      if (rank === 0) {
        const saved = await saveCheckpoint(
          c.checkpointDir,
          {
            model,
            optimizer,
            scheduler,
            scaler: scaler ?? undefined,
            epoch: ckEpoch,
            step,
            samplerEpoch: ckEpoch,
            worldSize,
            extra: {
              stepInEpoch: atEnd ? 0 : stepInEpoch,
              config: Object.fromEntries(RESUME_KEYS.map((k) => [k, c[k] ?? null])),
            },
          },
          { keepLast: c.checkpointKeep },
        );
        dir = saved.dir;
      }
      if (d.group !== null) await dist.barrier({ group: d.group });
      dir ??= join(c.checkpointDir, `ckpt-${String(step).padStart(6, '0')}`);
      checkpoints.push(dir);
      return dir;
    };

    const gen = new t.Generator();
    const accum = c.gradAccum;
    let lastLoss = Number.NaN;
    let lastEval: EvalResult | null = null;
    let imagesDone = 0;
    let loopSecs = 0;
    const runEval = async (): Promise<void> => {
      hb?.beat(step, 'evaluation');
      // Each rank's BatchNorm running statistics took its own last batch; DDP would
      // broadcast rank 0's before the next forward. Do that now, so every rank evaluates
      // the same model: rank 0's, the one its checkpoints hold.
      if (d.group !== null && d.group.size > 1) {
        const g = d.group;
        await Promise.all(model.buffers().map((b) => dist.broadcast(b, 0, { group: g })));
      }
      const r = await evaluate(model, loaders.val, {
        prepare: (image) => prepareImages(image, setup, { augment: false, channelsLast: c.channelsLast }),
        amp: ampDtype,
        deviceType,
        device,
        group: d.group,
      });
      lastEval = r;
      const rec: EvalRecord = { type: 'eval', rank, epoch, step, ...r, time: Date.now() };
      metrics.write(rec);
      hooks.onEval?.({ ...r, epoch, step });
      log(
        `eval after epoch ${epoch} (step ${step}): loss ${r.loss.toFixed(4)}  top-1 ${(100 * r.top1).toFixed(2)}%  ` +
          `top-5 ${(100 * r.top5).toFixed(2)}%  (${r.count} images)`,
      );
    };

    while (step < endStep) {
      // DistributedSampler.setEpoch: a new shuffle each epoch, the same on every rank.
      loaders.sampler.setEpoch(epoch);
      loaders.sampler.skip = stepInEpoch * accum * c.batchSize;
      // Workers' per-sample random streams (ImageFolder's crops) depend on the loader's
      // epoch and seed: pin them to the training epoch, so a resumed run matches.
      loaders.train.epoch = epoch;
      loaders.train.generator?.manualSeed(c.seed + epoch);
      const it = loaders.train[Symbol.asyncIterator]();
      try {
        while (stepInEpoch < stepsPerEpoch && step < endStep) {
          const t0 = now();
          let loss = 0;
          let acc = 0;
          let dataMs = 0;
          let forwardMs = 0;
          let backwardMs = 0;
          const lrUsed = optimizer.paramGroups[0].lr;
          for (let m = 0; m < accum; m++) {
            const td = now();
            hb?.beat(step, 'data loading');
            const next = await it.next();
            dataMs += now() - td;
            if (next.done)
              throw new Error(`the data loader ended after ${stepInEpoch} steps of epoch ${epoch}`);
            using batch = next.value;
            using _ = t.scope();
            const generator = seedBatchGenerator(gen, c.seed, epoch, stepInEpoch * accum + m, rank);
            let x = prepareImages(batch.image, setup, {
              augment: c.augment,
              generator,
              channelsLast: c.channelsLast,
            });
            let y = batch.label;
            if (useCuda) {
              x = x.to({ device, nonBlocking: true });
              y = y.to({ device, nonBlocking: true });
            }
            const micro = (): void => {
              const tf = now();
              hb?.beat(step, 'forward');
              const forward = () => {
                const logits = net.forward(x);
                return [logits, t.crossEntropy(logits, y, { labelSmoothing: c.labelSmoothing })] as const;
              };
              const [logits, l] =
                ampDtype === null ? forward() : autocast({ deviceType, dtype: ampDtype }, forward);
              forwardMs += now() - tf;
              const tb = now();
              hb?.beat(step, 'backward and the gradient all-reduce');
              const scaled = accum > 1 ? l.div(accum) : l;
              (scaler !== null ? scaler.scale(scaled) : scaled).backward();
              backwardMs += now() - tb;
              loss += l.item() / accum;
              acc += logits.argmax(1).eq(y).sum().item() / (y.shape[0] * accum);
            };
            // Accumulate locally; only the last micro-batch's backward all-reduces.
            if (ddp !== null && m < accum - 1) ddp.noSync(micro);
            else micro();
          }
          const to = now();
          hb?.beat(step, 'optimizer step');
          if (scaler !== null) {
            scaler.step(optimizer);
            scaler.update();
          } else optimizer.step();
          optimizer.zeroGrad();
          scheduler.step();
          const optimizerMs = now() - to;
          step++;
          stepInEpoch++;
          const stepMs = now() - t0;
          const images = c.batchSize * accum;
          imagesDone += images * worldSize;
          loopSecs += stepMs / 1000;
          lastLoss = loss;
          const stats = ddp?.stats();
          const record: StepRecord = {
            type: 'step',
            rank,
            epoch,
            step,
            loss,
            acc,
            lr: lrUsed,
            images,
            imagesPerSec: images / (stepMs / 1000),
            dataMs,
            forwardMs,
            backwardMs,
            optimizerMs,
            stepMs,
            commMs: stats?.backwardCommMs,
            overlapMs: stats?.backwardCommOverlapMs,
            liveTensors: t.memory().tensors,
            ...(c.skipBadSamples === undefined ? {} : { skippedSamples: loaders.train.skippedSamples }),
            totalSteps: endStep,
            epochs: c.epochs,
            time: Date.now(),
          };
          metrics.write(record);
          if (show) {
            progress.update({
              epoch,
              epochs: c.epochs,
              step,
              totalSteps: endStep,
              loss,
              acc,
              lr: lrUsed,
              images: images * worldSize,
            });
          }
          const due =
            (c.checkpointEvery > 0 && step % c.checkpointEvery === 0) ||
            stepInEpoch === stepsPerEpoch ||
            step === endStep;
          hb?.beat(step, due ? 'checkpoint' : 'step done');
          const saved = due ? await saveNow() : null;
          await hooks.onStep?.({ epoch, step, rank, record, checkpoint: saved });
        }
      } finally {
        await it.return?.(undefined);
      }
      const epochDone = stepInEpoch === stepsPerEpoch;
      if (epochDone) {
        epoch++;
        stepInEpoch = 0;
      }
      if (c.evalEvery > 0 && ((epochDone && epoch % c.evalEvery === 0) || step === endStep)) await runEval();
    }

    progress.done();
    const wallSec = (now() - started) / 1000;
    const imagesPerSec = loopSecs > 0 ? imagesDone / loopSecs : 0;
    metrics.write({
      type: 'summary',
      rank,
      step,
      worldSize,
      steps: step - startStep,
      wallSec,
      imagesPerSec,
      time: Date.now(),
    });
    if (d.group !== null) await dist.barrier({ group: d.group });
    if (c.metricsFile !== undefined && rank === 0) mergeMetrics(c.metricsFile, worldSize);
    merged = true;
    log(
      `done: ${step} steps in ${wallSec.toFixed(1)} s (${imagesPerSec.toFixed(1)} img/s over ${worldSize} rank(s))` +
        (c.metricsFile !== undefined ? `; metrics in ${c.metricsFile}` : ''),
    );
    return {
      rank,
      worldSize,
      steps: step,
      epochs: epoch,
      startStep,
      resumedFrom: resumeDir,
      lastLoss,
      lastEval,
      checkpoints,
      wallSec,
      imagesPerSec,
      lr: optimizer.paramGroups[0].lr,
    };
  } catch (e) {
    if (d.group === null) throw e;
    const timeoutS = d.group.timeoutMs / 1000;
    throw dist.explainPeerFault(e, 'a collective of the training loop', rank, timeoutS);
  } finally {
    hb?.close();
    // A failed run's metrics are merged too (the launcher merges them again once every rank
    // has stopped), so `<metricsFile>` exists whatever happened.
    if (metricsOpen && !merged && c.metricsFile !== undefined && rank === 0) {
      try {
        mergeRankFiles(c.metricsFile);
      } catch (e) {
        console.warn(`tsddp train: could not merge the metrics of the failed run: ${(e as Error).message}`);
      }
    }
    progress.done();
    await loaders.train.close();
    await loaders.val.close();
    ddp?.destroy();
    if (d.created && dist.isInitialized()) dist.destroyProcessGroup();
  }
}
