// Where a training run stands: epoch, step, the step and sample within the epoch, and
// where the run ends. A fresh run starts at zero; a resumed one at its checkpoint, going on
// over another world size (a re-sharded epoch) or over changed data (--allow-data-change)
// as docs/guide/training.md describes. The Trainer advances it one optimizer step at a time.
import type { Loaders } from './data.ts';
import { imagesPerRankStep, type RunPlan } from './plan.ts';
import type { ResumePoint, SavedPosition } from './resume.ts';

export class RunPosition {
  epoch = 0;
  step = 0;
  /** Optimizer steps done in `epoch`. */
  stepInEpoch = 0;
  /** Samples of this epoch's whole order consumed so far, all ranks together. */
  samplesInEpoch = 0;
  /** Where the next epoch pass starts in its whole order, when a resume re-shards it. */
  private reshardAt: number | null = null;
  readonly startStep: number;
  readonly stepsPerEpoch: number;
  /** This rank's steps in an epoch: fewer than stepsPerEpoch on a rank that joins early (--uneven join). */
  readonly ownStepsPerEpoch: number;
  /** The step the run stops at (--max-steps or the end of the last epoch). */
  readonly endStep: number;

  /**
   * `steps`: setup.ts's counts of steps per epoch, the world's and this rank's; `log`: rank 0's
   * messages on how a resume goes on.
   */
  constructor(
    private readonly plan: Pick<RunPlan, 'data' | 'loop'>,
    private readonly loaders: Loaders,
    private readonly worldSize: number,
    steps: { stepsPerEpoch: number; ownStepsPerEpoch: number },
    resume: ResumePoint | null,
    log: (line: string) => void,
  ) {
    const { epochs, maxSteps } = plan.loop;
    this.stepsPerEpoch = steps.stepsPerEpoch;
    this.ownStepsPerEpoch = steps.ownStepsPerEpoch;
    let totalSteps = epochs * this.stepsPerEpoch;
    this.startStep = resume?.step ?? 0;
    if (resume !== null) {
      this.epoch = resume.epoch;
      this.step = resume.step;
      this.stepInEpoch = resume.stepInEpoch;
      this.samplesInEpoch = resume.samplesInEpoch;
      if (resume.savedWorldSize !== worldSize) totalSteps = this.reshard(resume, log);
      else if (resume.dataChange !== null) totalSteps = this.continueChangedData(resume, log);
    }
    this.endStep = Math.min(totalSteps, maxSteps ?? totalSteps);
  }

  /** Images per optimizer step on one rank. */
  get imagesPerStep(): number {
    return imagesPerRankStep(this.plan);
  }

  /**
   * Whether this epoch's steps are all done. `>=`, not `===`: a resume past the end of an
   * epoch whose data shrank has no step left in it (an equality test once let the loop
   * spin without end).
   */
  get epochFinished(): boolean {
    return this.stepInEpoch >= this.stepsPerEpoch;
  }

  /** Whether this rank's batches of the epoch are all used (sooner than epochFinished on a rank that joins early). */
  get ownEpochFinished(): boolean {
    return this.stepInEpoch >= this.ownStepsPerEpoch;
  }

  /**
   * After a Join (--uneven join): a rank that stopped early takes the step the others
   * reached, `step` (their state is broadcast to it by then).
   */
  catchUp(step: number): void {
    const behind = step - this.step;
    this.step = step;
    this.stepInEpoch += behind;
    this.samplesInEpoch += behind * this.imagesPerStep * this.worldSize;
  }

  get runFinished(): boolean {
    return this.step >= this.endStep;
  }

  /** Where this epoch's batches start: a micro-batch of this rank, or a sample of a re-sharded order. */
  takeEpochStart(): { batch: number } | { sample: number } {
    const start =
      this.reshardAt === null
        ? { batch: this.stepInEpoch * this.plan.loop.gradAccum }
        : { sample: this.reshardAt };
    this.reshardAt = null;
    return start;
  }

  /** Where a checkpoint taken now resumes: a finished epoch is saved as the start of the next one. */
  get saved(): SavedPosition {
    const atEnd = this.epochFinished;
    return {
      epoch: atEnd ? this.epoch + 1 : this.epoch,
      step: this.step,
      stepInEpoch: atEnd ? 0 : this.stepInEpoch,
      samplesInEpoch: atEnd ? 0 : this.samplesInEpoch,
    };
  }

  /** One optimizer step done. */
  advance(): void {
    this.step++;
    this.stepInEpoch++;
    this.samplesInEpoch += this.imagesPerStep * this.worldSize;
  }

  /** Moves to the next epoch when this one is finished; returns whether it was. */
  nextEpochIfDone(): boolean {
    if (!this.epochFinished) return false;
    this.epoch++;
    this.stepInEpoch = 0;
    this.samplesInEpoch = 0;
    return true;
  }

  /**
   * A resume with another world size (--reshard, or tsrun's elastic mode): the epoch goes
   * on at the same sample of its order, dealt to the new ranks; each rank keeps its batch
   * size, so the global batch changes with the world; the optimizer and the LR schedule go
   * on as saved (step by step). Returns the run's new total of steps.
   */
  private reshard(resume: ResumePoint, log: (line: string) => void): number {
    const { sampler } = this.loaders;
    sampler.setEpochFrom(resume.epoch, resume.samplesInEpoch);
    const { batchSize } = this.plan.data;
    const stepsLeft = Math.floor(Math.floor(sampler.length / batchSize) / this.plan.loop.gradAccum);
    // The loop counts steps up to stepsPerEpoch: start it where this many are left.
    this.stepInEpoch = this.stepsPerEpoch - stepsLeft;
    this.reshardAt = resume.samplesInEpoch;
    const perStep = this.imagesPerStep;
    log(
      `world size ${resume.savedWorldSize} -> ${this.worldSize}: epoch ${resume.epoch + 1} goes on at sample ` +
        `${resume.samplesInEpoch} of its order, re-sharded (${stepsLeft} steps left in it); global batch ` +
        `${perStep * resume.savedWorldSize} -> ${perStep * this.worldSize}; LR schedule as saved`,
    );
    return resume.step + stepsLeft + (this.plan.loop.epochs - resume.epoch - 1) * this.stepsPerEpoch;
  }

  /**
   * A resume over changed training data (--allow-data-change): the epoch goes on at the
   * saved step, or is over if the data shrank below it; the run still trains to the end of
   * --epochs, with the new epoch length. Returns the run's new total of steps.
   */
  private continueChangedData(resume: ResumePoint, log: (line: string) => void): number {
    if (this.epochFinished) {
      log(
        `epoch ${this.epoch + 1} has ${this.stepsPerEpoch} steps now and ${this.stepInEpoch} were done: it is over`,
      );
      this.nextEpochIfDone();
    }
    return resume.step + (this.plan.loop.epochs - this.epoch) * this.stepsPerEpoch - this.stepInEpoch;
  }
}
