// torch.nn.modules.instancenorm: InstanceNorm1d/2d/3d over one class (torch's
// _InstanceNorm, on _NormBase's state) whose subclasses fix the input rank, and
// LazyInstanceNorm1d/2d/3d, whose numFeatures comes from the first input.
import * as t from '../../core/index.ts';
import { type Args, bind, signature } from '../args.ts';
import * as F from '../functional.ts';
import { _NormBase, LAZY_NORM, type LazyNormArgs } from './batchnorm.ts';
import { LazyModuleMixin } from './lazy.ts';
import type { FactoryOptions } from './linear.ts';

export interface InstanceNormOptions extends FactoryOptions {
  eps?: number;
  /** Default 0.1. */
  momentum?: number | null;
  /** Learnable per-channel weight and bias. Default false (unlike BatchNorm). */
  affine?: boolean;
  /** Keep running statistics (used in eval). Default false (unlike BatchNorm). */
  trackRunningStats?: boolean;
  /** With affine: learn the bias too (keyword-only, as in PyTorch). Default true. */
  bias?: boolean;
}

// PyTorch's signatures: _NormBase's, and the lazy forms' without num_features.
const INSTANCE_NORM = signature(['InstanceNorm', 'InstanceNorm1d', 'InstanceNorm2d', 'InstanceNorm3d'], {
  required: ['numFeatures'],
  optional: ['eps', 'momentum', 'affine', 'trackRunningStats', 'device', 'dtype'],
  keywordOnly: ['bias'],
});
const LAZY_INSTANCE_NORM = signature(['LazyInstanceNorm1d', 'LazyInstanceNorm2d', 'LazyInstanceNorm3d'], {
  optional: ['eps', 'momentum', 'affine', 'trackRunningStats', 'device', 'dtype'],
  keywordOnly: ['bias'],
});

/** Instance normalisation (torch's _InstanceNorm); subclasses fix the input rank. */
export abstract class InstanceNorm extends _NormBase {
  declare readonly momentum: number | null;

  constructor(...args: Args<typeof INSTANCE_NORM, { numFeatures: number } & InstanceNormOptions>) {
    super(INSTANCE_NORM, args, new.target.name, false);
  }

  /** The rank of batched input ([N, C, *spatial]); one less is unbatched. */
  protected abstract readonly batchedDims: number;

  override forward(input: t.Tensor): t.Tensor {
    const want = this.batchedDims;
    if (input.ndim !== want && input.ndim !== want - 1) {
      throw new RangeError(`expected ${want - 1}D or ${want}D input (got ${input.ndim}D input)`);
    }
    const featureDim = input.ndim - (want - 1);
    if (input.shape[featureDim] !== this.numFeatures && this.affine) {
      throw new RangeError(
        `expected input's size at dim=${featureDim} to match numFeatures (${this.numFeatures}), but got: ${input.shape[featureDim]}.`,
      );
    }
    const run = (x: t.Tensor) =>
      F.instanceNorm(x, {
        runningMean: this.runningMean,
        runningVar: this.runningVar,
        weight: this.weight,
        bias: this.bias,
        useInputStats: this.training || !this.trackRunningStats,
        momentum: this.momentum ?? 0,
        eps: this.eps,
      });
    if (input.ndim === want) return run(input);
    return t.tidy(() => t.squeeze(run(t.unsqueeze(input, 0)), 0));
  }
}

/** InstanceNorm over [N, C, L] or [C, L] input. */
export class InstanceNorm1d extends InstanceNorm {
  protected readonly batchedDims = 3;
}

/** InstanceNorm over [N, C, H, W] or [C, H, W] input. */
export class InstanceNorm2d extends InstanceNorm {
  protected readonly batchedDims = 4;
}

/** InstanceNorm over [N, C, D, H, W] or [C, D, H, W] input. */
export class InstanceNorm3d extends InstanceNorm {
  protected readonly batchedDims = 5;
}

// PyTorch's lazy instance norms default to affine and tracked running stats (their
// _LazyNormBase defaults), unlike InstanceNorm*d.
const lazyDefaults = (opts: InstanceNormOptions): InstanceNormOptions => ({
  affine: true,
  trackRunningStats: true,
  ...opts,
});

/** InstanceNorm1d whose numFeatures comes from the first input (torch.nn.LazyInstanceNorm1d). */
export class LazyInstanceNorm1d extends LazyModuleMixin(InstanceNorm1d, LAZY_NORM) {
  constructor(...args: LazyNormArgs<InstanceNormOptions>) {
    super(0, lazyDefaults(bind<InstanceNormOptions>(LAZY_INSTANCE_NORM, args, 'LazyInstanceNorm1d')));
  }
}

/** InstanceNorm2d whose numFeatures comes from the first input (torch.nn.LazyInstanceNorm2d). */
export class LazyInstanceNorm2d extends LazyModuleMixin(InstanceNorm2d, LAZY_NORM) {
  constructor(...args: LazyNormArgs<InstanceNormOptions>) {
    super(0, lazyDefaults(bind<InstanceNormOptions>(LAZY_INSTANCE_NORM, args, 'LazyInstanceNorm2d')));
  }
}

/** InstanceNorm3d whose numFeatures comes from the first input (torch.nn.LazyInstanceNorm3d). */
export class LazyInstanceNorm3d extends LazyModuleMixin(InstanceNorm3d, LAZY_NORM) {
  constructor(...args: LazyNormArgs<InstanceNormOptions>) {
    super(0, lazyDefaults(bind<InstanceNormOptions>(LAZY_INSTANCE_NORM, args, 'LazyInstanceNorm3d')));
  }
}
