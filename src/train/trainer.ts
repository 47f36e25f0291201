// The recipe: the classic PyTorch DDP training loop over tsddp's parts (architecture §9).
//   Trainer.create(plan): setup.ts builds the parts on this rank (process group, pre-flight,
//     loaders with a DistributedSampler, model, optimizer, schedule, the resumed checkpoint, DDP)
//   fit(): per epoch the sampler's epoch; per step trainStep() (step.ts), then metrics
//     (run-log.ts), checkpoint() (rank 0 writes, all wait) and evaluate() when due.
import { join } from 'node:path';
import type { GradScaler } from '../amp/index.ts';
import { checkpointDirName } from '../checkpoint/index.ts';
import type { Batch } from '../data/index.ts';
import * as dist from '../distributed/index.ts';
import type { Module } from '../nn/index.ts';
import type { lrScheduler, Optimizer } from '../optim/index.ts';
import type { TrainConfig, TrainConfigInput } from './config.ts';
import { epochBatches } from './data.ts';
import { type EvalResult, evaluateRun } from './evaluate.ts';
import type { RunPlan } from './plan.ts';
import { RunPosition } from './position.ts';
import { recordEvaluation, saveRunCheckpoint } from './resume.ts';
import { describeRun, RunLog } from './run-log.ts';
import { closeParts, type RunParts, setupRun } from './setup.ts';
import { StepRunner } from './step.ts';
import { gatherForCheckpoint } from './strategy.ts';
import type { StepInfo, TrainHooks, TrainResult } from './types.ts';
import { joinEpoch } from './uneven.ts';

export type { StepInfo, TrainHooks, TrainResult };

/**
 * Trains as the plan (or the options, resolved into one) says and returns when done. Under
 * tsrun/torchrun (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT set) it joins the process group
 * and trains with DDP; without them it trains in this process alone.
 */
export async function train(
  input: RunPlan | TrainConfig | TrainConfigInput,
  hooks: TrainHooks = {},
): Promise<TrainResult> {
  const trainer = await Trainer.create(input, hooks);
  return trainer.fit();
}

/** The built training run: Trainer.create() sets it up, fit() runs it to the end. */
export class Trainer {
  readonly plan: RunPlan;
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
  /** Epoch, step and where the run ends. */
  readonly at: RunPosition;

  private readonly runLog: RunLog;
  private readonly stepper: StepRunner;
  private readonly checkpoints: string[] = [];
  /** The evaluation due after the resumed checkpoint never finished: it runs first. */
  private pendingEval: boolean;
  private lastEval: EvalResult | null = null;
  /** The last checkpoint written (or resumed from), where its evaluation is recorded. */
  private lastCheckpoint: { step: number; dir: string } | null;
  private closed = false;

  private constructor(private readonly parts: RunParts) {
    const { plan, pg, resume } = parts;
    this.plan = plan;
    this.model = parts.model;
    this.optimizer = parts.optimizer;
    this.scheduler = parts.scheduler;
    this.scaler = parts.scaler;
    this.ddp = parts.ddp;
    this.rank = pg.rank;
    this.worldSize = pg.worldSize;
    this.resumedFrom = resume?.dir ?? null;
    this.runLog = new RunLog(parts, () => this.at.endStep);
    this.lastCheckpoint = resume && { step: resume.step, dir: resume.dir };
    this.pendingEval = (resume?.evalPending ?? false) && plan.loop.evalEvery > 0;
    try {
      const log = (line: string) => this.runLog.log(line);
      this.at = new RunPosition(plan, parts.loaders, this.worldSize, parts, resume, log);
    } catch (e) {
      this.runLog.close(); // a resume position that cannot be (a bad re-shard): the rank file closes
      throw e;
    }
    this.stepper = new StepRunner(parts, this.runLog, (phase, waiting) => this.beat(phase, waiting));
  }

  /** Sets the run up on this rank (setup.ts); the plan is resolved from options when given those. */
  static async create(
    input: RunPlan | TrainConfig | TrainConfigInput,
    hooks: TrainHooks = {},
  ): Promise<Trainer> {
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
    const { at } = this;
    let finished = false;
    try {
      this.runLog.log(describeRun(this.parts, this.at.stepsPerEpoch));
      if (this.pendingEval) {
        this.runLog.log(
          `the evaluation after step ${at.step} did not finish in the run that saved ${this.resumedFrom}: running it`,
        );
        await this.evaluate();
      }
      while (!at.runFinished) {
        const batches = epochBatches(this.parts.loaders, at.epoch, at.takeEpochStart());
        const epoch = async () => {
          while (!at.ownEpochFinished && !at.runFinished) {
            await this.trainStep(batches);
            await this.afterStep();
          }
        };
        try {
          if (this.joinsUneven) await joinEpoch(this.parts, at, epoch);
          else await epoch();
        } finally {
          await batches.return?.(undefined);
        }
        // --uneven join: the epoch's checkpoint once every rank holds the same state again.
        if (this.joinsUneven && this.plan.io.checkpointDir !== undefined) {
          this.runLog.flush();
          await this.checkpoint();
        }
        if (this.evalDue(at.nextEpochIfDone(), at.epoch)) await this.evaluate();
      }
      const result = await this.finish();
      finished = true;
      return result;
    } catch (e) {
      const group = this.parts.pg.group;
      if (group === null) throw e;
      throw dist.explainPeerFault(e, 'a collective of the training loop', this.rank, group.timeoutMs / 1000);
    } finally {
      if (!finished) this.runLog.saveFailedRun();
      await this.close();
    }
  }

  /**
   * One optimizer step (step.ts): `gradAccum` micro-batches, only the last one's backward
   * all-reduces, then the optimizer and the schedule; its record waits for the next flush.
   */
  async trainStep(batches: AsyncIterator<Batch>): Promise<void> {
    const { lr, ms } = await this.stepper.run(batches, this.at);
    this.at.advance();
    const { epoch, step, imagesPerStep: images } = this.at;
    this.runLog.endStep({ epoch, step, lr, images, ms }, this.ddp?.stats());
  }

  /**
   * With --uneven join, the ranks' states differ until the epoch's Join ends: checkpoints
   * wait for it (fit()).
   */
  private get joinsUneven(): boolean {
    return this.plan.data.uneven === 'join' && this.ddp !== null;
  }

  /** After a step: metrics at log intervals, the checkpoint when due, the hook. */
  private async afterStep(): Promise<void> {
    const { io, loop } = this.plan;
    const { step, epochFinished, runFinished } = this.at;
    const checkpointDue =
      io.checkpointDir !== undefined &&
      !this.joinsUneven &&
      ((io.checkpointEvery > 0 && step % io.checkpointEvery === 0) || epochFinished || runFinished);
    if (step % loop.logEvery === 0 || this.runLog.full || checkpointDue || epochFinished || runFinished)
      this.runLog.flush();
    // Rank 0 writes a checkpoint; the others wait for it.
    this.beat(
      checkpointDue ? 'checkpoint' : 'step done',
      checkpointDue && this.rank !== 0 && this.worldSize > 1,
    );
    const saved = checkpointDue ? await this.checkpoint() : null;
    await this.parts.hooks.onStep?.({ epoch: this.at.epoch, step, rank: this.rank, checkpoint: saved });
  }

  /**
   * Writes a checkpoint of the run as it is now (rank 0 writes, every rank waits) and
   * returns its folder; null without --checkpoint-dir.
   */
  async checkpoint(): Promise<string | null> {
    const { checkpointDir } = this.plan.io;
    if (checkpointDir === undefined) return null;
    const { at } = this;
    const saved = at.saved;
    // zero1 and fsdp: every rank sends its shards, rank 0 writes the whole state (strategy.ts).
    using state = gatherForCheckpoint(this.parts.model, this.parts.optimizer);
    if (this.rank === 0)
      await saveRunCheckpoint(
        { ...this.parts, ...state },
        saved,
        this.evalDue(at.epochFinished, saved.epoch),
      );
    if (this.parts.pg.group !== null) await dist.barrier({ group: this.parts.pg.group });
    const dir = join(checkpointDir, checkpointDirName(at.step));
    this.checkpoints.push(dir);
    this.lastCheckpoint = { step: at.step, dir };
    return dir;
  }

  /** Whether an evaluation follows: after every --eval-every-th epoch (`epochsDone` counts the one just finished) and at the end. */
  private evalDue(epochDone: boolean, epochsDone: number): boolean {
    const every = this.plan.loop.evalEvery;
    return every > 0 && ((epochDone && epochsDone % every === 0) || this.at.runFinished);
  }

  /** Distributed evaluation of rank 0's model on the validation set (every rank takes part). */
  async evaluate(): Promise<EvalResult> {
    this.runLog.flush();
    this.beat('evaluation', this.worldSize > 1);
    const r = await evaluateRun(this.parts);
    const { epoch, step } = this.at;
    this.lastEval = r;
    this.pendingEval = false;
    this.runLog.writeEval(r, epoch, step);
    // The checkpoint of this step (if any) records that its evaluation finished, so a run
    // stopped during the evaluation reruns it on resume.
    const saved = this.lastCheckpoint;
    if (this.rank === 0 && saved !== null && saved.step === step)
      recordEvaluation(saved.dir, { ...r, epoch, step });
    this.parts.hooks.onEval?.({ ...r, epoch, step });
    this.runLog.logEval(r, epoch, step);
    return r;
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  /** Frees the loaders' workers, DDP and the process group this trainer created. Idempotent. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.runLog.close();
    await closeParts(this.parts);
  }

  /** The summary record, the merged metrics and the result. */
  private async finish(): Promise<TrainResult> {
    const { rank, worldSize, at } = this;
    const wallSec = this.runLog.summary(at.step, at.step - at.startStep, this.parts.started);
    if (this.parts.pg.group !== null) await dist.barrier({ group: this.parts.pg.group });
    this.runLog.mergeFinished();
    this.runLog.done(at.step, wallSec);
    const { imagesPerSec, lastLoss } = this.runLog;
    const { step: steps, epoch: epochs, startStep } = at;
    const { resumedFrom, lastEval } = this;
    const checkpoints = [...this.checkpoints];
    const lr = this.optimizer.paramGroups[0].lr;
    const run = { steps, epochs, startStep, resumedFrom, lastLoss, lastEval, checkpoints };
    return { rank, worldSize, ...run, wallSec, imagesPerSec, lr };
  }

  /**
   * Progress for the launcher's watchdog (launch/heartbeat.ts), when tsrun asks for it;
   * `waiting`: the phase waits in a collective for every peer.
   */
  private beat(phase: string, waiting = false): void {
    this.parts.heartbeat?.beat(this.at.step, phase, waiting);
  }
}
