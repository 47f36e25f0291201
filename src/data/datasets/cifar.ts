// CIFAR-10 / CIFAR-100 from the official *binary* archives (never the pickled Python
// version): fixed-size records of label byte(s) + 3072 pixel bytes (R, G, B planes of
// 32x32). Samples are read on demand with positional reads, so every data worker shares
// the OS page cache instead of holding its own copy.
import { closeSync, existsSync, fstatSync, openSync, readSync } from 'node:fs';
import { join } from 'node:path';
import { checkOptions, optionNames } from '../../core/options.ts';
import { buildTransform, type Transform, type TransformSpec } from '../transforms/transforms.ts';
import { DataError, type DatasetSpec, type NdArray, type SampleContext } from '../types.ts';
import { downloadUrl, extractTarGz } from './download.ts';

interface Variant {
  name: 'CIFAR10' | 'CIFAR100';
  url: string;
  md5: string;
  folder: string;
  train: string[];
  test: string[];
  /** Label bytes before the pixels (CIFAR-100: coarse, then fine). */
  labelBytes: number;
}

const VARIANTS: Record<'CIFAR10' | 'CIFAR100', Variant> = {
  CIFAR10: {
    name: 'CIFAR10',
    url: 'https://www.cs.toronto.edu/~kriz/cifar-10-binary.tar.gz',
    md5: 'c32a1d4ab5d03f1284b67883e8d87530',
    folder: 'cifar-10-batches-bin',
    train: [1, 2, 3, 4, 5].map((k) => `data_batch_${k}.bin`),
    test: ['test_batch.bin'],
    labelBytes: 1,
  },
  CIFAR100: {
    name: 'CIFAR100',
    url: 'https://www.cs.toronto.edu/~kriz/cifar-100-binary.tar.gz',
    md5: '03b5dce01913d631647c71ecec9e9cb8',
    folder: 'cifar-100-binary',
    train: ['train.bin'],
    test: ['test.bin'],
    labelBytes: 2,
  },
};

const PIXELS = 32 * 32;

export interface CifarOptions {
  /** Folder holding (or receiving) the extracted archive. */
  root: string;
  /** Training split (default) or test split. */
  train?: boolean;
  /** Applied to each uint8 [32, 32, 3] image. */
  transform?: Transform | TransformSpec;
  /** Where to download from and the archive's MD5 (defaults: the official archive). */
  url?: string;
  md5?: string;
}

const OPTIONS = optionNames<CifarOptions>({ root: true, train: true, transform: true, url: true, md5: true });

interface Part {
  path: string;
  fd: number | null;
  count: number;
}

class CifarBase {
  readonly length: number;
  readonly train: boolean;
  readonly transform: Transform | undefined;
  private readonly parts: Part[];
  private readonly record: number;

  protected constructor(
    private readonly variant: Variant,
    readonly options: CifarOptions,
  ) {
    if ((options as { download?: boolean }).download === true) {
      throw new TypeError(
        `${variant.name}: the constructor does not download (it is synchronous); use \`await ${variant.name}.create({ root, download: true })\``,
      );
    }
    checkOptions(variant.name, options, OPTIONS, { only: { download: false } });
    this.train = options.train ?? true;
    this.transform = options.transform === undefined ? undefined : buildTransform(options.transform);
    this.record = variant.labelBytes + 3 * PIXELS;
    const folder = join(options.root, variant.folder);
    this.parts = (this.train ? variant.train : variant.test).map((f) => {
      const path = join(folder, f);
      if (!existsSync(path)) {
        throw new DataError(
          `${variant.name}: ${path} is missing; download it with \`await ${variant.name}.download(root)\` ` +
            `or \`await ${variant.name}.create({ root, download: true })\``,
          path,
        );
      }
      const fd = openSync(path, 'r');
      const size = fstatSync(fd).size;
      closeSync(fd);
      if (size === 0 || size % this.record !== 0) {
        throw new DataError(
          `${variant.name}: ${path} is truncated or corrupt (${size} bytes is not a multiple of the ${this.record}-byte record)`,
          path,
        );
      }
      return { path, fd: null, count: size / this.record };
    });
    this.length = this.parts.reduce((a, p) => a + p.count, 0);
  }

  /** Downloads and extracts the archive into root (skipped when its files are already there). */
  protected static async fetchArchive(
    variant: Variant,
    opts: { root: string; url?: string; md5?: string },
  ): Promise<void> {
    checkOptions(`${variant.name}.download`, opts, ['root', 'url', 'md5']);
    const folder = join(opts.root, variant.folder);
    if ([...variant.train, ...variant.test].every((f) => existsSync(join(folder, f)))) return;
    const url = opts.url ?? variant.url;
    const archive = join(opts.root, url.split('/').pop() || `${variant.name}.tar.gz`);
    await downloadUrl(url, archive, opts.md5 ?? (opts.url === undefined ? variant.md5 : undefined));
    await extractTarGz(archive, opts.root);
  }

  get(i: number, ctx?: SampleContext): { image: NdArray; label: number } {
    if (!Number.isInteger(i) || i < 0 || i >= this.length) {
      throw new RangeError(`${this.variant.name}: index ${i} out of range for ${this.length} samples`);
    }
    let k = 0;
    let j = i;
    while (j >= this.parts[k].count) j -= this.parts[k++].count;
    const part = this.parts[k];
    part.fd ??= openSync(part.path, 'r');
    const rec = Buffer.allocUnsafe(this.record);
    const n = readSync(part.fd, rec, 0, this.record, j * this.record);
    if (n !== this.record)
      throw new DataError(`${this.variant.name}: short read from ${part.path}`, part.path);
    const label = rec[this.variant.labelBytes - 1]; // CIFAR-100: the fine label
    // Planar RGB to interleaved HWC, like torchvision's images.
    const data = new Uint8Array(3 * PIXELS);
    const off = this.variant.labelBytes;
    for (let p = 0; p < PIXELS; p++) {
      data[3 * p] = rec[off + p];
      data[3 * p + 1] = rec[off + PIXELS + p];
      data[3 * p + 2] = rec[off + 2 * PIXELS + p];
    }
    const image: NdArray<Uint8Array> = { data, shape: [32, 32, 3] };
    if (this.transform === undefined) return { image, label };
    if (ctx === undefined)
      throw new TypeError(`${this.variant.name}.get(): a transform needs the sample context`);
    return { image: this.transform.apply(image, ctx.rng), label };
  }

  /** Closes the open data files (they are reopened on the next get). */
  close(): void {
    for (const p of this.parts) {
      if (p.fd !== null) closeSync(p.fd);
      p.fd = null;
    }
  }

  workerSpec(): DatasetSpec {
    return {
      module: import.meta.url,
      export: this.variant.name,
      options: { ...this.options, transform: this.transform?.toSpec() },
    };
  }
}

/** CIFAR-10 (binary version): 50000 training / 10000 test images, 10 classes. */
export class CIFAR10 extends CifarBase {
  static readonly classes = [
    'airplane',
    'automobile',
    'bird',
    'cat',
    'deer',
    'dog',
    'frog',
    'horse',
    'ship',
    'truck',
  ];
  constructor(options: CifarOptions) {
    super(VARIANTS.CIFAR10, options);
  }
  static async download(root: string, opts: { url?: string; md5?: string } = {}): Promise<void> {
    await CifarBase.fetchArchive(VARIANTS.CIFAR10, { root, ...opts });
  }
  /** Like `torchvision.datasets.CIFAR10(root, train, download=True)`: downloads (MD5-checked) if asked, then opens. */
  static async create(options: CifarOptions & { download?: boolean }): Promise<CIFAR10> {
    const { download, ...rest } = options;
    checkOptions('CIFAR10.create', rest, OPTIONS);
    if (download) await CIFAR10.download(rest.root, { url: rest.url, md5: rest.md5 });
    return new CIFAR10(rest);
  }
}

/** CIFAR-100 (binary version): 50000 / 10000 images, 100 fine labels (the `label` field). */
export class CIFAR100 extends CifarBase {
  constructor(options: CifarOptions) {
    super(VARIANTS.CIFAR100, options);
  }
  static async download(root: string, opts: { url?: string; md5?: string } = {}): Promise<void> {
    await CifarBase.fetchArchive(VARIANTS.CIFAR100, { root, ...opts });
  }
  static async create(options: CifarOptions & { download?: boolean }): Promise<CIFAR100> {
    const { download, ...rest } = options;
    checkOptions('CIFAR100.create', rest, OPTIONS);
    if (download) await CIFAR100.download(rest.root, { url: rest.url, md5: rest.md5 });
    return new CIFAR100(rest);
  }
}
