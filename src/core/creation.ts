// Tensors from JS data. The remaining factories (zeros, ones, full, arange, rand, ...)
// are generated from libtorch's schemas in ops.generated.ts.
import { type DType, dtypeCode, dtypeOfTypedArray, isFloatingPoint } from './dtype.ts';
import { named } from './errors.ts';
import { native } from './native.ts';
import { type DeviceLike, type NestedArray, type Tensor, wrap } from './tensor.ts';

export interface TensorOptions {
  dtype?: DType;
  device?: DeviceLike;
  requiresGrad?: boolean;
}

/**
 * A tensor from nested arrays, a TypedArray or a number, like torch.tensor. Without a
 * dtype: float32 for JS numbers (int64 when every value is an integer typed as such is
 * not guessable in JS, so integers also give float32 unless `dtype` says otherwise),
 * bool for booleans, and the TypedArray's own type otherwise.
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
  const dst = opts.dtype ?? (srcDtype === 'float64' && !ArrayBuffer.isView(data) ? 'float32' : srcDtype);
  if (opts.requiresGrad && !isFloatingPoint(dst)) {
    throw new TypeError(`tensor(): only floating point tensors can require gradients, got dtype ${dst}`);
  }
  const dstCode = named('tensor()', () => dtypeCode(dst));
  const t = wrap(native.fromTyped(flat, shape, dtypeCode(srcDtype), dstCode, opts.device));
  if (opts.requiresGrad) native.setRequiresGrad(t.h, true);
  return t;
}

/**
 * A tensor that shares memory with `buffer` (no copy). The buffer is kept alive for as
 * long as any tensor (including views) uses it; writes through either side are visible
 * to the other.
 */
export function fromBuffer(buffer: ArrayBufferView | ArrayBuffer, shape: number[], dtype?: DType): Tensor {
  const d = dtype ?? (ArrayBuffer.isView(buffer) ? dtypeOfTypedArray(buffer) : undefined);
  if (d === undefined)
    throw new TypeError('fromBuffer(): pass a dtype for an ArrayBuffer or this TypedArray type');
  return wrap(
    native.fromBuffer(
      buffer,
      shape,
      named('fromBuffer()', () => dtypeCode(d)),
    ),
  );
}

/** A tensor from raw bytes of `dtype` (row-major), e.g. read from a file. Copies. */
export function fromBytes(bytes: Uint8Array, shape: number[], dtype: DType): Tensor {
  const code = named('fromBytes()', () => dtypeCode(dtype));
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
