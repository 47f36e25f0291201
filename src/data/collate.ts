// default_collate for plain-JS samples: stacks each field of a list of samples into one
// freshly allocated typed array (its own ArrayBuffer, so a worker can transfer it and the
// main thread can wrap it as a tensor without copying). Runs in workers: no addon.
import {
  type ArrayBatch,
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

function stackField(key: string, values: Field[]): NdArray | string[] {
  const v = values[0];
  return isSampleArray(v) || isNdArray(v) ? stackArrays(key, values) : stackScalars(key, values);
}

/**
 * torch.utils.data.default_collate for records and tuples of numbers, booleans,
 * bigints, strings and (n-d) typed arrays: each field becomes one array with a leading
 * batch dimension (strings become a list).
 */
export function defaultCollate(samples: Sample[]): ArrayBatch {
  if (samples.length === 0) throw new RangeError('collate: empty batch');
  const first = samples[0];
  if (Array.isArray(first)) {
    return first.map((_, j) => {
      const col = samples.map((s, i) => {
        if (!Array.isArray(s) || s.length !== first.length)
          throw new TypeError(`collate: sample ${i} is not a ${first.length}-tuple like sample 0`);
        return s[j];
      });
      return stackField(String(j), col);
    });
  }
  if (typeof first !== 'object' || first === null) {
    throw new TypeError('collate: a sample must be a record ({ image, label }) or a tuple ([image, label])');
  }
  const out: Record<string, NdArray | string[]> = {};
  for (const key of Object.keys(first)) {
    out[key] = stackField(
      key,
      samples.map((s, i) => {
        const v = (s as Record<string, Field>)[key];
        if (v === undefined) throw new TypeError(`collate: sample ${i} has no field '${key}'`);
        return v;
      }),
    );
  }
  return out;
}

/** The ArrayBuffers of a batch, for postMessage's transfer list. A view onto a larger buffer is copied first. */
export function transferables(batch: ArrayBatch): ArrayBuffer[] {
  const out: ArrayBuffer[] = [];
  const seen = new Set<ArrayBufferLike>();
  const visit = (v: NdArray | string[]): void => {
    if (Array.isArray(v)) return;
    let a = v.data;
    const whole = a.byteOffset === 0 && a.byteLength === a.buffer.byteLength;
    if (!whole || seen.has(a.buffer) || !(a.buffer instanceof ArrayBuffer)) {
      a = a.slice() as SampleArray;
      v.data = a;
    }
    seen.add(a.buffer);
    out.push(a.buffer as ArrayBuffer);
  };
  for (const v of Array.isArray(batch) ? batch : Object.values(batch)) visit(v);
  return out;
}
