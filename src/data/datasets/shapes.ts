// Shapes: a procedurally generated 10-class colour image dataset — no download, any size
// and resolution, and sample i a pure function of (seed, split, i). Classes differ by
// shape, never by colour alone (colours, position, size, a slight rotation and pixel
// noise are random in every class), and every shape is left-right symmetric, so the usual
// flip and crop augmentations keep the label. A small ResNet learns it to >90% at 32x32.

import { checkOptions, optionNames } from '../../core/options.ts';
import { Rng } from '../rng.ts';
import { buildTransform, type Transform, type TransformSpec } from '../transforms/transforms.ts';
import type { DatasetSpec, NdArray, SampleContext } from '../types.ts';

export const SHAPES_CLASSES = [
  'circle',
  'square',
  'triangle',
  'plus',
  'ring',
  'diamond',
  'cross',
  'frame',
  'semicircle',
  'bars',
] as const;

/** Per-channel mean and std of Shapes images in [0, 1] (measured over 5000 training images), for Normalize. */
export const SHAPES_MEAN = [0.4964, 0.4975, 0.5013];
export const SHAPES_STD = [0.2936, 0.2966, 0.2879];

/** Inside tests in shape coordinates: the shape spans about [-1, 1]², v grows downwards. */
const INSIDE: ((u: number, v: number) => boolean)[] = [
  (u, v) => u * u + v * v <= 1,
  (u, v) => Math.abs(u) <= 0.85 && Math.abs(v) <= 0.85,
  (u, v) => v <= 0.8 && v >= -0.95 && Math.abs(u) <= (0.95 * (v + 0.95)) / 1.75,
  (u, v) => (Math.abs(u) <= 0.3 && Math.abs(v) <= 0.95) || (Math.abs(v) <= 0.3 && Math.abs(u) <= 0.95),
  (u, v) => {
    const r2 = u * u + v * v;
    return r2 <= 1 && r2 >= 0.3;
  },
  (u, v) => Math.abs(u) + Math.abs(v) <= 1,
  (u, v) => {
    const a = Math.abs(u + v) * Math.SQRT1_2;
    const b = Math.abs(v - u) * Math.SQRT1_2;
    return (a <= 0.25 && b <= 1) || (b <= 0.25 && a <= 1);
  },
  (u, v) => Math.max(Math.abs(u), Math.abs(v)) <= 0.9 && Math.max(Math.abs(u), Math.abs(v)) >= 0.55,
  (u, v) => u * u + v * v <= 1 && v <= 0.2,
  (u, v) => Math.abs(u) <= 0.95 && Math.abs(v) >= 0.2 && Math.abs(v) <= 0.65,
];

export interface ShapesOptions {
  /** Number of samples (default 10000 for 'train', 2000 for 'val'). */
  size?: number;
  /** Height and width in pixels (default 32). */
  imageSize?: number;
  /** The dataset's seed: the same seed gives the same images everywhere. */
  seed?: number;
  /** 'train' and 'val' are different images from the same distribution. */
  split?: 'train' | 'val';
  /** Standard deviation of the per-pixel noise, in [0, 1] units (default 0.04). */
  noise?: number;
  /** Applied to each image (a uint8 [H, W, 3] array); e.g. Compose([RandomCrop(32, {padding: 4}), ToTensor()]). */
  transform?: Transform | TransformSpec;
}

const OPTIONS = optionNames<ShapesOptions>({
  size: true,
  imageSize: true,
  seed: true,
  split: true,
  noise: true,
  transform: true,
});

export interface ShapeParams {
  label: number;
  bg: number[];
  fg: number[];
  /** Background shading slope along x and y. */
  gradient: [number, number];
  cx: number;
  cy: number;
  /** Half the shape's extent, in pixels. */
  r: number;
  angle: number;
}

const SUBSAMPLES = 3; // 3x3 samples per pixel: anti-aliased edges

/** Relative luminance in [0, 1] of an RGB triple in [0, 1]. */
function luminance(c: number[]): number {
  return 0.299 * c[0] + 0.587 * c[1] + 0.114 * c[2];
}

/**
 * Image i of a `Shapes` dataset: `{ image, label }` with image a uint8 [H, W, 3] array
 * (or whatever `transform` makes of it) and label in 0..9 (SHAPES_CLASSES).
 */
export class Shapes {
  readonly length: number;
  readonly imageSize: number;
  readonly seed: number;
  readonly split: 'train' | 'val';
  readonly noise: number;
  readonly transform: Transform | undefined;
  readonly classes = SHAPES_CLASSES;

  readonly options: ShapesOptions;

  constructor(given?: ShapesOptions) {
    const options = checkOptions('Shapes', given, OPTIONS);
    this.options = options;
    this.split = options.split ?? 'train';
    if (this.split !== 'train' && this.split !== 'val')
      throw new TypeError(`Shapes: split must be 'train' or 'val'`);
    this.length = options.size ?? (this.split === 'train' ? 10000 : 2000);
    this.imageSize = options.imageSize ?? 32;
    this.seed = options.seed ?? 0;
    this.noise = options.noise ?? 0.04;
    if (!Number.isInteger(this.length) || this.length < 0)
      throw new RangeError(`Shapes: bad size ${options.size}`);
    if (!Number.isInteger(this.imageSize) || this.imageSize < 8) {
      throw new RangeError(`Shapes: imageSize must be an integer >= 8, got ${options.imageSize}`);
    }
    this.transform = options.transform === undefined ? undefined : buildTransform(options.transform);
  }

  /** The label of sample i (classes are balanced: i mod 10). */
  label(i: number): number {
    return i % 10;
  }

  /** How image i is drawn: colours in [0, 1], centre and size in pixels, rotation in radians. */
  params(i: number): ShapeParams {
    return this.draw(i).params;
  }

  private draw(i: number): { params: ShapeParams; rng: Rng } {
    if (!Number.isInteger(i) || i < 0 || i >= this.length) {
      throw new RangeError(`Shapes: index ${i} out of range for ${this.length} samples`);
    }
    const rng = new Rng(this.seed, this.split === 'train' ? 0 : 1, i);
    const S = this.imageSize;
    // Colours: background and foreground far enough apart in luminance to see the shape.
    const bg = [rng.random(), rng.random(), rng.random()];
    let fg = [rng.random(), rng.random(), rng.random()];
    for (let k = 0; k < 20 && Math.abs(luminance(fg) - luminance(bg)) < 0.3; k++) {
      fg = [rng.random(), rng.random(), rng.random()];
    }
    if (Math.abs(luminance(fg) - luminance(bg)) < 0.3) fg = luminance(bg) > 0.5 ? [0, 0, 0] : [1, 1, 1];
    // A soft background gradient, so the background is not one flat colour.
    const gx = rng.uniform(-0.15, 0.15);
    const gy = rng.uniform(-0.15, 0.15);
    // Size, position (always fully inside) and a slight rotation.
    const r = rng.uniform(0.2, 0.32) * S;
    const cx = rng.uniform(r + 1, S - r - 1);
    const cy = rng.uniform(r + 1, S - r - 1);
    const angle = rng.uniform(-0.2, 0.2);
    return { params: { label: this.label(i), bg, fg, gradient: [gx, gy], cx, cy, r, angle }, rng };
  }

  /** The untransformed image i: uint8 [H, W, 3]. */
  render(i: number): NdArray<Uint8Array> {
    const { params, rng } = this.draw(i);
    const { bg, fg, cx, cy, r, angle } = params;
    const [gx, gy] = params.gradient;
    const S = this.imageSize;
    const inside = INSIDE[params.label];
    const cos = Math.cos(angle) / r;
    const sin = Math.sin(angle) / r;

    const inShape = (px: number, py: number): boolean => inside(cos * px + sin * py, -sin * px + cos * py);
    // Coverage: the pixel's four corners decide it when they agree (the shapes' parts are
    // wider than a pixel); pixels on an edge get 3x3 samples for smooth edges.
    const corners = new Uint8Array((S + 1) * (S + 1));
    for (let y = 0; y <= S; y++) {
      for (let x = 0; x <= S; x++) corners[y * (S + 1) + x] = inShape(x - cx, y - cy) ? 1 : 0;
    }
    const step = 1 / SUBSAMPLES;
    // Triangular noise from two random bytes (std sqrt(1/6) before scaling): far cheaper than normals.
    const noiseScale = this.noise / Math.sqrt(1 / 6) / 255;
    const data = new Uint8Array(S * S * 3);
    for (let y = 0; y < S; y++) {
      for (let x = 0; x < S; x++) {
        const c = y * (S + 1) + x;
        const sum = corners[c] + corners[c + 1] + corners[c + S + 1] + corners[c + S + 2];
        let a = sum / 4;
        if (sum !== 0 && sum !== 4) {
          let hits = 0;
          for (let sy = 0; sy < SUBSAMPLES; sy++) {
            const py = y + (sy + 0.5) * step - cy;
            for (let sx = 0; sx < SUBSAMPLES; sx++) if (inShape(x + (sx + 0.5) * step - cx, py)) hits++;
          }
          a = hits / (SUBSAMPLES * SUBSAMPLES);
        }
        const shade = gx * (x / S - 0.5) + gy * (y / S - 0.5);
        const o = (y * S + x) * 3;
        const r1 = rng.uint32();
        const r2 = rng.uint32();
        const noise = [
          ((r1 & 255) + ((r1 >>> 8) & 255) - 255) * noiseScale,
          (((r1 >>> 16) & 255) + (r1 >>> 24) - 255) * noiseScale,
          ((r2 & 255) + ((r2 >>> 8) & 255) - 255) * noiseScale,
        ];
        for (let k = 0; k < 3; k++) {
          const v = (1 - a) * (bg[k] + shade) + a * fg[k] + noise[k];
          data[o + k] = Math.min(255, Math.max(0, Math.round(v * 255)));
        }
      }
    }
    return { data, shape: [S, S, 3] };
  }

  get(i: number, ctx?: SampleContext): { image: NdArray; label: number } {
    const img = this.render(i);
    if (this.transform === undefined) return { image: img, label: this.label(i) };
    if (ctx === undefined)
      throw new TypeError('Shapes.get(): a transform needs the sample context (ctx.rng)');
    return { image: this.transform.apply(img, ctx.rng), label: this.label(i) };
  }

  workerSpec(): DatasetSpec {
    return {
      module: import.meta.url,
      export: 'Shapes',
      options: { ...this.options, transform: this.transform?.toSpec() },
    };
  }
}
