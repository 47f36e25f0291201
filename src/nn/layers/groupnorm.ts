// GroupNorm (torch.nn.GroupNorm).
import * as t from '../../core/index.ts';
import * as F from '../functional.ts';
import * as init from '../init.ts';
import { Module } from '../module.ts';
import { Parameter } from '../parameter.ts';
import type { FactoryOptions } from './linear.ts';

export interface GroupNormOptions extends FactoryOptions {
  /** Added to the variance. Default 1e-5. */
  eps?: number;
  /** Learnable per-channel weight (ones) and bias (zeros). Default true. */
  affine?: boolean;
}

/** Normalises each of `numGroups` groups of channels of [N, C, *] input, per sample. */
export class GroupNorm extends Module {
  readonly numGroups: number;
  readonly numChannels: number;
  readonly eps: number;
  readonly affine: boolean;
  weight: t.Tensor | null;
  bias: t.Tensor | null;

  constructor(numGroups: number, numChannels: number, opts: GroupNormOptions = {}) {
    super();
    if (!Number.isInteger(numGroups) || numGroups <= 0) {
      throw new RangeError(`GroupNorm: numGroups must be a positive integer, got ${numGroups}`);
    }
    if (numChannels % numGroups !== 0) {
      throw new RangeError(
        `GroupNorm: numChannels (${numChannels}) must be divisible by numGroups (${numGroups})`,
      );
    }
    this.numGroups = numGroups;
    this.numChannels = numChannels;
    this.eps = opts.eps ?? 1e-5;
    this.affine = opts.affine ?? true;
    const factory = { dtype: opts.dtype, device: opts.device };
    this.weight = this.registerParameter(
      'weight',
      this.affine ? Parameter(t.empty([numChannels], factory)) : null,
    );
    this.bias = this.registerParameter(
      'bias',
      this.affine ? Parameter(t.empty([numChannels], factory)) : null,
    );
    this.resetParameters();
  }

  resetParameters(): void {
    if (this.weight !== null) init.ones_(this.weight);
    if (this.bias !== null) init.zeros_(this.bias);
  }

  override forward(input: t.Tensor): t.Tensor {
    return F.groupNorm(input, this.numGroups, { weight: this.weight, bias: this.bias, eps: this.eps });
  }

  override extraRepr(): string {
    return `${this.numGroups}, ${this.numChannels}, eps=${this.eps}, affine=${this.affine ? 'True' : 'False'}`;
  }
}
