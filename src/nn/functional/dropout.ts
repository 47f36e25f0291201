// dropout of torch.nn.functional.
import * as t from '../../core/index.ts';

export interface DropoutOptions {
  /** Probability of zeroing an element. Default 0.5. */
  p?: number;
  /** Apply dropout (false: identity). Default true, as in torch.nn.functional. */
  training?: boolean;
  inplace?: boolean;
}

/** Zeroes elements with probability p and scales the rest by 1/(1-p), in training only. */
export function dropout(input: t.Tensor, opts: DropoutOptions = {}): t.Tensor {
  const p = opts.p ?? 0.5;
  if (!(p >= 0 && p <= 1))
    throw new RangeError(`dropout probability has to be between 0 and 1, but got ${p}`);
  const training = opts.training ?? true;
  return opts.inplace ? t.dropout_(input, p, training) : t.dropout(input, p, training);
}

function checkP(p: number): number {
  if (!(p >= 0 && p <= 1))
    throw new RangeError(`dropout probability has to be between 0 and 1, but got ${p}`);
  return p;
}

// Channel-wise dropout for `batched` (N, C, *spatial) input; unbatched input gets a
// batch dim for the op, as PyTorch's dropout1d/dropout3d do.
function featureDropout(input: t.Tensor, opts: DropoutOptions, batched: boolean, alpha: boolean): t.Tensor {
  const p = checkP(opts.p ?? 0.5);
  const training = opts.training ?? true;
  const name = alpha ? 'aten::feature_alpha_dropout' : 'aten::feature_dropout';
  if (opts.inplace) {
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
export function dropout1d(input: t.Tensor, opts: DropoutOptions = {}): t.Tensor {
  if (input.ndim !== 2 && input.ndim !== 3) {
    throw new RangeError(`dropout1d: expected 2-d or 3-d input, got ${input.ndim}-d`);
  }
  return featureDropout(input, opts, input.ndim === 3, false);
}

/** Zeroes whole channels of [N, C, H, W] input (PyTorch treats 3-d input as [N, C, L]). */
export function dropout2d(input: t.Tensor, opts: DropoutOptions = {}): t.Tensor {
  return featureDropout(input, opts, true, false);
}

/** Zeroes whole channels of [N, C, D, H, W] or [C, D, H, W] input. */
export function dropout3d(input: t.Tensor, opts: DropoutOptions = {}): t.Tensor {
  if (input.ndim !== 4 && input.ndim !== 5) {
    throw new RangeError(`dropout3d: expected 4-d or 5-d input, got ${input.ndim}-d`);
  }
  return featureDropout(input, opts, input.ndim === 5, false);
}

/** Dropout that keeps a SELU network's mean and variance; unlike dropout, training defaults to false. */
export function alphaDropout(input: t.Tensor, opts: DropoutOptions = {}): t.Tensor {
  const p = checkP(opts.p ?? 0.5);
  const training = opts.training ?? false;
  return t.ops.call(
    opts.inplace ? 'aten::alpha_dropout_' : 'aten::alpha_dropout',
    input,
    p,
    training,
  ) as t.Tensor;
}

/** Channel-wise alphaDropout; training defaults to false, as in PyTorch. */
export function featureAlphaDropout(input: t.Tensor, opts: DropoutOptions = {}): t.Tensor {
  return featureDropout(input, { ...opts, training: opts.training ?? false }, true, true);
}
