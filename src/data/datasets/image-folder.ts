// ImageFolder (torchvision.datasets.ImageFolder): root/<class>/**/<image>, classes sorted
// by folder name, images decoded into uint8 [H, W, 3] RGB — JPEGs by libjpeg-turbo
// (../image-addon.ts) when it can, everything else by sharp (libvips). A file
// that cannot be decoded raises a DataError naming it, or — with onError: 'skip' — is
// replaced by the next decodable image (with that image's own label, so no label shifts),
// counted and logged once.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { extname, join, relative } from 'node:path';
import { checkOptions, optionNames } from '../../core/options.ts';
import { imageAddon, isJpeg } from '../image-addon.ts';
import { buildTransform, type Transform, type TransformSpec } from '../transforms/transforms.ts';
import { DataError, type DatasetSpec, type NdArray, type SampleContext } from '../types.ts';

/** torchvision's IMG_EXTENSIONS. */
export const IMG_EXTENSIONS = ['.jpg', '.jpeg', '.png', '.ppm', '.bmp', '.pgm', '.tif', '.tiff', '.webp'];

export interface ImageFolderOptions {
  root: string;
  transform?: Transform | TransformSpec;
  /** File extensions to include (lower case, with the dot). */
  extensions?: string[];
  /** 'raise' (default): a bad image is an error; 'skip': use the next good image, and count it. */
  onError?: 'raise' | 'skip';
  /**
   * Accept class folders with no image (torchvision's allow_empty). By default an empty
   * class is an error: it would be a label the model never sees, usually a typo'd folder.
   */
  allowEmpty?: boolean;
}

const OPTIONS = optionNames<ImageFolderOptions>({
  root: true,
  transform: true,
  extensions: true,
  onError: true,
  allowEmpty: true,
});

type SharpLike = (
  input: string | Buffer,
  opts?: Record<string, unknown>,
) => {
  removeAlpha(): ReturnType<SharpLike>;
  toColourspace(space: string): ReturnType<SharpLike>;
  raw(): ReturnType<SharpLike>;
  toBuffer(opts: {
    resolveWithObject: true;
  }): Promise<{ data: Buffer; info: { width: number; height: number; channels: number } }>;
};

let sharpModule: Promise<SharpLike> | undefined;

/** sharp, loaded on first use, with a clear message when it is not installed. */
function loadSharp(): Promise<SharpLike> {
  sharpModule ??= import('sharp' as string).then(
    (m: { default?: SharpLike }) => (m.default ?? m) as SharpLike,
    (e: Error) => {
      sharpModule = undefined;
      throw new DataError(
        `ImageFolder decodes images with the 'sharp' package, which is not installed (${e.message}); ` +
          'install it with `npm install sharp@^0.35`',
      );
    },
  );
  return sharpModule;
}

/** Decoded pixels; `owned`: in an ArrayBuffer of their own (else a view on sharp's buffer). */
type DecodedImage = NdArray<Uint8Array> & { owned: boolean };

/**
 * Decodes encoded image bytes into uint8 [H, W, 3] RGB. The whole image is decoded even
 * when a transform crops it: libvips stops reading below a cut-out window, so a
 * truncated file would pass unnoticed. The result may be a view on sharp's buffer.
 */
async function decodeBytes(bytes: Buffer, path: string): Promise<DecodedImage> {
  const native = isJpeg(bytes) ? imageAddon() : null;
  if (native !== null) {
    // On libuv's thread pool: the next images decode while this one is transformed
    // (ImageFolder.concurrentGets), as sharp's decodes did.
    const r = await native.decodeJpegAsync(bytes);
    // A string is why libjpeg-turbo did not take it (CMYK, truncated, corrupt...): sharp
    // then converts it or raises the error that names the file.
    if (typeof r !== 'string')
      return { data: new Uint8Array(r.data), shape: [r.height, r.width, 3], owned: true };
  }
  const sharp = await loadSharp();
  let out: { data: Buffer; info: { width: number; height: number; channels: number } };
  try {
    // failOn 'error': truncated or corrupt files fail instead of decoding to grey.
    out = await sharp(bytes, { failOn: 'error' }).removeAlpha().toColourspace('srgb').raw().toBuffer({
      resolveWithObject: true,
    });
  } catch (e) {
    throw new DataError(`cannot decode image ${path}: ${(e as Error).message}`, path, { cause: e });
  }
  const { width, height, channels } = out.info;
  if (channels !== 3)
    throw new DataError(`cannot decode image ${path}: got ${channels} channels, expected RGB`, path);
  return {
    data: new Uint8Array(out.data.buffer, out.data.byteOffset, out.data.length),
    shape: [height, width, 3],
    owned: false,
  };
}

/**
 * A path as the file system has it: a string when its bytes are UTF-8, else the bytes
 * themselves. Node decodes file names as UTF-8, so a name in another encoding (Latin-1
 * from an old archive) would come back altered and could not be opened; torchvision opens
 * it, and so does tsddp. Messages show it with the odd bytes replaced (U+FFFD).
 */
type FsPath = string | Buffer;

const shown = (p: FsPath): string => (typeof p === 'string' ? p : p.toString('utf8'));

/** The names in `dir` in byte order (Python's sorted() order for UTF-8 names). */
function listDir(dir: FsPath): FsPath[] {
  return readdirSync(dir, { encoding: 'buffer' })
    .sort(Buffer.compare)
    .map((b) => {
      const s = b.toString('utf8');
      return Buffer.from(s, 'utf8').equals(b) ? s : b;
    });
}

function joinPath(dir: FsPath, name: FsPath): FsPath {
  if (typeof dir === 'string' && typeof name === 'string') return join(dir, name);
  return Buffer.concat([Buffer.from(dir), Buffer.from('/'), Buffer.from(name)]);
}

/** The file's bytes; a read error becomes a DataError naming the file. */
function readImageFile(file: FsPath): Buffer {
  try {
    // Read here rather than by libvips from the path: cheaper for small files (libvips'
    // file source costs more per image, bench/dataloader.ts), and a loader waits either way.
    return readFileSync(file);
  } catch (e) {
    const path = shown(file);
    throw new DataError(`cannot decode image ${path}: ${(e as Error).message}`, path, { cause: e });
  }
}

/** Decodes an image file into uint8 [H, W, 3] RGB (grayscale and CMYK converted, alpha dropped). */
export async function decodeImage(path: string): Promise<NdArray<Uint8Array>> {
  const { data, shape, owned } = await decodeBytes(readImageFile(path), path);
  // A copy with its own ArrayBuffer, which a worker can transfer (sharp's Buffer is owned by sharp).
  return { data: owned ? data : data.slice(), shape };
}

function walk(dir: FsPath, exts: Set<string>, out: FsPath[]): void {
  for (const name of listDir(dir)) {
    const p = joinPath(dir, name);
    const st = statSync(p);
    if (st.isDirectory()) walk(p, exts, out);
    else if (st.isFile() && exts.has(extname(shown(name)).toLowerCase())) out.push(p);
  }
}

/** `{ image, label }` for root/<class>/<...>/<file>, as torchvision's ImageFolder orders them. */
export class ImageFolder {
  readonly classes: string[];
  readonly classToIdx: Record<string, number>;
  /** [path, label] per sample (a name that is not UTF-8 shows U+FFFD for its odd bytes). */
  readonly samples: [string, number][];
  /** The path to open per sample: the same string, or the bytes of a name that is not UTF-8. */
  private readonly files: FsPath[] = [];
  readonly transform: Transform | undefined;
  readonly onError: 'raise' | 'skip';
  /**
   * How many get() calls a loader may have running at once (see loadBatch): decoding
   * happens on libuv's or libvips' threads, and files are independent, so several overlap.
   */
  readonly concurrentGets = 4;
  /** Samples replaced because they could not be decoded (onError: 'skip'). */
  skipped = 0;
  private readonly warnedPaths = new Set<string>();

  constructor(readonly options: ImageFolderOptions) {
    checkOptions('ImageFolder', options, OPTIONS);
    const root = options.root;
    if (!existsSync(root) || !statSync(root).isDirectory()) {
      throw new DataError(`ImageFolder: ${root} is not a folder`, root);
    }
    const classDirs = listDir(root).filter((d) => statSync(joinPath(root, d)).isDirectory());
    this.classes = classDirs.map(shown);
    if (this.classes.length === 0)
      throw new DataError(`ImageFolder: couldn't find any class folder in ${root}`, root);
    this.classToIdx = Object.fromEntries(this.classes.map((c, i) => [c, i]));
    const exts = new Set(options.extensions ?? IMG_EXTENSIONS);
    this.samples = [];
    const empty: string[] = [];
    classDirs.forEach((dir, label) => {
      const files: FsPath[] = [];
      walk(joinPath(root, dir), exts, files);
      if (files.length === 0) empty.push(this.classes[label]);
      for (const f of files) {
        this.samples.push([shown(f), label]);
        this.files.push(f);
      }
    });
    if (empty.length > 0 && this.samples.length > 0 && !options.allowEmpty) {
      throw new DataError(
        `ImageFolder: found no valid file for the classes ${empty.join(', ')} in ${root} ` +
          `(extensions: ${[...exts].join(', ')}; pass allowEmpty: true to keep empty classes)`,
        join(root, empty[0]),
      );
    }
    if (this.samples.length === 0) {
      throw new DataError(
        `ImageFolder: found no valid file in ${root} (extensions: ${[...exts].join(', ')})`,
        root,
      );
    }
    this.onError = options.onError ?? 'raise';
    this.transform = options.transform === undefined ? undefined : buildTransform(options.transform);
  }

  get length(): number {
    return this.samples.length;
  }

  async get(i: number, ctx?: SampleContext): Promise<{ image: NdArray; label: number }> {
    if (!Number.isInteger(i) || i < 0 || i >= this.length) {
      throw new RangeError(`ImageFolder: index ${i} out of range for ${this.length} samples`);
    }
    if (this.transform !== undefined && ctx === undefined)
      throw new TypeError('ImageFolder.get(): a transform needs the sample context (ctx.rng)');
    let image: NdArray<Uint8Array> | undefined;
    let label = 0;
    for (let k = 0; k < this.length && image === undefined; k++) {
      const j = (i + k) % this.length;
      const [path, l] = this.samples[j];
      try {
        // With a transform, sharp's buffer is read once and dropped: no copy.
        const decoded = await decodeBytes(readImageFile(this.files[j]), path);
        // Without a transform the pixels are returned: a copy of their own, as decodeImage gives.
        image = this.transform
          ? decoded
          : { data: decoded.owned ? decoded.data : decoded.data.slice(), shape: decoded.shape };
        label = l;
      } catch (e) {
        const missingSharp = !(e instanceof DataError) || e.path === undefined;
        if (this.onError === 'raise' || missingSharp) throw e;
        this.skipped++;
        if (!this.warnedPaths.has(path)) {
          this.warnedPaths.add(path);
          console.warn(`ImageFolder: skipping ${relative(this.options.root, path)}: ${(e as Error).message}`);
        }
      }
    }
    if (image === undefined)
      throw new DataError(`ImageFolder: no image in ${this.options.root} could be decoded`);
    if (this.transform === undefined || ctx === undefined) return { image, label };
    const out = this.transform.apply(image, ctx.rng);
    // A transform that returned the decoded pixels themselves gets them copied, as decodeImage does.
    if (out.data.buffer === image.data.buffer) return { image: { ...out, data: out.data.slice() }, label };
    return { image: out, label };
  }

  workerSpec(): DatasetSpec {
    return {
      module: import.meta.url,
      export: 'ImageFolder',
      options: { ...this.options, transform: this.transform?.toSpec() },
    };
  }
}
