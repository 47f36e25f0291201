// safetensors reading and writing, with the names of Python's `safetensors.torch`:
// save/load (bytes in memory), saveFile/loadFile (files). Reading is strict and bounded
// (see safetensors-header.ts): the header is validated against the real file size before
// it is read, and tensor data is read only once the whole header has been validated, so
// a hostile file can neither make the reader over-read nor allocate what it claims.
import { open } from 'node:fs/promises';
import { endianness } from 'node:os';
import { ITEM_SIZE } from '../core/dtype.ts';
import * as t from '../core/index.ts';
import { checkOptions, optionNames } from '../core/options.ts';
import { type ProgressHook, type WrittenFile, writeFileAtomic } from './atomic.ts';
import { FORMAT_DTYPES, FORMAT_OF_DTYPE, type FormatDtype } from './dtypes.ts';
import { SafetensorsError } from './errors.ts';
import { hasPickleExtension, pickleMagic, pickleRefusal } from './pickle.ts';
import {
  encodeHeader,
  headerLength,
  parseHeader,
  type SafetensorsHeader,
  type TensorEntry,
} from './safetensors-header.ts';
import { sharedMemoryGroups } from './shared-memory.ts';
import { hasLoneSurrogate } from './strict-json.ts';

export interface SafetensorsContents {
  tensors: Record<string, t.Tensor>;
  metadata: Record<string, string> | null;
  /** With `otherDtypes: 'raw'`: the tensors tsddp's Tensor has no dtype for, as bytes. */
  raw: Record<string, RawTensor>;
}

/**
 * A tensor of a format dtype tsddp's Tensor cannot hold (F8_E8M0, F8_E4M3FNUZ,
 * F8_E5M2FNUZ): its element bytes exactly as stored (little-endian, row-major).
 */
export interface RawTensor {
  /** The code in the file: 'F8_E8M0', 'F8_E4M3FNUZ', ... */
  safetensorsDtype: string;
  /** PyTorch's dtype for it (`torch.<name>`): 'float8_e8m0fnu', 'float8_e4m3fnuz', ... */
  torchDtype: string;
  shape: number[];
  bytes: Uint8Array;
}

export interface ReadOptions {
  /**
   * Tensors whose dtype tsddp's Tensor has none for (PyTorch writes F8_E8M0,
   * F8_E4M3FNUZ, F8_E5M2FNUZ): 'error' (the default) refuses the file before reading any
   * data, naming every such tensor and its dtype; 'raw' hands them out as bytes in
   * `raw` (readSafetensors / deserialize) and loads the rest; 'skip' loads the rest.
   */
  otherDtypes?: 'error' | 'raw' | 'skip';
}

export interface SaveOptions {
  /** Free-form string → string map stored as `__metadata__`. */
  metadata?: Record<string, string> | null;
}

const READ_OPTIONS = optionNames<ReadOptions>({ otherDtypes: true });
const SAVE_OPTIONS = optionNames<SaveOptions>({ metadata: true });
// safetensors.torch.load_file(path, device='cpu'): the CPU is where tsddp loads.
const CPU_ONLY = { only: { device: 'cpu' } };

/** Random access to the bytes of a file (or anything file-like), for readSafetensors. */
export interface ByteSource {
  /** Shown in errors. */
  readonly name: string;
  /** Total size in bytes. */
  readonly size: number;
  /** Exactly `length` bytes at `offset` (fewer only if the source shrank). */
  read(offset: number, length: number): Promise<Uint8Array>;
}

function checkHost(): void {
  // safetensors is little-endian and tensors are copied byte for byte.
  if (endianness() !== 'LE') throw new Error('safetensors: big-endian hosts are not supported');
}

// --- writing ------------------------------------------------------------------------

interface Plan {
  header: Uint8Array;
  items: { name: string; tensor: t.Tensor; format: FormatDtype; bytes: number }[];
  size: number;
}

function plan(
  tensors: Record<string, t.Tensor>,
  metadata: Record<string, string> | null,
  file: string,
): Plan {
  checkHost();
  if (metadata !== null) {
    if (typeof metadata !== 'object') {
      throw new SafetensorsError('INVALID_ARGUMENT', file, 'metadata must be an object of strings');
    }
    for (const [k, v] of Object.entries(metadata)) {
      if (typeof v !== 'string' || hasLoneSurrogate(k) || hasLoneSurrogate(v)) {
        throw new SafetensorsError(
          'INVALID_ARGUMENT',
          file,
          `metadata[${JSON.stringify(k)}] is not a string`,
        );
      }
    }
  }
  const items = Object.entries(tensors).map(([name, tensor]) => {
    if (!(tensor instanceof t.Tensor) || tensor.isDisposed) {
      throw new SafetensorsError('INVALID_ARGUMENT', file, `'${name}' is not a live Tensor`);
    }
    if (name === '__metadata__' || hasLoneSurrogate(name)) {
      throw new SafetensorsError('INVALID_ARGUMENT', file, `'${name}' cannot be a tensor name`);
    }
    const format = FORMAT_OF_DTYPE.get(tensor.dtype);
    if (format === undefined) {
      throw new SafetensorsError(
        'INVALID_ARGUMENT',
        file,
        `'${name}' has dtype ${tensor.dtype}, which the safetensors format has no code for`,
      );
    }
    return { name, tensor, format, bytes: tensor.numel() * ITEM_SIZE[tensor.dtype] };
  });
  const shared = sharedMemoryGroups(items);
  if (shared.length > 0) {
    const groups = shared.map((g) => `[${g.map((n) => `'${n}'`).join(', ')}]`).join(', ');
    throw new SafetensorsError(
      'SHARED_MEMORY',
      file,
      `some tensors share memory: ${groups}; written out they would be separate copies and load back ` +
        'untied (safetensors.torch.save_file refuses them too): save one name per storage, or clone() the others',
    );
  }
  // The reference writer's layout: by dtype rank (widest first), then by name compared
  // as UTF-8 bytes. With the header padded to 8 bytes, every tensor's data is aligned.
  const keyed = items.map((i) => ({ ...i, key: Buffer.from(i.name, 'utf8') }));
  keyed.sort((a, b) => b.format.rank - a.format.rank || Buffer.compare(a.key, b.key));
  items.splice(0, items.length, ...keyed);
  const header = encodeHeader(
    items.map((i) => ({
      name: i.name,
      dtype: i.format.code,
      shape: i.tensor.shape,
      bytes: i.bytes,
    })),
    metadata,
  );
  return { header, items, size: header.length + items.reduce((s, i) => s + i.bytes, 0) };
}

// Tensor bytes are fetched one at a time while writing, so a large state dict never
// exists twice in host memory.
function* chunks(p: Plan, file: string): Generator<Uint8Array> {
  yield p.header;
  for (const item of p.items) {
    const bytes = item.tensor.toBytes();
    if (bytes.length !== item.bytes) {
      throw new SafetensorsError(
        'INVALID_ARGUMENT',
        file,
        `'${item.name}' gave ${bytes.length} bytes, expected ${item.bytes}`,
      );
    }
    yield bytes;
  }
}

/** The safetensors bytes of `tensors` (like safetensors.torch.save). */
export function save(tensors: Record<string, t.Tensor>, options?: SaveOptions): Uint8Array {
  const opts = checkOptions('save', options, SAVE_OPTIONS);
  const p = plan(tensors, opts.metadata ?? null, '<buffer>');
  const out = new Uint8Array(p.size);
  let at = 0;
  for (const c of chunks(p, '<buffer>')) {
    out.set(c, at);
    at += c.length;
  }
  return out;
}

/**
 * Writes `tensors` to `path` (like safetensors.torch.save_file), atomically: temp file in
 * the same directory, fsync, rename, fsync the directory. Returns size and sha256.
 */
export async function saveFile(
  tensors: Record<string, t.Tensor>,
  path: string,
  options?: SaveOptions & { onProgress?: ProgressHook },
): Promise<WrittenFile> {
  const opts = checkOptions('saveFile', options, [...SAVE_OPTIONS, 'onProgress']);
  const p = plan(tensors, opts.metadata ?? null, path);
  return writeFileAtomic(path, chunks(p, path), opts.onProgress);
}

// --- reading ------------------------------------------------------------------------

function pickleOr(e: unknown, prefix: Uint8Array, file: string): unknown {
  if (e instanceof SafetensorsError && (e.code === 'HEADER_LENGTH' || e.code === 'HEADER_JSON')) {
    if (pickleMagic(prefix) !== null) return new SafetensorsError('PICKLE', file, pickleRefusal('this file'));
  }
  return e;
}

// defineProperty: a tensor called "__proto__" must stay a key, not set a prototype.
function defineKey<T>(obj: Record<string, T>, key: string, value: T): void {
  Object.defineProperty(obj, key, { value, enumerable: true, writable: true, configurable: true });
}

/**
 * With `otherDtypes: 'error'`, refuses (before any data is read) a header holding tensors
 * tsddp's Tensor has no dtype for, naming each with its dtype.
 */
function checkOtherDtypes(header: SafetensorsHeader, opts: ReadOptions, file: string): void {
  const mode = opts.otherDtypes ?? 'error';
  if (mode !== 'error' && mode !== 'raw' && mode !== 'skip') {
    throw new TypeError(`otherDtypes must be 'error', 'raw' or 'skip', got ${String(mode)}`);
  }
  if (mode !== 'error') return;
  const other = header.entries.filter((e) => e.dtype === null);
  if (other.length === 0) return;
  const list = other
    .slice(0, 8)
    .map(
      (e) => `'${e.name}' (${e.safetensorsDtype}, torch.${FORMAT_DTYPES.get(e.safetensorsDtype)?.torchName})`,
    )
    .join(', ');
  const more = other.length > 8 ? ` and ${other.length - 8} more` : '';
  throw new SafetensorsError(
    'UNSUPPORTED_DTYPE',
    file,
    `tsddp's Tensor has no dtype for tensor${other.length > 1 ? 's' : ''} ${list}${more}; ` +
      "read with { otherDtypes: 'raw' } to get their bytes, or { otherDtypes: 'skip' } to load the other tensors",
  );
}

/** What the reader builds: a Tensor per tsddp dtype, a RawTensor for the others when asked. */
class Loaded {
  readonly tensors: Record<string, t.Tensor> = {};
  readonly raw: Record<string, RawTensor> = {};
  constructor(private readonly opts: ReadOptions) {}
  /** Whether `e`'s data is needed at all (a skipped tensor's is never read). */
  wants(e: TensorEntry): boolean {
    return e.dtype !== null || this.opts.otherDtypes === 'raw';
  }
  add(e: TensorEntry, data: Uint8Array): void {
    if (e.dtype !== null) defineKey(this.tensors, e.name, t.fromBytes(data, e.shape, e.dtype));
    else defineKey(this.raw, e.name, rawTensor(e, data));
  }
  /** Frees the tensors made so far (a later one failed). */
  dispose(): void {
    for (const x of Object.values(this.tensors)) x.dispose();
  }
}

function rawTensor(e: TensorEntry, bytes: Uint8Array): RawTensor {
  return {
    safetensorsDtype: e.safetensorsDtype,
    torchDtype: FORMAT_DTYPES.get(e.safetensorsDtype)?.torchName ?? e.safetensorsDtype,
    shape: e.shape,
    // A copy: a view would keep the whole file's buffer alive.
    bytes: bytes.slice(),
  };
}

/** Parses safetensors bytes held in memory; `name` is used in errors. */
export function deserialize(
  bytes: Uint8Array,
  options?: { name?: string } & ReadOptions,
): SafetensorsContents {
  const opts = checkOptions('deserialize', options, [...READ_OPTIONS, 'name'], CPU_ONLY);
  checkHost();
  const file = opts.name ?? '<buffer>';
  const prefix = bytes.subarray(0, 8);
  let header: SafetensorsHeader;
  try {
    const n = headerLength(prefix, bytes.length, file);
    header = parseHeader(bytes.subarray(8, 8 + n), bytes.length - 8 - n, file);
  } catch (e) {
    throw pickleOr(e, prefix, file);
  }
  checkOtherDtypes(header, opts, file);
  const base = header.dataStart;
  const out = new Loaded(opts);
  try {
    for (const e of header.entries)
      if (out.wants(e)) out.add(e, bytes.subarray(base + e.begin, base + e.end));
  } catch (err) {
    out.dispose();
    throw err;
  }
  return { tensors: out.tensors, metadata: header.metadata, raw: out.raw };
}

/** The tensors in safetensors bytes (like safetensors.torch.load). */
export function load(
  bytes: Uint8Array,
  opts: { name?: string } & ReadOptions = {},
): Record<string, t.Tensor> {
  return deserialize(bytes, opts).tensors;
}

async function exactRead(src: ByteSource, offset: number, length: number): Promise<Uint8Array> {
  const b = await src.read(offset, length);
  if (b.length !== length) {
    throw new SafetensorsError(
      'TRUNCATED',
      src.name,
      `file ended after ${offset + b.length} bytes while reading ${length} bytes at offset ${offset}`,
    );
  }
  return b;
}

async function headerOf(src: ByteSource): Promise<SafetensorsHeader> {
  const prefix = await src.read(0, Math.min(8, src.size));
  try {
    const n = headerLength(prefix, src.size, src.name);
    const headerBytes = await exactRead(src, 8, n);
    return parseHeader(headerBytes, src.size - 8 - n, src.name);
  } catch (e) {
    throw pickleOr(e, prefix, src.name);
  }
}

async function withSource<T>(
  pathOrSource: string | ByteSource,
  fn: (src: ByteSource) => Promise<T>,
): Promise<T> {
  checkHost();
  if (typeof pathOrSource !== 'string') return fn(pathOrSource);
  const path = pathOrSource;
  if (hasPickleExtension(path)) throw new SafetensorsError('PICKLE', path, pickleRefusal('this file'));
  const fh = await open(path, 'r');
  try {
    const { size } = await fh.stat();
    return await fn({
      name: path,
      size,
      read: async (offset, length) => {
        const buf = new Uint8Array(length);
        let got = 0;
        while (got < length) {
          const { bytesRead } = await fh.read(buf, got, length - got, offset + got);
          if (bytesRead === 0) break;
          got += bytesRead;
        }
        return got === length ? buf : buf.subarray(0, got);
      },
    });
  } finally {
    await fh.close();
  }
}

/** The validated header of a safetensors file (tensor names, dtypes, shapes, metadata), without reading data. */
export async function readHeader(pathOrSource: string | ByteSource): Promise<SafetensorsHeader> {
  return withSource(pathOrSource, headerOf);
}

/** Reads and validates a safetensors file: tensors and metadata (and raw tensors, when asked). */
export async function readSafetensors(
  pathOrSource: string | ByteSource,
  options?: ReadOptions,
): Promise<SafetensorsContents> {
  const opts = checkOptions('readSafetensors', options, READ_OPTIONS, CPU_ONLY);
  return withSource(pathOrSource, async (src) => {
    const header = await headerOf(src);
    checkOtherDtypes(header, opts, src.name);
    // One read per tensor, each bounded by offsets the header validation has checked
    // against the real file size; each buffer is dropped once copied into its tensor.
    const out = new Loaded(opts);
    try {
      for (const e of header.entries) {
        if (out.wants(e)) out.add(e, await exactRead(src, header.dataStart + e.begin, e.end - e.begin));
      }
    } catch (err) {
      out.dispose();
      throw err;
    }
    return { tensors: out.tensors, metadata: header.metadata, raw: out.raw };
  });
}

/** The tensors in a safetensors file (like safetensors.torch.load_file). */
export async function loadFile(path: string, opts: ReadOptions = {}): Promise<Record<string, t.Tensor>> {
  return (await readSafetensors(path, opts)).tensors;
}
