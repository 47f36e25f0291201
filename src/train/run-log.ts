// What a training run tells: the metrics records of this rank (src/metrics, merged by rank
// 0 at the end, or after a failure), rank 0's progress line and messages, and the step
// metrics read from the device only at log intervals (step-meter.ts), and with --tensorboard
// rank 0's TensorBoard event files: the last step of each log interval and every evaluation.
import * as t from '../core/index.ts';
import { type DDPStats, optim as distOptim } from '../distributed/index.ts';
import {
  type MetricRecord,
  MetricsWriter,
  mergeMetrics,
  mergeRankFiles,
  type StepRecord,
} from '../metrics/index.ts';
import { SummaryWriter } from '../utils/tensorboard/index.ts';
import type { EvalResult } from './evaluate.ts';
import { globalBatchOf, type RunPlan } from './plan.ts';
import { Progress } from './progress.ts';
import type { RunParts } from './setup.ts';
import { type PendingRecord, StepMeter } from './step-meter.ts';
import { shardedRoot } from './strategy.ts';
import type { TrainHooks } from './types.ts';

/** Per-step times in ms. */
export interface StepTimes {
  dataMs: number;
  forwardMs: number;
  backwardMs: number;
}

/** A step as the Trainer saw it, before its loss is read from the device. */
export interface StepSeen {
  epoch: number;
  step: number;
  lr: number;
  /** Images of this rank in the step. */
  images: number;
  ms: StepTimes & { optimizerMs: number; stepMs: number };
}

export class RunLog {
  private readonly metrics: MetricsWriter;
  /** --tensorboard, on rank 0. */
  private readonly board: SummaryWriter | null = null;
  private readonly progress: Progress;
  private readonly meter: StepMeter;
  /** This rank's loss at the last step read. */
  lastLoss = Number.NaN;
  private imagesDone = 0;
  private loopSecs = 0;

  private readonly plan: RunPlan;
  private readonly rank: number;
  private readonly worldSize: number;
  private readonly hooks: TrainHooks;

  /**
   * A new run starts its rank file anew; a resumed one appends to it, after a record and a
   * message of where it resumed. `totalSteps`: where the run ends (the run's position knows).
   */
  constructor(
    private readonly parts: Pick<RunParts, 'plan' | 'pg' | 'hooks' | 'resume' | 'loaders'>,
    private readonly totalSteps: () => number,
  ) {
    const { plan, pg, hooks, resume } = parts;
    this.plan = plan;
    this.rank = pg.rank;
    this.worldSize = pg.worldSize;
    this.hooks = hooks;
    this.meter = new StepMeter(plan.loop.logEvery);
    this.progress = new Progress({ out: hooks.out, logEvery: plan.loop.logEvery });
    try {
      this.metrics = new MetricsWriter(plan.io.metricsFile, this.rank, resume === null);
    } catch (e) {
      this.meter.dispose();
      throw e;
    }
    try {
      // A resumed run purges what the interrupted one logged after its checkpoint.
      if (plan.io.tensorboard !== undefined && this.rank === 0)
        this.board = new SummaryWriter(plan.io.tensorboard, {
          purgeStep: resume === null ? null : resume.step + 1,
        });
    } catch (e) {
      this.metrics.close();
      this.meter.dispose();
      throw e;
    }
    if (resume === null) return;
    const { epoch, step, dir } = resume;
    this.write({ type: 'resume', rank: this.rank, step, epoch, checkpoint: dir, time: Date.now() });
    this.log(`resumed from ${dir} (epoch ${epoch + 1}, step ${step})`);
    if (resume.dataChange !== null)
      this.log(`the training data changed (${resume.dataChange}); going on with it`);
  }

  private get showProgress(): boolean {
    return this.hooks.progress !== false && this.rank === 0;
  }

  /** A message on rank 0's progress output. */
  log(line: string): void {
    if (this.showProgress) this.progress.log(line);
  }

  write(record: MetricRecord): void {
    this.metrics.write(record);
  }

  /** Adds a micro-batch's loss and predictions to the step being run (read at the next flush). */
  addMicroBatch(loss: t.Tensor, logits: t.Tensor, labels: t.Tensor): void {
    this.meter.addMicroBatch(loss, logits, labels);
  }

  /** Whether the step records waiting for their losses fill the buffer: flush before the next step. */
  get full(): boolean {
    return this.meter.full;
  }

  /** Closes a step: its record waits for the next flush. */
  endStep(s: StepSeen, ddp: DDPStats | undefined): void {
    const { images, ms } = s;
    this.imagesDone += images * this.worldSize;
    this.loopSecs += ms.stepMs / 1000;
    const record: PendingRecord = {
      type: 'step',
      rank: this.rank,
      epoch: s.epoch,
      step: s.step,
      lr: s.lr,
      images,
      imagesPerSec: images / (ms.stepMs / 1000),
      ...ms,
      commMs: ddp?.backwardCommMs,
      overlapMs: ddp?.backwardCommOverlapMs,
      liveTensors: t.memory().tensors,
      ...(this.plan.data.skipBadSamples === undefined
        ? {}
        : { skippedSamples: this.parts.loaders.train.skippedSamples }),
      totalSteps: this.totalSteps(),
      epochs: this.plan.loop.epochs,
      time: Date.now(),
    };
    this.meter.endStep(record, this.plan.loop.gradAccum, images);
  }

  /** Reads the pending steps' losses (one host sync), writes their records and shows progress. */
  flush(): void {
    const records = this.meter.flush();
    const last = records.at(-1);
    if (last !== undefined) this.toBoard(last);
    for (const record of records) {
      this.metrics.write(record);
      this.lastLoss = record.loss;
      if (this.showProgress) {
        const { epoch, step, loss, acc, lr, images } = record;
        const info = {
          epoch,
          epochs: this.plan.loop.epochs,
          step,
          totalSteps: this.totalSteps(),
          loss,
          acc,
          lr,
        };
        this.progress.update({ ...info, images: images * this.worldSize }, record.time);
      }
    }
  }

  /** A step's scalars in TensorBoard: throughput over all ranks, as they step together. */
  private toBoard(r: StepRecord): void {
    const w = this.board;
    if (w === null) return;
    w.addScalar('train/loss', r.loss, r.step);
    w.addScalar('train/acc', r.acc, r.step);
    w.addScalar('train/lr', r.lr, r.step);
    w.addScalar('perf/images_per_sec', r.imagesPerSec * this.worldSize, r.step);
    w.addScalar('perf/step_ms', r.stepMs, r.step);
    w.addScalar('perf/data_ms', r.dataMs, r.step);
    if (r.commMs !== undefined) w.addScalar('comm/allreduce_ms', r.commMs, r.step);
    if (r.overlapMs !== undefined) w.addScalar('comm/overlap_ms', r.overlapMs, r.step);
  }

  /** Images per second over all ranks in the steps this process ran. */
  get imagesPerSec(): number {
    return this.loopSecs > 0 ? this.imagesDone / this.loopSecs : 0;
  }

  /**
   * The run's summary record, after the last flush; returns the run's wall time in
   * seconds, from `started` (performance.now()) to now.
   */
  summary(step: number, steps: number, started: number): number {
    this.flush();
    this.progress.done();
    const wallSec = (performance.now() - started) / 1000;
    const { rank, worldSize, imagesPerSec } = this;
    this.write({ type: 'summary', rank, step, worldSize, steps, wallSec, imagesPerSec, time: Date.now() });
    return wallSec;
  }

  /** The run's last line, once the metrics are merged. */
  done(step: number, wallSec: number): void {
    const { worldSize, imagesPerSec } = this;
    const file = this.plan.io.metricsFile;
    this.log(
      `done: ${step} steps in ${wallSec.toFixed(1)} s (${imagesPerSec.toFixed(1)} img/s over ${worldSize} rank(s))` +
        (file !== undefined ? `; metrics in ${file}` : ''),
    );
  }

  /** An evaluation's metrics record. */
  writeEval(r: EvalResult, epoch: number, step: number): void {
    this.write({ type: 'eval', rank: this.rank, epoch, step, ...r, time: Date.now() });
    if (this.board !== null) {
      this.board.addScalar('eval/loss', r.loss, step);
      this.board.addScalar('eval/top1', r.top1, step);
      this.board.addScalar('eval/top5', r.top5, step);
      this.board.flush();
    }
  }

  /** An evaluation's line. */
  logEval(r: EvalResult, epoch: number, step: number): void {
    const pct = (x: number) => `${(100 * x).toFixed(2)}%`;
    this.log(
      `eval after epoch ${epoch} (step ${step}): loss ${r.loss.toFixed(4)}  top-1 ${pct(r.top1)}  ` +
        `top-5 ${pct(r.top5)}  (${r.count} images)`,
    );
  }

  /** Rank 0 merges every rank's file into the metrics file (all ranks have written their summary). */
  mergeFinished(): void {
    const file = this.plan.io.metricsFile;
    if (file !== undefined && this.rank === 0)
      this.mergeMetricsFile(() => mergeMetrics(file, this.worldSize));
  }

  /**
   * A failed run's metrics are merged too (the launcher merges them again once every rank
   * has stopped), so `<metricsFile>` exists whatever happened.
   */
  saveFailedRun(): void {
    try {
      // The steps run since the last flush, if the device still answers.
      this.flush();
    } catch {
      // The failure itself is reported by the caller.
    }
    this.board?.flush();
    const file = this.plan.io.metricsFile;
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
        `tsddp train: could not merge the metrics into ${this.plan.io.metricsFile}: ${(e as Error).message}; ` +
          'the rank files keep them (tsddp report reads them)',
      );
    }
  }

  close(): void {
    this.metrics.close();
    this.board?.close();
    this.progress.done();
    this.meter.dispose();
  }
}

/** The run's first line: model, data, batch, learning rate, schedule, threads, loading, DDP. */
export function describeRun(parts: RunParts, stepsPerEpoch: number): string {
  const { plan, pg, setup, hooks } = parts;
  const { model: m, data, optim, loop, amp, ddp } = plan;
  const params = parts.model.parameters().reduce((n, p) => n + p.numel(), 0);
  const sharded = shardedRoot(parts.model) !== null;
  const gb = globalBatchOf(plan, pg.worldSize);
  const rule = optim.lr === undefined ? ` (${optim.baseLr} x ${gb}/${optim.baseBatch})` : '';
  const { train, val, imageSize } = setup;
  return (
    `tsddp train: ${hooks.model ? 'custom model' : `${m.arch} (${m.stem} stem)`}, ` +
    `${(params / 1e6).toFixed(2)}M parameters${sharded ? " (this rank's shards: fully sharded per block, FSDP)" : ''}; ${data.dataset} ${imageSize}x${imageSize}: ` +
    `${train.length} train / ${val.length} val; world ${pg.worldSize} x batch ${data.batchSize} x accum ${loop.gradAccum} ` +
    `= ${gb} images/step; lr ${parts.lr.toPrecision(4)}${rule}; ` +
    `${loop.epochs} epochs x ${stepsPerEpoch} steps; amp ${amp.mode}${m.channelsLast ? ', channels-last' : ''}${m.syncBn ? ', SyncBatchNorm' : ''}${data.uneven === 'join' ? ', uneven shares in Join' : ''}${m.activationCheckpointing ? ', activation checkpointing' : ''}; ` +
    `${optim.name}${optim.impl === 'auto' ? '' : ` (${optim.impl})`}${parts.optimizer instanceof distOptim.ZeroRedundancyOptimizer ? ' sharded by ZeRO-1' : ''}; ${t.getNumThreads()} thread(s)/rank; ` +
    `${data.workers} loader worker(s)${parts.ddp !== null ? `; DDP buckets ${ddp.bucketCapMb} MiB${hookNote(ddp)}` : ''}`
  );
}

/** ', comm hook fp16', ', comm hook powerSGD rank 2 from step 1000', or nothing. */
function hookNote(ddp: RunPlan['ddp']): string {
  if (ddp.commHook === undefined) return '';
  const p = ddp.powerSGD;
  return `, comm hook ${ddp.commHook}${p ? ` rank ${p.matrixApproximationRank} from step ${p.startPowerSGDIter}` : ''}`;
}
