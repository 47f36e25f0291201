// What datasets produce and workers exchange. Plain JS values only: this file (like every
// module a data worker loads) must not import the native addon.
// core/dtype.ts is plain data (no addon), so workers may load it: its tables are the one source.

import { type DType, dtypeOfTypedArray } from '../core/dtype.ts';
// The type only (erased): core/tensor.ts loads the addon, which workers must not.
import type { Tensor } from '../core/tensor.ts';
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

/**
 * One field of a sample. A bare typed array is a 1-D NdArray. A Tensor is collated with
 * torch.stack in the main thread (numWorkers 0); a dataset read in worker threads returns
 * arrays instead, since a Tensor cannot leave the thread that made it.
 */
export type Field = number | boolean | bigint | string | SampleArray | NdArray | Tensor;

/**
 * A sample: a record of fields (`{ image, label }`) or a tuple (`[image, label]`). Records
 * and tuples may nest (StackDataset's samples are tuples or records of samples), and
 * defaultCollate collates them field by field at every level, as PyTorch's default_collate.
 */
export type Sample = { [key: string]: Field | Sample } | (Field | Sample)[];

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

/**
 * A map-style dataset (torch.utils.data.Dataset): a length and samples by index. A class
 * to extend or an interface to implement (any object with `length` and `get` is one).
 */
// Every member is abstract or optional: a concrete one would be required of every object
// literal with `length` and `get`.
// biome-ignore lint/suspicious/noUnsafeDeclarationMerging: the interface adds an optional property, nothing at run time
export abstract class Dataset<S extends Sample = Sample> {
  abstract readonly length: number;
  abstract get(index: number, ctx: SampleContext): S | Promise<S>;
  /** How a worker thread builds the same dataset (needed for numWorkers > 0). */
  workerSpec?(): DatasetSpec;
}

// concurrentGets is declared by a merged interface: as a class property it would keep a
// subclass from defining it as a getter (Subset forwards its dataset's).
// biome-ignore lint/correctness/noUnusedVariables: a merged declaration repeats the class's type parameters
export interface Dataset<S extends Sample = Sample> {
  /**
   * How many `get()` calls may run at once (default 1). An async `get` that waits on
   * native threads (ImageFolder: libvips decodes) overlaps its waits with the next one.
   */
  readonly concurrentGets?: number;
}

/**
 * A stream of samples (torch.utils.data.IterableDataset): extend it with a generator
 * `*[Symbol.iterator]()` or an async one `async *[Symbol.asyncIterator]()`. The
 * DataLoader iterates it from the start each epoch and batches what it yields; with
 * workers each worker iterates its own copy (built from `workerSpec()`), so a dataset
 * that does not shard itself by `getWorkerInfo()` yields every sample once per worker,
 * as in PyTorch.
 */
// biome-ignore lint/suspicious/noUnsafeDeclarationMerging: the interface adds an optional property, nothing at run time
export abstract class IterableDataset<S extends Sample = Sample> {
  [Symbol.iterator]?(): Iterator<S>;
  [Symbol.asyncIterator]?(): AsyncIterator<S>;
  /** How a worker thread builds the same dataset (needed for numWorkers > 0). */
  workerSpec?(): DatasetSpec;
}

// length is declared by a merged interface, as Dataset's concurrentGets (a subclass may
// compute it in a getter).
// biome-ignore lint/correctness/noUnusedVariables: a merged declaration repeats the class's type parameters
export interface IterableDataset<S extends Sample = Sample> {
  /** The number of samples, when known: `loader.length` counts batches from it. */
  readonly length?: number;
}

/**
 * Whether `ds` is an iterable dataset: an IterableDataset (of any copy of tsddp: a user's
 * module in a worker imports its own), or any object with an iterator and no `get`.
 */
export function isIterableDataset(ds: unknown): ds is IterableDataset {
  if (ds instanceof IterableDataset) return true;
  if (typeof ds !== 'object' || ds === null || typeof (ds as Dataset).get === 'function') return false;
  const o = ds as Partial<Record<symbol, unknown>>;
  return typeof o[Symbol.iterator] === 'function' || typeof o[Symbol.asyncIterator] === 'function';
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

/**
 * A collated value: an NdArray (the DataLoader makes it a tensor), a Tensor (a field of
 * Tensors, stacked in the main thread), a list of strings, or a record or tuple of
 * collated values (nested samples).
 */
export type Collated = NdArray | Tensor | string[] | { [key: string]: Collated } | Collated[];

/** A collated batch as workers send it: one NdArray (or string list) per field, nested as the samples. */
export type ArrayBatch = { [key: string]: Collated } | Collated[];

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

// A Tensor is recognised by the brand core/tensor.ts puts on Tensor.prototype
// (TENSOR_BRAND), looked up here with Symbol.for: importing core/tensor.ts would load the
// addon in workers, instanceof misses a tensor made by another copy of tsddp (a user's
// dataset module imports its own), and duck typing (`shape`, `dtype`) would take a
// user's record with such fields for a tensor.
const TENSOR_BRAND = Symbol.for('tsddp.Tensor');

/** Whether `v` is a tsddp Tensor (of any copy of tsddp loaded in this thread). */
export function isTensor(v: unknown): v is Tensor {
  return typeof v === 'object' && v !== null && (v as Record<symbol, unknown>)[TENSOR_BRAND] === true;
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
