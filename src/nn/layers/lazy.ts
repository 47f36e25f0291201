// Lazy modules (torch.nn.modules.lazy): the input size (in_features, in_channels,
// num_features) is read from the first input. Until then the size-dependent parameters
// and buffers are placeholders marked uninitialized (PyTorch's UninitializedParameter);
// the first forward materializes them in place (aten::set_data, so an optimizer built
// earlier keeps the same tensors), runs resetParameters() and turns the module into its
// eager class (PyTorch's cls_to_become), as does nothing else. Loading a state dict into
// an uninitialized module materializes the placeholders to the checkpoint's shapes first.
import { noGrad } from '../../autograd/index.ts';
import * as t from '../../core/index.ts';
import type { Module } from '../module.ts';
import { BatchNorm1d, BatchNorm2d, BatchNorm3d, type BatchNormOptions } from './batchnorm.ts';
import { Conv1d, type Conv1dOptions, Conv2d, type Conv2dOptions } from './conv.ts';
import {
  Conv3d,
  type Conv3dOptions,
  ConvTranspose1d,
  ConvTranspose2d,
  ConvTranspose3d,
  type ConvTransposeOptions,
} from './conv-more.ts';
import { type FactoryOptions, Linear } from './linear.ts';
import {
  InstanceNorm1d,
  InstanceNorm2d,
  InstanceNorm3d,
  type InstanceNormOptions,
} from './normalization-more.ts';

const UNINITIALIZED = new WeakSet<t.Tensor>();

/** Whether `x` is a lazy module's placeholder not materialized yet. */
export function isUninitialized(x: t.Tensor): boolean {
  return UNINITIALIZED.has(x);
}

interface Registries {
  _parameters: Map<string, t.Tensor | null>;
  _buffers: Map<string, t.Tensor | null>;
}

function members(m: Module): [string, t.Tensor][] {
  const r = m as unknown as Registries;
  const out: [string, t.Tensor][] = [];
  for (const map of [r._parameters, r._buffers]) for (const [k, v] of map) if (v !== null) out.push([k, v]);
  return out;
}

function markAll(m: Module, names: string[]): void {
  for (const [k, v] of members(m)) if (names.includes(k)) UNINITIALIZED.add(v);
}

function hasUninitialized(m: Module): boolean {
  return members(m).some(([, v]) => UNINITIALIZED.has(v));
}

function materialize(x: t.Tensor, shape: number[]): void {
  noGrad(() =>
    t.tidy(() => {
      t.ops.call('aten::set_data', x, t.empty(shape, { dtype: x.dtype, device: x.device }));
    }),
  );
  UNINITIALIZED.delete(x);
}

/** PyTorch's _lazy_load_hook: placeholders take the checkpoint's shapes. */
function lazyLoad(m: Module, stateDict: Map<string, t.Tensor>, prefix: string): void {
  for (const [k, v] of members(m)) {
    const input = stateDict.get(prefix + k);
    if (UNINITIALIZED.has(v) && input instanceof t.Tensor) materialize(v, input.shape);
  }
}

function setReadonly(obj: object, key: string, value: unknown): void {
  (obj as Record<string, unknown>)[key] = value;
}

// The first forward: infer, materialize, reset, become the eager class.
function infer(m: Module, eager: { prototype: object }, initialize: () => void): void {
  if (hasUninitialized(m)) {
    initialize();
    if (hasUninitialized(m)) {
      throw new Error(`module ${m.constructor.name} has not been fully initialized`);
    }
  }
  Object.setPrototypeOf(m, eager.prototype);
}

/** Linear whose inFeatures is input.shape[-1] of the first forward. */
export class LazyLinear extends Linear {
  constructor(outFeatures: number, opts: { bias?: boolean } & FactoryOptions = {}) {
    super(0, outFeatures, opts);
    markAll(this, ['weight', 'bias']);
  }
  override resetParameters(): void {
    if (!hasUninitialized(this) && this.inFeatures !== 0) super.resetParameters();
  }
  protected override upgradeStateDict(sd: Map<string, t.Tensor>, prefix: string): void {
    lazyLoad(this, sd, prefix);
  }
  override forward(input: t.Tensor): t.Tensor {
    const n = input.shape[input.ndim - 1];
    // After loadStateDict materialized the weight, PyTorch takes inFeatures from the input.
    if (!hasUninitialized(this) && this.inFeatures === 0) {
      if (n !== this.weight.shape[1]) {
        throw new RangeError(
          `The in_features inferred from input: ${n} is not equal to in_features from weight: ${this.weight.shape[1]}`,
        );
      }
      setReadonly(this, 'inFeatures', n);
    }
    infer(this, Linear, () => {
      setReadonly(this, 'inFeatures', n);
      materialize(this.weight, [this.outFeatures, n]);
      if (this.bias !== null) materialize(this.bias, [this.outFeatures]);
      this.resetParameters();
    });
    return super.forward(input);
  }
}

// The convolutions: in_channels from dim 1 (batched) or 0 (unbatched) of the first input.
function inChannelsOf(input: t.Tensor, spatial: number): number {
  if (input.ndim !== spatial + 1 && input.ndim !== spatial + 2) {
    throw new RangeError(
      `Expected ${spatial + 1}D (unbatched) or ${spatial + 2}D (batched) input, but got input of size: [${input.shape.join(', ')}]`,
    );
  }
  return input.ndim === spatial + 2 ? input.shape[1] : input.shape[0];
}

interface ConvLike {
  inChannels: number;
  outChannels: number;
  groups: number;
  kernelSize: number[];
  weight: t.Tensor;
  bias: t.Tensor | null;
  resetParameters(): void;
}

function initializeConv(c: ConvLike, input: t.Tensor, spatial: number, transposed: boolean): void {
  const inChannels = inChannelsOf(input, spatial);
  if (inChannels % c.groups !== 0) throw new RangeError('in_channels must be divisible by groups');
  setReadonly(c, 'inChannels', inChannels);
  const k = c.kernelSize;
  materialize(
    c.weight,
    transposed ? [inChannels, c.outChannels / c.groups, ...k] : [c.outChannels, inChannels / c.groups, ...k],
  );
  if (c.bias !== null) materialize(c.bias, [c.outChannels]);
  c.resetParameters();
}

export class LazyConv1d extends Conv1d {
  constructor(outChannels: number, kernelSize: number | [number], opts: Conv1dOptions = {}) {
    super(0, outChannels, kernelSize, opts);
    markAll(this, ['weight', 'bias']);
  }
  override resetParameters(): void {
    if (!hasUninitialized(this) && this.inChannels !== 0) super.resetParameters();
  }
  protected override upgradeStateDict(sd: Map<string, t.Tensor>, prefix: string): void {
    lazyLoad(this, sd, prefix);
  }
  override forward(input: t.Tensor): t.Tensor {
    infer(this, Conv1d, () => initializeConv(this as unknown as ConvLike, input, 1, false));
    return super.forward(input);
  }
}

export class LazyConv2d extends Conv2d {
  constructor(outChannels: number, kernelSize: number | number[], opts: Conv2dOptions = {}) {
    super(0, outChannels, kernelSize, opts);
    markAll(this, ['weight', 'bias']);
  }
  override resetParameters(): void {
    if (!hasUninitialized(this) && this.inChannels !== 0) super.resetParameters();
  }
  protected override upgradeStateDict(sd: Map<string, t.Tensor>, prefix: string): void {
    lazyLoad(this, sd, prefix);
  }
  override forward(input: t.Tensor): t.Tensor {
    infer(this, Conv2d, () => initializeConv(this as unknown as ConvLike, input, 2, false));
    return super.forward(input);
  }
}

export class LazyConv3d extends Conv3d {
  constructor(outChannels: number, kernelSize: number | number[], opts: Conv3dOptions = {}) {
    super(0, outChannels, kernelSize, opts);
    markAll(this, ['weight', 'bias']);
  }
  override resetParameters(): void {
    if (!hasUninitialized(this) && this.inChannels !== 0) super.resetParameters();
  }
  protected override upgradeStateDict(sd: Map<string, t.Tensor>, prefix: string): void {
    lazyLoad(this, sd, prefix);
  }
  override forward(input: t.Tensor): t.Tensor {
    infer(this, Conv3d, () => initializeConv(this as unknown as ConvLike, input, 3, false));
    return super.forward(input);
  }
}

function lazyConvTranspose<
  B extends typeof ConvTranspose1d | typeof ConvTranspose2d | typeof ConvTranspose3d,
>(
  name: string,
  Base: B,
  spatial: number,
): new (
  outChannels: number,
  kernelSize: number | number[],
  opts?: ConvTransposeOptions,
) => InstanceType<B> {
  const C = class extends (Base as typeof ConvTranspose2d) {
    constructor(outChannels: number, kernelSize: number | number[], opts: ConvTransposeOptions = {}) {
      super(0, outChannels, kernelSize, opts);
      markAll(this, ['weight', 'bias']);
    }
    override resetParameters(): void {
      if (!hasUninitialized(this) && this.inChannels !== 0) super.resetParameters();
    }
    protected override upgradeStateDict(sd: Map<string, t.Tensor>, prefix: string): void {
      lazyLoad(this, sd, prefix);
    }
    override forward(input: t.Tensor, outputSize: number[] | null = null): t.Tensor {
      infer(this, Base, () => initializeConv(this as unknown as ConvLike, input, spatial, true));
      return super.forward(input, outputSize);
    }
  };
  Object.defineProperty(C, 'name', { value: name });
  // C extends Base (an instance of B) at run time; TypeScript sees only the cast-to base.
  return C as unknown as new (
    outChannels: number,
    kernelSize: number | number[],
    opts?: ConvTransposeOptions,
  ) => InstanceType<B>;
}

/** Transposed convolutions whose inChannels comes from the first input. */
export const LazyConvTranspose1d = lazyConvTranspose('LazyConvTranspose1d', ConvTranspose1d, 1);
export type LazyConvTranspose1d = InstanceType<typeof LazyConvTranspose1d>;
export const LazyConvTranspose2d = lazyConvTranspose('LazyConvTranspose2d', ConvTranspose2d, 2);
export type LazyConvTranspose2d = InstanceType<typeof LazyConvTranspose2d>;
export const LazyConvTranspose3d = lazyConvTranspose('LazyConvTranspose3d', ConvTranspose3d, 3);
export type LazyConvTranspose3d = InstanceType<typeof LazyConvTranspose3d>;

// The norms: num_features is input.shape[1] of the first input (PyTorch's _LazyNormBase,
// for instance norms too).
const NORM_STATE = ['weight', 'bias', 'running_mean', 'running_var'];

function initializeNorm(m: Module, input: t.Tensor, reset: () => void): void {
  const n = input.shape[1];
  setReadonly(m, 'numFeatures', n);
  for (const [k, v] of members(m)) if (NORM_STATE.includes(k) && isUninitialized(v)) materialize(v, [n]);
  reset();
}

// The factories name their return type: the package's .d.ts cannot describe an anonymous class.
function lazyBatchNorm<B extends typeof BatchNorm1d | typeof BatchNorm2d | typeof BatchNorm3d>(
  name: string,
  Base: B,
): new (
  opts?: BatchNormOptions,
) => InstanceType<B> {
  const C = class extends (Base as typeof BatchNorm2d) {
    constructor(opts: BatchNormOptions = {}) {
      super(0, opts);
      markAll(this, NORM_STATE);
    }
    override resetParameters(): void {
      if (!hasUninitialized(this) && this.numFeatures !== 0) super.resetParameters();
    }
    protected override upgradeStateDict(sd: Map<string, t.Tensor>, prefix: string): void {
      lazyLoad(this, sd, prefix);
      super.upgradeStateDict(sd, prefix);
    }
    override forward(input: t.Tensor): t.Tensor {
      infer(this, Base, () => initializeNorm(this, input, () => this.resetParameters()));
      return super.forward(input);
    }
  };
  Object.defineProperty(C, 'name', { value: name });
  return C as unknown as new (
    opts?: BatchNormOptions,
  ) => InstanceType<B>;
}

/** BatchNorm whose numFeatures is input.shape[1] of the first forward. */
export const LazyBatchNorm1d = lazyBatchNorm('LazyBatchNorm1d', BatchNorm1d);
export type LazyBatchNorm1d = InstanceType<typeof LazyBatchNorm1d>;
export const LazyBatchNorm2d = lazyBatchNorm('LazyBatchNorm2d', BatchNorm2d);
export type LazyBatchNorm2d = InstanceType<typeof LazyBatchNorm2d>;
export const LazyBatchNorm3d = lazyBatchNorm('LazyBatchNorm3d', BatchNorm3d);
export type LazyBatchNorm3d = InstanceType<typeof LazyBatchNorm3d>;

function lazyInstanceNorm<B extends typeof InstanceNorm1d | typeof InstanceNorm2d | typeof InstanceNorm3d>(
  name: string,
  Base: B,
): new (
  opts?: InstanceNormOptions,
) => InstanceType<B> {
  const C = class extends (Base as typeof InstanceNorm2d) {
    constructor(opts: InstanceNormOptions = {}) {
      // PyTorch's lazy instance norms default to affine and tracked running stats
      // (their _LazyNormBase defaults), unlike InstanceNorm*d.
      super(0, { affine: true, trackRunningStats: true, ...opts });
      markAll(this, NORM_STATE);
    }
    protected override upgradeStateDict(sd: Map<string, t.Tensor>, prefix: string): void {
      lazyLoad(this, sd, prefix);
      super.upgradeStateDict(sd, prefix);
    }
    override forward(input: t.Tensor): t.Tensor {
      infer(this, Base, () =>
        initializeNorm(this, input, () =>
          // _NormBase.reset_parameters: running stats 0/1, affine weight 1 and bias 0.
          noGrad(() => {
            this.runningMean?.zero_();
            this.runningVar?.fill_(1);
            this.weight?.fill_(1);
            this.bias?.zero_();
          }),
        ),
      );
      return super.forward(input);
    }
  };
  Object.defineProperty(C, 'name', { value: name });
  return C as unknown as new (
    opts?: InstanceNormOptions,
  ) => InstanceType<B>;
}

/** InstanceNorm whose numFeatures is input.shape[1] of the first forward. */
export const LazyInstanceNorm1d = lazyInstanceNorm('LazyInstanceNorm1d', InstanceNorm1d);
export type LazyInstanceNorm1d = InstanceType<typeof LazyInstanceNorm1d>;
export const LazyInstanceNorm2d = lazyInstanceNorm('LazyInstanceNorm2d', InstanceNorm2d);
export type LazyInstanceNorm2d = InstanceType<typeof LazyInstanceNorm2d>;
export const LazyInstanceNorm3d = lazyInstanceNorm('LazyInstanceNorm3d', InstanceNorm3d);
export type LazyInstanceNorm3d = InstanceType<typeof LazyInstanceNorm3d>;
