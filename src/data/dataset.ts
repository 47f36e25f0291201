// The dataset toolkit of torch.utils.data.dataset: TensorDataset, Subset, ConcatDataset,
// ChainDataset and StackDataset, with PyTorch's indexing and errors. Workers load this
// module (it is compiled into the pre-built worker, worker-builtins.ts), so it must not
// import the native addon: TensorDataset copies its tensors' data to plain arrays once,
// and each dataset rebuilds itself in a worker from the specs of the datasets it wraps
// (the `build*` factories below), so it has a workerSpec() exactly when they all do.
import type { Tensor } from '../core/index.ts';
import { buildDataset } from './load.ts';
import {
  Dataset,
  type DatasetSpec,
  IterableDataset,
  isIterableDataset,
  isNdArray,
  type NdArray,
  type Sample,
  type SampleArray,
  type SampleContext,
} from './types.ts';

/** Python's index rules: a negative index counts from the end; anything else outside is a RangeError. */
function resolveIndex(what: string, index: number, length: number): number {
  if (!Number.isInteger(index)) throw new TypeError(`${what}: index should be an integer, got ${index}`);
  const i = index < 0 ? index + length : index;
  if (i < 0 || i >= length)
    throw new RangeError(`${what}: index ${index} is out of range for ${length} samples`);
  return i;
}

/** The least `concurrentGets` of the datasets a wrapper calls: each must stay within its own. */
function leastConcurrency(datasets: Iterable<Dataset>): number {
  let n = Number.POSITIVE_INFINITY;
  for (const d of datasets) n = Math.min(n, d.concurrentGets ?? 1);
  return Number.isFinite(n) ? n : 1;
}

/** The specs of `datasets`, or undefined when one cannot be rebuilt in a worker. */
function specsOf(datasets: (Dataset | IterableDataset)[]): DatasetSpec[] | undefined {
  const specs: DatasetSpec[] = [];
  for (const d of datasets) {
    if (typeof d.workerSpec !== 'function') return undefined;
    specs.push(d.workerSpec());
  }
  return specs;
}

/** Runs the calls one after the other, synchronously while they return plain values. */
function inOrder<T>(calls: (() => T | Promise<T>)[]): T[] | Promise<T[]> {
  const out: T[] = [];
  for (let k = 0; k < calls.length; k++) {
    const v = calls[k]();
    if (v instanceof Promise) {
      // One at a time, not Promise.all: wrapped datasets draw from the sample's one random
      // stream (ctx.rng), and a fixed order of draws keeps the sample reproducible.
      return (async () => {
        out.push(await v);
        for (let j = k + 1; j < calls.length; j++) out.push(await calls[j]());
        return out;
      })();
    }
    out.push(v);
  }
  return out;
}

const MODULE = import.meta.url;

/** Something with a tensor's shape, dtype and data: a tsddp Tensor (the type only: no addon here). */
type TensorLike = Pick<Tensor, 'shape' | 'dtype' | 'toTypedArray'>;

/**
 * torch.utils.data.TensorDataset: sample i is the tuple of each tensor's row i (indexing
 * the first dimension), so a loader batches them as PyTorch's does (same dtypes and
 * shapes; a 1-D tensor gives a [B] batch). The tensors' data is copied to host arrays once
 * (`arrays`), which is also what a worker receives; batches are CPU tensors, to be moved
 * with `.to(device)` as usual. NdArrays are taken as they are (a worker's copy, or data
 * that never was a tensor). float16 and bfloat16 tensors are refused: convert them with
 * `.float()` first.
 */
export class TensorDataset extends Dataset<NdArray[]> {
  /** Each tensor's data, row-major, with its shape. */
  readonly arrays: NdArray[];
  private readonly rowSizes: number[];

  constructor(...tensors: (TensorLike | NdArray)[]) {
    super();
    if (tensors.length === 0) throw new RangeError('TensorDataset: give at least one tensor');
    this.arrays = tensors.map((x, k) => (isNdArray(x) ? x : toArray(x, k)));
    for (const [k, a] of this.arrays.entries()) {
      if (a.shape.length === 0)
        throw new RangeError(
          `TensorDataset: tensor ${k} is 0-dimensional; samples index the first dimension`,
        );
    }
    if (this.arrays.some((a) => a.shape[0] !== this.arrays[0].shape[0])) {
      throw new RangeError(
        `Size mismatch between tensors: first dimensions ${this.arrays.map((a) => a.shape[0]).join(', ')}`,
      );
    }
    this.rowSizes = this.arrays.map((a) => a.shape.slice(1).reduce((p, d) => p * d, 1));
  }

  get length(): number {
    return this.arrays[0].shape[0];
  }

  /** Row `index` of every tensor: views of the arrays (the collate copies them into the batch). */
  get(index: number): NdArray[] {
    const i = resolveIndex('TensorDataset', index, this.length);
    return this.arrays.map((a, k) => {
      const per = this.rowSizes[k];
      const data = a.data.subarray(i * per, (i + 1) * per) as SampleArray;
      const shape = a.shape.slice(1);
      return a.dtype === 'bool' ? { data, shape, dtype: 'bool' } : { data, shape };
    });
  }

  override workerSpec(): DatasetSpec {
    return { module: MODULE, export: 'buildTensorDataset', options: { arrays: this.arrays } };
  }
}

function toArray(x: TensorLike, k: number): NdArray {
  if (typeof x?.toTypedArray !== 'function' || !Array.isArray(x.shape))
    throw new TypeError(`TensorDataset: argument ${k} is not a tensor`);
  if (x.dtype === 'float16' || x.dtype === 'bfloat16') {
    throw new TypeError(
      `TensorDataset: tensor ${k} is ${x.dtype}, which a sample array cannot hold; convert it with .float() first`,
    );
  }
  const data = x.toTypedArray() as SampleArray;
  return x.dtype === 'bool' ? { data, shape: [...x.shape], dtype: 'bool' } : { data, shape: [...x.shape] };
}

/** A worker's TensorDataset (TensorDataset.workerSpec). */
export function buildTensorDataset(options: { arrays: NdArray[] }): TensorDataset {
  return new TensorDataset(...options.arrays);
}

/**
 * torch.utils.data.Subset: the samples of `dataset` at `indices`, in that order
 * (randomSplit makes these). Sample i is `dataset.get(indices[i])`, with the loader's
 * context for sample i (its random stream follows the subset's index and position).
 */
export class Subset<S extends Sample = Sample> extends Dataset<S> {
  constructor(
    readonly dataset: Dataset<S>,
    readonly indices: readonly number[],
  ) {
    super();
    if (typeof dataset.workerSpec === 'function') {
      const spec = dataset.workerSpec.bind(dataset);
      this.workerSpec = () => ({
        module: MODULE,
        export: 'buildSubset',
        options: { dataset: spec(), indices: [...this.indices] },
      });
    }
  }

  get length(): number {
    return this.indices.length;
  }

  override get concurrentGets(): number {
    return this.dataset.concurrentGets ?? 1;
  }

  get(index: number, ctx: SampleContext): S | Promise<S> {
    return this.dataset.get(this.indices[resolveIndex('Subset', index, this.indices.length)], ctx);
  }
}

/** A worker's Subset (Subset.workerSpec). */
export async function buildSubset(options: { dataset: DatasetSpec; indices: number[] }): Promise<Subset> {
  return new Subset((await buildDataset(options.dataset)) as Dataset, options.indices);
}

/**
 * torch.utils.data.ConcatDataset: the datasets one after the other. `cumulativeSizes[k]`
 * is the number of samples in datasets 0..k; index i goes to the first dataset whose
 * cumulative size exceeds it (PyTorch's bisect_right), and negative indices count from the
 * end. Iterable datasets are refused, as in PyTorch (ChainDataset chains those).
 */
export class ConcatDataset<S extends Sample = Sample> extends Dataset<S> {
  readonly datasets: Dataset<S>[];
  readonly cumulativeSizes: number[];

  /** Running totals of the datasets' lengths (PyTorch's `ConcatDataset.cumsum`). */
  static cumsum(datasets: readonly { length: number }[]): number[] {
    const r: number[] = [];
    let s = 0;
    for (const d of datasets) {
      s += d.length;
      r.push(s);
    }
    return r;
  }

  constructor(datasets: Iterable<Dataset<S>>) {
    super();
    this.datasets = [...datasets];
    if (this.datasets.length === 0) throw new RangeError('datasets should not be an empty iterable');
    for (const d of this.datasets) {
      if (isIterableDataset(d)) throw new TypeError('ConcatDataset does not support IterableDataset');
    }
    this.cumulativeSizes = ConcatDataset.cumsum(this.datasets);
    const specs = specsOf(this.datasets);
    if (specs !== undefined) {
      this.workerSpec = () => ({
        module: MODULE,
        export: 'buildConcatDataset',
        options: { datasets: specs },
      });
    }
  }

  get length(): number {
    return this.cumulativeSizes[this.cumulativeSizes.length - 1];
  }

  override get concurrentGets(): number {
    return leastConcurrency(this.datasets);
  }

  get(index: number, ctx: SampleContext): S | Promise<S> {
    const [k, i] = this.locate(index);
    return this.datasets[k].get(i, ctx);
  }

  /** [dataset, sample] of an index (negative ones from the end), as ConcatDataset.__getitem__. */
  locate(index: number): [number, number] {
    if (!Number.isInteger(index))
      throw new TypeError(`ConcatDataset: index should be an integer, got ${index}`);
    let idx = index;
    if (idx < 0) {
      if (-idx > this.length)
        throw new RangeError('absolute value of index should not exceed dataset length');
      idx += this.length;
    }
    if (idx >= this.length)
      throw new RangeError(`ConcatDataset: index ${index} is out of range for ${this.length} samples`);
    // bisect_right: the first dataset whose running total is above idx.
    let lo = 0;
    let hi = this.cumulativeSizes.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (idx < this.cumulativeSizes[mid]) hi = mid;
      else lo = mid + 1;
    }
    return [lo, lo === 0 ? idx : idx - this.cumulativeSizes[lo - 1]];
  }
}

/** A worker's ConcatDataset (ConcatDataset.workerSpec). */
export async function buildConcatDataset(options: { datasets: DatasetSpec[] }): Promise<ConcatDataset> {
  const datasets = await Promise.all(options.datasets.map((s) => buildDataset(s)));
  return new ConcatDataset(datasets as Dataset[]);
}

/**
 * torch.utils.data.ChainDataset: iterable datasets one after the other, chained as they
 * are iterated. Its length is the sum of theirs (a TypeError when one has none). Both
 * iterators are there: the async one chains any datasets, the sync one those with a sync
 * iterator.
 */
export class ChainDataset<S extends Sample = Sample> extends IterableDataset<S> {
  readonly datasets: IterableDataset<S>[];

  constructor(datasets: Iterable<IterableDataset<S>>) {
    super();
    this.datasets = [...datasets];
    const specs = specsOf(this.datasets);
    if (specs !== undefined) {
      this.workerSpec = () => ({ module: MODULE, export: 'buildChainDataset', options: { datasets: specs } });
    }
  }

  private static check(d: unknown): IterableDataset {
    if (!isIterableDataset(d)) throw new TypeError('ChainDataset only supports IterableDataset');
    return d;
  }

  override get length(): number {
    let total = 0;
    for (const d of this.datasets) {
      const n = ChainDataset.check(d).length;
      if (typeof n !== 'number') throw new TypeError('ChainDataset: a chained dataset has no length');
      total += n;
    }
    return total;
  }

  override *[Symbol.iterator](): Iterator<S> {
    for (const d of this.datasets) {
      const it = ChainDataset.check(d) as IterableDataset<S>;
      if (typeof it[Symbol.iterator] !== 'function')
        throw new TypeError('ChainDataset: a chained dataset is only async iterable; iterate with for await');
      yield* it as Iterable<S>;
    }
  }

  override async *[Symbol.asyncIterator](): AsyncIterator<S> {
    for (const d of this.datasets) {
      const it = ChainDataset.check(d) as IterableDataset<S>;
      if (typeof it[Symbol.asyncIterator] === 'function') yield* it as AsyncIterable<S>;
      else yield* it as Iterable<S>;
    }
  }
}

/** A worker's ChainDataset (ChainDataset.workerSpec). */
export async function buildChainDataset(options: { datasets: DatasetSpec[] }): Promise<ChainDataset> {
  const datasets = await Promise.all(options.datasets.map((s) => buildDataset(s)));
  return new ChainDataset(datasets as IterableDataset[]);
}

/**
 * torch.utils.data.StackDataset: several datasets of one length side by side. Given as
 * arguments, sample i is the tuple of their samples i (`new StackDataset(images, texts)`);
 * given as one record, it is the record (`new StackDataset({ image: images, text: texts
 * })`). defaultCollate collates the nested samples field by field, as PyTorch's does.
 * The datasets' get() calls run one after the other, so their draws from the sample's
 * random stream come in a fixed order.
 */
export class StackDataset<S extends Sample = Sample> extends Dataset<S> {
  readonly datasets: Dataset[] | Record<string, Dataset>;
  private readonly size: number;

  constructor(...datasets: Dataset[]);
  constructor(datasets: Record<string, Dataset>);
  constructor(...args: (Dataset | Record<string, Dataset>)[]) {
    super();
    const record =
      args.length === 1 && !isDatasetLike(args[0]) ? (args[0] as Record<string, Dataset>) : undefined;
    const list = record === undefined ? (args as Dataset[]) : Object.values(record);
    if (list.length === 0) throw new RangeError('At least one dataset should be passed');
    for (const d of list) {
      if (!isDatasetLike(d)) throw new TypeError('StackDataset: every dataset needs a length and get()');
    }
    this.size = list[0].length;
    if (list.some((d) => d.length !== this.size)) {
      throw new RangeError(`Size mismatch between datasets: lengths ${list.map((d) => d.length).join(', ')}`);
    }
    this.datasets = record ?? list;
    const specs = specsOf(list);
    if (specs !== undefined) {
      const keys = record === undefined ? undefined : Object.keys(record);
      this.workerSpec = () => ({
        module: MODULE,
        export: 'buildStackDataset',
        options: keys === undefined ? { datasets: specs } : { keys, datasets: specs },
      });
    }
  }

  get length(): number {
    return this.size;
  }

  override get concurrentGets(): number {
    return leastConcurrency(Array.isArray(this.datasets) ? this.datasets : Object.values(this.datasets));
  }

  get(index: number, ctx: SampleContext): S | Promise<S> {
    const i = resolveIndex('StackDataset', index, this.size);
    if (Array.isArray(this.datasets))
      return inOrder(this.datasets.map((d) => () => d.get(i, ctx))) as S | Promise<S>;
    const entries = Object.entries(this.datasets);
    const values = inOrder(
      entries.map(
        ([, d]) =>
          () =>
            d.get(i, ctx),
      ),
    );
    const record = (vs: Sample[]) => Object.fromEntries(entries.map(([k], j) => [k, vs[j]])) as S;
    return values instanceof Promise ? values.then(record) : record(values);
  }
}

function isDatasetLike(d: unknown): d is Dataset {
  return (
    typeof d === 'object' &&
    d !== null &&
    typeof (d as Dataset).get === 'function' &&
    typeof (d as Dataset).length === 'number'
  );
}

/** A worker's StackDataset (StackDataset.workerSpec). */
export async function buildStackDataset(options: {
  keys?: string[];
  datasets: DatasetSpec[];
}): Promise<StackDataset> {
  const datasets = (await Promise.all(options.datasets.map((s) => buildDataset(s)))) as Dataset[];
  const keys = options.keys;
  if (keys === undefined) return new StackDataset(...datasets);
  return new StackDataset(Object.fromEntries(keys.map((k, j) => [k, datasets[j]])));
}
