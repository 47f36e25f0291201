// Samplers: which dataset indices an epoch visits, in which order (torch.utils.data.sampler
// and torch.utils.data.distributed). Random orders come from libtorch's own randperm and
// generators, so with the same seeds they are index-for-index PyTorch's orders.
import * as t from '../core/index.ts';
import { checkOptions, optionNames } from '../core/options.ts';
import { envInt } from '../env/index.ts';

/** Anything with a length, like a Dataset (PyTorch's `Sized`). */
export interface Sized {
  readonly length: number;
}

/**
 * An iterable of indices (or, for a batch sampler, of index lists) with a known length
 * (torch.utils.data.Sampler): a class to extend or an interface to implement.
 */
export abstract class Sampler<T = number> implements Iterable<T> {
  abstract readonly length: number;
  abstract [Symbol.iterator](): Iterator<T>;
  /** Samplers whose order depends on the epoch (DistributedSampler) take it here. */
  setEpoch?(epoch: number): void;
}

function checkPositiveInt(name: string, v: number): void {
  if (!Number.isInteger(v) || v <= 0) throw new RangeError(`${name} should be a positive integer, got ${v}`);
}

/** int64 tensor values as JS numbers (indices are far below 2^53). */
function indexList(x: t.Tensor): number[] {
  const a = x.toTypedArray() as BigInt64Array;
  const out = new Array<number>(a.length);
  for (let i = 0; i < a.length; i++) out[i] = Number(a[i]);
  return out;
}

/** randperm(n) drawn from `g`, as numbers. */
export function randpermList(n: number, g: t.Generator): number[] {
  return t.tidy(() => indexList(t.randperm(n, { generator: g })));
}

/**
 * A 63-bit seed drawn from `g` (or the default generator), exactly as PyTorch's
 * `torch.empty((), dtype=torch.int64).random_(generator=g).item()`. A bigint: the value
 * does not fit a double.
 */
export function drawSeed(g?: t.Generator): bigint {
  return t.tidy(() => {
    const x = t.empty([], { dtype: 'int64' });
    if (g) x.random_({ generator: g });
    else x.random_();
    return (x.toTypedArray() as BigInt64Array)[0];
  });
}

/** 0, 1, ..., n-1. */
export class SequentialSampler implements Sampler {
  constructor(private readonly dataSource: Sized) {}
  get length(): number {
    return this.dataSource.length;
  }
  *[Symbol.iterator](): Iterator<number> {
    const n = this.dataSource.length;
    for (let i = 0; i < n; i++) yield i;
  }
}

export interface RandomSamplerOptions {
  /** Draw with replacement (torch.randint in chunks of 32) instead of permutations. */
  replacement?: boolean;
  /** How many indices an epoch yields (default: the dataset's length). */
  numSamples?: number;
  /** The generator to draw from; it advances with every epoch. */
  generator?: t.Generator;
}

const RANDOM_OPTIONS = optionNames<RandomSamplerOptions>({
  replacement: true,
  numSamples: true,
  generator: true,
});

/**
 * Random order, like torch.utils.data.RandomSampler, drawing exactly the same calls:
 * without a generator each epoch first draws a seed from the default generator
 * (`empty(int64).random_()`) and seeds a fresh generator with it; with one, it draws
 * from that generator directly. Without replacement, whole randperms (and a prefix of
 * one more when numSamples is not a multiple of n); with replacement, randint in
 * chunks of 32. After the same `manualSeed` (or with an equally seeded generator) the
 * order equals PyTorch's.
 */
export class RandomSampler implements Sampler {
  readonly replacement: boolean;
  readonly generator: t.Generator | undefined;
  private readonly numSamplesOpt: number | undefined;

  constructor(
    private readonly dataSource: Sized,
    options?: RandomSamplerOptions,
  ) {
    const opts = checkOptions('RandomSampler', options, RANDOM_OPTIONS);
    this.replacement = opts.replacement ?? false;
    if (typeof this.replacement !== 'boolean') {
      throw new TypeError(`RandomSampler: replacement should be a boolean, got ${String(this.replacement)}`);
    }
    this.numSamplesOpt = opts.numSamples;
    this.generator = opts.generator;
    checkPositiveInt('RandomSampler: numSamples', this.length);
  }

  get length(): number {
    return this.numSamplesOpt ?? this.dataSource.length;
  }

  *[Symbol.iterator](): Iterator<number> {
    const n = this.dataSource.length;
    const total = this.length;
    // The generator is set up on the first next(), as PyTorch's generator function does.
    const g = this.generator ?? new t.Generator().manualSeed(drawSeed());
    if (this.replacement) {
      const chunk = (size: number): number[] =>
        t.tidy(() => indexList(t.randint(n, [size], { generator: g, dtype: 'int64' })));
      for (let k = 0; k < Math.floor(total / 32); k++) yield* chunk(32);
      yield* chunk(total % 32);
    } else {
      for (let k = 0; k < Math.floor(total / n); k++) yield* randpermList(n, g);
      yield* randpermList(n, g).slice(0, total % n);
    }
  }
}

/** The given indices in random order (torch.utils.data.SubsetRandomSampler). */
export class SubsetRandomSampler implements Sampler {
  constructor(
    private readonly indices: readonly number[],
    private readonly generator?: t.Generator,
  ) {}
  get length(): number {
    return this.indices.length;
  }
  *[Symbol.iterator](): Iterator<number> {
    const perm = t.tidy(() =>
      indexList(
        this.generator
          ? t.randperm(this.indices.length, { generator: this.generator })
          : t.randperm(this.indices.length),
      ),
    );
    for (const i of perm) yield this.indices[i];
  }
}

export interface WeightedRandomSamplerOptions {
  /** Draw with replacement (default true, as in PyTorch); without, each index at most once. */
  replacement?: boolean;
  /** The generator to draw from (default: the default generator); it advances with every epoch. */
  generator?: t.Generator;
}

const WEIGHTED_OPTIONS = optionNames<WeightedRandomSamplerOptions>({ replacement: true, generator: true });

/**
 * Indices 0..weights.length-1 drawn with probabilities proportional to `weights`, like
 * torch.utils.data.WeightedRandomSampler: each epoch is one
 * `torch.multinomial(weights, numSamples, replacement, generator)` (libtorch's own), so
 * with an equally seeded generator (or after the same `manualSeed`) the draws are
 * PyTorch's. The weights need not sum to one. Bad arguments are refused here, at
 * construction, where PyTorch would fail at the first draw.
 */
export class WeightedRandomSampler implements Sampler {
  /** The weights as float64 (PyTorch keeps `torch.as_tensor(weights, dtype=torch.double)`). */
  readonly weights: Float64Array;
  readonly numSamples: number;
  readonly replacement: boolean;
  readonly generator: t.Generator | undefined;

  constructor(
    weights: ArrayLike<number> | t.Tensor,
    numSamples: number,
    options?: WeightedRandomSamplerOptions,
  ) {
    const what = 'WeightedRandomSampler';
    const opts = checkOptions(what, options, WEIGHTED_OPTIONS);
    if (typeof numSamples !== 'number' || !Number.isInteger(numSamples) || numSamples <= 0) {
      throw new RangeError(`${what}: numSamples should be a positive integer, got ${String(numSamples)}`);
    }
    const replacement = opts.replacement ?? true;
    if (typeof replacement !== 'boolean') {
      throw new TypeError(`${what}: replacement should be a boolean, got ${String(replacement)}`);
    }
    this.weights = weightsArray(weights, what);
    this.numSamples = numSamples;
    this.replacement = replacement;
    this.generator = opts.generator;
    const n = this.weights.length;
    if (!replacement && numSamples > n) {
      throw new RangeError(
        `${what}: numSamples (${numSamples}) is more than the ${n} weights; without replacement each index is drawn at most once`,
      );
    }
  }

  get length(): number {
    return this.numSamples;
  }

  *[Symbol.iterator](): Iterator<number> {
    // Drawn on the first next(), as PyTorch's generator function does.
    const draws = t.tidy(() => {
      const w = t.tensor(this.weights, { dtype: 'float64' });
      const opts = this.generator ? { generator: this.generator } : {};
      return indexList(t.multinomial(w, this.numSamples, this.replacement, opts));
    });
    yield* draws;
  }
}

/** The weights as a Float64Array: one dimension, at least one, finite, non-negative, not all zero. */
function weightsArray(weights: ArrayLike<number> | t.Tensor, what: string): Float64Array {
  let w: Float64Array;
  if (weights instanceof t.Tensor) {
    if (weights.dim() !== 1) {
      throw new RangeError(`${what}: weights should be 1-D, got shape [${weights.shape.join(', ')}]`);
    }
    w = t.tidy(() => Float64Array.from(weights.to('float64').toTypedArray() as Float64Array));
  } else {
    if (weights === null || typeof weights !== 'object' || typeof weights.length !== 'number') {
      throw new TypeError(`${what}: weights should be an array of numbers or a 1-D tensor`);
    }
    w = new Float64Array(weights.length);
    for (let i = 0; i < weights.length; i++) {
      const x = weights[i];
      if (typeof x !== 'number') {
        throw new TypeError(
          `${what}: weights should be 1-D numbers, but weights[${i}] is ${Array.isArray(x) ? 'an array' : typeof x}`,
        );
      }
      w[i] = x;
    }
  }
  if (w.length === 0) throw new RangeError(`${what}: weights is empty`);
  let sum = 0;
  for (let i = 0; i < w.length; i++) {
    if (!(w[i] >= 0) || w[i] === Number.POSITIVE_INFINITY) {
      throw new RangeError(`${what}: weights[${i}] is ${w[i]}; weights must be finite and non-negative`);
    }
    sum += w[i];
  }
  if (sum === 0) throw new RangeError(`${what}: weights are all zero; at least one must be positive`);
  return w;
}

/**
 * Groups another sampler's indices into lists of `batchSize` (torch.utils.data.BatchSampler),
 * the last one shorter unless `dropLast`. The sampler may be any iterable of indices; its
 * length is needed only for the BatchSampler's.
 */
export class BatchSampler implements Sampler<number[]> {
  constructor(
    readonly sampler: Sampler | Iterable<number>,
    readonly batchSize: number,
    readonly dropLast: boolean,
  ) {
    checkPositiveInt('BatchSampler: batchSize', batchSize);
    if (typeof dropLast !== 'boolean')
      throw new TypeError(`BatchSampler: dropLast should be a boolean, got ${String(dropLast)}`);
  }
  get length(): number {
    const n = (this.sampler as Partial<Sized>).length;
    if (typeof n !== 'number') throw new TypeError('BatchSampler: its sampler has no length');
    return this.dropLast ? Math.floor(n / this.batchSize) : Math.ceil(n / this.batchSize);
  }
  setEpoch(epoch: number): void {
    (this.sampler as Sampler).setEpoch?.(epoch);
  }
  *[Symbol.iterator](): Iterator<number[]> {
    let batch: number[] = [];
    for (const i of this.sampler) {
      batch.push(i);
      if (batch.length === this.batchSize) {
        yield batch;
        batch = [];
      }
    }
    if (batch.length > 0 && !this.dropLast) yield batch;
  }
}

export interface DistributedSamplerOptions {
  /** Number of processes (default: the WORLD_SIZE environment variable, as torchrun sets it). */
  numReplicas?: number;
  /** This process's rank (default: the RANK environment variable). */
  rank?: number;
  shuffle?: boolean;
  /** Must be the same on every rank. */
  seed?: number;
  /**
   * Drop the tail so every rank gets floor(N / replicas) samples; otherwise the head of
   * the (shuffled) list is repeated to make N a multiple of the number of replicas.
   */
  dropLast?: boolean;
}

const DISTRIBUTED_OPTIONS = optionNames<DistributedSamplerOptions>({
  numReplicas: true,
  rank: true,
  shuffle: true,
  seed: true,
  dropLast: true,
});

/** RANK / WORLD_SIZE as the launcher sets them (src/env), for an option not given. */
function fromLauncher(name: string, what: string): number {
  return envInt(name, { missing: `DistributedSampler: pass ${what} (or set ${name}, as the launcher does)` });
}

/**
 * Splits a dataset among `numReplicas` processes, exactly like
 * torch.utils.data.distributed.DistributedSampler: a permutation from a generator seeded
 * `seed + epoch` (or 0..N-1 without shuffle), padded by repeating its head to a multiple
 * of `numReplicas` (or cut with `dropLast`), then every `numReplicas`-th index from
 * `rank`. Every rank gets the same count, so DDP steps stay in lockstep. Call
 * `setEpoch(epoch)` before each epoch, or every epoch repeats the same order — a second
 * iteration of the same shuffled epoch logs a warning once.
 */
export class DistributedSampler implements Sampler {
  readonly numReplicas: number;
  readonly rank: number;
  readonly shuffle: boolean;
  readonly seed: number;
  readonly dropLast: boolean;
  readonly numSamples: number;
  readonly totalSize: number;
  epoch = 0;
  /** The epoch whose last full pass finished (see the iterator). */
  private completedEpoch: number | undefined;
  private warned = false;

  constructor(
    private readonly dataset: Sized,
    options?: DistributedSamplerOptions,
  ) {
    const opts = checkOptions('DistributedSampler', options, DISTRIBUTED_OPTIONS);
    this.numReplicas = opts.numReplicas ?? fromLauncher('WORLD_SIZE', 'numReplicas');
    this.rank = opts.rank ?? fromLauncher('RANK', 'rank');
    checkPositiveInt('DistributedSampler: numReplicas', this.numReplicas);
    if (!Number.isInteger(this.rank) || this.rank < 0 || this.rank >= this.numReplicas) {
      throw new RangeError(
        `DistributedSampler: invalid rank ${this.rank}, rank should be in the interval [0, ${this.numReplicas - 1}]`,
      );
    }
    this.shuffle = opts.shuffle ?? true;
    this.seed = opts.seed ?? 0;
    if (!Number.isSafeInteger(this.seed)) throw new TypeError(`DistributedSampler: seed must be an integer`);
    this.dropLast = opts.dropLast ?? false;
    const n = dataset.length;
    // PyTorch's formula; max(0, ·) + 0 turns its -0 for n < numReplicas into a plain 0.
    this.numSamples =
      Math.max(
        0,
        this.dropLast && n % this.numReplicas !== 0
          ? Math.ceil((n - this.numReplicas) / this.numReplicas)
          : Math.ceil(n / this.numReplicas),
      ) + 0;
    this.totalSize = this.numSamples * this.numReplicas;
  }

  get length(): number {
    return this.numSamples;
  }

  setEpoch(epoch: number): void {
    if (!Number.isSafeInteger(epoch)) throw new TypeError(`DistributedSampler.setEpoch(): got ${epoch}`);
    this.epoch = epoch;
  }

  /** This rank's indices for the current epoch. */
  indices(): number[] {
    const n = this.dataset.length;
    let indices: number[];
    if (this.shuffle) {
      const g = new t.Generator().manualSeed(this.seed + this.epoch);
      indices = randpermList(n, g);
    } else {
      indices = Array.from({ length: n }, (_, i) => i);
    }
    if (!this.dropLast) {
      const padding = this.totalSize - indices.length;
      // Repeat the whole list as often as needed (tiny datasets, many replicas), then cut.
      const head: number[] = [];
      while (head.length < padding) head.push(...indices.slice(0, padding - head.length));
      indices = indices.concat(head);
    } else {
      indices = indices.slice(0, this.totalSize);
    }
    const out: number[] = [];
    for (let i = this.rank; i < this.totalSize; i += this.numReplicas) out.push(indices[i]);
    return out;
  }

  /**
   * Warns when a second full pass over a shuffled epoch starts without setEpoch (the same
   * order again, the mistake PyTorch's docs warn of). A pass left unfinished, such as a
   * peek at the first batch before the epoch loop, does not count.
   */
  *[Symbol.iterator](): Iterator<number> {
    if (this.shuffle && this.completedEpoch === this.epoch && !this.warned) {
      this.warned = true;
      console.warn(
        `DistributedSampler: epoch ${this.epoch} is being iterated again with the same shuffle order; ` +
          'call sampler.setEpoch(epoch) before each epoch to get a new order (this warning is shown once)',
      );
    }
    const epoch = this.epoch;
    yield* this.indices();
    this.completedEpoch = epoch;
  }
}

/**
 * For evaluation: splits a dataset among ranks without padding or dropping, so across
 * ranks every sample is counted exactly once (rank r gets r, r + R, r + 2R, ...; counts
 * differ by at most one). Not for DDP training steps: uneven counts would leave a rank
 * waiting in a collective. Reduce metrics with a sum of (correct, count) per rank.
 */
export class DistributedEvalSampler implements Sampler {
  readonly numReplicas: number;
  readonly rank: number;

  constructor(
    private readonly dataset: Sized,
    options?: { numReplicas?: number; rank?: number },
  ) {
    const opts = checkOptions('DistributedEvalSampler', options, ['numReplicas', 'rank']);
    this.numReplicas = opts.numReplicas ?? fromLauncher('WORLD_SIZE', 'numReplicas');
    this.rank = opts.rank ?? fromLauncher('RANK', 'rank');
    checkPositiveInt('DistributedEvalSampler: numReplicas', this.numReplicas);
    if (!Number.isInteger(this.rank) || this.rank < 0 || this.rank >= this.numReplicas) {
      throw new RangeError(
        `DistributedEvalSampler: invalid rank ${this.rank} for ${this.numReplicas} replicas`,
      );
    }
  }

  get length(): number {
    const n = this.dataset.length;
    return Math.floor(n / this.numReplicas) + (this.rank < n % this.numReplicas ? 1 : 0);
  }

  *[Symbol.iterator](): Iterator<number> {
    for (let i = this.rank; i < this.dataset.length; i += this.numReplicas) yield i;
  }
}
