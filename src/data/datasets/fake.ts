// FakeData: random images and labels for benchmarks (torchvision.datasets.FakeData) —
// sample i is a pure function of (seed, i), cheap to make, and needs no files.

import { checkOptions, optionNames } from '../../core/options.ts';
import { Rng } from '../rng.ts';
import { buildTransform, type Transform, type TransformSpec } from '../transforms/transforms.ts';
import type { DatasetSpec, NdArray, SampleContext } from '../types.ts';

export interface FakeDataOptions {
  /** Number of samples (default 1000). */
  size?: number;
  /** [C, H, W] (default [3, 224, 224]). */
  imageSize?: [number, number, number];
  numClasses?: number;
  seed?: number;
  /** Applied to each uint8 [H, W, C] image. */
  transform?: Transform | TransformSpec;
}

const OPTIONS = optionNames<FakeDataOptions>({
  size: true,
  imageSize: true,
  numClasses: true,
  seed: true,
  transform: true,
});

/** `{ image: uint8 [H, W, C] (or transformed), label }` with uniformly random pixels and label. */
export class FakeData {
  readonly length: number;
  readonly imageSize: [number, number, number];
  readonly numClasses: number;
  readonly seed: number;
  readonly transform: Transform | undefined;

  readonly options: FakeDataOptions;

  constructor(given?: FakeDataOptions) {
    const options = checkOptions('FakeData', given, OPTIONS);
    this.options = options;
    this.length = options.size ?? 1000;
    this.imageSize = options.imageSize ?? [3, 224, 224];
    this.numClasses = options.numClasses ?? 10;
    this.seed = options.seed ?? 0;
    this.transform = options.transform === undefined ? undefined : buildTransform(options.transform);
  }

  get(i: number, ctx?: SampleContext): { image: NdArray; label: number } {
    if (!Number.isInteger(i) || i < 0 || i >= this.length) {
      throw new RangeError(`FakeData: index ${i} out of range for ${this.length} samples`);
    }
    const rng = new Rng(this.seed, i);
    const [c, h, w] = this.imageSize;
    const data = new Uint8Array(c * h * w);
    const words = new Uint32Array(data.buffer, 0, data.length >> 2);
    for (let k = 0; k < words.length; k++) words[k] = rng.uint32();
    for (let k = words.length * 4; k < data.length; k++) data[k] = rng.uint32() & 255;
    const label = rng.int(0, this.numClasses);
    const image: NdArray<Uint8Array> = { data, shape: [h, w, c] };
    if (this.transform === undefined) return { image, label };
    if (ctx === undefined)
      throw new TypeError('FakeData.get(): a transform needs the sample context (ctx.rng)');
    return { image: this.transform.apply(image, ctx.rng), label };
  }

  workerSpec(): DatasetSpec {
    return {
      module: import.meta.url,
      export: 'FakeData',
      options: { ...this.options, transform: this.transform?.toSpec() },
    };
  }
}
