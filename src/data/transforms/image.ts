// Image arrays and the pixel kernels the per-sample transforms share: layout, crop with
// padding, flip, and bilinear resampling. Two layouts, as torchvision has PIL images and
// tensors: uint8 [H, W, C] (decoded) and float32 [C, H, W] (after ToTensor). No libtorch:
// transforms run in data workers.
import { imageAddon } from '../image-addon.ts';
import type { NdArray } from '../types.ts';

export type HwcImage = NdArray<Uint8Array>;
export type ChwImage = NdArray<Float32Array>;
/** An image: uint8 [H, W, C] or float32 [C, H, W]. */
export type Image = HwcImage | ChwImage;

export interface Geometry {
  h: number;
  w: number;
  c: number;
  /** uint8 [H, W, C] (true) or float32 [C, H, W] (false). */
  hwc: boolean;
}

export function geometry(img: Image): Geometry {
  const s = img.shape;
  if (s.length !== 3) throw new TypeError(`transforms: expected a 3-d image, got shape [${s}]`);
  if (img.data instanceof Uint8Array) return { h: s[0], w: s[1], c: s[2], hwc: true };
  if (img.data instanceof Float32Array) return { c: s[0], h: s[1], w: s[2], hwc: false };
  throw new TypeError('transforms: images are uint8 [H, W, C] or float32 [C, H, W] arrays');
}

/** A new image of the same kind with height h and width w. */
function alloc(g: Geometry, h: number, w: number): Image {
  return g.hwc
    ? { data: new Uint8Array(h * w * g.c), shape: [h, w, g.c] }
    : { data: new Float32Array(g.c * h * w), shape: [g.c, h, w] };
}

/** Offset of pixel (y, x), channel k, and the distance between channels. */
function index(g: Geometry, y: number, x: number): number {
  return g.hwc ? (y * g.w + x) * g.c : y * g.w + x;
}
function channelStride(g: Geometry): number {
  return g.hwc ? 1 : g.h * g.w;
}

export type PaddingMode = 'constant' | 'edge' | 'reflect' | 'symmetric';

/** Maps an out-of-range coordinate into [0, n) like numpy/torchvision padding modes; -1 means "fill". */
function padCoord(i: number, n: number, mode: PaddingMode): number {
  if (i >= 0 && i < n) return i;
  switch (mode) {
    case 'constant':
      return -1;
    case 'edge':
      return i < 0 ? 0 : n - 1;
    case 'reflect': {
      if (n === 1) return 0;
      const period = 2 * (n - 1);
      let k = ((i % period) + period) % period;
      if (k >= n) k = period - k;
      return k;
    }
    case 'symmetric': {
      const period = 2 * n;
      let k = ((i % period) + period) % period;
      if (k >= n) k = period - 1 - k;
      return k;
    }
  }
}

/**
 * The h x w window whose top-left corner is (top, left) — which may lie outside the
 * image: the outside is padded (`fill` per channel, or edge/reflect/symmetric).
 */
export function crop(
  img: Image,
  top: number,
  left: number,
  h: number,
  w: number,
  fill: number | number[] = 0,
  mode: PaddingMode = 'constant',
): Image {
  const g = geometry(img);
  const out = alloc(g, h, w);
  const og: Geometry = { ...g, h, w };
  const cs = channelStride(g);
  const ocs = channelStride(og);
  const fills = Array.from({ length: g.c }, (_, k) => (Array.isArray(fill) ? (fill[k] ?? 0) : fill));
  for (let y = 0; y < h; y++) {
    const sy = padCoord(top + y, g.h, mode);
    for (let x = 0; x < w; x++) {
      const sx = padCoord(left + x, g.w, mode);
      const o = index(og, y, x);
      if (sy < 0 || sx < 0) {
        for (let k = 0; k < g.c; k++) out.data[o + k * ocs] = fills[k];
      } else {
        const s = index(g, sy, sx);
        for (let k = 0; k < g.c; k++) out.data[o + k * ocs] = img.data[s + k * cs];
      }
    }
  }
  return out;
}

export function hflip(img: Image): Image {
  const g = geometry(img);
  if (g.hwc) return hflipHwc(img as HwcImage, g);
  const out = alloc(g, g.h, g.w);
  const cs = channelStride(g);
  for (let y = 0; y < g.h; y++) {
    for (let x = 0; x < g.w; x++) {
      const s = index(g, y, x);
      const o = index(g, y, g.w - 1 - x);
      for (let k = 0; k < g.c; k++) out.data[o + k * cs] = img.data[s + k * cs];
    }
  }
  return out;
}

/** Source coordinate and weights for output i when n_in samples are stretched to n_out (align_corners=False). */
function taps(
  nIn: number,
  nOut: number,
  offset: number,
  span: number,
): { i0: Int32Array; i1: Int32Array; l: Float32Array } {
  const i0 = new Int32Array(nOut);
  const i1 = new Int32Array(nOut);
  const l = new Float32Array(nOut);
  const scale = span / nOut;
  for (let i = 0; i < nOut; i++) {
    // PyTorch's area_pixel_compute_source_index for align_corners=False, clamped at 0.
    const src = Math.max(scale * (i + 0.5) - 0.5, 0);
    const f = Math.floor(src);
    const lo = Math.min(f, span - 1);
    i0[i] = offset + lo;
    i1[i] = offset + Math.min(lo + 1, span - 1);
    l[i] = src - lo;
  }
  void nIn;
  return { i0, i1, l };
}

/**
 * Bilinear resampling of the window (top, left, h, w) to outH x outW, as
 * torch.nn.functional.interpolate(mode='bilinear', align_corners=False) of the cropped
 * image (no antialiasing). uint8 results are rounded and clamped, like PyTorch's.
 */
export function resizedCrop(
  img: Image,
  top: number,
  left: number,
  h: number,
  w: number,
  outH: number,
  outW: number,
): Image {
  const g = geometry(img);
  if (top < 0 || left < 0 || top + h > g.h || left + w > g.w || h < 1 || w < 1) {
    throw new RangeError(
      `resizedCrop: window (${top}, ${left}, ${h}, ${w}) is outside the ${g.h}x${g.w} image`,
    );
  }
  if (g.hwc) return resizeHwc(img as HwcImage, top, left, h, w, outH, outW);
  const ty = taps(g.h, outH, top, h);
  const tx = taps(g.w, outW, left, w);
  const out = alloc(g, outH, outW);
  const og: Geometry = { ...g, h: outH, w: outW };
  const cs = channelStride(g);
  const ocs = channelStride(og);
  const src = img.data;
  for (let y = 0; y < outH; y++) {
    const y0 = ty.i0[y];
    const y1 = ty.i1[y];
    const ly = ty.l[y];
    for (let x = 0; x < outW; x++) {
      const x0 = tx.i0[x];
      const x1 = tx.i1[x];
      const lx = tx.l[x];
      const a = index(g, y0, x0);
      const b = index(g, y0, x1);
      const c = index(g, y1, x0);
      const d = index(g, y1, x1);
      const o = index(og, y, x);
      for (let k = 0; k < g.c; k++) {
        const off = k * cs;
        const v =
          (1 - ly) * ((1 - lx) * src[a + off] + lx * src[b + off]) +
          ly * ((1 - lx) * src[c + off] + lx * src[d + off]);
        out.data[o + k * ocs] = g.hwc ? Math.min(255, Math.max(0, Math.round(v))) : v;
      }
    }
  }
  return out;
}

/** hflip of a uint8 [H, W, C] image: one pass over rows, no per-pixel index arithmetic. */
function hflipHwc(img: HwcImage, g: Geometry): HwcImage {
  const { h, w, c } = g;
  const src = img.data;
  const out = new Uint8Array(src.length);
  const row = w * c;
  for (let y = 0; y < h; y++) {
    const r = y * row;
    if (c === 3) {
      // RGB, the common case, unrolled: the generic loop runs several times slower.
      for (let s = r, o = r + row - 3; o >= r; s += 3, o -= 3) {
        out[o] = src[s];
        out[o + 1] = src[s + 1];
        out[o + 2] = src[s + 2];
      }
    } else {
      for (let x = 0, o = r + row - c; x < row; x += c, o -= c) {
        for (let k = 0; k < c; k++) out[o + k] = src[r + x + k];
      }
    }
  }
  return { data: out, shape: [h, w, c] };
}

/** How resizeHwc writes its result. */
export interface ResizeOutput {
  /** Mirror left-right (RandomHorizontalFlip after the resize, in the same pass). */
  flip?: boolean;
  /**
   * float32 [C, H, W] through a 256-entry table per channel (ToTensor, or ToTensor +
   * Normalize) instead of uint8 [H, W, C]: each uint8 result is looked up, so the values
   * are those of the separate transforms.
   */
  tables?: Float32Array[];
}

/**
 * resizedCrop for uint8 [H, W, C] images (decoded images: the hot path of ImageFolder),
 * optionally mirrored and converted to float in the same pass: in C++ (tsddp_image.node)
 * when it is built, else in JavaScript (resizeHwcJs) — the same bytes either way.
 */
export function resizeHwc(
  img: HwcImage,
  top: number,
  left: number,
  h: number,
  w: number,
  outH: number,
  outW: number,
  output: ResizeOutput = {},
): Image {
  const native = imageAddon();
  if (native === null) return resizeHwcJs(img, top, left, h, w, outH, outW, output);
  const g = hwcWindow(img, top, left, h, w);
  const c = g.c;
  const tables = output.tables === undefined ? null : packedTables(output.tables, c);
  const out = tables ? new Float32Array(c * outH * outW) : new Uint8Array(outH * outW * c);
  native.resizeHwc(img.data, [g.h, g.w, c], [top, left, h, w], [outH, outW], !!output.flip, tables, out);
  return tables
    ? { data: out as Float32Array, shape: [c, outH, outW] }
    : { data: out as Uint8Array, shape: [outH, outW, c] };
}

/** The geometry of a uint8 [H, W, C] image, checking that the window lies inside it. */
function hwcWindow(img: HwcImage, top: number, left: number, h: number, w: number): Geometry {
  const g = geometry(img);
  if (!g.hwc || top < 0 || left < 0 || top + h > g.h || left + w > g.w || h < 1 || w < 1) {
    throw new RangeError(
      `resizeHwc: window (${top}, ${left}, ${h}, ${w}) is outside the ${g.h}x${g.w} uint8 image`,
    );
  }
  return g;
}

const packed = new WeakMap<Float32Array[], Float32Array>();

/** Per-channel tables as one channels x 256 array (the native call's layout), made once per table set. */
function packedTables(tables: Float32Array[], c: number): Float32Array {
  let p = packed.get(tables);
  if (p === undefined || p.length !== c * 256) {
    p = new Float32Array(c * 256);
    for (let k = 0; k < c; k++) p.set(tables[k] ?? tables[0], k * 256);
    packed.set(tables, p);
  }
  return p;
}

/**
 * resizeHwc in JavaScript: the generic loop's arithmetic in the same order — so the same
 * bytes — with the taps turned into byte offsets once per row and column instead of per
 * value. native/image/resize.cc is its C++ twin.
 */
export function resizeHwcJs(
  img: HwcImage,
  top: number,
  left: number,
  h: number,
  w: number,
  outH: number,
  outW: number,
  output: ResizeOutput = {},
): Image {
  const g = hwcWindow(img, top, left, h, w);
  const ty = taps(g.h, outH, top, h);
  const tx = taps(g.w, outW, left, w);
  const c = g.c;
  const src = img.data;
  const rowBytes = g.w * c;
  // Per output column: byte offsets of its two source pixels and its weight (mirrored for a flip).
  const x0 = new Int32Array(outW);
  const x1 = new Int32Array(outW);
  const lx = new Float64Array(outW);
  for (let x = 0; x < outW; x++) {
    const sx = output.flip ? outW - 1 - x : x;
    x0[x] = tx.i0[sx] * c;
    x1[x] = tx.i1[sx] * c;
    lx[x] = tx.l[sx];
  }
  const n = outH * outW;
  const tables = output.tables;
  if (tables === undefined) {
    const out = new Uint8Array(n * c);
    for (let y = 0, o = 0; y < outH; y++) {
      const r0 = ty.i0[y] * rowBytes;
      const r1 = ty.i1[y] * rowBytes;
      const ly = ty.l[y];
      const my = 1 - ly;
      for (let x = 0; x < outW; x++) {
        const a = r0 + x0[x];
        const b = r0 + x1[x];
        const cc = r1 + x0[x];
        const d = r1 + x1[x];
        const wx = lx[x];
        const mx = 1 - wx;
        for (let k = 0; k < c; k++, o++) {
          out[o] = lerp2(my, ly, mx, wx, src[a + k], src[b + k], src[cc + k], src[d + k]);
        }
      }
    }
    return { data: out, shape: [outH, outW, c] };
  }
  const out = new Float32Array(n * c);
  if (c === 3) {
    // RGB unrolled: each output pixel's four source offsets and weights are read once.
    const [t0, t1, t2] = [0, 1, 2].map((k) => tables[k] ?? tables[0]);
    for (let y = 0, o = 0; y < outH; y++) {
      const r0 = ty.i0[y] * rowBytes;
      const r1 = ty.i1[y] * rowBytes;
      const ly = ty.l[y];
      const my = 1 - ly;
      for (let x = 0; x < outW; x++, o++) {
        const a = r0 + x0[x];
        const b = r0 + x1[x];
        const cc = r1 + x0[x];
        const d = r1 + x1[x];
        const wx = lx[x];
        const mx = 1 - wx;
        out[o] = t0[lerp2(my, ly, mx, wx, src[a], src[b], src[cc], src[d])];
        out[n + o] = t1[lerp2(my, ly, mx, wx, src[a + 1], src[b + 1], src[cc + 1], src[d + 1])];
        out[2 * n + o] = t2[lerp2(my, ly, mx, wx, src[a + 2], src[b + 2], src[cc + 2], src[d + 2])];
      }
    }
    return { data: out, shape: [c, outH, outW] };
  }
  for (let k = 0; k < c; k++) {
    // One channel at a time: the output plane is written in order.
    const tab = tables[k] ?? tables[0];
    for (let y = 0, o = k * n; y < outH; y++) {
      const r0 = ty.i0[y] * rowBytes + k;
      const r1 = ty.i1[y] * rowBytes + k;
      const ly = ty.l[y];
      const my = 1 - ly;
      for (let x = 0; x < outW; x++, o++) {
        const wx = lx[x];
        const mx = 1 - wx;
        out[o] =
          tab[lerp2(my, ly, mx, wx, src[r0 + x0[x]], src[r0 + x1[x]], src[r1 + x0[x]], src[r1 + x1[x]])];
      }
    }
  }
  return { data: out, shape: [c, outH, outW] };
}

/** One bilinear uint8 value: the arithmetic of resizedCrop's generic loop, rounded and clamped. */
function lerp2(my: number, ly: number, mx: number, wx: number, a: number, b: number, c: number, d: number) {
  const v = my * (mx * a + wx * b) + ly * (mx * c + wx * d);
  // Round half up, as Math.round, but as an int32 (a fast table index): floor(v + 0.5) for v > 0.
  return v >= 255 ? 255 : v <= 0 ? 0 : (v + 0.5) | 0;
}

/** Python's round(): halves go to the even neighbour (torchvision's crop arithmetic uses it). */
export function roundHalfEven(x: number): number {
  const r = Math.round(x);
  return Math.abs(x % 1) === 0.5 && r % 2 !== 0 ? r - 1 : r;
}
