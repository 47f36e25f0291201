// What datasets produce and workers exchange. Plain JS values only: this file (like every
// module a data worker loads) must not import the native addon.
// core/dtype.ts is plain data (no addon), so workers may load it: its tables are the one source.

import { type DType, dtypeOfTypedArray } from '../core/dtype.ts';
import { TsddpError } from '../errors/index.ts';
import type { Rng } from './rng.ts';

/** The typed arrays a sample field may hold (their dtype follows the array type). */
export type SampleArray =
  | Float32Array
  | Float64Array
  | Int32Array
  | Int16Array
  | Int8Array
  | Uint8Array
  | BigInt64Array;

/**
 * An n-dimensional array: row-major `data` with a `shape`. An image is an NdArray:
 * uint8 `[H, W, C]` (as decoded, like a PIL image) or float32 `[C, H, W]` (as a tensor).
 * `dtype: 'bool'` marks a Uint8Array of 0/1 values.
 */
export interface NdArray<A extends SampleArray = SampleArray> {
  data: A;
  shape: number[];
  dtype?: 'bool';
}

/** One field of a sample. A bare typed array is a 1-D NdArray. */
export type Field = number | boolean | bigint | string | SampleArray | NdArray;

/** A sample: a record of fields (`{ image, label }`) or a tuple (`[image, label]`). */
export type Sample = Record<string, Field> | Field[];

/** What `Dataset.get` receives besides the index. */
export interface SampleContext {
  /**
   * A random stream for this sample in this epoch: a pure function of the loader's seed,
   * the epoch, the sample's index and its position in the epoch — so augmentations are
   * the same with 0, 1 or 8 workers, and a sample drawn twice gets two different ones.
   */
  rng: Rng;
  /** The worker loading the sample (0 in the main process). */
  workerId: number;
  numWorkers: number;
  /** How many times the loader has been iterated before this epoch. */
  epoch: number;
}

/** A map-style dataset (torch.utils.data.Dataset): a length and samples by index. */
export interface Dataset<S extends Sample = Sample> {
  readonly length: number;
  get(index: number, ctx: SampleContext): S | Promise<S>;
  /** How a worker thread builds the same dataset (needed for numWorkers > 0). */
  workerSpec?(): DatasetSpec;
  /**
   * How many `get()` calls may run at once (default 1). An async `get` that waits on
   * native threads (ImageFolder: libvips decodes) overlaps its waits with the next one.
   */
  readonly concurrentGets?: number;
}

/** A function or class exported by a module, found by URL/path and export name. */
export interface ModuleRef {
  /** A file URL (`import.meta.url`), an absolute path, or a package specifier. */
  module: string;
  export: string;
}

/**
 * How to construct a dataset in a worker: `new module[export](options)` for a class, or
 * `module[export](options)` for a factory function. `options` must survive
 * structuredClone (plain data: no functions or class instances).
 */
export interface DatasetSpec extends ModuleRef {
  options?: unknown;
}

/** A collated batch as workers send it: one NdArray (or string list) per field. */
export type ArrayBatch = Record<string, NdArray | string[]> | (NdArray | string[])[];

/** A collate function that runs where samples are loaded (in workers: given as a ModuleRef). */
export type CollateFn = (samples: Sample[]) => ArrayBatch;

/** Typed arrays' dtypes (core's table; `bool` marks 0/1 bytes), for messages and collation. */
export function dtypeOfArray(a: SampleArray, bool?: 'bool'): DType {
  if (bool === 'bool') return 'bool';
  const d = isSampleArray(a) ? dtypeOfTypedArray(a) : undefined;
  if (d === undefined) throw new TypeError(`unsupported array type ${(a as object)?.constructor?.name}`);
  return d;
}

export function isSampleArray(v: unknown): v is SampleArray {
  return (
    v instanceof Float32Array ||
    v instanceof Float64Array ||
    v instanceof Int32Array ||
    v instanceof Int16Array ||
    v instanceof Int8Array ||
    v instanceof Uint8Array ||
    v instanceof BigInt64Array
  );
}

export function isNdArray(v: unknown): v is NdArray {
  return (
    typeof v === 'object' &&
    v !== null &&
    isSampleArray((v as NdArray).data) &&
    Array.isArray((v as NdArray).shape)
  );
}

/** An NdArray, checking that the shape matches the data. */
export function nd<A extends SampleArray>(data: A, shape: number[]): NdArray<A> {
  const n = shape.reduce((a, b) => a * b, 1);
  if (n !== data.length) throw new RangeError(`nd(): shape [${shape}] needs ${n} values, got ${data.length}`);
  return { data, shape };
}

/** An error a dataset throws about a file: the DataLoader's message names the path. */
export class DataError extends TsddpError {
  readonly code = 'DATA';
  constructor(
    message: string,
    readonly path?: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'DataError';
  }
}
