// Per-sample transforms (torchvision.transforms): Compose, RandomCrop, RandomHorizontalFlip,
// RandomResizedCrop, Resize, CenterCrop, ToTensor, Normalize. They run in data workers on
// plain arrays, draw randomness from the sample's stream (ctx.rng), and describe
// themselves as JSON specs so a worker can rebuild them.
import type { Rng } from '../rng.ts';
import {
  type ChwImage,
  crop,
  geometry,
  type HwcImage,
  hflip,
  type Image,
  type PaddingMode,
  resizedCrop,
  resizeHwc,
  roundHalfEven,
} from './image.ts';

/** A transform as plain data: `{ name: 'RandomCrop', options: { size: 32, padding: 4 } }`. */
export interface TransformSpec {
  name: string;
  options?: Record<string, unknown>;
}

export interface Transform {
  apply(img: Image, rng: Rng): Image;
  toSpec(): TransformSpec;
}

type Size = number | [number, number];

function hw(size: Size, what: string): [number, number] {
  const [h, w] = typeof size === 'number' ? [size, size] : size;
  if (!(Number.isInteger(h) && Number.isInteger(w) && h > 0 && w > 0)) {
    throw new RangeError(`${what}: size must be a positive integer or [h, w], got ${JSON.stringify(size)}`);
  }
  return [h, w];
}

/** Applies transforms in order. */
export class Compose implements Transform {
  readonly transforms: Transform[];
  /** What apply() runs: the transforms, with ToTensor + Normalize fused into one pass. */
  private readonly steps: Transform[];
  constructor(transforms: (Transform | TransformSpec)[]) {
    this.transforms = transforms.map(buildTransform);
    this.steps = [];
    const ts = this.transforms;
    for (let i = 0; i < ts.length; i++) {
      if (ts[i] instanceof RandomResizedCrop) {
        // RandomResizedCrop [+ RandomHorizontalFlip] [+ ToTensor [+ Normalize]]: one pass.
        let j = i + 1;
        const flip = ts[j] instanceof RandomHorizontalFlip ? (ts[j++] as RandomHorizontalFlip) : undefined;
        const toTensor = ts[j] instanceof ToTensor ? (ts[j++] as ToTensor) : undefined;
        const norm = toTensor && ts[j] instanceof Normalize ? (ts[j++] as Normalize) : undefined;
        this.steps.push(new FusedResizedCrop(ts[i] as RandomResizedCrop, flip, toTensor, norm));
        i = j - 1;
      } else if (ts[i] instanceof ToTensor && ts[i + 1] instanceof Normalize) {
        this.steps.push(new ToTensorNormalize(ts[i + 1] as Normalize));
        i++;
      } else this.steps.push(ts[i]);
    }
  }
  apply(img: Image, rng: Rng): Image {
    let x = img;
    for (const t of this.steps) x = t.apply(x, rng);
    return x;
  }
  toSpec(): TransformSpec {
    return { name: 'Compose', options: { transforms: this.transforms.map((t) => t.toSpec()) } };
  }
}

export interface RandomCropOptions {
  /** Pixels added on every side (a number), [left/right, top/bottom], or [left, top, right, bottom]. */
  padding?: number | [number, number] | [number, number, number, number];
  /** Pad further when the image is smaller than the crop. */
  padIfNeeded?: boolean;
  fill?: number | number[];
  paddingMode?: PaddingMode;
}

/** torchvision.transforms.RandomCrop: pad, then a uniformly placed size x size window. */
export class RandomCrop implements Transform {
  readonly size: [number, number];
  constructor(
    size: Size,
    readonly options: RandomCropOptions = {},
  ) {
    this.size = hw(size, 'RandomCrop');
  }
  apply(img: Image, rng: Rng): Image {
    const g = geometry(img);
    const p = this.options.padding ?? 0;
    const [pl, pt, pr, pb] =
      typeof p === 'number' ? [p, p, p, p] : p.length === 2 ? [p[0], p[1], p[0], p[1]] : p;
    let h = g.h + pt + pb;
    let w = g.w + pl + pr;
    const [th, tw] = this.size;
    // padIfNeeded pads both sides by the missing amount, as torchvision does.
    let top0 = -pt;
    let left0 = -pl;
    if (this.options.padIfNeeded && h < th) {
      top0 -= th - h;
      h += 2 * (th - h);
    }
    if (this.options.padIfNeeded && w < tw) {
      left0 -= tw - w;
      w += 2 * (tw - w);
    }
    if (h < th || w < tw) {
      throw new RangeError(
        `RandomCrop: required crop size [${th}, ${tw}] is larger than the input image size [${h}, ${w}]`,
      );
    }
    const i = rng.int(0, h - th + 1);
    const j = rng.int(0, w - tw + 1);
    return crop(
      img,
      top0 + i,
      left0 + j,
      th,
      tw,
      this.options.fill ?? 0,
      this.options.paddingMode ?? 'constant',
    );
  }
  toSpec(): TransformSpec {
    return { name: 'RandomCrop', options: { size: this.size, ...this.options } };
  }
}

/** torchvision.transforms.RandomHorizontalFlip. */
export class RandomHorizontalFlip implements Transform {
  constructor(readonly p = 0.5) {}
  apply(img: Image, rng: Rng): Image {
    return rng.random() < this.p ? hflip(img) : img;
  }
  toSpec(): TransformSpec {
    return { name: 'RandomHorizontalFlip', options: { p: this.p } };
  }
}

/** torchvision.transforms.CenterCrop (pads with 0 when the image is smaller). */
export class CenterCrop implements Transform {
  readonly size: [number, number];
  constructor(size: Size) {
    this.size = hw(size, 'CenterCrop');
  }
  apply(img: Image, _rng?: Rng): Image {
    const g = geometry(img);
    const [th, tw] = this.size;
    // torchvision: top = int(round((h - th) / 2)), with Python's round; negative means padding.
    return crop(img, roundHalfEven((g.h - th) / 2), roundHalfEven((g.w - tw) / 2), th, tw);
  }
  toSpec(): TransformSpec {
    return { name: 'CenterCrop', options: { size: this.size } };
  }
}

/**
 * torchvision.transforms.Resize with bilinear interpolation: a number matches the
 * smaller edge (keeping the aspect ratio, the other edge floored), [h, w] is exact.
 * Same values as interpolate(bilinear, align_corners=False, antialias=False).
 */
export class Resize implements Transform {
  constructor(readonly size: Size) {
    hw(size, 'Resize');
  }
  apply(img: Image, _rng?: Rng): Image {
    const g = geometry(img);
    let oh: number;
    let ow: number;
    if (typeof this.size === 'number') {
      const s = this.size;
      if (g.h <= g.w) {
        oh = s;
        ow = Math.floor((s * g.w) / g.h);
      } else {
        ow = s;
        oh = Math.floor((s * g.h) / g.w);
      }
    } else [oh, ow] = this.size;
    if (oh === g.h && ow === g.w) return img;
    return resizedCrop(img, 0, 0, g.h, g.w, oh, ow);
  }
  toSpec(): TransformSpec {
    return { name: 'Resize', options: { size: this.size } };
  }
}

export interface RandomResizedCropOptions {
  /** Range of the crop's area relative to the image (default [0.08, 1]). */
  scale?: [number, number];
  /** Range of the crop's aspect ratio w/h (default [3/4, 4/3]), drawn log-uniformly. */
  ratio?: [number, number];
}

/** torchvision.transforms.RandomResizedCrop: a random area and aspect ratio, resized to size (bilinear). */
export class RandomResizedCrop implements Transform {
  readonly size: [number, number];
  readonly scale: [number, number];
  readonly ratio: [number, number];
  constructor(size: Size, options: RandomResizedCropOptions = {}) {
    this.size = hw(size, 'RandomResizedCrop');
    this.scale = options.scale ?? [0.08, 1];
    this.ratio = options.ratio ?? [3 / 4, 4 / 3];
  }
  /** torchvision's get_params: ten tries at a random window, then a central crop. */
  params(h: number, w: number, rng: Rng): [number, number, number, number] {
    const area = h * w;
    const [r0, r1] = [Math.log(this.ratio[0]), Math.log(this.ratio[1])];
    for (let attempt = 0; attempt < 10; attempt++) {
      const target = area * rng.uniform(this.scale[0], this.scale[1]);
      const aspect = Math.exp(rng.uniform(r0, r1));
      const cw = roundHalfEven(Math.sqrt(target * aspect));
      const ch = roundHalfEven(Math.sqrt(target / aspect));
      if (cw > 0 && cw <= w && ch > 0 && ch <= h) {
        return [rng.int(0, h - ch + 1), rng.int(0, w - cw + 1), ch, cw];
      }
    }
    const inRatio = w / h;
    let cw = w;
    let ch = h;
    if (inRatio < Math.min(...this.ratio)) ch = roundHalfEven(cw / Math.min(...this.ratio));
    else if (inRatio > Math.max(...this.ratio)) cw = roundHalfEven(ch * Math.max(...this.ratio));
    return [Math.floor((h - ch) / 2), Math.floor((w - cw) / 2), ch, cw];
  }
  apply(img: Image, rng: Rng): Image {
    const g = geometry(img);
    const [i, j, ch, cw] = this.params(g.h, g.w, rng);
    return resizedCrop(img, i, j, ch, cw, this.size[0], this.size[1]);
  }
  toSpec(): TransformSpec {
    return { name: 'RandomResizedCrop', options: { size: this.size, scale: this.scale, ratio: this.ratio } };
  }
}

/** v / 255 in float32 for each byte value: what ToTensor computes, looked up instead of divided. */
const UNIT = Float32Array.from({ length: 256 }, (_, v) => v / 255);

/**
 * uint8 [H, W, C] to float32 [C, H, W] through one 256-entry table per channel: the
 * layout change and the per-value arithmetic in one pass. The table holds exactly what
 * the step-by-step transforms compute, so results are the same bits.
 */
function hwcToChw(img: Image, tables: Float32Array[]): ChwImage {
  const g = geometry(img);
  const n = g.h * g.w;
  const c = g.c;
  const out = new Float32Array(c * n);
  const src = img.data;
  for (let k = 0; k < c; k++) {
    const tab = tables[k] ?? tables[0];
    for (let p = 0, q = k, o = k * n; p < n; p++, q += c, o++) out[o] = tab[src[q]];
  }
  return { data: out, shape: [c, g.h, g.w] };
}

/** torchvision.transforms.ToTensor: uint8 [H, W, C] to float32 [C, H, W] in [0, 1]. Float images pass through. */
export class ToTensor implements Transform {
  apply(img: Image, _rng?: Rng): Image {
    if (!geometry(img).hwc) return img;
    return hwcToChw(img, [UNIT]);
  }
  toSpec(): TransformSpec {
    return { name: 'ToTensor' };
  }
}

/** torchvision.transforms.Normalize: (x - mean[c]) / std[c] on a float32 [C, H, W] image. */
export class Normalize implements Transform {
  constructor(
    readonly mean: number[],
    readonly std: number[],
  ) {
    if (std.some((s) => s === 0)) throw new RangeError(`Normalize: std evaluated to zero: [${std}]`);
  }
  apply(img: Image, _rng?: Rng): Image {
    const g = geometry(img);
    if (g.hwc) throw new TypeError('Normalize: expects a float32 [C, H, W] image; apply ToTensor first');
    if (this.mean.length !== g.c && this.mean.length !== 1) {
      throw new RangeError(`Normalize: ${this.mean.length} means for ${g.c} channels`);
    }
    const n = g.h * g.w;
    const out = new Float32Array(img.data.length);
    for (let k = 0; k < g.c; k++) {
      const m = Math.fround(this.mean[k] ?? this.mean[0]);
      const s = Math.fround(this.std[k] ?? this.std[0]);
      // Rounded to float32 after each step, as torch's sub_ then div_ on a float tensor.
      for (let p = k * n; p < (k + 1) * n; p++) out[p] = Math.fround(img.data[p] - m) / s;
    }
    return { data: out, shape: [...img.shape] };
  }
  toSpec(): TransformSpec {
    return { name: 'Normalize', options: { mean: this.mean, std: this.std } };
  }
}

/**
 * RandomResizedCrop, then optionally RandomHorizontalFlip, ToTensor and Normalize, in one
 * pass over the output (Compose uses it for uint8 images): the same random draws in the
 * same order and the same values as the transforms one after the other, without the
 * intermediate images.
 */
class FusedResizedCrop implements Transform {
  private readonly tables: Float32Array[] | undefined;
  constructor(
    readonly rrc: RandomResizedCrop,
    private readonly flip: RandomHorizontalFlip | undefined,
    private readonly toTensor: ToTensor | undefined,
    private readonly normalize: Normalize | undefined,
  ) {
    this.tables = normalize ? undefined : toTensor ? [UNIT] : undefined;
  }
  private parts(): Transform[] {
    return [this.rrc, this.flip, this.toTensor, this.normalize].filter((t) => t !== undefined);
  }
  apply(img: Image, rng: Rng): Image {
    const g = geometry(img);
    if (!g.hwc) {
      let x = img;
      for (const t of this.parts()) x = t.apply(x, rng);
      return x;
    }
    return this.applyWindow(img, this.rrc.params(g.h, g.w, rng), rng);
  }
  /** The transforms on `img` with the crop window already drawn. */
  applyWindow(img: Image, [top, left, h, w]: [number, number, number, number], rng: Rng): Image {
    const flip = this.flip !== undefined && rng.random() < this.flip.p;
    const [oh, ow] = this.rrc.size;
    const tables = this.normalize ? normalizeTables(this.normalize, geometry(img).c) : this.tables;
    return resizeHwc(img as HwcImage, top, left, h, w, oh, ow, { flip, tables });
  }
  toSpec(): TransformSpec {
    return new Compose(this.parts()).toSpec();
  }
}

const tableCache = new WeakMap<Normalize, Float32Array[]>();

/** Normalize(ToTensor(v)) for the 256 byte values, per channel, rounded to float32 after each step as the transforms do. */
function normalizeTables(n: Normalize, c: number): Float32Array[] {
  if (n.mean.length !== c && n.mean.length !== 1) {
    throw new RangeError(`Normalize: ${n.mean.length} means for ${c} channels`);
  }
  let tables = tableCache.get(n);
  if (tables === undefined) {
    tables = n.mean.map((m, k) => {
      const fm = Math.fround(m);
      const fs = Math.fround(n.std[k] ?? n.std[0]);
      return UNIT.map((u) => Math.fround(u - fm) / fs);
    });
    tableCache.set(n, tables);
  }
  return tables;
}

/**
 * ToTensor then Normalize in one pass (Compose uses it): per channel, a table of
 * Normalize(ToTensor(v)) for the 256 byte values, rounded to float32 after each step as
 * the two transforms do — the same bits as applying them one after the other.
 */
class ToTensorNormalize implements Transform {
  constructor(private readonly normalize: Normalize) {}
  apply(img: Image, rng: Rng): Image {
    const g = geometry(img);
    if (!g.hwc) return this.normalize.apply(img, rng);
    return hwcToChw(img, normalizeTables(this.normalize, g.c));
  }
  toSpec(): TransformSpec {
    return { name: 'Compose', options: { transforms: [new ToTensor().toSpec(), this.normalize.toSpec()] } };
  }
}

/** Rebuilds a transform from its spec (a Transform passes through). */
export function buildTransform(spec: Transform | TransformSpec): Transform {
  if (typeof (spec as Transform).apply === 'function') return spec as Transform;
  const { name, options = {} } = spec as TransformSpec;
  const o = options as Record<string, never>;
  switch (name) {
    case 'Compose':
      return new Compose(o.transforms);
    case 'RandomCrop': {
      const { size, ...rest } = o;
      return new RandomCrop(size, rest);
    }
    case 'RandomHorizontalFlip':
      return new RandomHorizontalFlip(o.p);
    case 'CenterCrop':
      return new CenterCrop(o.size);
    case 'Resize':
      return new Resize(o.size);
    case 'RandomResizedCrop':
      return new RandomResizedCrop(o.size, { scale: o.scale, ratio: o.ratio });
    case 'ToTensor':
      return new ToTensor();
    case 'Normalize':
      return new Normalize(o.mean, o.std);
    default:
      throw new TypeError(`transforms: unknown transform '${name}'`);
  }
}
