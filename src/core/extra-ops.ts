// Hand-written torch functions whose Python form differs from any one aten schema:
// unique (a choice of ops and of what it returns), meshgrid (varargs and an `indexing`
// keyword), cdist (a string compute mode). Each calls libtorch's op through call.ts.
import { call } from './call.ts';
import { checkOptions, optionNames } from './options.ts';
import type { Tensor } from './tensor.ts';

export interface UniqueOptions {
  sorted?: boolean;
  returnInverse?: boolean;
  returnCounts?: boolean;
  /** Unique slices along this dimension; the flattened tensor's unique values when null. */
  dim?: number | null;
}

const UNIQUE_OPTIONS = optionNames<UniqueOptions>({
  sorted: true,
  returnInverse: true,
  returnCounts: true,
  dim: true,
});

/**
 * torch.unique: the unique values (or slices along `dim`), with the inverse indices
 * and/or counts when asked, in that order, as PyTorch returns them.
 */
export function unique(
  input: Tensor,
  opts?: UniqueOptions & { returnInverse?: false; returnCounts?: false },
): Tensor;
export function unique(
  input: Tensor,
  opts: UniqueOptions & { returnInverse: true; returnCounts: true },
): [Tensor, Tensor, Tensor];
export function unique(input: Tensor, opts: UniqueOptions): [Tensor, Tensor];
export function unique(input: Tensor, options?: UniqueOptions): Tensor | Tensor[] {
  const opts = checkOptions('unique', options, UNIQUE_OPTIONS);
  const sorted = opts.sorted ?? true;
  const inverse = opts.returnInverse ?? false;
  const counts = opts.returnCounts ?? false;
  const [out, inv, cnt] = (
    opts.dim == null
      ? call('aten::_unique2', input, sorted, inverse, counts)
      : call('aten::unique_dim', input, opts.dim, sorted, inverse, counts)
  ) as Tensor[];
  if (!inverse && !counts) return out;
  const r = [out];
  if (inverse) r.push(inv);
  if (counts) r.push(cnt);
  return r;
}

export type MeshgridIndexing = 'ij' | 'xy';

/**
 * torch.meshgrid(*tensors, indexing='ij'): coordinate grids. The tensors come as
 * arguments or as one array, optionally followed by `{ indexing }` ('ij' as PyTorch's
 * default; 'xy' swaps the first two output dimensions, like numpy).
 */
export function meshgrid(...args: (Tensor | Tensor[] | { indexing?: MeshgridIndexing })[]): Tensor[] {
  let indexing: MeshgridIndexing = 'ij';
  const last = args[args.length - 1];
  if (last !== undefined && !Array.isArray(last) && !('h' in last)) {
    indexing = last.indexing ?? 'ij';
    args = args.slice(0, -1);
  }
  if (indexing !== 'ij' && indexing !== 'xy')
    throw new TypeError(`meshgrid(): indexing must be 'ij' or 'xy', got '${String(indexing)}'`);
  const tensors = (args.length === 1 && Array.isArray(args[0]) ? args[0] : args) as Tensor[];
  return call('aten::meshgrid.indexing', tensors, indexing) as Tensor[];
}

const CDIST_MODES = {
  use_mm_for_euclid_dist_if_necessary: null,
  use_mm_for_euclid_dist: 1,
  donot_use_mm_for_euclid_dist: 2,
} as const;

export interface CdistOptions {
  p?: number;
  computeMode?: keyof typeof CDIST_MODES;
}

const CDIST_OPTIONS = optionNames<CdistOptions>({ p: true, computeMode: true });

/** torch.cdist: the p-norm distance between each pair of rows of x1 and x2. */
export function cdist(x1: Tensor, x2: Tensor, p?: number | CdistOptions, opts: CdistOptions = {}): Tensor {
  const o = checkOptions('cdist', typeof p === 'object' ? p : { ...opts, p: p ?? opts.p }, CDIST_OPTIONS);
  const mode = o.computeMode ?? 'use_mm_for_euclid_dist_if_necessary';
  if (!(mode in CDIST_MODES)) {
    throw new TypeError(
      `cdist(): computeMode must be one of ${Object.keys(CDIST_MODES).join(', ')}, got '${String(mode)}'`,
    );
  }
  return call('aten::cdist', x1, x2, o.p ?? 2, CDIST_MODES[mode]) as Tensor;
}
