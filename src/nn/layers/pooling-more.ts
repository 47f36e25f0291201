// 1-d pooling and adaptive max pooling modules (torch.nn.modules.pooling).
import type * as t from '../../core/index.ts';
import * as F from '../functional.ts';
import { Module } from '../module.ts';

const show = (v: number | number[] | null) =>
  v === null ? 'None' : typeof v === 'number' ? String(v) : `(${v.join(', ')})`;

export class MaxPool1d extends Module {
  readonly stride: number | [number];
  readonly padding: number | [number];
  readonly dilation: number | [number];
  readonly ceilMode: boolean;

  constructor(
    readonly kernelSize: number | [number],
    opts: {
      stride?: number | [number] | null;
      padding?: number | [number];
      dilation?: number | [number];
      ceilMode?: boolean;
    } = {},
  ) {
    super();
    this.stride = opts.stride ?? kernelSize;
    this.padding = opts.padding ?? 0;
    this.dilation = opts.dilation ?? 1;
    this.ceilMode = opts.ceilMode ?? false;
  }

  override forward(input: t.Tensor): t.Tensor {
    return F.maxPool1d(input, this.kernelSize, {
      stride: this.stride,
      padding: this.padding,
      dilation: this.dilation,
      ceilMode: this.ceilMode,
    });
  }

  override extraRepr(): string {
    return `kernel_size=${show(this.kernelSize)}, stride=${show(this.stride)}, padding=${show(this.padding)}, dilation=${show(this.dilation)}, ceil_mode=${this.ceilMode ? 'True' : 'False'}`;
  }
}

export class AvgPool1d extends Module {
  readonly stride: number | [number];
  readonly padding: number | [number];
  readonly ceilMode: boolean;
  readonly countIncludePad: boolean;

  constructor(
    readonly kernelSize: number | [number],
    opts: {
      stride?: number | [number] | null;
      padding?: number | [number];
      ceilMode?: boolean;
      countIncludePad?: boolean;
    } = {},
  ) {
    super();
    this.stride = opts.stride ?? kernelSize;
    this.padding = opts.padding ?? 0;
    this.ceilMode = opts.ceilMode ?? false;
    this.countIncludePad = opts.countIncludePad ?? true;
  }

  override forward(input: t.Tensor): t.Tensor {
    return F.avgPool1d(input, this.kernelSize, {
      stride: this.stride,
      padding: this.padding,
      ceilMode: this.ceilMode,
      countIncludePad: this.countIncludePad,
    });
  }

  override extraRepr(): string {
    return `kernel_size=${show(this.kernelSize)}, stride=${show(this.stride)}, padding=${show(this.padding)}`;
  }
}

export class AdaptiveAvgPool1d extends Module {
  constructor(readonly outputSize: number | [number]) {
    super();
  }
  override forward(input: t.Tensor): t.Tensor {
    return F.adaptiveAvgPool1d(input, this.outputSize);
  }
  override extraRepr(): string {
    return `output_size=${show(this.outputSize)}`;
  }
}

export class AdaptiveMaxPool1d extends Module {
  constructor(readonly outputSize: number | [number]) {
    super();
  }
  override forward(input: t.Tensor): t.Tensor {
    return F.adaptiveMaxPool1d(input, this.outputSize);
  }
  override extraRepr(): string {
    return `output_size=${show(this.outputSize)}`;
  }
}

export class AdaptiveMaxPool2d extends Module {
  constructor(readonly outputSize: F.IntOrPair) {
    super();
  }
  override forward(input: t.Tensor): t.Tensor {
    return F.adaptiveMaxPool2d(input, this.outputSize);
  }
  override extraRepr(): string {
    return `output_size=${show(this.outputSize)}`;
  }
}
