// default_collate for plain-JS samples: stacks each field of a list of samples into one
// freshly allocated typed array (its own ArrayBuffer, so a worker can transfer it and the
// main thread can wrap it as a tensor without copying). Runs in workers: no addon.
import {
  type ArrayBatch,
  type Collated,
  dtypeOfArray,
  type Field,
  isNdArray,
  isSampleArray,
  type NdArray,
  type Sample,
  type SampleArray,
} from './types.ts';

type ArrayCtor = new (n: number) => SampleArray;

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
    if (a.data.length !== per || a.shape.length !== shape.length || a.shape.some((d, j) => d !== shape[j])) {
      throw new RangeError(
        `collate: field '${key}' has shape [${a.shape}] in sample ${i} but [${shape}] in sample 0; ` +
          'samples in a batch must have equal shapes (resize or crop them, or pass a collate function)',
      );
    }
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

/** A record or tuple (a nested sample), as opposed to a field. */
function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v) && !isArrayField(v);
}

/** Collates one position of the samples (`key` names it in messages: `image`, `0.label`). */
function collateValues(key: string, values: unknown[]): Collated {
  const v = values[0];
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
 * booleans, bigints, strings and (n-d) typed arrays: each field becomes one array with a
 * leading batch dimension (strings become a list), and records and tuples keep their
 * shape. The result is plain arrays; the DataLoader wraps them as tensors.
 */
export function defaultCollate(samples: Sample[]): ArrayBatch {
  if (samples.length === 0) throw new RangeError('collate: empty batch');
  const first = samples[0];
  if (typeof first !== 'object' || first === null || isArrayField(first)) {
    throw new TypeError('collate: a sample must be a record ({ image, label }) or a tuple ([image, label])');
  }
  return collateValues('', samples) as ArrayBatch;
}

/** A converted value: arrays as NdArrays, every other field as it was, records and tuples kept. */
export type Converted =
  | NdArray
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
 * by field, and numbers, booleans, bigints and strings stay as they are, as PyTorch leaves
 * Python numbers and strings.
 */
export function defaultConvert(sample: Sample | Field): Converted {
  if (isNdArray(sample)) return sample;
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
