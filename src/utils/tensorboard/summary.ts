// The Summary values SummaryWriter writes, built as PyTorch builds them
// (torch/utils/tensorboard/summary.py): scalars as simple_value, histograms with
// TensorFlow's exponential buckets trimmed to the occupied range, images as PNG in HWC
// order scaled to 0..255, text as a string tensor of the text plugin, hparams as the three
// summaries of the hparams plugin.

import { isTensor } from '../../core/introspection.ts';
import { tidy } from '../../core/scope.ts';
import type { Tensor } from '../../core/tensor.ts';
import { TensorBoardError } from './errors.ts';
import { encodePng } from './png.ts';
import { encode } from './schema.ts';

/** A Summary.Value as a plain object (proto field names). */
export type SummaryValue = Record<string, unknown> & { tag: string };

/** Numbers to log: a tensor (any shape, any real dtype), an array or a typed array. */
export type Values = Tensor | ArrayLike<number>;

/** The values as float64, in row-major order, with the shape they had. */
function flat(
  values: Values | number,
  what: string,
): { data: ArrayLike<number>; shape: number[]; uint8: boolean } {
  if (typeof values === 'number') return { data: [values], shape: [], uint8: false };
  if (isTensor(values)) {
    if (values.isComplex()) throw new TensorBoardError(`${what}: a complex tensor cannot be logged`);
    const uint8 = values.dtype === 'uint8';
    const data = tidy(() => values.detach().cpu().double().contiguous().toTypedArray() as Float64Array);
    return { data, shape: values.shape, uint8 };
  }
  if (values instanceof Uint8Array) return { data: values, shape: [values.length], uint8: true };
  return { data: values, shape: [values.length], uint8: false };
}

/** A scalar (a number or a one-element tensor) as a float32 simple_value. */
export function scalar(tag: string, value: number | Tensor): SummaryValue {
  const { data } = flat(value, `scalar '${tag}'`);
  if (data.length !== 1)
    throw new TensorBoardError(
      `scalar '${tag}': a scalar is one value, not ${data.length} (use addHistogram)`,
    );
  return { tag, simple_value: Number(data[0]) };
}

/**
 * The default bins (bins='tensorflow'): ±1e-12 growing by 1.1 to 1e20, and 0
 * (SummaryWriter.__init__'s default_bins).
 */
export const TENSORFLOW_BINS: readonly number[] = (() => {
  const pos: number[] = [];
  for (let v = 1e-12; v < 1e20; v *= 1.1) pos.push(v);
  return [...pos.map((v) => -v).reverse(), 0, ...pos];
})();

/** numpy.histogram's edges for `n` equal bins over the values' range (numpy.linspace). */
function equalBins(n: number, min: number, max: number): number[] {
  let [lo, hi] = [min, max];
  if (lo === hi) [lo, hi] = [lo - 0.5, hi + 0.5];
  const step = (hi - lo) / n;
  const edges = Array.from({ length: n + 1 }, (_, i) => i * step + lo);
  edges[n] = hi;
  return edges;
}

/** Index of the first element of sorted `a` that is > x (side 'right') or >= x ('left'). */
function searchSorted(a: ArrayLike<number>, x: number, side: 'left' | 'right'): number {
  let [lo, hi] = [0, a.length];
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (side === 'left' ? a[mid] < x : a[mid] <= x) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/**
 * A histogram of `values` (PyTorch's make_histogram over numpy.histogram): counts per bin
 * [edge_i, edge_i+1) (the last bin closed, values outside the edges not counted), then only
 * the bins from the one before the first occupied bin to the last occupied one, each
 * reported by its right edge. `bins`: 'tensorflow' (the default), a number of equal bins
 * over the values' range, or the edges. `maxBins` merges neighbouring bins as PyTorch does.
 */
export function histogram(
  tag: string,
  values: Values,
  bins: 'tensorflow' | number | readonly number[] = 'tensorflow',
  maxBins?: number,
): SummaryValue {
  const what = `histogram '${tag}'`;
  const data = Float64Array.from(flat(values, what).data);
  if (data.length === 0) throw new TensorBoardError(`${what}: the input has no element`);
  for (const v of data) if (!Number.isFinite(v)) throw new TensorBoardError(`${what}: a value is ${v}`);
  const sorted = data.slice().sort();
  const min = sorted[0];
  const max = sorted[sorted.length - 1];
  let edges: readonly number[];
  if (bins === 'tensorflow') edges = TENSORFLOW_BINS;
  else if (typeof bins === 'number') {
    if (!Number.isInteger(bins) || bins < 1)
      throw new TensorBoardError(`${what}: bins=${bins} is not a count`);
    edges = equalBins(bins, min, max);
  } else if (Array.isArray(bins) && bins.length >= 2 && bins.every((e, i) => i === 0 || e >= bins[i - 1]))
    edges = bins;
  else
    throw new TensorBoardError(
      `${what}: bins=${JSON.stringify(bins)}: tsddp takes 'tensorflow', a number of bins or increasing edges ` +
        "(numpy's named estimators such as 'auto' are not implemented)",
    );
  // Counts per bin from the sorted values, as numpy's non-uniform path (searchsorted).
  let counts: number[] = [];
  for (let i = 0; i + 1 < edges.length; i++) {
    const last = i + 2 === edges.length;
    counts.push(
      searchSorted(sorted, edges[i + 1], last ? 'right' : 'left') - searchSorted(sorted, edges[i], 'left'),
    );
  }
  let limits = edges.slice();
  if (maxBins !== undefined && counts.length > maxBins) {
    const sub = Math.floor(counts.length / maxBins);
    const rem = counts.length % sub;
    if (rem !== 0) counts = [...counts, ...new Array(sub - rem).fill(0)];
    const merged: number[] = [];
    for (let i = 0; i < counts.length; i += sub)
      merged.push(counts.slice(i, i + sub).reduce((a, b) => a + b, 0));
    const kept = limits.slice(0, -1).filter((_, i) => i % sub === 0);
    limits = [...kept.slice(0, merged.length), limits[limits.length - 1]];
    counts = merged;
  }
  const first = counts.findIndex((c) => c > 0);
  let last = counts.length - 1;
  while (last > 0 && counts[last] === 0) last--;
  if (first < 0) throw new TensorBoardError(`${what}: no value lies inside the bins' edges`);
  const bucket = first > 0 ? counts.slice(first - 1, last + 1) : [0, ...counts.slice(0, last + 1)];
  const bucketLimit = limits.slice(first, last + 2);
  let sum = 0;
  let sumSquares = 0;
  for (const v of data) {
    sum += v;
    sumSquares += v * v;
  }
  return {
    tag,
    histo: { min, max, num: data.length, sum, sum_squares: sumSquares, bucket_limit: bucketLimit, bucket },
  };
}

/** Image layouts PyTorch's convert_to_HWC takes: a permutation of N, C, H, W (N only for a batch). */
function layout(
  format: string,
  shape: number[],
  what: string,
): { n: number; c: number; h: number; w: number } {
  const f = format.toUpperCase();
  const letters = f.length === 4 ? 'NCHW' : f.length === 3 ? 'CHW' : 'HW';
  const valid =
    f.length >= 2 &&
    f.length <= 4 &&
    new Set(f).size === f.length &&
    [...letters].every((l) => f.includes(l));
  if (!valid) throw new TensorBoardError(`${what}: dataformats '${format}' is not a layout of ${letters}`);
  if (shape.length !== f.length)
    throw new TensorBoardError(
      `${what}: a tensor of shape [${shape}] does not have the ${f.length} dimensions of '${format}'`,
    );
  const size = (l: string): number => (f.includes(l) ? shape[f.indexOf(l)] : 1);
  return { n: size('N'), c: size('C'), h: size('H'), w: size('W') };
}

/**
 * An image (or a batch, tiled 8 to a row as PyTorch's make_grid) as a PNG: float values
 * are taken as 0..1 and scaled by 255, uint8 as 0..255; then clipped and truncated to
 * bytes. One channel is repeated to RGB; 3 (RGB) or 4 (RGBA) channels are kept.
 */
export function image(tag: string, img: Values, dataformats: string): SummaryValue {
  const what = `image '${tag}'`;
  const { data, shape, uint8 } = flat(img, what);
  const { n, c, h, w } = layout(dataformats, shape, what);
  if (![1, 3, 4].includes(c)) throw new TensorBoardError(`${what}: ${c} channels (1, 3 or 4 are images)`);
  const f = dataformats.toUpperCase();
  const strides = shape.map((_, i) => shape.slice(i + 1).reduce((a, b) => a * b, 1));
  const at = (ni: number, ci: number, hi: number, wi: number): number => {
    const idx = { N: ni, C: ci, H: hi, W: wi } as Record<string, number>;
    let off = 0;
    for (let i = 0; i < f.length; i++) off += idx[f[i]] * strides[i];
    return Number(data[off]);
  };
  const out = c === 4 ? 4 : 3;
  const cols = Math.min(n, 8);
  const rows = Math.ceil(n / cols);
  const [height, width] = [h * rows, w * cols];
  const pixels = new Uint8Array(height * width * out);
  const scale = uint8 ? 1 : 255;
  for (let ni = 0; ni < n; ni++) {
    const [y0, x0] = [Math.floor(ni / cols) * h, (ni % cols) * w];
    for (let y = 0; y < h; y++)
      for (let x = 0; x < w; x++)
        for (let ch = 0; ch < out; ch++) {
          const v = Math.fround(Math.fround(at(ni, c === 1 ? 0 : ch, y, x)) * scale);
          const byte = Number.isNaN(v) ? 0 : Math.trunc(Math.min(255, Math.max(0, v)));
          pixels[((y0 + y) * width + x0 + x) * out + ch] = byte;
        }
  }
  return {
    tag,
    image: { height, width, colorspace: out, encoded_image_string: encodePng(pixels, width, height, out) },
  };
}

/** Text (markdown in TensorBoard) as the text plugin's one-string tensor, tag `<tag>/text_summary`. */
export function text(tag: string, value: string): SummaryValue {
  return {
    tag: `${tag}/text_summary`,
    metadata: {
      plugin_data: { plugin_name: 'text', content: encode('tensorboard.TextPluginData', { version: 0 }) },
    },
    tensor: {
      dtype: 'DT_STRING',
      string_val: [Buffer.from(value, 'utf8')],
      tensor_shape: { dim: [{ size: 1 }] },
    },
  };
}

/** A hyperparameter's value: numbers, strings and booleans (a one-element tensor as a number). */
export type HParamValue = number | string | boolean | Tensor | null;

function hparamsValue(tag: string, data: Record<string, unknown>): SummaryValue {
  const content = encode('tensorboard.hparams.HParamsPluginData', { version: 0, ...data });
  return { tag, metadata: { plugin_data: { plugin_name: 'hparams', content } } };
}

/**
 * The hparams plugin's experiment, session-start and session-end summaries (PyTorch's
 * summary.hparams). A boolean is written as a boolean (DATA_TYPE_BOOL): PyTorch writes it
 * as the number 1 or 0, since Python's bool is an int and its number branch comes first.
 */
export function hparams(
  hparamDict: Record<string, HParamValue>,
  metricDict: Record<string, unknown>,
  domainDiscrete: Record<string, readonly (number | string | boolean)[]> = {},
): [SummaryValue, SummaryValue, SummaryValue] {
  for (const [k, v] of Object.entries(domainDiscrete)) {
    const type = typeof hparamDict[k];
    if (!(k in hparamDict) || !Array.isArray(v) || !v.every((d) => typeof d === type))
      throw new TensorBoardError(
        `hparams: hparamDomainDiscrete['${k}'] should be a list of values of the type of hparamDict['${k}']`,
      );
  }
  const startHparams: Record<string, unknown> = {};
  const infos: Record<string, unknown>[] = [];
  for (const [k, raw] of Object.entries(hparamDict)) {
    if (raw === null || raw === undefined) continue;
    const v = isTensor(raw) ? Number(flat(raw, `hparams '${k}'`).data[0]) : raw;
    const [field, type] =
      typeof v === 'number'
        ? ['number_value', 'DATA_TYPE_FLOAT64']
        : typeof v === 'string'
          ? ['string_value', 'DATA_TYPE_STRING']
          : typeof v === 'boolean'
            ? ['bool_value', 'DATA_TYPE_BOOL']
            : [null, null];
    if (field === null)
      throw new TensorBoardError(
        `hparams: hparamDict['${k}'] is ${typeof v}; a number, string, boolean or tensor is`,
      );
    startHparams[k] = { [field]: v };
    const discrete = domainDiscrete[k];
    infos.push({
      name: k,
      type,
      ...(discrete ? { domain_discrete: { values: discrete.map((d) => ({ [field]: d })) } } : {}),
    });
  }
  const metricInfos = Object.keys(metricDict).map((tag) => ({ name: { tag } }));
  return [
    hparamsValue('_hparams_/experiment', { experiment: { hparam_infos: infos, metric_infos: metricInfos } }),
    hparamsValue('_hparams_/session_start_info', { session_start_info: { hparams: startHparams } }),
    hparamsValue('_hparams_/session_end_info', { session_end_info: { status: 'STATUS_SUCCESS' } }),
  ];
}
