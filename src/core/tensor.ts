// The Tensor class: a plain JS object around a native slot handle (architecture §4). Op
// methods (`a.add(b).relu()`) are attached by ops.generated.ts; this file holds the
// properties, data access and conversions.
import { inspect } from 'node:util';
import { resolveDevice } from './cuda.ts';
import {
  type DType,
  type DTypeName,
  dtypeCode,
  dtypeFromCode,
  dtypeFromName,
  ITEM_SIZE,
  isComplex,
  isFloat8,
  isFloatingPoint,
  type MemoryFormat,
  memoryFormatCode,
  type TypedArray,
  toDType,
  typedArrayFor,
} from './dtype.ts';
import { named } from './errors.ts';
import { formatTensor } from './format.ts';
import { native } from './native.ts';
import { checkOptions, optionNames } from './options.ts';
import { rawOp } from './raw-op.ts';
import { disposeHandle, type Handle, keep, track } from './scope.ts';

export type Scalar = number | boolean;
export type DeviceLike = string;

/** Nested arrays of numbers/booleans, as tensor() accepts and toArray() returns. */
export type NestedArray = number | boolean | NestedArray[];

export interface ToOptions {
  dtype?: DTypeName;
  /** A device; an integer N is PyTorch's 'cuda:N'. */
  device?: DeviceLike | number;
  memoryFormat?: MemoryFormat;
  copy?: boolean;
  nonBlocking?: boolean;
}

export interface BackwardOptions {
  retainGraph?: boolean;
  createGraph?: boolean;
  inputs?: Tensor[];
}

const BACKWARD_OPTIONS = optionNames<BackwardOptions>({ retainGraph: true, createGraph: true, inputs: true });

const toOp = rawOp('aten::to', 'dtype_layout');
const contiguousOp = rawOp('aten::contiguous', '');
const cloneOp = rawOp('aten::clone', '');
const detachOp = rawOp('aten::detach', '');
const pinMemoryOp = rawOp('aten::pin_memory', '');
const isPinnedOp = rawOp('aten::is_pinned', '');
const numpyTOp = rawOp('aten::numpy_T', '');
const mTOp = rawOp('aten::mT', '');

// torch.Tensor.type()'s names: 'torch.FloatTensor', 'torch.cuda.LongTensor', ...
const TYPE_NAMES: Record<DType, string> = {
  float32: 'FloatTensor',
  float64: 'DoubleTensor',
  float16: 'HalfTensor',
  bfloat16: 'BFloat16Tensor',
  int64: 'LongTensor',
  int32: 'IntTensor',
  int16: 'ShortTensor',
  int8: 'CharTensor',
  uint8: 'ByteTensor',
  bool: 'BoolTensor',
  uint16: 'UInt16Tensor',
  uint32: 'UInt32Tensor',
  uint64: 'UInt64Tensor',
  float8_e4m3fn: 'Float8_e4m3fnTensor',
  float8_e5m2: 'Float8_e5m2Tensor',
  complex64: 'ComplexFloatTensor',
  complex128: 'ComplexDoubleTensor',
};

/**
 * A Tensor's brand, for code that must not import this module (src/data: its worker
 * threads do not load the addon) and checks `v[Symbol.for('tsddp.Tensor')] === true`:
 * Symbol.for gives every copy of tsddp in a thread the same symbol, where instanceof
 * misses a tensor made by another copy (a user's dataset module imports its own).
 */
export const TENSOR_BRAND: unique symbol = Symbol.for('tsddp.Tensor') as never;

export class Tensor implements Handle {
  /** Native handle; -1 after dispose(). */
  h: number;
  /** Scope flags (see scope.ts). */
  f = 0;

  /** Use the creation functions (tensor(), zeros(), ...) rather than this constructor. */
  constructor(handle: number) {
    this.h = handle;
  }

  get shape(): number[] {
    return native.shape(this.h);
  }
  /** PyTorch's `size()` / `size(dim)`. */
  size(): number[];
  size(dim: number): number;
  size(dim?: number): number[] | number {
    const s = native.shape(this.h);
    if (dim === undefined) return s;
    const d = dim < 0 ? dim + s.length : dim;
    if (d < 0 || d >= s.length) {
      throw new RangeError(`size(): dim ${dim} is out of range for a tensor with ${s.length} dimensions`);
    }
    return s[d];
  }
  get strides(): number[] {
    return native.strides(this.h);
  }
  stride(): number[] {
    return native.strides(this.h);
  }
  get ndim(): number {
    return native.dim(this.h);
  }
  dim(): number {
    return native.dim(this.h);
  }
  numel(): number {
    return native.numel(this.h);
  }
  get dtype(): DType {
    return dtypeFromCode(native.dtype(this.h));
  }
  get device(): string {
    return native.device(this.h);
  }
  get isCuda(): boolean {
    return native.device(this.h).startsWith('cuda');
  }
  isContiguous(memoryFormat?: MemoryFormat): boolean {
    return native.isContiguous(this.h, memoryFormat ? memoryFormatCode(memoryFormat) : undefined);
  }
  get isDisposed(): boolean {
    return this.h < 0;
  }

  // --- autograd -------------------------------------------------------------------

  get requiresGrad(): boolean {
    return native.requiresGrad(this.h);
  }
  set requiresGrad(flag: boolean) {
    native.setRequiresGrad(this.h, flag);
  }
  requiresGrad_(flag = true): this {
    native.setRequiresGrad(this.h, flag);
    return this;
  }
  /** The accumulated gradient (a new handle onto it on each read), or null. */
  get grad(): Tensor | null {
    const g = native.getGrad(this.h);
    return g === null ? null : wrap(g);
  }
  set grad(g: Tensor | null) {
    native.setGrad(this.h, g === null ? null : g.h);
  }
  get isLeaf(): boolean {
    return native.isLeaf(this.h);
  }
  /** Name of the autograd node that made this tensor (e.g. `AddBackward0`), or null. */
  get gradFn(): string | null {
    return native.gradFn(this.h);
  }
  retainGrad(): this {
    native.retainGrad(this.h);
    return this;
  }
  /**
   * Computes the gradients of this tensor (torch.Tensor.backward). PyTorch's keyword
   * arguments come in an options object, with or without the gradient before it:
   * `loss.backward({ retainGraph: true })` or `y.backward(g, { retainGraph: true })`.
   */
  backward(gradientOrOptions?: Tensor | BackwardOptions, options?: BackwardOptions): void {
    let gradient: Tensor | undefined;
    let given = options;
    if (gradientOrOptions instanceof Tensor) gradient = gradientOrOptions;
    else if (gradientOrOptions !== undefined) {
      if (options !== undefined)
        throw new TypeError(
          'backward(): the first argument is the gradient (a Tensor) when options follow it',
        );
      given = gradientOrOptions;
    }
    const opts = checkOptions('backward', given, BACKWARD_OPTIONS);
    native.backward(
      [this.h],
      [gradient ? gradient.h : null],
      opts.retainGraph,
      opts.createGraph,
      opts.inputs?.map((t) => t.h),
    );
  }

  // --- conversion -------------------------------------------------------------------

  /**
   * `to('float64')` (or an alias: `'double'`, `'short'`, `'char'`, ...), `to('cuda:0')`,
   * `to(0)` (PyTorch's integer device: 'cuda:0'), `to({ dtype, device, memoryFormat, copy })`. A string is a dtype when it names one
   * (core/dtype.ts's one table), else a device.
   */
  to(
    target: DTypeName | DeviceLike | number | ToOptions,
    opts: Omit<ToOptions, 'dtype' | 'device'> = {},
  ): Tensor {
    let o: ToOptions;
    if (typeof target === 'string') {
      const d = dtypeFromName(target);
      o = d !== undefined ? { ...opts, dtype: d } : { ...opts, device: target };
    } else if (typeof target === 'number') o = { ...opts, device: target };
    else o = target;
    const device = o.device === undefined ? null : resolveDevice(o.device, 'to()');
    const dtype = o.dtype === undefined ? null : dtypeCode(toDType(o.dtype, 'to()'));
    const memoryFormat =
      o.memoryFormat === undefined ? null : named('to()', () => memoryFormatCode(o.memoryFormat!));
    return wrap(
      native.call(
        toOp(),
        this.h,
        dtype,
        null,
        device,
        null,
        o.nonBlocking ?? false,
        o.copy ?? false,
        memoryFormat,
      ) as number,
    );
  }
  contiguous(memoryFormat: MemoryFormat = 'contiguousFormat'): Tensor {
    const code = named('contiguous()', () => memoryFormatCode(memoryFormat));
    return wrap(native.call(contiguousOp(), this.h, code) as number);
  }
  clone(memoryFormat?: MemoryFormat): Tensor {
    return wrap(
      native.call(
        cloneOp(),
        this.h,
        memoryFormat === undefined ? null : memoryFormatCode(memoryFormat),
      ) as number,
    );
  }
  detach(): Tensor {
    return wrap(native.call(detachOp(), this.h) as number);
  }
  // PyTorch's dtype shortcuts: `x.half()` is `x.to('float16')` (this tensor when it has
  // that dtype already).
  half(): Tensor {
    return this.to('float16');
  }
  float(): Tensor {
    return this.to('float32');
  }
  double(): Tensor {
    return this.to('float64');
  }
  bfloat16(): Tensor {
    return this.to('bfloat16');
  }
  long(): Tensor {
    return this.to('int64');
  }
  int(): Tensor {
    return this.to('int32');
  }
  short(): Tensor {
    return this.to('int16');
  }
  char(): Tensor {
    return this.to('int8');
  }
  byte(): Tensor {
    return this.to('uint8');
  }
  bool(): Tensor {
    return this.to('bool');
  }
  /**
   * Without an argument, PyTorch's type string (`'torch.FloatTensor'`, on CUDA
   * `'torch.cuda.FloatTensor'`); with a dtype name or such a type string, the tensor
   * converted to it.
   */
  type(): string;
  type(dtype: DTypeName | string): Tensor;
  type(dtype?: DTypeName | string): string | Tensor {
    const cuda = this.isCuda ? 'cuda.' : '';
    if (dtype === undefined) return `torch.${cuda}${TYPE_NAMES[this.dtype]}`;
    const m = /^torch\.(cuda\.)?([A-Za-z0-9_]+)$/.exec(dtype);
    if (m) {
      const d = (Object.keys(TYPE_NAMES) as DType[]).find((k) => TYPE_NAMES[k] === m[2]);
      if (d === undefined) throw new TypeError(`type(): unknown tensor type '${dtype}'`);
      return this.to({ dtype: d, device: m[1] ? (this.isCuda ? this.device : 'cuda') : 'cpu' });
    }
    return this.to({ dtype: toDType(dtype, 'type()') });
  }
  isFloatingPoint(): boolean {
    return isFloatingPoint(this.dtype);
  }
  isComplex(): boolean {
    return isComplex(this.dtype);
  }
  /** Bytes per element, like torch.Tensor.element_size(). */
  elementSize(): number {
    return ITEM_SIZE[this.dtype];
  }
  /** `x.T`: the dimensions reversed (PyTorch deprecates it beyond 2 dimensions). */
  get T(): Tensor {
    return wrap(native.call(numpyTOp(), this.h) as number);
  }
  /** `x.mT`: the last two dimensions swapped (a batch of matrices transposed). */
  get mT(): Tensor {
    return wrap(native.call(mTOp(), this.h) as number);
  }
  cpu(): Tensor {
    return this.to('cpu');
  }
  cuda(index = 0): Tensor {
    return this.to(`cuda:${index}`);
  }
  /**
   * A copy in page-locked (pinned) host memory, from which `to('cuda', { nonBlocking: true })`
   * copies asynchronously. Needs CUDA, as in PyTorch.
   */
  pinMemory(): Tensor {
    return wrap(native.call(pinMemoryOp(), this.h, null) as number);
  }
  /** Whether this CPU tensor is in pinned host memory (false without CUDA). */
  isPinned(): boolean {
    return native.call(isPinnedOp(), this.h, null) as boolean;
  }

  // --- data out -----------------------------------------------------------------------

  /**
   * A copy of the data (row-major) in a typed array: float16/bfloat16 as Float32Array, bool
   * as Uint8Array, uint64 as BigUint64Array, float8 as its bits (Uint8Array; `toArray()` or
   * `to('float32')` gives the values), complex64/complex128 as a Float32Array/Float64Array
   * of interleaved (re, im) pairs, twice as long as `numel()`.
   */
  toTypedArray(): TypedArray {
    const [buf, code] = native.toBytes(this.h);
    return typedArrayFor(code, buf);
  }
  /** The raw bytes of the data (row-major, native dtype — float16/bfloat16 bits unchanged), for files. */
  toBytes(): Uint8Array {
    return new Uint8Array(native.toBytes(this.h, true)[0]);
  }
  /** Like toTypedArray(), with the device-to-host copy off the JS thread. */
  async data(): Promise<TypedArray> {
    const [buf, code] = await native.toBytesAsync(this.h);
    return typedArrayFor(code, buf);
  }
  /**
   * The value of a one-element tensor (int64/uint64 as a number, rounded past 2^53). A
   * complex tensor is refused: PyTorch gives a Python complex, which JS has no type for;
   * `toArray()` gives it as [re, im].
   */
  item(): number {
    // A disposed tensor is named by item() itself (below), not by this dtype check.
    if (!this.isDisposed && this.isComplex())
      throw new TypeError(
        `item(): a ${this.dtype} value is a complex number, which JS has no type for; ` +
          'toArray() gives it as [re, im] (or read x.real and x.imag)',
      );
    return Number(native.item(this.h));
  }
  /** torch.Tensor.tolist(): the same as toArray() (a number for a 0-dimensional tensor). */
  tolist(): NestedArray {
    return this.toArray();
  }
  /**
   * Nested JS arrays: numbers (int64/uint64 as numbers, float8 as their values), booleans
   * for bool tensors, and for complex tensors an [re, im] pair per element (shape
   * [...shape, 2], as torch.view_as_real(x).tolist()).
   */
  toArray(): NestedArray {
    // The copy first: on a disposed tensor, toTypedArray() is the call that names the fault.
    const raw = this.toTypedArray();
    const dtype = this.dtype;
    const flat = isFloat8(dtype) ? this.float8Values() : raw;
    const isBool = dtype === 'bool';
    const complex = isComplex(dtype);
    const shape = this.shape;
    const get = (i: number): NestedArray =>
      complex ? [flat[2 * i] as number, flat[2 * i + 1] as number] : isBool ? flat[i] !== 0 : Number(flat[i]);
    if (shape.length === 0) return get(0);
    let offset = 0;
    const build = (d: number): NestedArray[] => {
      const out: NestedArray[] = [];
      for (let i = 0; i < shape[d]; i++) out.push(d === shape.length - 1 ? get(offset++) : build(d + 1));
      return out;
    };
    return build(0);
  }
  /** A float8 tensor's values, through libtorch's exact cast to float32. */
  private float8Values(): Float32Array {
    const f = this.to('float32');
    try {
      return f.toTypedArray() as Float32Array;
    } finally {
      f.dispose();
    }
  }

  // --- memory -----------------------------------------------------------------------

  /** Frees the memory now. Using the tensor afterwards throws. */
  dispose(): void {
    disposeHandle(this);
  }
  [Symbol.dispose](): void {
    disposeHandle(this);
  }
  /** Keeps this tensor alive past the end of its scope. */
  keep(): this {
    return keep(this);
  }

  toString(): string {
    if (this.h < 0) return 'tensor(<disposed>)';
    // float8's typed array holds bits; PyTorch prints its values (it casts to half first).
    return formatTensor(this, isFloat8(this.dtype) ? this.float8Values() : this.toTypedArray());
  }
  [inspect.custom](): string {
    return this.toString();
  }
  // On the prototype (a getter), so a tensor carries no extra field.
  get [TENSOR_BRAND](): true {
    return true;
  }
}

/** Wraps a new native handle in a Tensor owned by the current scope. */
export function wrap(h: number): Tensor {
  const t = new Tensor(h);
  track(t);
  return t;
}
