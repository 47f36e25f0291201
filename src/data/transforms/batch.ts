// Batched tensor transforms: the same augmentations on a whole [B, C, H, W] batch at once,
// with tensor ops on the batch's device (one kernel per step instead of B small loops in
// a worker). Main thread only: these use the native addon.
import * as t from '../../core/index.ts';

export interface BatchRandomOptions {
  /** Generator for the random draws (default: the global one). */
  generator?: t.Generator;
}

/** uint8 [B, H, W, C] (as loaded) to float32 [B, C, H, W] in [0, 1], like ToTensor per sample. */
export function toTensorBatch(x: t.Tensor): t.Tensor {
  if (x.dtype !== 'uint8' || x.ndim !== 4) {
    throw new TypeError(`toTensorBatch: expects a uint8 [B, H, W, C] batch, got ${x.dtype} [${x.shape}]`);
  }
  return t.tidy(() => x.permute([0, 3, 1, 2]).to('float32').div(255).contiguous());
}

/** (x - mean[c]) / std[c] over a float [B, C, H, W] batch, on its device. */
export function normalizeBatch(x: t.Tensor, mean: number[], std: number[]): t.Tensor {
  const c = x.shape[1];
  if (x.ndim !== 4 || (mean.length !== c && mean.length !== 1) || std.length !== mean.length) {
    throw new RangeError(
      `normalizeBatch: ${mean.length} means/${std.length} stds for a batch of shape [${x.shape}]`,
    );
  }
  return t.tidy(() => {
    const opts = { dtype: x.dtype, device: x.device, shape: [1, mean.length, 1, 1] };
    const m = t.tensor(Float64Array.from(mean), opts);
    const s = t.tensor(Float64Array.from(std), opts);
    return x.sub(m).div(s);
  });
}

/** Flips each sample of a [B, C, H, W] batch left-right with probability p. */
export function randomHorizontalFlipBatch(
  x: t.Tensor,
  opts: BatchRandomOptions & { p?: number } = {},
): t.Tensor {
  const p = opts.p ?? 0.5;
  return t.tidy(() => {
    const b = x.shape[0];
    const u = opts.generator
      ? t.rand([b], { generator: opts.generator, device: x.device })
      : t.rand([b], { device: x.device });
    const flip = u.lt(p).view([b, 1, 1, 1]);
    return t.where(flip, x.flip([3]), x);
  });
}

/**
 * RandomCrop on every sample of a [B, C, H, W] batch: zero padding on all sides, then a
 * size x size window placed uniformly at random, independently per sample.
 */
export function randomCropBatch(
  x: t.Tensor,
  size: number,
  opts: BatchRandomOptions & { padding?: number; fill?: number } = {},
): t.Tensor {
  const pad = opts.padding ?? 0;
  const [b, , h, w] = x.shape;
  const hp = h + 2 * pad;
  const wp = w + 2 * pad;
  if (size > hp || size > wp) {
    throw new RangeError(`randomCropBatch: crop ${size} is larger than the padded image ${hp}x${wp}`);
  }
  return t.tidy(() => {
    const padded = pad > 0 ? t.constantPadNd(x, [pad, pad, pad, pad], opts.fill ?? 0) : x;
    const device = x.device;
    const draw = (high: number) =>
      opts.generator
        ? t.randint(high, [b, 1], { generator: opts.generator, dtype: 'int64', device })
        : t.randint(high, [b, 1], { dtype: 'int64', device });
    const top = draw(hp - size + 1);
    const left = draw(wp - size + 1);
    const span = t.arange(size, { dtype: 'int64', device }).view([1, size]);
    const rows = top.add(span).view([b, size, 1]);
    const cols = left.add(span).view([b, 1, size]);
    const batch = t.arange(b, { dtype: 'int64', device }).view([b, 1, 1]);
    // Advanced indices split by a full slice (channels): their dims come first -> [B, size, size, C].
    return t.index(padded, [batch, null, rows, cols]).permute([0, 3, 1, 2]).contiguous();
  });
}
