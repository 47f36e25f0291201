// The recipe: the classic PyTorch DDP training loop, composed from tsddp's parts
// (architecture §9).
//
//   Trainer.create(): process group from the environment (tsrun/torchrun) -> pre-flight ->
//     datasets and loaders (DistributedSampler) -> model (ResNet or ViT) + SGD or AdamW -> resume -> DDP
//   fit(): per epoch setEpoch, per step trainStep() (micro-batches under autocast,
//     gradient accumulation with noSync, GradScaler for fp16, SGD, the schedule), metrics
//     and checkpoints (rank 0 writes, all wait), evaluate() at epoch ends.
//
// Every micro-step runs inside a memory scope, so the live-tensor count is flat; losses are
// read from the device only at log intervals (step-meter.ts).
import { join } from 'node:path';
import { autocast, type GradScaler } from '../amp/index.ts';
import { checkpointDirName, saveCheckpoint } from '../checkpoint/index.ts';
import * as t from '../core/index.ts';
import type { Batch } from '../data/index.ts';
import * as dist from '../distributed/index.ts';
import type { Heartbeat } from '../launch/heartbeat.ts';
import { MetricsWriter, mergeMetrics, mergeRankFiles } from '../metrics/index.ts';
import type { Module } from '../nn/index.ts';
import { clipGradNorm_, type lrScheduler, type Optimizer } from '../optim/index.ts';
import { globalBatch, resolveLr, resolveStem, type TrainConfig, type TrainConfigInput } from './config.ts';
import {
  type DataIdentity,
  type DataSetup,
  epochBatches,
  type Loaders,
  prepareImages,
  seedBatchGenerator,
} from './data.ts';
import { type EvalResult, evaluate } from './evaluate.ts';
import type { RunPlacement } from './process-group.ts';
import { Progress } from './progress.ts';
import { type ResumePoint, recordEvaluation, resumeExtra } from './resume.ts';
import { type Placement, type RunParts, setupRun } from './setup.ts';
import { type PendingRecord, StepMeter } from './step-meter.ts';
import type { StepInfo, TrainHooks, TrainResult } from './types.ts';

export type { StepInfo, TrainHooks, TrainResult };

/** Per-step times in ms. */
interface StepTimes {
  dataMs: number;
  forwardMs: number;
  backwardMs: number;
}

const now = () => performance.now();

/**
 * Trains as the config says and returns when done. Under tsrun/torchrun (RANK, WORLD_SIZE,
 * MASTER_ADDR, MASTER_PORT set) it joins the process group and trains with DDP; without
 * them it trains in this process alone.
 */
export async function train(
  input: TrainConfig | TrainConfigInput,
  hooks: TrainHooks = {},
): Promise<TrainResult> {
  const trainer = await Trainer.create(input, hooks);
  return trainer.fit();
}

/** The built training run: Trainer.create() sets it up, fit() runs it to the end. */
/** Frees what setupRun started: heartbeat, loader workers, DDP, the process group this run created. */
async function closeParts(p: Pick<RunParts, 'heartbeat' | 'loaders' | 'ddp' | 'pg'>): Promise<void> {
  p.heartbeat?.close();
  await p.loaders.train.close();
  await p.loaders.val.close();
  p.ddp?.close();
  if (p.pg.created && dist.isInitialized()) dist.destroyProcessGroup();
}

export class Trainer {
  readonly config: TrainConfig;
  readonly rank: number;
  readonly worldSize: number;
  readonly model: Module;
  readonly optimizer: Optimizer;
  readonly scheduler: lrScheduler.LRScheduler;
  /** The fp16 GradScaler (null otherwise). */
  readonly scaler: GradScaler | null;
  /** The DDP wrapper (null in one process). */
  readonly ddp: dist.DistributedDataParallel | null;
  /** The checkpoint this run resumed from. */
  readonly resumedFrom: string | null;

  // Position in the run.
  epoch = 0;
  step = 0;
  /** Optimizer steps done in `epoch`. */
  stepInEpoch = 0;
  /** Samples of this epoch's whole order consumed so far, all ranks together. */
  private samplesInEpoch = 0;
  /** Where the first epoch starts in its whole order, when a resume re-shards it. */
  private reshardAt: number | null = null;
  readonly startStep: number;
  readonly stepsPerEpoch: number;
  /** The step the run stops at (--max-steps or the end of the last epoch). */
  readonly endStep: number;

  private readonly hooks: TrainHooks;
  private readonly pg: RunPlacement;
  private readonly on: Placement;
  private readonly setup: DataSetup;
  private readonly loaders: Loaders;
  private readonly progress: Progress;
  private readonly started: number;
  private readonly checkpoints: string[] = [];
  private readonly meter: StepMeter;
  private readonly metrics: MetricsWriter;
  private readonly heartbeat: Heartbeat | null;
  /** The evaluation due after the resumed checkpoint never finished: it runs first. */
  private pendingEval = false;
  private readonly batchGenerator = new t.Generator();
  /** The training set's identity, recorded in every checkpoint (resume.ts). */
  private readonly dataIdentity: DataIdentity;
  private lastLoss = Number.NaN;
  private lastEval: EvalResult | null = null;
  /** The last checkpoint written (or resumed from), where its evaluation is recorded. */
  private lastCheckpoint: { step: number; dir: string } | null = null;
  private imagesDone = 0;
  private loopSecs = 0;
  private closed = false;

  private constructor(parts: RunParts) {
    this.config = parts.config;
    this.hooks = parts.hooks;
    this.pg = parts.pg;
    this.on = parts.on;
    this.setup = parts.setup;
    this.model = parts.model;
    this.optimizer = parts.optimizer;
    this.scheduler = parts.scheduler;
    this.scaler = parts.scaler;
    this.loaders = parts.loaders;
    this.ddp = parts.ddp;
    this.started = parts.started;
    this.heartbeat = parts.heartbeat;
    this.dataIdentity = parts.dataIdentity;
    this.rank = parts.pg.rank;
    this.worldSize = parts.pg.worldSize;
    const c = parts.config;
    this.stepsPerEpoch = Math.floor(parts.loaders.batchesPerEpoch / c.gradAccum);
    let totalSteps = c.epochs * this.stepsPerEpoch;
    this.meter = new StepMeter(c.logEvery);
    this.progress = new Progress({ out: parts.hooks.out, logEvery: c.logEvery });
    const { resume } = parts;
    // A resumed run appends to its rank file; a new one starts it anew.
    this.metrics = new MetricsWriter(c.metricsFile, this.rank, resume === null);
    this.resumedFrom = resume?.dir ?? null;
    if (resume !== null) this.lastCheckpoint = { step: resume.step, dir: resume.dir };
    this.startStep = resume?.step ?? 0;
    if (resume !== null) {
      this.epoch = resume.epoch;
      this.step = resume.step;
      this.stepInEpoch = resume.stepInEpoch;
      this.samplesInEpoch = resume.samplesInEpoch;
      this.pendingEval = resume.evalPending && c.evalEvery > 0;
      const { epoch, step, dir } = resume;
      this.metrics.write({ type: 'resume', rank: this.rank, step, epoch, checkpoint: dir, time: Date.now() });
      this.log(`resumed from ${dir} (epoch ${epoch + 1}, step ${step})`);
      if (resume.dataChange !== null)
        this.log(`the training data changed (${resume.dataChange}); going on with it`);
      if (resume.savedWorldSize !== this.worldSize) totalSteps = this.reshard(resume);
      else if (resume.dataChange !== null) totalSteps = this.continueChangedData(resume);
    }
    this.endStep = Math.min(totalSteps, c.maxSteps ?? totalSteps);
  }

  /**
   * A resume with another world size (--reshard, or tsrun's elastic mode): the epoch goes
   * on at the same sample of its order, dealt to the new ranks; each rank keeps its batch
   * size, so the global batch changes with the world; the optimizer and the LR schedule go
   * on as saved (step by step). Returns the run's new total of steps.
   */
  private reshard(resume: ResumePoint): number {
    const c = this.config;
    const { sampler } = this.loaders;
    sampler.setEpochFrom(resume.epoch, resume.samplesInEpoch);
    const stepsLeft = Math.floor(Math.floor(sampler.length / c.batchSize) / c.gradAccum);
    // The loop counts steps up to stepsPerEpoch: start it where this many are left.
    this.stepInEpoch = this.stepsPerEpoch - stepsLeft;
    this.reshardAt = resume.samplesInEpoch;
    const perStep = c.batchSize * c.gradAccum;
    this.log(
      `world size ${resume.savedWorldSize} -> ${this.worldSize}: epoch ${resume.epoch + 1} goes on at sample ` +
        `${resume.samplesInEpoch} of its order, re-sharded (${stepsLeft} steps left in it); global batch ` +
        `${perStep * resume.savedWorldSize} -> ${perStep * this.worldSize}; LR schedule as saved`,
    );
    return resume.step + stepsLeft + (c.epochs - resume.epoch - 1) * this.stepsPerEpoch;
  }

  /**
   * A resume over changed training data (--allow-data-change): the epoch goes on at the
   * saved step, or is over if the data shrank below it; the run still trains to the end of
   * --epochs, with the new epoch length. Returns the run's new total of steps.
   */
  private continueChangedData(resume: ResumePoint): number {
    if (this.epochFinished) {
      this.log(
        `epoch ${this.epoch + 1} has ${this.stepsPerEpoch} steps now and ${this.stepInEpoch} were done: it is over`,
      );
      this.epoch++;
      this.stepInEpoch = 0;
      this.samplesInEpoch = 0;
    }
    return resume.step + (this.config.epochs - this.epoch) * this.stepsPerEpoch - this.stepInEpoch;
  }

  /**
   * Sets the run up on this rank (setup.ts): process group, pre-flight checks, loaders,
   * model, optimizer, schedule, scaler, the resumed checkpoint, DDP.
   */
  static async create(input: TrainConfig | TrainConfigInput, hooks: TrainHooks = {}): Promise<Trainer> {
    const parts = await setupRun(input, hooks);
    try {
      return new Trainer(parts);
    } catch (e) {
      // The metrics file refused (an unsafe folder, a rank file not tsddp's): free what setup started.
      await closeParts(parts);
      throw e;
    }
  }

  /** Runs the loop to the end of the run, then closes the trainer. */
  async fit(): Promise<TrainResult> {
    const c = this.config;
    let merged = false;
    try {
      this.announce();
      if (this.pendingEval) {
        this.log(
          `the evaluation after step ${this.step} did not finish in the run that saved ${this.resumedFrom}: running it`,
        );
        await this.evaluate();
      }
      while (this.step < this.endStep) {
        const start =
          this.reshardAt === null ? { batch: this.stepInEpoch * c.gradAccum } : { sample: this.reshardAt };
        this.reshardAt = null;
        const batches = epochBatches(this.loaders, this.epoch, start);
        try {
          while (this.stepInEpoch < this.stepsPerEpoch && this.step < this.endStep) {
            await this.trainStep(batches);
            await this.afterStep();
          }
        } finally {
          await batches.return?.(undefined);
        }
        const epochDone = this.epochFinished;
        if (epochDone) {
          this.epoch++;
          this.stepInEpoch = 0;
          this.samplesInEpoch = 0;
        }
        if (this.evalDue(epochDone, this.epoch)) await this.evaluate();
      }
      const result = await this.finish();
      merged = true;
      return result;
    } catch (e) {
      if (this.pg.group === null) throw e;
      throw dist.explainPeerFault(
        e,
        'a collective of the training loop',
        this.rank,
        this.pg.group.timeoutMs / 1000,
      );
    } finally {
      if (!merged) this.saveFailedRunMetrics();
      await this.close();
    }
  }

  /**
   * One optimizer step: `gradAccum` micro-batches (forward, loss, backward; only the last
   * one's backward all-reduces), then the optimizer (through the GradScaler with fp16) and
   * the schedule.
   */
  async trainStep(batches: AsyncIterator<Batch>): Promise<void> {
    const c = this.config;
    const started = now();
    const times: StepTimes = { dataMs: 0, forwardMs: 0, backwardMs: 0 };
    const lr = this.optimizer.paramGroups[0].lr;
    for (let m = 0; m < c.gradAccum; m++) {
      const t0 = now();
      this.beat('data loading');
      const next = await batches.next();
      times.dataMs += now() - t0;
      if (next.done)
        throw new Error(`the data loader ended after ${this.stepInEpoch} steps of epoch ${this.epoch}`);
      using batch = next.value;
      // Accumulate locally; only the last micro-batch's backward all-reduces.
      const last = m === c.gradAccum - 1;
      if (this.ddp !== null && !last) this.ddp.noSync(() => this.microStep(batch, m, times));
      else this.microStep(batch, m, times);
    }
    const t0 = now();
    this.beat('optimizer step');
    if (c.clipGradNorm !== undefined) {
      // As PyTorch's recipe: unscale first, so the norm is of the true gradients.
      this.scaler?.unscale_(this.optimizer);
      clipGradNorm_(this.model.parameters(), c.clipGradNorm);
    }
    if (this.scaler !== null) {
      this.scaler.step(this.optimizer);
      this.scaler.update();
    } else this.optimizer.step();
    this.optimizer.zeroGrad();
    this.scheduler.step();
    const optimizerMs = now() - t0;
    this.step++;
    this.stepInEpoch++;
    const stepMs = now() - started;
    const images = c.batchSize * c.gradAccum;
    this.imagesDone += images * this.worldSize;
    this.samplesInEpoch += images * this.worldSize;
    this.loopSecs += stepMs / 1000;
    this.meter.endStep(this.stepRecord(lr, images, { ...times, optimizerMs, stepMs }), c.gradAccum, images);
  }

  /** Forward and backward of micro-batch `m` of the step, in a memory scope. */
  private microStep(batch: Batch, m: number, times: StepTimes): void {
    using _ = t.scope();
    const c = this.config;
    const { device, deviceType, ampDtype } = this.on;
    const generator = seedBatchGenerator(
      this.batchGenerator,
      c.seed,
      this.epoch,
      this.stepInEpoch * c.gradAccum + m,
      this.rank,
    );
    let x = prepareImages(batch.image, this.setup, {
      augment: c.augment,
      generator,
      channelsLast: c.channelsLast,
    });
    let y = batch.label;
    if (deviceType === 'cuda') {
      x = x.to({ device, nonBlocking: true });
      y = y.to({ device, nonBlocking: true });
    }
    const t0 = now();
    this.beat('forward', this.ddp !== null); // DDP broadcasts buffers first
    const net = this.ddp ?? this.model;
    const forward = () => {
      const logits = net.forward(x);
      return [logits, t.crossEntropy(logits, y, { labelSmoothing: c.labelSmoothing })] as const;
    };
    const [logits, loss] = ampDtype === null ? forward() : autocast({ deviceType, dtype: ampDtype }, forward);
    times.forwardMs += now() - t0;
    const t1 = now();
    this.beat('backward and the gradient all-reduce', this.ddp !== null);
    const scaled = c.gradAccum > 1 ? loss.div(c.gradAccum) : loss;
    (this.scaler !== null ? this.scaler.scale(scaled) : scaled).backward();
    times.backwardMs += now() - t1;
    this.meter.addMicroBatch(loss, logits, y);
  }

  /** Everything known about a step without reading the device: loss and accuracy come at the flush. */
  private stepRecord(
    lr: number,
    images: number,
    ms: StepTimes & { optimizerMs: number; stepMs: number },
  ): PendingRecord {
    const c = this.config;
    const stats = this.ddp?.stats();
    return {
      type: 'step',
      rank: this.rank,
      epoch: this.epoch,
      step: this.step,
      lr,
      images,
      imagesPerSec: images / (ms.stepMs / 1000),
      ...ms,
      commMs: stats?.backwardCommMs,
      overlapMs: stats?.backwardCommOverlapMs,
      liveTensors: t.memory().tensors,
      ...(c.skipBadSamples === undefined ? {} : { skippedSamples: this.loaders.train.skippedSamples }),
      totalSteps: this.endStep,
      epochs: c.epochs,
      time: Date.now(),
    };
  }

  /** After a step: metrics at log intervals, the checkpoint when due, the hook. */
  private async afterStep(): Promise<void> {
    const c = this.config;
    const epochEnd = this.epochFinished;
    const checkpointDue =
      c.checkpointDir !== undefined &&
      ((c.checkpointEvery > 0 && this.step % c.checkpointEvery === 0) ||
        epochEnd ||
        this.step === this.endStep);
    if (
      this.step % c.logEvery === 0 ||
      this.meter.full ||
      checkpointDue ||
      epochEnd ||
      this.step === this.endStep
    )
      this.flushMetrics();
    // Rank 0 writes a checkpoint; the others wait for it.
    this.beat(
      checkpointDue ? 'checkpoint' : 'step done',
      checkpointDue && this.rank !== 0 && this.worldSize > 1,
    );
    const saved = checkpointDue ? await this.checkpoint() : null;
    await this.hooks.onStep?.({ epoch: this.epoch, step: this.step, rank: this.rank, checkpoint: saved });
  }

  /** Reads the pending steps' losses (one host sync), writes their records and shows progress. */
  private flushMetrics(): void {
    for (const record of this.meter.flush()) {
      this.metrics.write(record);
      this.lastLoss = record.loss;
      if (this.showProgress) {
        const { epoch, step, loss, acc, lr, images } = record;
        const info = { epoch, epochs: this.config.epochs, step, totalSteps: this.endStep, loss, acc, lr };
        this.progress.update({ ...info, images: images * this.worldSize }, record.time);
      }
    }
  }

  /**
   * Writes a checkpoint of the run as it is now (rank 0 writes, every rank waits) and
   * returns its folder; null without --checkpoint-dir.
   */
  async checkpoint(): Promise<string | null> {
    const c = this.config;
    if (c.checkpointDir === undefined) return null;
    // A finished epoch is saved as the start of the next one.
    const atEnd = this.epochFinished;
    const epoch = atEnd ? this.epoch + 1 : this.epoch;
    if (this.rank === 0) {
      await saveCheckpoint(
        c.checkpointDir,
        {
          model: this.model,
          optimizer: this.optimizer,
          scheduler: this.scheduler,
          scaler: this.scaler ?? undefined,
          epoch,
          step: this.step,
          samplerEpoch: epoch,
          worldSize: this.worldSize,
          extra: resumeExtra(c, {
            stepInEpoch: atEnd ? 0 : this.stepInEpoch,
            samplesInEpoch: atEnd ? 0 : this.samplesInEpoch,
            data: this.dataIdentity,
            evalPending: this.evalDue(atEnd, epoch),
          }),
        },
        { keepLast: c.checkpointKeep },
      );
    }
    if (this.pg.group !== null) await dist.barrier({ group: this.pg.group });
    const dir = join(c.checkpointDir, checkpointDirName(this.step));
    this.checkpoints.push(dir);
    this.lastCheckpoint = { step: this.step, dir };
    return dir;
  }

  /**
   * Whether this epoch's steps are all done. `>=`, not `===`: a resume past the end of an
   * epoch whose data shrank has no step left in it (an equality test once let the loop
   * spin without end).
   */
  private get epochFinished(): boolean {
    return this.stepInEpoch >= this.stepsPerEpoch;
  }

  /**
   * Whether an evaluation follows the step just done: after every --eval-every-th epoch
   * (`epochsDone` counts the one just finished) and at the end of the run.
   */
  private evalDue(epochDone: boolean, epochsDone: number): boolean {
    const c = this.config;
    return c.evalEvery > 0 && ((epochDone && epochsDone % c.evalEvery === 0) || this.step === this.endStep);
  }

  /** Distributed evaluation of rank 0's model on the validation set (every rank takes part). */
  async evaluate(): Promise<EvalResult> {
    const c = this.config;
    this.flushMetrics();
    this.beat('evaluation', this.worldSize > 1);
    // Each rank's BatchNorm running statistics took its own last batch; DDP would
    // broadcast rank 0's before the next forward. Do that now, so every rank evaluates
    // the same model: rank 0's, the one its checkpoints hold.
    const group = this.pg.group;
    if (group !== null && group.size > 1)
      await Promise.all(this.model.buffers().map((b) => dist.broadcast(b, 0, { group })));
    const r = await evaluate(this.model, this.loaders.val, {
      prepare: (image) => prepareImages(image, this.setup, { augment: false, channelsLast: c.channelsLast }),
      amp: this.on.ampDtype,
      deviceType: this.on.deviceType,
      device: this.on.device,
      group,
    });
    const { epoch, step } = this;
    this.lastEval = r;
    this.pendingEval = false;
    this.metrics.write({ type: 'eval', rank: this.rank, epoch, step, ...r, time: Date.now() });
    // The checkpoint of this step (if any) records that its evaluation finished, so a run
    // stopped during the evaluation reruns it on resume.
    const saved = this.lastCheckpoint;
    if (this.rank === 0 && saved !== null && saved.step === step)
      recordEvaluation(saved.dir, { ...r, epoch, step });
    this.hooks.onEval?.({ ...r, epoch, step });
    this.log(
      `eval after epoch ${epoch} (step ${step}): loss ${r.loss.toFixed(4)}  top-1 ${(100 * r.top1).toFixed(2)}%  ` +
        `top-5 ${(100 * r.top5).toFixed(2)}%  (${r.count} images)`,
    );
    return r;
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  /** Frees the loaders' workers, DDP and the process group this trainer created. Idempotent. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.metrics.close();
    this.progress.done();
    this.meter.dispose();
    await closeParts({ heartbeat: this.heartbeat, loaders: this.loaders, ddp: this.ddp, pg: this.pg });
  }

  /** The summary record, the merged metrics and the result. */
  private async finish(): Promise<TrainResult> {
    const c = this.config;
    this.flushMetrics();
    this.progress.done();
    const wallSec = (now() - this.started) / 1000;
    const imagesPerSec = this.loopSecs > 0 ? this.imagesDone / this.loopSecs : 0;
    const { rank, worldSize, step } = this;
    const steps = step - this.startStep;
    this.metrics.write({
      type: 'summary',
      rank,
      step,
      worldSize,
      steps,
      wallSec,
      imagesPerSec,
      time: Date.now(),
    });
    if (this.pg.group !== null) await dist.barrier({ group: this.pg.group });
    if (c.metricsFile !== undefined && rank === 0)
      this.mergeMetricsFile(() => mergeMetrics(c.metricsFile as string, worldSize));
    this.log(
      `done: ${step} steps in ${wallSec.toFixed(1)} s (${imagesPerSec.toFixed(1)} img/s over ${worldSize} rank(s))` +
        (c.metricsFile !== undefined ? `; metrics in ${c.metricsFile}` : ''),
    );
    return {
      rank,
      worldSize,
      steps: step,
      epochs: this.epoch,
      startStep: this.startStep,
      resumedFrom: this.resumedFrom,
      lastLoss: this.lastLoss,
      lastEval: this.lastEval,
      checkpoints: [...this.checkpoints],
      wallSec,
      imagesPerSec,
      lr: this.optimizer.paramGroups[0].lr,
    };
  }

  /**
   * A failed run's metrics are merged too (the launcher merges them again once every rank
   * has stopped), so `<metricsFile>` exists whatever happened.
   */
  private saveFailedRunMetrics(): void {
    try {
      // The steps run since the last flush, if the device still answers.
      this.flushMetrics();
    } catch {
      // The failure itself is reported by the caller.
    }
    const file = this.config.metricsFile;
    if (file === undefined || this.rank !== 0) return;
    this.mergeMetricsFile(() => mergeRankFiles(file));
  }

  /**
   * Merges the rank files into the metrics file. A file system that refuses (full,
   * read-only) costs the merged file only: the rank files keep every record, and the
   * report reads them.
   */
  private mergeMetricsFile(merge: () => unknown): void {
    try {
      merge();
    } catch (e) {
      console.warn(
        `tsddp train: could not merge the metrics into ${this.config.metricsFile}: ${(e as Error).message}; ` +
          'the rank files keep them (tsddp report reads them)',
      );
    }
  }

  /** The run's first line: model, data, batch, learning rate, schedule. */
  private announce(): void {
    const c = this.config;
    const params = this.model.parameters().reduce((n, p) => n + p.numel(), 0);
    const gb = globalBatch(c, this.worldSize);
    const lr = resolveLr(c, this.worldSize);
    const { train, val, imageSize } = this.setup;
    this.log(
      `tsddp train: ${this.hooks.model ? 'custom model' : `${c.model} (${resolveStem(c)} stem)`}, ` +
        `${(params / 1e6).toFixed(2)}M parameters; ${c.dataset} ${imageSize}x${imageSize}: ` +
        `${train.length} train / ${val.length} val; world ${this.worldSize} x batch ${c.batchSize} x accum ${c.gradAccum} ` +
        `= ${gb} images/step; lr ${lr.toPrecision(4)}${c.lr === undefined ? ` (${c.baseLr} x ${gb}/${c.baseBatch})` : ''}; ` +
        `${c.epochs} epochs x ${this.stepsPerEpoch} steps; amp ${c.amp}${c.channelsLast ? ', channels-last' : ''}; ` +
        `${c.optimizer}${c.optimizerImpl === 'auto' ? '' : ` (${c.optimizerImpl})`}; ${t.getNumThreads()} thread(s)/rank; ` +
        `${c.workers} loader worker(s)${this.ddp !== null ? `; DDP buckets ${c.bucketCapMb} MiB` : ''}`,
    );
  }

  private get showProgress(): boolean {
    return this.hooks.progress !== false && this.rank === 0;
  }

  private log(line: string): void {
    if (this.showProgress) this.progress.log(line);
  }

  /**
   * Progress for the launcher's watchdog (launch/heartbeat.ts), when tsrun asks for it;
   * `waiting`: the phase waits in a collective for every peer.
   */
  private beat(phase: string, waiting = false): void {
    this.heartbeat?.beat(this.step, phase, waiting);
  }
}
