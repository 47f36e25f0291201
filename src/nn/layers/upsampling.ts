// torch.nn.modules.upsampling: Upsample (F.interpolate as a module) and its fixed-mode
// forms UpsamplingNearest2d and UpsamplingBilinear2d (bilinear with alignCorners true).
import type * as t from '../../core/index.ts';
import { type Args, bind, signature } from '../args.ts';
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

const UPSAMPLE = signature('Upsample', {
  optional: ['size', 'scaleFactor', 'mode', 'alignCorners', 'recomputeScaleFactor'],
});
const FIXED_MODE = signature(['UpsamplingNearest2d', 'UpsamplingBilinear2d'], {
  optional: ['size', 'scaleFactor'],
});

/** Resizes [N, C, *spatial] input to `size` or by `scaleFactor` (torch.nn.Upsample). */
export class Upsample extends Module {
  readonly size: number | number[] | null;
  readonly scaleFactor: number | number[] | null;
  readonly mode: F.InterpolateMode;
  readonly alignCorners: boolean | null;
  readonly recomputeScaleFactor: boolean | null;

  constructor(...args: Args<typeof UPSAMPLE, UpsampleOptions>) {
    super();
    const opts = bind<UpsampleOptions>(UPSAMPLE, args, 'Upsample');
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

/** The size or scale factor of the fixed-mode upsampling modules. */
type FixedModeOptions = Pick<UpsampleOptions, 'size' | 'scaleFactor'>;

/** Nearest-neighbour Upsample of [N, C, H, W] (torch.nn.UpsamplingNearest2d). */
export class UpsamplingNearest2d extends Upsample {
  constructor(...args: Args<typeof FIXED_MODE, FixedModeOptions>) {
    super({ ...bind<FixedModeOptions>(FIXED_MODE, args, 'UpsamplingNearest2d'), mode: 'nearest' });
  }
}

/** Bilinear Upsample of [N, C, H, W] with alignCorners true (torch.nn.UpsamplingBilinear2d). */
export class UpsamplingBilinear2d extends Upsample {
  constructor(...args: Args<typeof FIXED_MODE, FixedModeOptions>) {
    const opts = bind<FixedModeOptions>(FIXED_MODE, args, 'UpsamplingBilinear2d');
    super({ ...opts, mode: 'bilinear', alignCorners: true });
  }
}
