// Tensors from JS data. The remaining factories (zeros, ones, full, arange, rand, ...)
// are generated from libtorch's schemas in ops.generated.ts.
import {
  type DType,
  type DTypeName,
  dtypeCode,
  dtypeOfTypedArray,
  isComplex,
  isFloatingPoint,
  toDType,
} from './dtype.ts';
import { native } from './native.ts';
import { type DeviceLike, type NestedArray, type Tensor, wrap } from './tensor.ts';

export interface TensorOptions {
  dtype?: DTypeName;
  device?: DeviceLike;
  requiresGrad?: boolean;
}

/**
 * A tensor from nested arrays, a TypedArray or a number, like torch.tensor. Without a
 * dtype: float32 for JS numbers (int64 when every value is an integer typed as such is
 * not guessable in JS, so integers also give float32 unless `dtype` says otherwise),
 * bool for booleans, and the TypedArray's own type otherwise. Numbers that an integer
 * dtype cannot hold raise a RangeError, as torch.tensor does (integers behave as Python
 * ints, so -1 is 255 in uint8; a TypedArray is cast without a check, like a tensor).
 * Numbers become complex64/complex128 values with a zero imaginary part, as in PyTorch;
 * a complex tensor from (re, im) pairs is `fromBytes`/`fromBuffer` of an interleaved
 * Float32Array/Float64Array with the complex shape (its length is twice the element count).
 */
export function tensor(
  data: NestedArray | ArrayBufferView,
  opts: TensorOptions & { shape?: number[] } = {},
): Tensor {
  let flat: ArrayBufferView;
  let shape: number[];
  let srcDtype: DType;
  if (ArrayBuffer.isView(data)) {
    const d = dtypeOfTypedArray(data);
    if (d === undefined) throw new TypeError('tensor(): unsupported TypedArray type');
    flat = data;
    srcDtype = d;
    shape = opts.shape ?? [(data as unknown as { length: number }).length];
  } else {
    const info = flatten(data);
    shape = info.shape;
    srcDtype = info.isBool ? 'bool' : 'float64';
    flat = info.isBool ? Uint8Array.from(info.values, Number) : Float64Array.from(info.values as number[]);
    if (opts.shape) shape = opts.shape;
  }
  const dst =
    opts.dtype === undefined
      ? srcDtype === 'float64' && !ArrayBuffer.isView(data)
        ? 'float32'
        : srcDtype
      : toDType(opts.dtype, 'tensor()');
  if (!ArrayBuffer.isView(data) && srcDtype === 'float64') {
    checkRange(flat as Float64Array, shape, dst);
    // libtorch's cast of a double to uint16/32/64 is a C++ float-to-unsigned conversion,
    // undefined for a negative value; the Python int semantics are applied here instead.
    const exact = unsignedFromNumbers(flat as Float64Array, dst);
    if (exact !== undefined) {
      flat = exact;
      srcDtype = dst;
    }
  }
  if (opts.requiresGrad && !isFloatingPoint(dst) && !isComplex(dst)) {
    throw new TypeError(
      `tensor(): only floating point and complex tensors can require gradients, got dtype ${dst}`,
    );
  }
  const dstCode = dtypeCode(dst);
  const t = wrap(native.fromTyped(flat, shape, dtypeCode(srcDtype), dstCode, opts.device));
  if (opts.requiresGrad) native.setRequiresGrad(t.h, true);
  return t;
}

/**
 * A tensor that shares memory with `buffer` (no copy). The buffer is kept alive for as
 * long as any tensor (including views) uses it; writes through either side are visible
 * to the other.
 */
export function fromBuffer(
  buffer: ArrayBufferView | ArrayBuffer,
  shape: number[],
  dtype?: DTypeName,
): Tensor {
  const d =
    dtype !== undefined
      ? toDType(dtype, 'fromBuffer()')
      : ArrayBuffer.isView(buffer)
        ? dtypeOfTypedArray(buffer)
        : undefined;
  if (d === undefined)
    throw new TypeError('fromBuffer(): pass a dtype for an ArrayBuffer or this TypedArray type');
  return wrap(native.fromBuffer(buffer, shape, dtypeCode(d)));
}

/** A tensor from raw bytes of `dtype` (row-major), e.g. read from a file. Copies. */
export function fromBytes(bytes: Uint8Array, shape: number[], dtype: DTypeName): Tensor {
  const code = dtypeCode(toDType(dtype, 'fromBytes()'));
  return wrap(native.fromTyped(bytes, shape, code, code));
}

function flatten(data: NestedArray): { values: (number | boolean)[]; shape: number[]; isBool: boolean } {
  const shape: number[] = [];
  let probe: NestedArray = data;
  while (Array.isArray(probe)) {
    shape.push(probe.length);
    probe = probe[0] as NestedArray;
    if (probe === undefined) break;
  }
  const values: (number | boolean)[] = [];
  let isBool: boolean | undefined;
  const walk = (x: NestedArray, d: number, path: string): void => {
    if (d === shape.length) {
      if (Array.isArray(x)) throw new TypeError(`tensor(): ragged nested array at ${path || 'top level'}`);
      const b = typeof x === 'boolean';
      if (!b && typeof x !== 'number')
        throw new TypeError(`tensor(): expected numbers or booleans, got ${typeof x} at ${path}`);
      if (isBool === undefined) isBool = b;
      else if (isBool !== b) throw new TypeError(`tensor(): mixed booleans and numbers at ${path}`);
      values.push(x);
      return;
    }
    if (!Array.isArray(x) || x.length !== shape[d]) {
      throw new TypeError(
        `tensor(): ragged nested array at ${path || 'top level'} (expected length ${shape[d]})`,
      );
    }
    for (let i = 0; i < x.length; i++) walk(x[i], d + 1, `${path}[${i}]`);
  };
  walk(data, 0, '');
  return { values, shape, isBool: isBool ?? false };
}

// The integer ranges torch.tensor checks (c10::checked_convert). Floats need no check:
// out-of-range values become inf there too.
const INT_RANGE: Partial<Record<DType, [number, number]>> = {
  uint8: [0, 255],
  uint16: [0, 65535],
  uint32: [0, 4294967295],
  uint64: [0, 2 ** 64 - 1],
  int8: [-128, 127],
  int16: [-32768, 32767],
  int32: [-2147483648, 2147483647],
  int64: [-(2 ** 63), 2 ** 63 - 1],
};

/**
 * Refuses values an integer dtype cannot hold, as PyTorch's c10::overflows does: an
 * integer (a Python int) fits a signed type in [min, max], an unsigned one in
 * [-max, max] (a negative one wraps: -1 is 255); anything else (a Python float: a
 * fraction, NaN, inf) must lie in [min, max] before truncation. uint64 is stricter, as
 * PyTorch is: only integers in [0, 2^64) (torch.tensor refuses -1 and 1.5 for it).
 */
function checkRange(values: Float64Array, shape: number[], dtype: DType): void {
  const range = INT_RANGE[dtype];
  if (range === undefined) return;
  const [lo, hi] = range;
  for (let i = 0; i < values.length; i++) {
    const v = values[i];
    const ok =
      dtype === 'uint64'
        ? Number.isInteger(v) && v >= 0 && v < 2 ** 64 // 2 ** 64 - 1 is 2 ** 64 in a double
        : Number.isInteger(v)
          ? dtype === 'int64'
            ? v >= lo && v < 2 ** 63 // 2 ** 63 - 1 is 2 ** 63 in a double
            : v <= hi && (lo < 0 ? v >= lo : v >= -hi)
          : v >= lo && v <= hi;
    if (!ok) {
      throw new RangeError(
        `tensor(): value cannot be converted to type ${dtype} without overflow (${v} at ${position(i, shape)})`,
      );
    }
  }
}

/**
 * Range-checked numbers as the exact uint16/uint32/uint64 array (truncated toward zero, a
 * negative integer wrapped as a Python int is: -1 is 65535 in uint16), or undefined for
 * any other dtype.
 */
function unsignedFromNumbers(values: Float64Array, dtype: DType): ArrayBufferView | undefined {
  if (dtype === 'uint64') return BigUint64Array.from(values, (v) => BigInt(v));
  const bits = dtype === 'uint16' ? 16 : dtype === 'uint32' ? 32 : 0;
  if (bits === 0) return undefined;
  const wrapped = Array.from(values, (v) => Number(BigInt.asUintN(bits, BigInt(Math.trunc(v)))));
  return bits === 16 ? Uint16Array.from(wrapped) : Uint32Array.from(wrapped);
}

function position(flatIndex: number, shape: number[]): string {
  const idx: number[] = [];
  let rest = flatIndex;
  for (let d = shape.length - 1; d >= 0; d--) {
    idx.unshift(rest % shape[d]);
    rest = Math.floor(rest / shape[d]);
  }
  return idx.length ? `[${idx.join('][')}]` : 'the top level';
}
