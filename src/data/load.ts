// Loading one batch's samples, shared by the worker threads and the in-process path
// (numWorkers = 0) so both give identical batches. Plain JS: workers load this.
import { isAbsolute } from 'node:path';
import { pathToFileURL } from 'node:url';
import { defaultCollate } from './collate.ts';
import { Rng } from './rng.ts';
import type { ArrayBatch, CollateFn, Dataset, DatasetSpec, ModuleRef, Sample } from './types.ts';

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
}

/** Consecutive failing indices tried for one sample before the batch fails. */
const MAX_REPLACEMENTS = 16;

/** A failure while loading one sample, carried back to the main thread. */
export interface SampleFailure {
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

/** Loads and collates a batch; a throwing sample becomes a SampleFailure naming its index (and file). */
export async function loadBatch(
  dataset: Dataset,
  task: BatchTask,
  workerId: number,
  numWorkers: number,
  collate: CollateFn = defaultCollate,
): Promise<
  { ok: true; batch: ArrayBatch; skipped: SampleFailure[] } | { ok: false; failure: SampleFailure }
> {
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
  try {
    return { ok: true, batch: collate(samples), skipped };
  } catch (e) {
    return { ok: false, failure: { ...describeFailure(e, task.indices[0]), name: 'CollateError' } };
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
 * Builds the dataset a spec describes: `new C(options)` for a class, `f(options)` (awaited)
 * for a factory. The result remembers its spec, so it can be handed to a DataLoader with workers.
 */
export async function loadDataset<S extends Sample = Sample>(spec: DatasetSpec): Promise<Dataset<S>> {
  const f = (await importRef(spec, 'dataset')) as Function;
  const ds = (
    isClass(f)
      ? new (f as new (o: unknown) => unknown)(spec.options)
      : await (f as (o: unknown) => unknown)(spec.options)
  ) as Dataset<S>;
  if (typeof ds?.get !== 'function' || typeof ds.length !== 'number') {
    throw new TypeError(`dataset: ${spec.module}#${spec.export} did not make a dataset (no length/get)`);
  }
  if (typeof ds.workerSpec !== 'function') ds.workerSpec = () => spec;
  return ds;
}
