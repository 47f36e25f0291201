// torch.utils.data.random_split: the same subsets as PyTorch for the same generator seed.
// One libtorch randperm over the whole dataset, cut in order into the lengths, exactly as
// PyTorch's, so a train/val split made in Python and in tsddp holds the same samples.
// Separate from dataset.ts, which workers load: this module uses libtorch's generator.
import * as t from '../core/index.ts';
import { Subset } from './dataset.ts';
import type { Dataset, Sample } from './types.ts';

/** Python's math.isclose(a, b) with its default rel_tol=1e-9, abs_tol=0. */
function isClose(a: number, b: number): boolean {
  return Math.abs(a - b) <= 1e-9 * Math.max(Math.abs(a), Math.abs(b));
}

/**
 * Splits `dataset` at random into non-overlapping Subsets of the given lengths, as
 * torch.utils.data.random_split: lengths that sum to 1 (within math.isclose, and not
 * above it) are fractions, each floor(fraction * length) with the remainder handed out
 * one by one round-robin from the first split (an empty split warns, as in PyTorch);
 * other lengths must be non-negative integers summing to the dataset's length. The
 * indices are one `randperm(length, generator)` cut in order, so with an equally seeded
 * generator (or after the same `manualSeed`, without one) the splits are PyTorch's.
 */
export function randomSplit<S extends Sample = Sample>(
  dataset: Dataset<S>,
  lengths: readonly number[],
  generator?: t.Generator,
): Subset<S>[] {
  const n = dataset.length;
  // Python's sum(): left to right from 0, so float sums round as PyTorch's do.
  const sum = (xs: readonly number[]) => xs.reduce((a, b) => a + b, 0);
  let sizes: number[];
  if (isClose(sum(lengths), 1) && sum(lengths) <= 1) {
    sizes = lengths.map((frac, i) => {
      if (!(frac >= 0 && frac <= 1)) throw new RangeError(`Fraction at index ${i} is not between 0 and 1`);
      return Math.floor(n * frac);
    });
    const remainder = n - sum(sizes);
    for (let i = 0; i < remainder; i++) sizes[i % sizes.length] += 1;
    for (const [i, size] of sizes.entries()) {
      if (size === 0)
        process.emitWarning(
          `randomSplit: length of split at index ${i} is 0. This might result in an empty dataset.`,
          'TsddpWarning',
        );
    }
  } else {
    sizes = [...lengths];
  }
  // PyTorch checks the sum first (so its message comes first), then slices by the lengths,
  // which must be whole numbers.
  if (sum(sizes) !== n)
    throw new RangeError('Sum of input lengths does not equal the length of the input dataset!');
  for (const [i, size] of sizes.entries()) {
    if (!Number.isInteger(size) || size < 0)
      throw new RangeError(
        `randomSplit: length at index ${i} is ${size}; lengths are non-negative integers, or fractions that sum to 1`,
      );
  }
  const indices = t.tidy(() => {
    const perm = generator ? t.randperm(n, { generator }) : t.randperm(n);
    return Array.from(perm.toTypedArray() as BigInt64Array, Number);
  });
  const out: Subset<S>[] = [];
  let offset = 0;
  for (const size of sizes) {
    out.push(new Subset(dataset, indices.slice(offset, offset + size)));
    offset += size;
  }
  return out;
}
