// DataLoader: batches from a dataset in sampler order, loaded in the main thread or by a
// pool of worker threads, wrapped as tensors without copying (torch.utils.data.DataLoader).
import * as t from '../core/index.ts';
import { checkOptions, optionNames } from '../core/options.ts';
import { setTensorStack } from './collate.ts';
import { DataLoaderError, DataLoaderWorkerError } from './errors.ts';
import {
  type BatchTask,
  type Loaded,
  loadBatch,
  loadStreamBatch,
  type SampleFailure,
  SampleStream,
  type StreamTask,
} from './load.ts';
import { BatchSampler, drawSeed, RandomSampler, type Sampler, SequentialSampler } from './samplers.ts';
import {
  type CollateFn,
  type Dataset,
  type Field,
  type IterableDataset,
  isIterableDataset,
  isNdArray,
  isSampleArray,
  isTensor,
  type ModuleRef,
  type Sample,
} from './types.ts';
import { WorkerPool } from './worker-pool.ts';

/**
 * The tensors defaultCollate stacked from Tensor samples: the batch's own, freed with it,
 * unlike a Tensor a collate passes through (defaultConvert's: the dataset's).
 */
const stacked = new WeakSet<t.Tensor>();
// The collate runs where samples are loaded and cannot import core (workers do not load
// the addon); this module runs only where the addon is loaded, so it hands torch.stack in.
setTensorStack((tensors) => {
  const x = t.stack(tensors);
  stacked.add(x);
  return x;
});

export interface DataLoaderOptions {
  /**
   * Samples per batch (default 1). null turns automatic batching off, as PyTorch's
   * `batch_size=None`: each sample comes alone, through `collate` (default defaultConvert:
   * arrays become tensors without a batch dimension, numbers and strings stay as they are).
   */
  batchSize?: number | null;
  /** A new random order every epoch (a RandomSampler); excludes `sampler`. */
  shuffle?: boolean;
  /** The order of sample indices (e.g. a DistributedSampler). */
  sampler?: Sampler<number>;
  /** Lists of indices, one per batch; excludes batchSize, shuffle, sampler and dropLast. */
  batchSampler?: Sampler<number[]>;
  /** Worker threads loading batches (0: load in the main thread). */
  numWorkers?: number;
  /** Batches queued per worker (default 2). */
  prefetchFactor?: number;
  /** Keep the workers between epochs instead of starting new ones for each. */
  persistentWorkers?: boolean;
  /** Copy batches into pinned (page-locked) host memory when CUDA is available; no-op otherwise. */
  pinMemory?: boolean;
  /** Drop the last batch when it is smaller than batchSize. */
  dropLast?: boolean;
  /** Fail when a batch takes longer than this to arrive from the workers (0: no limit). */
  timeoutMs?: number;
  /**
   * Skip samples that fail to load (a corrupt image), up to this many over the loader's
   * life: each is replaced by the next index, logged once with its file, and counted in
   * `skippedSamples`; one more fails the loader. Unset: the first bad sample fails it.
   */
  skipBadSamples?: number;
  /**
   * Turns a list of samples into arrays (default: defaultCollate; with `batchSize: null`
   * it gets one sample, default defaultConvert). With workers it runs in them, so it must
   * be given as a ModuleRef ({ module: import.meta.url, export }).
   */
  collate?: CollateFn | ModuleRef;
  /**
   * Seeds the loader's generator (shuffle order and the workers' base seed). Without a
   * seed or generator they come from the default generator, as in PyTorch.
   */
  seed?: number | bigint;
  /** PyTorch's `generator` argument (instead of `seed`). */
  generator?: t.Generator;
  /** Called in each worker once, after the dataset is built: ({ workerId, numWorkers, seed, dataset }). */
  workerInit?: ModuleRef;
}

const OPTIONS = optionNames<DataLoaderOptions>({
  batchSize: true,
  shuffle: true,
  sampler: true,
  batchSampler: true,
  numWorkers: true,
  prefetchFactor: true,
  persistentWorkers: true,
  pinMemory: true,
  dropLast: true,
  timeoutMs: true,
  skipBadSamples: true,
  collate: true,
  seed: true,
  generator: true,
  workerInit: true,
});

/** A collated field: numbers, booleans and arrays become a tensor; strings a list; records and tuples nest. */
type Collated<F> = F extends string
  ? string[]
  : F extends Field
    ? t.Tensor
    : { [K in keyof F]: Collated<F[K]> };

/**
 * The batch for samples of type S: the same record (or tuple) with each field collated,
 * disposable (`using`) to free its tensors. For untyped samples, a record of tensors.
 */
export type BatchOf<S> = (Sample extends S ? Record<string, t.Tensor> : { [K in keyof S]: Collated<S[K]> }) &
  Disposable;

/** A batch of an untyped dataset: a record of tensors (string fields are lists), disposable. */
export type Batch = BatchOf<Sample>;

function isModuleRef(v: unknown): v is ModuleRef {
  return typeof v === 'object' && v !== null && typeof (v as ModuleRef).module === 'string';
}

/**
 * Iterate with `for await (const batch of loader)` — or `for await (using batch of
 * loader)` to free each batch's tensors at the end of its step. Batches arrive in
 * sampler order whatever the number of workers, and are identical for any number of
 * workers: each sample's random stream (`ctx.rng`) depends only on the seed, the epoch
 * and the sample, not on which worker loads it.
 */
let warnedNoPin = false;

export class DataLoader<S extends Sample = Sample, B = BatchOf<S>> implements AsyncIterable<B> {
  readonly dataset: Dataset<S> | IterableDataset<S>;
  /**
   * The order of sample indices: the one given, else a RandomSampler (shuffle) or a
   * SequentialSampler. null for an IterableDataset, which has no indices (PyTorch's
   * private infinite sampler stands there).
   */
  readonly sampler: Sampler<number> | null;
  /**
   * Lists of indices, one per batch: the one given, else a BatchSampler over `sampler`;
   * null without automatic batching (`batchSize: null`) and for an IterableDataset.
   */
  readonly batchSampler: Sampler<number[]> | null;
  /** Samples per batch; null with a batchSampler given or automatic batching off, as PyTorch's. */
  readonly batchSize: number | null;
  readonly dropLast: boolean;
  readonly numWorkers: number;
  readonly prefetchFactor: number;
  readonly persistentWorkers: boolean;
  readonly pinMemory: boolean;
  readonly timeoutMs: number;
  readonly skipBadSamples: number | undefined;
  private skipped = 0;
  private readonly skippedLogged = new Set<string>();
  readonly generator: t.Generator | undefined;
  private readonly seed: number | bigint | undefined;
  /** How many epochs (iterations) have started. */
  epoch = 0;
  /** Worker threads started over the loader's life (persistent workers start once). */
  workersStarted = 0;
  private readonly collateFn: CollateFn | undefined;
  private readonly collateRef: ModuleRef | undefined;
  private readonly workerInit: ModuleRef | undefined;
  private pool: WorkerPool | null = null;
  private nextTaskId = 0;
  private readonly iterable: boolean;

  constructor(dataset: Dataset<S> | IterableDataset<S>, options?: DataLoaderOptions) {
    const opts = checkOptions('DataLoader', options, OPTIONS, {
      hints: { timeout: "tsddp's is timeoutMs, in milliseconds; PyTorch's timeout is in seconds" },
    });
    this.dataset = dataset;
    this.iterable = isIterableDataset(dataset);
    this.numWorkers = opts.numWorkers ?? 0;
    if (!Number.isInteger(this.numWorkers) || this.numWorkers < 0) {
      throw new RangeError(`DataLoader: numWorkers should be a non-negative integer, got ${opts.numWorkers}`);
    }
    this.prefetchFactor = opts.prefetchFactor ?? 2;
    if (!Number.isInteger(this.prefetchFactor) || this.prefetchFactor < 1) {
      throw new RangeError(
        `DataLoader: prefetchFactor should be a positive integer, got ${opts.prefetchFactor}`,
      );
    }
    this.persistentWorkers = opts.persistentWorkers ?? false;
    if (this.persistentWorkers && this.numWorkers === 0) {
      throw new RangeError('DataLoader: persistentWorkers needs numWorkers > 0');
    }
    this.pinMemory = opts.pinMemory ?? false;
    if (this.pinMemory && !t.cuda.isAvailable() && !warnedNoPin) {
      // As torch.utils.data.DataLoader: a warning, then batches stay in pageable memory.
      warnedNoPin = true;
      process.emitWarning(
        "DataLoader: 'pinMemory' is set but no CUDA device is available, so batches are not pinned",
        'TsddpWarning',
      );
    }
    this.timeoutMs = opts.timeoutMs ?? 0;
    this.skipBadSamples = opts.skipBadSamples;
    if (
      this.skipBadSamples !== undefined &&
      !(Number.isInteger(this.skipBadSamples) && this.skipBadSamples >= 0)
    )
      throw new RangeError(
        `DataLoader: skipBadSamples should be a non-negative integer, got ${opts.skipBadSamples}`,
      );
    if (!(this.timeoutMs >= 0))
      throw new RangeError(`DataLoader: timeoutMs should be >= 0, got ${opts.timeoutMs}`);
    if (opts.seed !== undefined && opts.generator !== undefined) {
      throw new TypeError('DataLoader: pass seed or generator, not both');
    }
    this.seed = opts.seed;
    this.generator =
      opts.generator ?? (opts.seed !== undefined ? new t.Generator().manualSeed(opts.seed) : undefined);

    const batching = batchingOf(dataset, opts, this.iterable, this.generator, this.skipBadSamples);
    this.sampler = batching.sampler;
    this.batchSampler = batching.batchSampler;
    this.batchSize = batching.batchSize;
    this.dropLast = batching.dropLast;

    if (isModuleRef(opts.collate)) this.collateRef = opts.collate;
    else if (typeof opts.collate === 'function') {
      if (this.numWorkers > 0) {
        throw new TypeError(
          'DataLoader: with numWorkers > 0 the collate function runs in the workers; pass it as ' +
            '{ module: import.meta.url, export: "name" } instead of a function',
        );
      }
      this.collateFn = opts.collate;
    }
    if (this.numWorkers > 0 && typeof dataset.workerSpec !== 'function') {
      throw new TypeError(
        'DataLoader: numWorkers > 0 needs a dataset that workers can rebuild: give it a workerSpec() ' +
          'returning { module, export, options }, or create it with loadDataset(spec)',
      );
    }
    this.workerInit = opts.workerInit;
  }

  /**
   * Makes the next iteration epoch `epoch`, with random draws (the workers' per-sample
   * streams, a shuffle) that depend only on the loader's `seed` and `epoch`: call it before
   * each epoch, as DistributedSampler.setEpoch, and a run that resumes at any epoch sees
   * the batches an uninterrupted run saw. Needs the `seed` option.
   */
  setEpoch(epoch: number): void {
    if (!Number.isSafeInteger(epoch) || epoch < 0)
      throw new RangeError(`DataLoader.setEpoch(): epoch should be a non-negative integer, got ${epoch}`);
    if (this.seed === undefined || this.generator === undefined)
      throw new TypeError('DataLoader.setEpoch() needs a loader created with a seed');
    this.epoch = epoch;
    this.generator.manualSeed(BigInt(this.seed) + BigInt(epoch));
  }

  /**
   * Batches per epoch. For an IterableDataset, counted from its `length` (PyTorch's
   * len(loader)); a TypeError when it has none.
   */
  get length(): number {
    if (this.iterable) {
      const n = (this.dataset as IterableDataset<S>).length;
      if (typeof n !== 'number')
        throw new TypeError('DataLoader: the length of an IterableDataset without a length is unknown');
      if (this.batchSize === null) return n;
      return this.dropLast ? Math.floor(n / this.batchSize) : Math.ceil(n / this.batchSize);
    }
    return this.batchSampler?.length ?? (this.sampler as Sampler<number>).length;
  }

  /** The index lists an epoch loads: the batch sampler's, or single indices without automatic batching. */
  private *tasks(): Generator<number[]> {
    if (this.batchSampler !== null) yield* this.batchSampler;
    else for (const i of this.sampler as Sampler<number>) yield [i];
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<B> {
    const epoch = this.epoch++;
    // Drawn before the sampler's first draw, like PyTorch's _base_seed.
    const baseSeed = drawSeed(this.generator);
    if (this.iterable) {
      if (this.numWorkers === 0) yield* this.iterateStream(epoch);
      else yield* this.iterateStreamWorkers(epoch, baseSeed);
      return;
    }
    if (this.numWorkers === 0) {
      let position = 0;
      for (const indices of this.tasks()) {
        const task: BatchTask = {
          id: this.nextTaskId++,
          indices,
          position,
          baseSeed,
          epoch,
          ...this.taskFlags(),
        };
        position += indices.length;
        const r = await loadBatch(this.dataset as Dataset, task, 0, 0, this.collateFn);
        if (!r.ok) {
          const f = r.failure;
          throw new DataLoaderWorkerError(0, f.index, f.path, f.name, f.message, f.stack, true);
        }
        this.countSkipped(r.skipped);
        yield this.wrap(r.batch);
      }
      return;
    }
    yield* this.iterateWorkers(epoch, baseSeed);
  }

  /** An IterableDataset in this thread: its samples in order, batchSize at a time. */
  private async *iterateStream(epoch: number): AsyncGenerator<B> {
    const stream = new SampleStream(this.dataset as IterableDataset);
    try {
      for (;;) {
        const task = this.streamTask(epoch);
        const r = await loadStreamBatch(stream, task, this.collateFn);
        if (!r.ok) {
          const f = r.failure;
          throw new DataLoaderWorkerError(0, f.index, f.path, f.name, f.message, f.stack, true);
        }
        if (r.end) return;
        yield this.wrap(r.batch);
      }
    } finally {
      await stream.close();
    }
  }

  private streamTask(epoch: number): StreamTask {
    return { id: this.nextTaskId++, epoch, batchSize: this.batchSize, dropLast: this.dropLast };
  }

  /**
   * An IterableDataset in workers, as PyTorch's multi-worker iterator: each worker iterates
   * its own copy; batches are asked of the workers in turn, skipping those whose iteration
   * has ended, and arrive in the order they were asked for. So the interleaving is fixed
   * (worker 0's first batch, worker 1's first, ...), whatever the workers' speeds.
   */
  private async *iterateStreamWorkers(epoch: number, baseSeed: bigint): AsyncGenerator<B> {
    const pool = this.acquirePool(baseSeed);
    pool.ref();
    const active = new Array<boolean>(pool.size).fill(true);
    const queue: { task: StreamTask; worker: number; batch: number }[] = [];
    let cycle = 0;
    let sent = 0;
    const fill = (): void => {
      while (queue.length < this.prefetchFactor * pool.size) {
        let worker = -1;
        for (let k = 0; k < pool.size && worker < 0; k++) {
          const w = (cycle + k) % pool.size;
          if (active[w]) worker = w;
        }
        if (worker < 0) return;
        cycle = worker + 1;
        const task = this.streamTask(epoch);
        pool.submitNext(worker, task);
        queue.push({ task, worker, batch: sent++ });
      }
    };
    let finished = false;
    try {
      fill();
      for (let head = queue.shift(); head !== undefined; head = queue.shift()) {
        const r = await pool.take(head.task.id, [], head.worker, head.batch, this.timeoutMs);
        // A worker whose iteration ended gets no more requests; those already sent end too.
        if (r.batch === null) active[head.worker] = false;
        fill();
        if (r.batch !== null) yield this.wrap(r.batch);
      }
      finished = true;
    } finally {
      if (!this.persistentWorkers || pool.broken) await this.closePool();
      else {
        if (!finished) pool.cancelEpoch(epoch);
        pool.unref();
      }
    }
  }

  private async *iterateWorkers(epoch: number, baseSeed: bigint): AsyncGenerator<B> {
    const pool = this.acquirePool(baseSeed);
    pool.ref();
    const queue: { task: BatchTask; worker: number; batch: number }[] = [];
    const batches = this.tasks();
    let position = 0;
    let sent = 0;
    let done = false;
    // Keep prefetchFactor batches per worker in flight, assigned round-robin so each
    // worker's queue stays in sampler order.
    const fill = (): void => {
      while (!done && queue.length < this.prefetchFactor * pool.size) {
        const next = batches.next();
        if (next.done) {
          done = true;
          return;
        }
        const task: BatchTask = {
          id: this.nextTaskId++,
          indices: next.value,
          position,
          baseSeed,
          epoch,
          ...this.taskFlags(),
        };
        position += next.value.length;
        const worker = sent % pool.size;
        pool.submit(worker, task);
        queue.push({ task, worker, batch: sent++ });
      }
    };
    let finished = false;
    try {
      fill();
      for (let head = queue.shift(); head !== undefined; head = queue.shift()) {
        const r = await pool.take(head.task.id, head.task.indices, head.worker, head.batch, this.timeoutMs);
        fill();
        this.countSkipped(r.skipped);
        yield this.wrap(r.batch as Loaded);
      }
      finished = true;
    } finally {
      if (!this.persistentWorkers || pool.broken) await this.closePool();
      else {
        if (!finished) pool.cancelEpoch(epoch);
        pool.unref();
      }
    }
  }

  /** Samples skipped so far because they failed to load (skipBadSamples). */
  get skippedSamples(): number {
    return this.skipped;
  }

  private taskFlags(): { skipBad?: true; unbatched?: true } {
    return {
      ...(this.skipBadSamples === undefined ? {} : { skipBad: true }),
      ...(this.batchSampler === null ? { unbatched: true } : {}),
    };
  }

  /** Logs each skipped sample once (by file, else index), counts it, and fails past the limit. */
  private countSkipped(failures: SampleFailure[]): void {
    for (const f of failures) {
      this.skipped++;
      const what = f.path ?? `sample ${f.index}`;
      if (!this.skippedLogged.has(what)) {
        this.skippedLogged.add(what);
        console.warn(`DataLoader: skipped ${what} (index ${f.index}): ${f.name}: ${f.message}`);
      }
      if (this.skipped > (this.skipBadSamples ?? 0)) {
        throw new DataLoaderError(
          `more than ${this.skipBadSamples} bad sample(s) skipped (skipBadSamples); the last: ${what}: ${f.message}`,
        );
      }
    }
  }

  private acquirePool(baseSeed: bigint): WorkerPool {
    if (this.pool !== null && !this.pool.broken) return this.pool;
    this.pool = new WorkerPool({
      numWorkers: this.numWorkers,
      dataset: this.dataset.workerSpec!(),
      collate: this.collateRef,
      workerInit: this.workerInit,
      seed: baseSeed,
    });
    this.workersStarted += this.numWorkers;
    return this.pool;
  }

  private async closePool(): Promise<void> {
    const p = this.pool;
    this.pool = null;
    await p?.close();
  }

  /** Stops persistent workers (they also stop with the process: idle ones do not keep it alive). */
  async close(): Promise<void> {
    await this.closePool();
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  /**
   * Tensors over the batch's own buffers (no copy), in the caller's current scope, nested
   * as the batch is; string lists and (without automatic batching) numbers, booleans,
   * bigints and strings stay as they are. Tensors (stacked from Tensor samples, or a
   * collate's) stay as they are, pinned when CPU tensors; those stacked (and the pinned
   * copies) are the batch's, freed when it is disposed.
   */
  private wrap(batch: Loaded): B {
    const pin = this.pinMemory && t.cuda.isAvailable();
    const tensors: t.Tensor[] = [];
    const convert = (v: unknown): unknown => {
      if (isTensor(v)) {
        const own = stacked.has(v);
        // A CUDA tensor needs no pinning (PyTorch's pin_memory would refuse it).
        if (!pin || v.device !== 'cpu') {
          if (own) tensors.push(v);
          return v;
        }
        const pinned = v.pinMemory();
        if (own) v.dispose();
        tensors.push(pinned);
        return pinned;
      }
      // A bare typed array (from a custom collate) is a 1-D array, as everywhere in samples.
      if (isNdArray(v) || isSampleArray(v)) {
        const a = isNdArray(v) ? v : { data: v, shape: [v.length], dtype: undefined };
        let x = t.fromBuffer(a.data, a.shape, a.dtype);
        if (pin) {
          const pinned = x.pinMemory();
          x.dispose();
          x = pinned;
        }
        tensors.push(x);
        return x;
      }
      if (Array.isArray(v)) return v.every((e) => typeof e === 'string') ? v : v.map(convert);
      if (typeof v === 'object' && v !== null)
        return Object.fromEntries(Object.entries(v).map(([k, e]) => [k, convert(e)]));
      return v;
    };
    const out = convert(batch);
    // A lone tensor (a custom collate's) disposes itself already.
    if (typeof out === 'object' && out !== null && !isTensor(out)) {
      Object.defineProperty(out, Symbol.dispose, {
        value: () => {
          for (const x of tensors) x.dispose();
        },
        enumerable: false,
      });
    }
    return out as B;
  }
}

/**
 * How a loader orders and batches its samples, as torch.utils.data.DataLoader decides it:
 * an IterableDataset has no indices (no sampler); a batchSampler excludes batchSize,
 * shuffle, sampler and dropLast; else the sampler (shuffle: a RandomSampler) in batches
 * of batchSize (null: no automatic batching).
 */
function batchingOf<S extends Sample>(
  dataset: Dataset<S> | IterableDataset<S>,
  opts: DataLoaderOptions,
  iterable: boolean,
  generator: t.Generator | undefined,
  skipBadSamples: number | undefined,
): {
  sampler: Sampler<number> | null;
  batchSampler: Sampler<number[]> | null;
  batchSize: number | null;
  dropLast: boolean;
} {
  if (opts.batchSize !== undefined && opts.batchSize !== null) {
    if (!Number.isInteger(opts.batchSize) || opts.batchSize <= 0)
      throw new RangeError(
        `DataLoader: batchSize should be a positive integer or null, got ${opts.batchSize}`,
      );
  }
  if (opts.batchSize === null && opts.dropLast) {
    throw new TypeError(
      'DataLoader: batchSize: null disables automatic batching and is mutually exclusive with dropLast',
    );
  }
  if (iterable) {
    // PyTorch's checks: an IterableDataset has no indices to order or batch.
    for (const [name, given] of [
      ['shuffle', opts.shuffle],
      ['sampler', opts.sampler],
      ['batchSampler', opts.batchSampler],
    ] as const) {
      if (given !== undefined && given !== false)
        throw new TypeError(`DataLoader with IterableDataset: expected unspecified ${name} option`);
    }
    if (skipBadSamples !== undefined) {
      throw new TypeError(
        'DataLoader: skipBadSamples needs a map-style dataset (an IterableDataset has no next index to load instead)',
      );
    }
    const batchSize = opts.batchSize === undefined ? 1 : opts.batchSize;
    return { sampler: null, batchSampler: null, batchSize, dropLast: opts.dropLast ?? false };
  }
  if (opts.batchSampler !== undefined) {
    if (opts.batchSize !== undefined || opts.shuffle || opts.sampler !== undefined || opts.dropLast) {
      throw new TypeError(
        'DataLoader: batchSampler option is mutually exclusive with batchSize, shuffle, sampler, and dropLast',
      );
    }
    const sampler = new SequentialSampler(dataset as Dataset<S>);
    return { sampler, batchSampler: opts.batchSampler, batchSize: null, dropLast: false };
  }
  if (opts.sampler !== undefined && opts.shuffle) {
    throw new TypeError('DataLoader: sampler option is mutually exclusive with shuffle');
  }
  const sampler =
    opts.sampler ??
    (opts.shuffle
      ? new RandomSampler(dataset as Dataset<S>, { generator })
      : new SequentialSampler(dataset as Dataset<S>));
  const batchSize = opts.batchSize === undefined ? 1 : opts.batchSize;
  const dropLast = opts.dropLast ?? false;
  const batchSampler = batchSize === null ? null : new BatchSampler(sampler, batchSize, dropLast);
  return { sampler, batchSampler, batchSize, dropLast };
}
