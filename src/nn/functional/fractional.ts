// Fractional max pooling (torch.nn.functional.fractional_max_pool2d/3d): pooling regions
// placed by random samples in [0, 1), one pair (triple) per batch entry and channel.
import * as t from '../../core/index.ts';
import { withoutIndices } from './common.ts';

export interface FractionalMaxPoolOptions {
  /** Output spatial size; exactly one of outputSize / outputRatio. */
  outputSize?: number | number[] | null;
  /** Output size as a fraction of the input's, in (0, 1). */
  outputRatio?: number | number[] | null;
  /**
   * The samples that place the pooling regions, [N, C, dims] in [0, 1) (PyTorch's
   * `_random_samples`); drawn with t.rand when not given.
   */
  randomSamples?: t.Tensor | null;
}

function fractional(
  dims: 2 | 3,
  input: t.Tensor,
  kernelSize: number | number[],
  opts: FractionalMaxPoolOptions,
): [t.Tensor, t.Tensor] {
  const fn = `fractionalMaxPool${dims}d()`;
  const perDim = (v: number | number[]) =>
    typeof v === 'number' ? Array.from({ length: dims }, () => v) : v;
  let outputSize = opts.outputSize ?? null;
  const ratio = opts.outputRatio ?? null;
  if (outputSize === null && ratio === null) {
    throw new TypeError(`${fn} requires specifying either an outputSize or an outputRatio`);
  }
  if (outputSize === null && ratio !== null) {
    const r = perDim(ratio);
    const shape = input.shape;
    outputSize = r.map((x, i) => Math.trunc(shape[shape.length - dims + i] * x));
  }
  const size = perDim(outputSize as number | number[]);
  return t.tidy(() => {
    let samples = opts.randomSamples ?? null;
    if (samples === null) {
      const batched = input.ndim === dims + 2;
      const nBatch = batched ? input.shape[0] : 1;
      samples = t.rand([nBatch, input.shape[input.ndim - dims - 1], dims], {
        dtype: input.dtype,
        device: input.device,
      });
    }
    return t.ops.call(`aten::fractional_max_pool${dims}d`, input, perDim(kernelSize), size, samples) as [
      t.Tensor,
      t.Tensor,
    ];
  });
}

/** fractional_max_pool2d with return_indices=True: [output, indices]. */
export function fractionalMaxPool2dWithIndices(
  input: t.Tensor,
  kernelSize: number | number[],
  opts: FractionalMaxPoolOptions = {},
): [t.Tensor, t.Tensor] {
  return fractional(2, input, kernelSize, opts);
}

export function fractionalMaxPool2d(
  input: t.Tensor,
  kernelSize: number | number[],
  opts: FractionalMaxPoolOptions = {},
): t.Tensor {
  return withoutIndices(fractional(2, input, kernelSize, opts));
}

/** fractional_max_pool3d with return_indices=True: [output, indices]. */
export function fractionalMaxPool3dWithIndices(
  input: t.Tensor,
  kernelSize: number | number[],
  opts: FractionalMaxPoolOptions = {},
): [t.Tensor, t.Tensor] {
  return fractional(3, input, kernelSize, opts);
}

export function fractionalMaxPool3d(
  input: t.Tensor,
  kernelSize: number | number[],
  opts: FractionalMaxPoolOptions = {},
): t.Tensor {
  return withoutIndices(fractional(3, input, kernelSize, opts));
}
