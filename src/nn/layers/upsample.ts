// Upsample (torch.nn.Upsample): F.interpolate as a module.
import type * as t from '../../core/index.ts';
import * as F from '../functional.ts';
import { Module } from '../module.ts';

export interface UpsampleOptions {
  /** Output spatial size. Exactly one of size / scaleFactor. */
  size?: number | number[] | null;
  /** Multiplier of the spatial size. */
  scaleFactor?: number | number[] | null;
  /** Default 'nearest'. */
  mode?: F.InterpolateMode;
  alignCorners?: boolean | null;
  recomputeScaleFactor?: boolean | null;
}

export class Upsample extends Module {
  readonly size: number | number[] | null;
  readonly scaleFactor: number | number[] | null;
  readonly mode: F.InterpolateMode;
  readonly alignCorners: boolean | null;
  readonly recomputeScaleFactor: boolean | null;

  constructor(opts: UpsampleOptions = {}) {
    super();
    this.size = opts.size ?? null;
    this.scaleFactor = opts.scaleFactor ?? null;
    this.mode = opts.mode ?? 'nearest';
    this.alignCorners = opts.alignCorners ?? null;
    this.recomputeScaleFactor = opts.recomputeScaleFactor ?? null;
  }

  override forward(input: t.Tensor): t.Tensor {
    return F.interpolate(input, {
      size: this.size,
      scaleFactor: this.scaleFactor,
      mode: this.mode,
      alignCorners: this.alignCorners,
      recomputeScaleFactor: this.recomputeScaleFactor,
    });
  }

  override extraRepr(): string {
    const v = (x: number | number[]) => (typeof x === 'number' ? String(x) : `(${x.join(', ')})`);
    const info =
      this.scaleFactor !== null
        ? `scale_factor=${v(this.scaleFactor)}`
        : `size=${this.size === null ? 'None' : v(this.size)}`;
    return `${info}, mode='${this.mode}'`;
  }
}
