// MNIST, Fashion-MNIST and Kuzushiji-MNIST as torchvision.datasets has them: the same
// folder (<root>/<Name>/raw/, so a root torchvision downloaded into is read as is), the
// same idx files, mirrors and MD5s (torchvision/datasets/mnist.py). Images are read on
// demand with positional reads as the CIFAR reader does (cifar.ts); a split present only
// as its downloaded `.gz` files is decompressed into memory instead.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { checkOptions, optionNames } from '../../core/options.ts';
import { buildTransform, type Transform, type TransformSpec } from '../transforms/transforms.ts';
import { DataError, type DatasetSpec, type NdArray, type SampleContext } from '../types.ts';
import { downloadUrl, gunzipFile } from './download.ts';
import { IdxFile } from './idx.ts';

type Name = 'MNIST' | 'FashionMNIST' | 'KMNIST';

interface Variant {
  name: Name;
  /** Tried in order, as torchvision does. */
  mirrors: string[];
  /** The `.gz` files and their MD5s; the idx files are these names without `.gz`. */
  resources: [string, string][];
}

const FILES = [
  'train-images-idx3-ubyte.gz',
  'train-labels-idx1-ubyte.gz',
  't10k-images-idx3-ubyte.gz',
  't10k-labels-idx1-ubyte.gz',
];
const withMd5 = (md5s: string[]): [string, string][] => FILES.map((f, k) => [f, md5s[k]]);

const VARIANTS: Record<Name, Variant> = {
  MNIST: {
    name: 'MNIST',
    // LeCun's own site has long refused these downloads; the S3 copy answers first.
    mirrors: ['https://ossci-datasets.s3.amazonaws.com/mnist/', 'http://yann.lecun.com/exdb/mnist/'],
    resources: withMd5([
      'f68b3c2dcbeaaa9fbdd348bbdeb94873',
      'd53e105ee54ea40749a09fcbcd1e9432',
      '9fb629c4189551a2d022fa330f9573f3',
      'ec29112dd5afa0611ce80d1b7f02629c',
    ]),
  },
  FashionMNIST: {
    name: 'FashionMNIST',
    mirrors: ['http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/'],
    resources: withMd5([
      '8d4fb7e6c68d591d4c3dfef9ec88bf0d',
      '25c81989df183df01b3e8a0aad5dffbe',
      'bef4ecab320f06d8554ea6380940ec79',
      'bb300cfdad3c16e7a12a480ee83cd310',
    ]),
  },
  KMNIST: {
    name: 'KMNIST',
    mirrors: ['http://codh.rois.ac.jp/kmnist/dataset/kmnist/'],
    resources: withMd5([
      'bdb82020997e1d708af4cf47b453dcf7',
      'e144d726b3acfaa3e44228e80efcd344',
      '5c965bf0a639b31b8f53240b1b52f4d7',
      '7320c461ea6c1c855c0b718fb2a4b134',
    ]),
  },
};

/** The magic numbers torchvision's read_image_file / read_label_file accept: uint8, 3 and 1 dimensions. */
const IMAGES_MAGIC = 0x803;
const LABELS_MAGIC = 0x801;

export interface MnistOptions {
  /** The folder holding (or receiving) `<Name>/raw/`, as torchvision's `root`. */
  root: string;
  /** Training split (default, 60000 images) or test split (10000). */
  train?: boolean;
  /** Applied to each uint8 [28, 28, 1] image. */
  transform?: Transform | TransformSpec;
  /**
   * Where to download from: base URLs the file names are appended to, tried in order
   * (default: torchvision's mirrors). With mirrors of your own the official MD5s are not
   * checked unless `md5` gives them.
   */
  mirrors?: string[];
  /** MD5 per `.gz` file name (default: torchvision's, with the default mirrors). */
  md5?: Record<string, string>;
}

const OPTIONS = optionNames<MnistOptions>({
  root: true,
  train: true,
  transform: true,
  mirrors: true,
  md5: true,
});

type DownloadOptions = Pick<MnistOptions, 'mirrors' | 'md5'>;

/** The split's idx file, or its `.gz` when only that is there; a missing pair is named. */
function splitFile(variant: Variant, raw: string, file: string): string {
  const path = join(raw, file);
  if (existsSync(path)) return path;
  if (existsSync(`${path}.gz`)) return `${path}.gz`;
  throw new DataError(
    `${variant.name}: ${path} is missing (and so is ${file}.gz); download it with ` +
      `\`await ${variant.name}.download(root)\` or \`await ${variant.name}.create({ root, download: true })\``,
    path,
  );
}

/** Opens an idx file and checks it holds what torchvision's readers accept. */
function openChecked(variant: Variant, path: string, magic: number, what: string): IdxFile {
  const f = new IdxFile(path);
  if (f.header.magic !== magic) {
    throw new DataError(
      `${variant.name}: ${path} has magic number ${f.header.magic} (${f.header.dtype}, ` +
        `${f.header.shape.length} dimensions); ${what} files have ${magic}`,
      path,
    );
  }
  return f;
}

class MnistBase {
  readonly length: number;
  readonly train: boolean;
  readonly transform: Transform | undefined;
  /** Every label of the split, as torchvision's `targets`. */
  readonly targets: Uint8Array;
  private readonly images: IdxFile;
  private readonly shape: [number, number, number];

  protected constructor(
    private readonly variant: Variant,
    readonly options: MnistOptions,
  ) {
    if ((options as { download?: boolean }).download) {
      throw new TypeError(
        `${variant.name}: the constructor does not download (it is synchronous); use \`await ${variant.name}.create({ root, download: true })\``,
      );
    }
    checkOptions(variant.name, options, OPTIONS, { only: { download: false } });
    this.train = options.train ?? true;
    this.transform = options.transform === undefined ? undefined : buildTransform(options.transform);
    const raw = join(options.root, variant.name, 'raw');
    const split = this.train ? 'train' : 't10k';
    const imagesPath = splitFile(variant, raw, `${split}-images-idx3-ubyte`);
    const labelsPath = splitFile(variant, raw, `${split}-labels-idx1-ubyte`);
    this.images = openChecked(variant, imagesPath, IMAGES_MAGIC, 'image');
    const labels = openChecked(variant, labelsPath, LABELS_MAGIC, 'label');
    this.targets = labels.readAll() as Uint8Array;
    labels.close();
    if (labels.length !== this.images.length) {
      throw new DataError(
        `${variant.name}: ${imagesPath} holds ${this.images.length} images but ${labelsPath} ` +
          `${labels.length} labels; one of them is from another split or corrupt`,
        imagesPath,
      );
    }
    const [, h, w] = this.images.header.shape;
    this.shape = [h, w, 1];
    this.length = this.images.length;
  }

  /** Downloads and decompresses both splits into `<root>/<Name>/raw/` (files already there are kept). */
  protected static async fetchFiles(
    variant: Variant,
    opts: DownloadOptions & { root: string },
  ): Promise<void> {
    checkOptions(`${variant.name}.download`, opts, ['root', 'mirrors', 'md5']);
    const raw = join(opts.root, variant.name, 'raw');
    for (const [file, officialMd5] of variant.resources) {
      const target = join(raw, file.slice(0, -'.gz'.length));
      if (existsSync(target)) continue;
      const gz = join(raw, file);
      const md5 = opts.md5?.[file] ?? (opts.mirrors === undefined ? officialMd5 : undefined);
      await fromMirrors(variant.name, opts.mirrors ?? variant.mirrors, file, gz, md5);
      await gunzipFile(gz, target);
    }
  }

  get(i: number, ctx?: SampleContext): { image: NdArray; label: number } {
    if (!Number.isInteger(i) || i < 0 || i >= this.length) {
      throw new RangeError(`${this.variant.name}: index ${i} out of range for ${this.length} samples`);
    }
    // One channel, HWC: the image torchvision hands its transforms is a mode 'L' PIL image.
    const image: NdArray<Uint8Array> = { data: this.images.item(i), shape: [...this.shape] };
    const label = this.targets[i];
    if (this.transform === undefined) return { image, label };
    if (ctx === undefined)
      throw new TypeError(`${this.variant.name}.get(): a transform needs the sample context`);
    return { image: this.transform.apply(image, ctx.rng), label };
  }

  /** Closes the image file (it is reopened on the next get). */
  close(): void {
    this.images.close();
  }

  workerSpec(): DatasetSpec {
    return {
      module: import.meta.url,
      export: this.variant.name,
      options: { ...this.options, transform: this.transform?.toSpec() },
    };
  }
}

/**
 * Downloads `file` from the first mirror that serves it (with the right MD5), as
 * torchvision moves on to the next mirror when one fails; every mirror's failure is named.
 */
async function fromMirrors(
  name: Name,
  mirrors: string[],
  file: string,
  path: string,
  md5: string | undefined,
): Promise<void> {
  if (mirrors.length === 0) throw new TypeError(`${name}.download(): mirrors is empty`);
  const failures: unknown[] = [];
  for (const mirror of mirrors) {
    const url = `${mirror.endsWith('/') ? mirror : `${mirror}/`}${file}`;
    try {
      await downloadUrl(url, path, md5);
      return;
    } catch (e) {
      failures.push(e);
    }
  }
  const why = failures.map((e) => `\n  ${(e as Error).message}`).join('');
  throw new DataError(`${name}: could not download ${file} from any mirror:${why}`, path, {
    cause: failures.at(-1),
  });
}

/** MNIST: 60000 training / 10000 test handwritten digits, 28x28 grayscale, 10 classes. */
export class MNIST extends MnistBase {
  static readonly classes = [
    '0 - zero',
    '1 - one',
    '2 - two',
    '3 - three',
    '4 - four',
    '5 - five',
    '6 - six',
    '7 - seven',
    '8 - eight',
    '9 - nine',
  ];
  /** torchvision's mirrors (pass `mirrors` to download from others). */
  static readonly mirrors: readonly string[] = Object.freeze([...VARIANTS.MNIST.mirrors]);
  constructor(options: MnistOptions) {
    super(VARIANTS.MNIST, options);
  }
  static async download(root: string, opts: DownloadOptions = {}): Promise<void> {
    await MnistBase.fetchFiles(VARIANTS.MNIST, { root, ...opts });
  }
  /** Like `torchvision.datasets.MNIST(root, train, download=True)`: downloads (MD5-checked) if asked, then opens. */
  static async create(options: MnistOptions & { download?: boolean }): Promise<MNIST> {
    const { download, ...rest } = options;
    checkOptions('MNIST.create', rest, OPTIONS);
    if (download) await MNIST.download(rest.root, { mirrors: rest.mirrors, md5: rest.md5 });
    return new MNIST(rest);
  }
}

/** Fashion-MNIST: Zalando's article images in MNIST's format (60000 / 10000, 10 classes). */
export class FashionMNIST extends MnistBase {
  static readonly classes = [
    'T-shirt/top',
    'Trouser',
    'Pullover',
    'Dress',
    'Coat',
    'Sandal',
    'Shirt',
    'Sneaker',
    'Bag',
    'Ankle boot',
  ];
  /** torchvision's mirrors (pass `mirrors` to download from others). */
  static readonly mirrors: readonly string[] = Object.freeze([...VARIANTS.FashionMNIST.mirrors]);
  constructor(options: MnistOptions) {
    super(VARIANTS.FashionMNIST, options);
  }
  static async download(root: string, opts: DownloadOptions = {}): Promise<void> {
    await MnistBase.fetchFiles(VARIANTS.FashionMNIST, { root, ...opts });
  }
  static async create(options: MnistOptions & { download?: boolean }): Promise<FashionMNIST> {
    const { download, ...rest } = options;
    checkOptions('FashionMNIST.create', rest, OPTIONS);
    if (download) await FashionMNIST.download(rest.root, { mirrors: rest.mirrors, md5: rest.md5 });
    return new FashionMNIST(rest);
  }
}

/** Kuzushiji-MNIST: cursive Japanese characters in MNIST's format (60000 / 10000, 10 classes). */
export class KMNIST extends MnistBase {
  static readonly classes = ['o', 'ki', 'su', 'tsu', 'na', 'ha', 'ma', 'ya', 're', 'wo'];
  /** torchvision's mirrors (pass `mirrors` to download from others). */
  static readonly mirrors: readonly string[] = Object.freeze([...VARIANTS.KMNIST.mirrors]);
  constructor(options: MnistOptions) {
    super(VARIANTS.KMNIST, options);
  }
  static async download(root: string, opts: DownloadOptions = {}): Promise<void> {
    await MnistBase.fetchFiles(VARIANTS.KMNIST, { root, ...opts });
  }
  static async create(options: MnistOptions & { download?: boolean }): Promise<KMNIST> {
    const { download, ...rest } = options;
    checkOptions('KMNIST.create', rest, OPTIONS);
    if (download) await KMNIST.download(rest.root, { mirrors: rest.mirrors, md5: rest.md5 });
    return new KMNIST(rest);
  }
}
