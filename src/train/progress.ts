// Rank 0's progress display: one line with a bar, rewritten in place on a terminal, plain lines every
// `logEvery` steps otherwise (logs, CI). Shows epoch, step, images/s across ranks, loss,
// training accuracy, learning rate and the time left.

import { formatDuration } from '../metrics/index.ts';

export interface ProgressInfo {
  epoch: number;
  epochs: number;
  step: number;
  totalSteps: number;
  loss: number;
  acc: number;
  lr: number;
  /** Images the step processed on all ranks. */
  images: number;
}

export interface ProgressOptions {
  out?: NodeJS.WritableStream & { isTTY?: boolean };
  /** Rewrite one line (default: whether `out` is a terminal). */
  tty?: boolean;
  logEvery: number;
}

const BAR_WIDTH = 24;

/** `[█████░░░░░]  42%` */
export function bar(fraction: number): string {
  const f = Math.min(1, Math.max(0, fraction));
  const full = Math.round(f * BAR_WIDTH);
  return `[${'█'.repeat(full)}${'░'.repeat(BAR_WIDTH - full)}] ${String(Math.floor(f * 100)).padStart(3)}%`;
}

export class Progress {
  private readonly out: NodeJS.WritableStream;
  private readonly tty: boolean;
  private readonly logEvery: number;
  private lineOpen = false;
  private lastDraw = 0;
  // Time per step, measured from the second step on (the first includes warm-up work).
  private firstStepAt: number | null = null;
  private firstStep = 0;
  // Running means since the last printed line.
  private lossSum = 0;
  private accSum = 0;
  private n = 0;
  private images = 0;
  private windowStart: number | null = null;

  constructor(opts: ProgressOptions) {
    this.out = opts.out ?? process.stdout;
    // TSDDP_TTY: set by the launcher for its workers when its own console is a terminal.
    this.tty = opts.tty ?? (Boolean((opts.out ?? process.stdout).isTTY) || process.env.TSDDP_TTY === '1');
    this.logEvery = opts.logEvery;
  }

  /** Seconds left, from the mean step time so far. Times are Date.now() values. */
  eta(step: number, totalSteps: number, now = Date.now()): number {
    if (this.firstStepAt === null || step <= this.firstStep) return Number.NaN;
    const perStep = (now - this.firstStepAt) / 1000 / (step - this.firstStep);
    return perStep * (totalSteps - step);
  }

  /** Shows step `p`, which ended at `now` (the trainer reports steps in batches, after they ran). */
  update(p: ProgressInfo, now = Date.now()): void {
    if (this.firstStepAt === null) {
      // The first step's time is not known here, so rates and the ETA start after it.
      this.firstStepAt = now;
      this.firstStep = p.step;
      this.windowStart = now;
    } else this.images += p.images;
    this.lossSum += p.loss;
    this.accSum += p.acc;
    this.n++;
    const last = p.step === p.totalSteps;
    if (this.tty) {
      if (now - this.lastDraw < 100 && !last) return;
      this.lastDraw = now;
    } else if (p.step % this.logEvery !== 0 && !last) return;
    const secs = (now - (this.windowStart ?? now)) / 1000;
    const rate = secs > 0 && this.images > 0 ? `${(this.images / secs).toFixed(1)} img/s` : '- img/s';
    const text =
      `epoch ${p.epoch + 1}/${p.epochs}  step ${p.step}/${p.totalSteps}  ` +
      `loss ${(this.lossSum / this.n).toFixed(4)}  acc ${(100 * (this.accSum / this.n)).toFixed(1)}%  ` +
      `lr ${p.lr.toPrecision(3)}  ${rate}  ETA ${formatDuration(this.eta(p.step, p.totalSteps, now))}`;
    this.lossSum = 0;
    this.accSum = 0;
    this.n = 0;
    this.images = 0;
    this.windowStart = now;
    if (this.tty) {
      this.out.write(`\r\x1b[K${text}  ${bar(p.step / p.totalSteps)}`);
      this.lineOpen = true;
    } else this.out.write(`${text}\n`);
  }

  /** A permanent line (evaluation results, checkpoints), below the progress line. */
  log(text: string): void {
    if (this.lineOpen) {
      this.out.write('\r\x1b[K');
      this.lineOpen = false;
    }
    this.out.write(`${text}\n`);
  }

  done(): void {
    if (this.lineOpen) this.out.write('\n');
    this.lineOpen = false;
  }
}
