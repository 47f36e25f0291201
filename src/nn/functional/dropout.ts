// dropout of torch.nn.functional, with PyTorch's parameters positional or by name
// (nn/args.ts).
import * as t from '../../core/index.ts';
import { define } from '../args.ts';

export interface DropoutOptions {
  /** Probability of zeroing an element. Default 0.5. */
  p?: number;
  /** Apply dropout (false: identity). Default true, as in torch.nn.functional. */
  training?: boolean;
  inplace?: boolean;
}

type DropoutParams = { input: t.Tensor } & DropoutOptions;

// Every dropout function: (input, p=0.5, training, inplace=False).
const DROPOUT = { required: ['input'], optional: ['p', 'training', 'inplace'] } as const;

function checkP(p: number): number {
  if (!(p >= 0 && p <= 1))
    throw new RangeError(`dropout probability has to be between 0 and 1, but got ${p}`);
  return p;
}

/** Zeroes elements with probability p and scales the rest by 1/(1-p), in training only. */
export const dropout = define('dropout', DROPOUT, (a: DropoutParams): t.Tensor => {
  const p = checkP(a.p ?? 0.5);
  const training = a.training ?? true;
  return a.inplace ? t.dropout_(a.input, p, training) : t.dropout(a.input, p, training);
});

// Channel-wise dropout for `batched` (N, C, *spatial) input; unbatched input gets a
// batch dim for the op, as PyTorch's dropout1d/dropout3d do.
function featureDropout(a: DropoutParams, batched: boolean, alpha: boolean): t.Tensor {
  const { input } = a;
  const p = checkP(a.p ?? 0.5);
  const training = a.training ?? true;
  const name = alpha ? 'aten::feature_alpha_dropout' : 'aten::feature_dropout';
  if (a.inplace) {
    // An in-place op on the unsqueezed view writes through to the input.
    t.tidy(() => {
      t.ops.call(`${name}_`, batched ? input : t.unsqueeze(input, 0), p, training);
    });
    return input;
  }
  if (batched) return t.ops.call(name, input, p, training) as t.Tensor;
  return t.tidy(() => t.squeeze(t.ops.call(name, t.unsqueeze(input, 0), p, training) as t.Tensor, 0));
}

/** Zeroes whole channels of [N, C, L] or [C, L] input. */
export const dropout1d = define('dropout1d', DROPOUT, (a: DropoutParams): t.Tensor => {
  if (a.input.ndim !== 2 && a.input.ndim !== 3) {
    throw new RangeError(`dropout1d: expected 2-d or 3-d input, got ${a.input.ndim}-d`);
  }
  return featureDropout(a, a.input.ndim === 3, false);
});

/** Zeroes whole channels of [N, C, H, W] input (PyTorch treats 3-d input as [N, C, L]). */
export const dropout2d = define(
  'dropout2d',
  DROPOUT,
  (a: DropoutParams): t.Tensor => featureDropout(a, true, false),
);

/** Zeroes whole channels of [N, C, D, H, W] or [C, D, H, W] input. */
export const dropout3d = define('dropout3d', DROPOUT, (a: DropoutParams): t.Tensor => {
  if (a.input.ndim !== 4 && a.input.ndim !== 5) {
    throw new RangeError(`dropout3d: expected 4-d or 5-d input, got ${a.input.ndim}-d`);
  }
  return featureDropout(a, a.input.ndim === 5, false);
});

/** Dropout that keeps a SELU network's mean and variance; unlike dropout, training defaults to false. */
export const alphaDropout = define('alphaDropout', DROPOUT, (a: DropoutParams): t.Tensor => {
  const p = checkP(a.p ?? 0.5);
  const op = a.inplace ? 'aten::alpha_dropout_' : 'aten::alpha_dropout';
  return t.ops.call(op, a.input, p, a.training ?? false) as t.Tensor;
});

/** Channel-wise alphaDropout; training defaults to false, as in PyTorch. */
export const featureAlphaDropout = define(
  'featureAlphaDropout',
  DROPOUT,
  (a: DropoutParams): t.Tensor => featureDropout({ ...a, training: a.training ?? false }, true, true),
);
