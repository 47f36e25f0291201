// Loading one batch's samples, shared by the worker threads and the in-process path
// (numWorkers = 0) so both give identical batches. Plain JS: workers load this.
import { isAbsolute } from 'node:path';
import { pathToFileURL } from 'node:url';
import {
  type Converted,
  defaultCollate,
  defaultConvert,
  findTensor,
  tensorInWorkerMessage,
} from './collate.ts';
import { Rng } from './rng.ts';
import {
  type ArrayBatch,
  type CollateFn,
  DataError,
  type Dataset,
  type DatasetSpec,
  type IterableDataset,
  isIterableDataset,
  type ModuleRef,
  type Sample,
} from './types.ts';

/**
 * What a load produces: a collated batch, or with automatic batching off (`batchSize:
 * null`) one converted sample.
 */
export type Loaded = ArrayBatch | Converted;

/** One batch of work: indices in sampler order and where the batch starts in the epoch. */
export interface BatchTask {
  id: number;
  indices: number[];
  /** Position of indices[0] in the epoch's sample order. */
  position: number;
  baseSeed: bigint;
  epoch: number;
  /** Replace a sample that fails to load by the next index (DataLoader skipBadSamples). */
  skipBad?: boolean;
  /** No automatic batching: `indices` is one index, and the collate gets that one sample. */
  unbatched?: boolean;
}

/** Consecutive failing indices tried for one sample before the batch fails. */
const MAX_REPLACEMENTS = 16;

/** A failure while loading one sample, carried back to the main thread. */
export interface SampleFailure {
  /** The sample's dataset index; -1 for a sample of an iterable dataset (it has none). */
  index: number;
  path?: string;
  name: string;
  message: string;
  stack?: string;
}

/** The per-sample random stream: a pure function of (base seed, epoch, index, position). */
export function sampleRng(baseSeed: bigint, epoch: number, index: number, position: number): Rng {
  return new Rng(baseSeed, epoch, index, position);
}

/**
 * In a worker thread, a sample holding a Tensor fails the batch, whatever skipBadSamples
 * says (it is the dataset's code, not a bad file): it cannot reach the main thread.
 */
function tensorFailure(samples: Sample[], indices: number[]): SampleFailure | undefined {
  for (let k = 0; k < samples.length; k++) {
    const path = findTensor(samples[k]);
    if (path === undefined) continue;
    const where = path === '' ? 'the sample' : `field '${path}'`;
    return describeFailure(new DataError(tensorInWorkerMessage(where)), indices[k] ?? -1);
  }
  return undefined;
}

/**
 * Loads and collates a batch; a throwing sample becomes a SampleFailure naming its index
 * (and file). `numWorkers > 0` means this runs in a worker thread (the main thread loads
 * with 0), whose batch is posted to the main thread: Tensor samples are refused there.
 */
export async function loadBatch(
  dataset: Dataset,
  task: BatchTask,
  workerId: number,
  numWorkers: number,
  collate?: CollateFn,
): Promise<{ ok: true; batch: Loaded; skipped: SampleFailure[] } | { ok: false; failure: SampleFailure }> {
  const n = task.indices.length;
  const skipped: SampleFailure[] = [];
  const samples: Sample[] = new Array(n);
  // A dataset that declares `concurrentGets: N` (ImageFolder: its decodes run on libvips'
  // threads) gets up to N get() calls running at once: a decode's thread hand-offs then
  // overlap with the transforms of the samples before it. Others are called one at a time,
  // as PyTorch does. Each sample's random stream depends only on its index and position,
  // so the batch is the same either way; a failure is reported for the first failing
  // sample in batch order.
  const ahead = Math.max(0, (dataset.concurrentGets ?? 1) - 1);
  const pending: (Promise<Sample> | undefined)[] = new Array(n);
  let started = 0;
  const load = (k: number, index: number): Sample | Promise<Sample> => {
    const rng = sampleRng(task.baseSeed, task.epoch, index, task.position + k);
    return dataset.get(index, { rng, workerId, numWorkers, epoch: task.epoch });
  };
  const start = (k: number): Sample | Promise<Sample> => load(k, task.indices[k]);
  // A bad sample, when skipping: the next indices in turn take its place (its position, so
  // its random stream, stays); each failure is reported back to be logged and counted.
  const replace = async (k: number, first: unknown): Promise<Sample> => {
    let index = task.indices[k];
    let error = first;
    for (let tries = 0; tries < MAX_REPLACEMENTS; tries++) {
      skipped.push(describeFailure(error, index));
      index = (index + 1) % dataset.length;
      try {
        return await load(k, index);
      } catch (e) {
        error = e;
      }
    }
    throw error;
  };
  for (let k = 0; k < n; k++) {
    try {
      if (started === k) {
        started++;
        const s = start(k);
        if (!(s instanceof Promise)) {
          samples[k] = s; // a synchronous dataset: nothing to overlap
          continue;
        }
        pending[k] = s;
      }
      for (; started < n && started <= k + ahead; started++) {
        const j = started;
        const p = Promise.resolve().then(() => start(j));
        p.catch(() => {}); // awaited (and reported) in order below
        pending[started] = p as Promise<Sample>;
      }
      samples[k] = await (pending[k] as Promise<Sample>);
      pending[k] = undefined;
    } catch (e) {
      if (!task.skipBad) return { ok: false, failure: describeFailure(e, task.indices[k]) };
      try {
        samples[k] = await replace(k, e);
      } catch (last) {
        return { ok: false, failure: describeFailure(last, task.indices[k]) };
      }
    }
  }
  const refused = numWorkers > 0 ? tensorFailure(samples, task.indices) : undefined;
  if (refused !== undefined) return { ok: false, failure: refused };
  try {
    return { ok: true, batch: collateSamples(samples, task.unbatched === true, collate), skipped };
  } catch (e) {
    return { ok: false, failure: { ...describeFailure(e, task.indices[0]), name: 'CollateError' } };
  }
}

/**
 * PyTorch's collate step: with automatic batching the collate (default defaultCollate) gets
 * the batch's samples; without, it gets the one sample (default defaultConvert).
 */
function collateSamples(samples: Sample[], unbatched: boolean, collate: CollateFn | undefined): Loaded {
  if (!unbatched) return (collate ?? defaultCollate)(samples);
  return collate ? (collate as unknown as (s: Sample) => Loaded)(samples[0]) : defaultConvert(samples[0]);
}

/** One batch of an iterable dataset: the next `batchSize` samples of the epoch's stream. */
export interface StreamTask {
  id: number;
  epoch: number;
  /** null: no automatic batching (one sample, converted). */
  batchSize: number | null;
  dropLast: boolean;
}

/**
 * One epoch's iteration of an iterable dataset, in the thread that loads it (the main
 * thread, or each worker over its own copy). Its async iterator is preferred: a dataset
 * that reads files yields without blocking the thread.
 */
export class SampleStream {
  private readonly it: Iterator<Sample> | AsyncIterator<Sample>;
  /** Set once the iterator is done (or threw): later batches are empty, as PyTorch's fetcher's `ended`. */
  ended = false;

  constructor(dataset: IterableDataset) {
    const d = dataset as IterableDataset<Sample>;
    const it = d[Symbol.asyncIterator]?.() ?? d[Symbol.iterator]?.();
    if (it === undefined)
      throw new TypeError('an IterableDataset needs [Symbol.iterator] or [Symbol.asyncIterator]');
    this.it = it;
  }

  /** The next sample, or undefined at the end. */
  async next(): Promise<Sample | undefined> {
    if (this.ended) return undefined;
    try {
      const r = await this.it.next();
      if (r.done) this.ended = true;
      return r.done ? undefined : r.value;
    } catch (e) {
      this.ended = true;
      throw e;
    }
  }

  /** Stops the iteration early (a `break`, a new epoch): the dataset's `finally` blocks run. */
  async close(): Promise<void> {
    if (this.ended) return;
    this.ended = true;
    await this.it.return?.();
  }
}

/**
 * Loads a stream task, as PyTorch's _IterableDatasetFetcher: up to batchSize samples, then
 * the collate; `end` when the stream yields nothing more (or less than a batch, with
 * dropLast). A sample that throws fails the batch (index -1: a stream has no index), as
 * does a Tensor sample `inWorker` (a worker thread: see loadBatch).
 */
export async function loadStreamBatch(
  stream: SampleStream,
  task: StreamTask,
  collate?: CollateFn,
  inWorker = false,
): Promise<
  { ok: true; end: true } | { ok: true; end?: false; batch: Loaded } | { ok: false; failure: SampleFailure }
> {
  const want = task.batchSize ?? 1;
  const samples: Sample[] = [];
  try {
    while (samples.length < want) {
      const s = await stream.next();
      if (s === undefined) break;
      samples.push(s);
    }
  } catch (e) {
    return { ok: false, failure: describeFailure(e, -1) };
  }
  if (samples.length === 0 || (task.dropLast && samples.length < want)) return { ok: true, end: true };
  const refused = inWorker ? tensorFailure(samples, []) : undefined;
  if (refused !== undefined) return { ok: false, failure: refused };
  try {
    return { ok: true, batch: collateSamples(samples, task.batchSize === null, collate) };
  } catch (e) {
    return { ok: false, failure: { ...describeFailure(e, -1), name: 'CollateError' } };
  }
}

function describeFailure(e: unknown, index: number): SampleFailure {
  const err = e instanceof Error ? e : new Error(String(e));
  // DataError and Node's fs errors carry the file in `path`.
  const path = (err as { path?: unknown }).path;
  return {
    index,
    path: typeof path === 'string' ? path : undefined,
    name: err.name,
    message: err.message,
    stack: err.stack,
  };
}

function moduleUrl(module: string): string {
  return isAbsolute(module) ? pathToFileURL(module).href : module;
}

/** Modules compiled into the pre-built worker (worker-builtins.ts), by source URL. */
const builtinModules = new Map<string, Record<string, unknown>>();
export function registerBuiltinModule(url: string, ns: Record<string, unknown>): void {
  builtinModules.set(url, ns);
}

/**
 * tsx's API (a URL), in a worker that starts without a TypeScript loader: it is registered
 * the first time a .ts module that is not built in is imported (a user's dataset). null:
 * tsx is not installed; undefined: nothing to register (already done, or not needed).
 */
let typescriptLoader: string | null | undefined;
export function setTypeScriptLoader(url: string | null | undefined): void {
  typescriptLoader = url;
}

async function importModule(url: string): Promise<Record<string, unknown>> {
  const builtin = builtinModules.get(url);
  if (builtin !== undefined) return builtin;
  const isTs = /\.[cm]?tsx?$/.test(new URL(url, 'file:///').pathname);
  if (isTs && typescriptLoader === null)
    throw new Error(
      `${url} is TypeScript, and data workers need tsx to import it: install it in your project ` +
        '(npm install --save-dev tsx), or point the module reference at compiled JavaScript',
    );
  if (isTs && typeof typescriptLoader === 'string') {
    const api = (await import(typescriptLoader)) as { register(): void };
    api.register();
    typescriptLoader = undefined;
  }
  return (await import(url)) as Record<string, unknown>;
}

/** The function or class `ref` names. */
export async function importRef(ref: ModuleRef, what: string): Promise<unknown> {
  let mod: Record<string, unknown>;
  try {
    mod = await importModule(moduleUrl(ref.module));
  } catch (e) {
    throw new Error(`${what}: cannot import '${ref.module}': ${(e as Error).message}`, { cause: e });
  }
  const value = mod[ref.export];
  if (typeof value !== 'function') {
    throw new TypeError(`${what}: '${ref.module}' has no exported function or class '${ref.export}'`);
  }
  return value;
}

function isClass(f: Function): boolean {
  return /^class[\s{]/.test(Function.prototype.toString.call(f));
}

/**
 * Builds the dataset a spec describes, map-style or iterable: `new C(options)` for a class,
 * `f(options)` (awaited) for a factory. The result remembers its spec, so it can be handed
 * to a DataLoader with workers.
 */
export async function buildDataset(spec: DatasetSpec): Promise<Dataset | IterableDataset> {
  const f = (await importRef(spec, 'dataset')) as Function;
  const ds = (
    isClass(f)
      ? new (f as new (o: unknown) => unknown)(spec.options)
      : await (f as (o: unknown) => unknown)(spec.options)
  ) as Dataset | IterableDataset;
  const mapStyle = typeof (ds as Dataset)?.get === 'function' && typeof (ds as Dataset).length === 'number';
  if (!mapStyle && !isIterableDataset(ds)) {
    throw new TypeError(
      `dataset: ${spec.module}#${spec.export} did not make a dataset (no length/get, and no iterator)`,
    );
  }
  if (typeof ds.workerSpec !== 'function') ds.workerSpec = () => spec;
  return ds;
}

/**
 * Builds the map-style dataset a spec describes (see buildDataset). An IterableDataset
 * is refused: give its class a `workerSpec()` method instead.
 */
export async function loadDataset<S extends Sample = Sample>(spec: DatasetSpec): Promise<Dataset<S>> {
  const ds = await buildDataset(spec);
  if (isIterableDataset(ds)) {
    throw new TypeError(
      `dataset: ${spec.module}#${spec.export} made an IterableDataset; loadDataset() builds map-style ` +
        'datasets: construct it yourself and give its class a workerSpec() method returning this spec',
    );
  }
  return ds as Dataset<S>;
}
