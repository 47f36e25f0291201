// Shared pieces of nn.functional: argument types, the reduction reading, and the one
// door to aten ops the generated wrappers do not cover.
import * as t from '../../core/index.ts';

export type { Reduction } from '../../core/index.ts';

/** An int, or one int per spatial dim (PyTorch's `_size_2_t` and friends). */
export type IntOrPair = number | [number, number] | number[];

/** `reduction` as torch.nn.functional takes it: 'mean' (default), 'sum' or 'none'. */
export interface ReductionOptions {
  reduction?: t.Reduction;
}

/** The aten reduction enum of a string `reduction`, or a TypeError naming the bad value. */
export function reductionOf(opts: ReductionOptions, fn: string): number {
  const r = opts.reduction ?? 'mean';
  if (r !== 'mean' && r !== 'sum' && r !== 'none') {
    throw new TypeError(`${fn}(): reduction must be 'none', 'mean' or 'sum', got ${JSON.stringify(r)}`);
  }
  return t.reductionCode(r);
}

/** Calls an aten op by schema name with positional arguments; for ops with one Tensor result. */
export function aten(name: string, ...args: unknown[]): t.Tensor {
  return t.ops.call(name, ...args) as t.Tensor;
}

/** The output of an op that also returns indices (a `return_indices=False` call), the indices freed. */
export function withoutIndices([out, indices]: [t.Tensor, t.Tensor]): t.Tensor {
  indices.dispose();
  return out;
}

/** PyTorch's `_verify_batch_size`: batch statistics need more than one value per channel. */
export function verifyBatchSize(size: number[]): void {
  let n = size[0];
  for (let i = 2; i < size.length; i++) n *= size[i];
  if (n === 1) {
    throw new RangeError(
      `Expected more than 1 value per channel when training, got input size [${size.join(', ')}]`,
    );
  }
}

export function sameShape(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && a.every((d, i) => d === b[i]);
}

export function shapeText(s: readonly number[]): string {
  return `[${s.join(', ')}]`;
}
