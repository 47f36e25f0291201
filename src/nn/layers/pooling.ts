// MaxPool2d, AvgPool2d and AdaptiveAvgPool2d.
import type * as t from '../../core/index.ts';
import * as F from '../functional.ts';
import { Module } from '../module.ts';

export class MaxPool2d extends Module {
  readonly kernelSize: F.IntOrPair;
  readonly stride: F.IntOrPair;
  readonly padding: F.IntOrPair;
  readonly dilation: F.IntOrPair;
  readonly ceilMode: boolean;

  constructor(kernelSize: F.IntOrPair, opts: F.MaxPool2dOptions = {}) {
    super();
    this.kernelSize = kernelSize;
    this.stride = opts.stride ?? kernelSize;
    this.padding = opts.padding ?? 0;
    this.dilation = opts.dilation ?? 1;
    this.ceilMode = opts.ceilMode ?? false;
  }

  override forward(input: t.Tensor): t.Tensor {
    return F.maxPool2d(input, this.kernelSize, {
      stride: this.stride,
      padding: this.padding,
      dilation: this.dilation,
      ceilMode: this.ceilMode,
    });
  }

  override extraRepr(): string {
    const s = (v: F.IntOrPair) => (typeof v === 'number' ? String(v) : `(${v.join(', ')})`);
    return `kernel_size=${s(this.kernelSize)}, stride=${s(this.stride)}, padding=${s(this.padding)}, dilation=${s(this.dilation)}, ceil_mode=${this.ceilMode ? 'True' : 'False'}`;
  }
}

/** Average pooling to a fixed output size (e.g. [1, 1] before a classifier). */
export class AdaptiveAvgPool2d extends Module {
  constructor(readonly outputSize: F.IntOrPair) {
    super();
  }

  override forward(input: t.Tensor): t.Tensor {
    return F.adaptiveAvgPool2d(input, this.outputSize);
  }

  override extraRepr(): string {
    const v = this.outputSize;
    return `output_size=${typeof v === 'number' ? v : `(${v.join(', ')})`}`;
  }
}

/** Average pooling over [N, C, H, W] windows (torch.nn.AvgPool2d). */
export class AvgPool2d extends Module {
  readonly kernelSize: F.IntOrPair;
  readonly stride: F.IntOrPair;
  readonly padding: F.IntOrPair;
  readonly ceilMode: boolean;
  readonly countIncludePad: boolean;
  readonly divisorOverride: number | null;

  constructor(kernelSize: F.IntOrPair, opts: F.AvgPool2dOptions = {}) {
    super();
    this.kernelSize = kernelSize;
    this.stride = opts.stride ?? kernelSize;
    this.padding = opts.padding ?? 0;
    this.ceilMode = opts.ceilMode ?? false;
    this.countIncludePad = opts.countIncludePad ?? true;
    this.divisorOverride = opts.divisorOverride ?? null;
  }

  override forward(input: t.Tensor): t.Tensor {
    return F.avgPool2d(input, this.kernelSize, {
      stride: this.stride,
      padding: this.padding,
      ceilMode: this.ceilMode,
      countIncludePad: this.countIncludePad,
      divisorOverride: this.divisorOverride,
    });
  }

  override extraRepr(): string {
    const s = (v: F.IntOrPair) => (typeof v === 'number' ? String(v) : `(${v.join(', ')})`);
    return `kernel_size=${s(this.kernelSize)}, stride=${s(this.stride)}, padding=${s(this.padding)}`;
  }
}
