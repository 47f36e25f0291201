// Step metrics without a host sync per step (architecture §9). Reading a loss with
// .item() waits for the device to finish the step; nanoGPT reads it only every log
// interval, and so does the trainer: each step's loss and correct count are added into a
// row of a small float64 buffer on the device, and flush() reads every pending row in one
// transfer, then gives the steps' records in order. The buffer is allocated once, so the
// live-tensor count stays flat.
import { noGrad } from '../autograd/index.ts';
import * as t from '../core/index.ts';
import type { StepRecord } from '../metrics/index.ts';

/** A step's record before its loss and accuracy are read. */
export type PendingRecord = Omit<StepRecord, 'loss' | 'acc'>;

interface Pending {
  record: PendingRecord;
  /** Micro-batches of the step (the loss is their mean). */
  microBatches: number;
  images: number;
}

export class StepMeter {
  // Row i: [sum of micro-batch mean losses, correct top-1 predictions] of pending step i.
  private sums: t.Tensor | null = null;
  private pending: Pending[] = [];

  /** `capacity`: steps that may wait for a flush (the log interval). */
  constructor(readonly capacity: number) {
    if (!Number.isInteger(capacity) || capacity < 1)
      throw new RangeError(`StepMeter: capacity must be an integer >= 1, got ${capacity}`);
  }

  /** Whether the next step needs a flush first. */
  get full(): boolean {
    return this.pending.length === this.capacity;
  }

  /** Adds one micro-batch of the step being run: its mean loss, logits and labels. */
  addMicroBatch(loss: t.Tensor, logits: t.Tensor, labels: t.Tensor): void {
    if (this.full) throw new Error('StepMeter: flush() before the next step');
    noGrad(() =>
      t.tidy(() => {
        this.sums ??= t.keep(t.zeros([this.capacity, 2], { dtype: 'float64', device: loss.device }));
        const row = t.select(this.sums, 0, this.pending.length);
        t.select(row, 0, 0).add_(loss.detach());
        t.select(row, 0, 1).add_(logits.argmax(1).eq(labels).sum());
      }),
    );
  }

  /** Closes the step being run: its record waits for the next flush. */
  endStep(record: PendingRecord, microBatches: number, images: number): void {
    this.pending.push({ record, microBatches, images });
  }

  /** Reads the pending steps' values (one host sync) and returns their records, oldest first. */
  flush(): StepRecord[] {
    const n = this.pending.length;
    if (n === 0 || this.sums === null) return [];
    const sums = this.sums;
    const values = t.tidy(() => t.narrow(sums, 0, 0, n).toTypedArray()) as Float64Array;
    sums.zero_();
    const out = this.pending.map(
      (p, i): StepRecord => ({
        ...p.record,
        loss: values[2 * i] / p.microBatches,
        acc: values[2 * i + 1] / p.images,
      }),
    );
    this.pending = [];
    return out;
  }

  /** Frees the buffer (pending steps are dropped). */
  dispose(): void {
    this.sums?.dispose();
    this.sums = null;
    this.pending = [];
  }
}
