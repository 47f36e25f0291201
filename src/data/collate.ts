// default_collate for plain-JS samples: stacks each field of a list of samples into one
// freshly allocated typed array (its own ArrayBuffer, so a worker can transfer it and the
// main thread can wrap it as a tensor without copying). Runs in workers: no addon. A
// field of Tensors (a dataset read in the main thread) is stacked with torch.stack, which
// the DataLoader's module hands in (setTensorStack): this module cannot import it.
import type { Tensor } from '../core/tensor.ts';
import {
  type ArrayBatch,
  type Collated,
  DataError,
  dtypeOfArray,
  type Field,
  isNdArray,
  isSampleArray,
  isTensor,
  type NdArray,
  type Sample,
  type SampleArray,
} from './types.ts';

type ArrayCtor = new (n: number) => SampleArray;

function shapeMismatch(key: string, i: number, got: number[], want: number[]): RangeError {
  return new RangeError(
    `collate: field '${key}' has shape [${got}] in sample ${i} but [${want}] in sample 0; ` +
      'samples in a batch must have equal shapes (resize or crop them, or pass a collate function)',
  );
}

/**
 * torch.stack, in a thread that has loaded the addon: set by dataloader.ts (which imports
 * core) when it loads. Unset in a data worker, where Tensor samples are refused.
 */
let stackTensors: ((tensors: Tensor[]) => Tensor) | undefined;

/** Installs torch.stack for fields of Tensors (dataloader.ts does, in the threads that load it). */
export function setTensorStack(stack: (tensors: Tensor[]) => Tensor): void {
  stackTensors = stack;
}

/**
 * Why a data worker refuses a Tensor (`where`: "field 'x' of sample 3"): its handle is
 * valid only in the thread that made it, and structuredClone would copy the Tensor
 * object's own fields (a handle number) as if they were the data.
 */
export function tensorInWorkerMessage(where: string): string {
  return (
    `${where} is a Tensor, and a Tensor cannot be sent from a DataLoader worker thread to the ` +
    'main thread (its data belongs to the thread that made it): return typed arrays or NdArrays ' +
    '(nd(data, shape)) from a dataset read in workers, or load it with numWorkers: 0'
  );
}

/**
 * The path (as collate's messages name fields: `image`, `0.label`; '' for the value
 * itself) of the first Tensor in a sample or batch, or undefined when it holds none.
 */
export function findTensor(v: unknown, path = ''): string | undefined {
  if (isTensor(v)) return path;
  if (typeof v !== 'object' || v === null || isSampleArray(v) || isNdArray(v)) return undefined;
  for (const [k, x] of Object.entries(v)) {
    const found = findTensor(x, path === '' ? k : `${path}.${k}`);
    if (found !== undefined) return found;
  }
  return undefined;
}

/**
 * A field of Tensors, stacked as PyTorch's default_collate does (torch.stack: a Tensor of
 * shape [B, ...shape], on the samples' device). Equal dtypes, shapes and devices are
 * checked first, so a mismatch names the field and the sample as for arrays.
 */
function stackTensorField(key: string, values: unknown[]): Tensor {
  const first = values[0] as Tensor;
  const { shape, dtype, device } = first;
  values.forEach((v, i) => {
    if (!isTensor(v))
      throw new TypeError(`collate: field '${key}' of sample ${i} is not a Tensor like sample 0's`);
    if (v.dtype !== dtype)
      throw new TypeError(
        `collate: field '${key}' has dtype ${v.dtype} in sample ${i} but ${dtype} in sample 0`,
      );
    const s = v.shape;
    if (s.length !== shape.length || s.some((d, j) => d !== shape[j])) throw shapeMismatch(key, i, s, shape);
    if (v.device !== device)
      throw new TypeError(
        `collate: field '${key}' is on ${v.device} in sample ${i} but on ${device} in sample 0`,
      );
  });
  if (stackTensors === undefined) throw new DataError(tensorInWorkerMessage(`field '${key}' of sample 0`));
  return stackTensors(values as Tensor[]);
}

function stackArrays(key: string, values: Field[]): NdArray {
  const first = values[0] as SampleArray | NdArray;
  const firstNd: NdArray = isNdArray(first) ? first : { data: first as SampleArray, shape: [first.length] };
  const shape = firstNd.shape;
  const per = firstNd.data.length;
  const dtype = dtypeOfArray(firstNd.data, firstNd.dtype);
  const out = new (firstNd.data.constructor as ArrayCtor)(per * values.length);
  values.forEach((v, i) => {
    const a: NdArray | undefined = isNdArray(v)
      ? v
      : isSampleArray(v)
        ? { data: v, shape: [v.length] }
        : undefined;
    if (a === undefined)
      throw new TypeError(`collate: field '${key}' of sample ${i} is not an array like sample 0's`);
    if (dtypeOfArray(a.data, a.dtype) !== dtype) {
      throw new TypeError(
        `collate: field '${key}' has dtype ${dtypeOfArray(a.data, a.dtype)} in sample ${i} but ${dtype} in sample 0`,
      );
    }
    if (a.data.length !== per || a.shape.length !== shape.length || a.shape.some((d, j) => d !== shape[j]))
      throw shapeMismatch(key, i, a.shape, shape);
    (out as Float32Array).set(a.data as Float32Array, i * per);
  });
  return firstNd.dtype === 'bool'
    ? { data: out, shape: [values.length, ...shape], dtype: 'bool' }
    : { data: out, shape: [values.length, ...shape] };
}

/** Numbers become int64 when all are integers (labels), float64 otherwise — as Python ints and floats do. */
function stackScalars(key: string, values: Field[]): NdArray | string[] {
  const kind = typeof values[0];
  for (let i = 1; i < values.length; i++) {
    if (typeof values[i] !== kind) {
      throw new TypeError(
        `collate: field '${key}' is a ${typeof values[i]} in sample ${i} but a ${kind} in sample 0`,
      );
    }
  }
  const n = values.length;
  switch (kind) {
    case 'string':
      return values as string[];
    case 'boolean':
      return { data: Uint8Array.from(values as boolean[], Number), shape: [n], dtype: 'bool' };
    case 'bigint':
      return { data: BigInt64Array.from(values as bigint[]), shape: [n] };
    case 'number': {
      const nums = values as number[];
      if (nums.every(Number.isSafeInteger)) return { data: BigInt64Array.from(nums, BigInt), shape: [n] };
      return { data: Float64Array.from(nums), shape: [n] };
    }
    default:
      throw new TypeError(`collate: field '${key}' has unsupported type ${kind}`);
  }
}

function isArrayField(v: unknown): v is SampleArray | NdArray {
  return isSampleArray(v) || isNdArray(v);
}

/** A record (a nested sample), as opposed to a field or a tuple. */
function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v) && !isArrayField(v) && !isTensor(v);
}

/** Collates one position of the samples (`key` names it in messages: `image`, `0.label`). */
function collateValues(key: string, values: unknown[]): Collated {
  const v = values[0];
  if (isTensor(v)) return stackTensorField(key, values);
  if (isArrayField(v)) return stackArrays(key, values as Field[]);
  if (Array.isArray(v)) {
    // A tuple: collated position by position (PyTorch's transpose of the batch).
    return v.map((_, j) =>
      collateValues(
        key === '' ? String(j) : `${key}.${j}`,
        values.map((s, i) => {
          if (!Array.isArray(s) || s.length !== v.length)
            throw new TypeError(
              `collate: ${key === '' ? 'sample' : `field '${key}' of sample`} ${i} is not a ${v.length}-tuple like sample 0`,
            );
          return s[j];
        }),
      ),
    );
  }
  if (isRecord(v)) {
    const out: Record<string, Collated> = {};
    for (const k of Object.keys(v)) {
      const path = key === '' ? k : `${key}.${k}`;
      out[k] = collateValues(
        path,
        values.map((s, i) => {
          const x = isRecord(s) ? s[k] : undefined;
          if (x === undefined) throw new TypeError(`collate: sample ${i} has no field '${path}'`);
          return x;
        }),
      );
    }
    return out;
  }
  return stackScalars(key, values as Field[]);
}

/**
 * torch.utils.data.default_collate for records and tuples (nested ones too) of numbers,
 * booleans, bigints, strings, (n-d) typed arrays and Tensors: each field becomes one
 * array with a leading batch dimension (strings become a list), and records and tuples
 * keep their shape. Arrays stay plain arrays, which the DataLoader wraps as tensors; a
 * field of Tensors becomes their torch.stack (in the main thread only: see Field).
 */
export function defaultCollate(samples: Sample[]): ArrayBatch {
  if (samples.length === 0) throw new RangeError('collate: empty batch');
  const first = samples[0];
  if (typeof first !== 'object' || first === null || isArrayField(first) || isTensor(first)) {
    throw new TypeError('collate: a sample must be a record ({ image, label }) or a tuple ([image, label])');
  }
  return collateValues('', samples) as ArrayBatch;
}

/** A converted value: arrays as NdArrays, every other field (Tensors too) as it was, records and tuples kept. */
export type Converted =
  | NdArray
  | Tensor
  | number
  | boolean
  | bigint
  | string
  | { [key: string]: Converted }
  | Converted[];

/**
 * torch.utils.data.default_convert: the collate of a DataLoader without automatic
 * batching (`batchSize: null`). It adds no batch dimension: each typed array becomes an
 * NdArray (which the DataLoader wraps as a tensor), records and tuples are converted field
 * by field, and Tensors, numbers, booleans, bigints and strings stay as they are, as
 * PyTorch leaves tensors, Python numbers and strings.
 */
export function defaultConvert(sample: Sample | Field): Converted {
  if (isTensor(sample) || isNdArray(sample)) return sample;
  if (isSampleArray(sample)) return { data: sample, shape: [sample.length] };
  if (Array.isArray(sample)) return sample.map((x) => defaultConvert(x));
  if (typeof sample === 'object' && sample !== null) {
    const out: Record<string, Converted> = {};
    for (const [k, v] of Object.entries(sample)) out[k] = defaultConvert(v);
    return out;
  }
  return sample;
}

/**
 * The ArrayBuffers of a batch (or of a converted sample), for postMessage's transfer
 * list. A view onto a larger buffer, or onto a buffer already listed, is copied first;
 * with `copy`, every array is (its buffer may belong to the dataset).
 */
export function transferables(batch: unknown, opts: { copy?: boolean } = {}): ArrayBuffer[] {
  const out: ArrayBuffer[] = [];
  const seen = new Set<ArrayBufferLike>();
  const visit = (v: unknown): void => {
    if (isNdArray(v)) {
      let a = v.data;
      const whole = a.byteOffset === 0 && a.byteLength === a.buffer.byteLength;
      if (opts.copy || !whole || seen.has(a.buffer) || !(a.buffer instanceof ArrayBuffer)) {
        a = a.slice() as SampleArray;
        v.data = a;
      }
      seen.add(a.buffer);
      out.push(a.buffer as ArrayBuffer);
    } else if (Array.isArray(v)) {
      for (const x of v) visit(x);
    } else if (typeof v === 'object' && v !== null && !isSampleArray(v)) {
      for (const x of Object.values(v)) visit(x);
    }
  };
  visit(batch);
  return out;
}
