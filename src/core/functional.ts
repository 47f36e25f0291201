// Hand-written sugar over generated ops where PyTorch's Python API differs from the
// aten schema (string enums, keyword names).
import { crossEntropyLoss, nllLoss } from './ops.generated.ts';
import { checkOptions, optionNames } from './options.ts';
import type { Tensor } from './tensor.ts';

export type Reduction = 'none' | 'mean' | 'sum';

const REDUCTIONS: Record<Reduction, number> = { none: 0, mean: 1, sum: 2 };

export function reductionCode(r: Reduction): number {
  const code = REDUCTIONS[r];
  if (code === undefined)
    throw new TypeError(`reduction must be 'none', 'mean' or 'sum', got '${String(r)}'`);
  return code;
}

export interface CrossEntropyOptions {
  weight?: Tensor | null;
  ignoreIndex?: number;
  reduction?: Reduction;
  labelSmoothing?: number;
}

const CROSS_ENTROPY_OPTIONS = optionNames<CrossEntropyOptions>({
  weight: true,
  ignoreIndex: true,
  reduction: true,
  labelSmoothing: true,
});

/** torch.nn.functional.cross_entropy: class-index or class-probability targets. */
export function crossEntropy(input: Tensor, target: Tensor, options?: CrossEntropyOptions): Tensor {
  const opts = checkOptions('crossEntropy', options, CROSS_ENTROPY_OPTIONS);
  const smoothing = opts.labelSmoothing ?? 0;
  if (!(smoothing >= 0 && smoothing <= 1)) {
    throw new RangeError(`crossEntropy(): labelSmoothing must be in [0, 1], got ${smoothing}`);
  }
  return crossEntropyLoss(
    input,
    target,
    opts.weight ?? null,
    reductionCode(opts.reduction ?? 'mean'),
    opts.ignoreIndex ?? -100,
    smoothing,
  );
}

/** torch.nn.functional.nll_loss. */
export function nll(
  input: Tensor,
  target: Tensor,
  opts: Omit<CrossEntropyOptions, 'labelSmoothing'> = {},
): Tensor {
  return nllLoss(
    input,
    target,
    opts.weight ?? null,
    reductionCode(opts.reduction ?? 'mean'),
    opts.ignoreIndex ?? -100,
  );
}
