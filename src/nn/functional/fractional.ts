// Fractional max pooling (torch.nn.functional.fractional_max_pool2d/3d): pooling regions
// placed by random samples in [0, 1), one pair (triple) per batch entry and channel.
import * as t from '../../core/index.ts';
import { define } from '../args.ts';
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
  /** PyTorch's name of randomSamples. */
  _randomSamples?: t.Tensor | null;
  /**
   * Only false in fractionalMaxPool{2,3}d (call fractionalMaxPool{2,3}dWithIndices for the
   * indices); the WithIndices forms ignore it, as PyTorch's do.
   */
  returnIndices?: boolean;
}

type FractionalParams = { input: t.Tensor; kernelSize: number | number[] } & FractionalMaxPoolOptions;

// (input, kernel_size, output_size, output_ratio, return_indices, _random_samples); tsddp
// also names the samples randomSamples.
const SIG = {
  required: ['input', 'kernelSize'],
  optional: ['outputSize', 'outputRatio', 'returnIndices', '_randomSamples'],
  aliases: { randomSamples: '_randomSamples' },
} as const;
const WITHOUT_INDICES = { ...SIG, unsupported: { returnIndices: false } } as const;
const WITH_INDICES = { ...SIG, inert: ['returnIndices'] } as const;
const hint = (dims: number) => ({
  returnIndices: `call fractionalMaxPool${dims}dWithIndices for the indices`,
});

function fractional(dims: 2 | 3, opts: FractionalParams): [t.Tensor, t.Tensor] {
  const { input, kernelSize } = opts;
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
    let samples = opts._randomSamples ?? null;
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

// Each rank's two functions: the WithIndices form, and the plain one refusing returnIndices.
const withIndicesOfRank = (dims: 2 | 3) =>
  define(`fractionalMaxPool${dims}dWithIndices`, WITH_INDICES, (a: FractionalParams): [t.Tensor, t.Tensor] =>
    fractional(dims, a),
  );
const withoutIndicesOfRank = (dims: 2 | 3) =>
  define(
    `fractionalMaxPool${dims}d`,
    { ...WITHOUT_INDICES, hints: hint(dims) },
    (a: FractionalParams): t.Tensor => withoutIndices(fractional(dims, a)),
  );

/** fractional_max_pool2d with return_indices=True: [output, indices]. */
export const fractionalMaxPool2dWithIndices = withIndicesOfRank(2);
/** Max pooling of [N, C, H, W] over pseudo-random regions (fractional_max_pool2d). */
export const fractionalMaxPool2d = withoutIndicesOfRank(2);
/** fractional_max_pool3d with return_indices=True: [output, indices]. */
export const fractionalMaxPool3dWithIndices = withIndicesOfRank(3);
/** Max pooling of [N, C, D, H, W] over pseudo-random regions (fractional_max_pool3d). */
export const fractionalMaxPool3d = withoutIndicesOfRank(3);
