// DataLoader: batches from a dataset in sampler order, loaded in the main thread or by a
// pool of worker threads, wrapped as tensors without copying (torch.utils.data.DataLoader).
import * as t from '../core/index.ts';
import { DataLoaderError, DataLoaderWorkerError } from './errors.ts';
import { type BatchTask, loadBatch, type SampleFailure } from './load.ts';
import { BatchSampler, drawSeed, RandomSampler, type Sampler, SequentialSampler } from './samplers.ts';
import type { ArrayBatch, CollateFn, Dataset, ModuleRef, NdArray, Sample } from './types.ts';
import { WorkerPool } from './worker-pool.ts';

export interface DataLoaderOptions {
  /** Samples per batch (default 1). */
  batchSize?: number;
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
   * Turns a list of samples into arrays (default: defaultCollate). With workers it runs
   * in them, so it must be given as a ModuleRef ({ module: import.meta.url, export }).
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

/** A collated field: numbers, booleans and arrays become a tensor; strings a list. */
type Collated<F> = F extends string ? string[] : t.Tensor;

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
  readonly dataset: Dataset<S>;
  readonly batchSampler: Sampler<number[]>;
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

  constructor(dataset: Dataset<S>, opts: DataLoaderOptions = {}) {
    this.dataset = dataset;
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

    if (opts.batchSampler !== undefined) {
      if (opts.batchSize !== undefined || opts.shuffle || opts.sampler !== undefined || opts.dropLast) {
        throw new TypeError(
          'DataLoader: batchSampler option is mutually exclusive with batchSize, shuffle, sampler, and dropLast',
        );
      }
      this.batchSampler = opts.batchSampler;
    } else {
      if (opts.sampler !== undefined && opts.shuffle) {
        throw new TypeError('DataLoader: sampler option is mutually exclusive with shuffle');
      }
      const sampler =
        opts.sampler ??
        (opts.shuffle
          ? new RandomSampler(dataset, { generator: this.generator })
          : new SequentialSampler(dataset));
      this.batchSampler = new BatchSampler(sampler, opts.batchSize ?? 1, opts.dropLast ?? false);
    }

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

  /** Batches per epoch. */
  get length(): number {
    return this.batchSampler.length;
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<B> {
    const epoch = this.epoch++;
    // Drawn before the sampler's first draw, like PyTorch's _base_seed.
    const baseSeed = drawSeed(this.generator);
    if (this.numWorkers === 0) {
      let position = 0;
      for (const indices of this.batchSampler) {
        const task: BatchTask = {
          id: this.nextTaskId++,
          indices,
          position,
          baseSeed,
          epoch,
          ...this.skipFlag(),
        };
        position += indices.length;
        const r = await loadBatch(this.dataset, task, 0, 0, this.collateFn);
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

  private async *iterateWorkers(epoch: number, baseSeed: bigint): AsyncGenerator<B> {
    const pool = this.acquirePool(baseSeed);
    pool.ref();
    const queue: { task: BatchTask; worker: number; batch: number }[] = [];
    const batches = this.batchSampler[Symbol.iterator]();
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
          ...this.skipFlag(),
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
        const r = await pool.take(head.task.id, head.task, head.worker, head.batch, this.timeoutMs);
        fill();
        this.countSkipped(r.skipped);
        yield this.wrap(r.batch);
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

  private skipFlag(): { skipBad?: true } {
    return this.skipBadSamples === undefined ? {} : { skipBad: true };
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

  /** Tensors over the batch's own buffers (no copy), in the caller's current scope. */
  private wrap(arrays: ArrayBatch): B {
    const pin = this.pinMemory && t.cuda.isAvailable();
    const tensors: t.Tensor[] = [];
    const toTensor = (v: NdArray | string[]): t.Tensor | string[] => {
      if (Array.isArray(v)) return v;
      let x = t.fromBuffer(v.data, v.shape, v.dtype);
      if (pin) {
        const pinned = x.pinMemory();
        x.dispose();
        x = pinned;
      }
      tensors.push(x);
      return x;
    };
    const out = Array.isArray(arrays)
      ? arrays.map(toTensor)
      : Object.fromEntries(Object.entries(arrays).map(([k, v]) => [k, toTensor(v)]));
    Object.defineProperty(out, Symbol.dispose, {
      value: () => {
        for (const x of tensors) x.dispose();
      },
      enumerable: false,
    });
    return out as B;
  }
}
