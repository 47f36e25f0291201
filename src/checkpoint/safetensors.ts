// safetensors reading and writing, with the names of Python's `safetensors.torch`:
// save/load (bytes in memory), saveFile/loadFile (files). Reading is strict and bounded
// (see safetensors-header.ts): the header is validated against the real file size before
// it is read, and tensor data is read only once the whole header has been validated, so
// a hostile file can neither make the reader over-read nor allocate what it claims.
import { open } from 'node:fs/promises';
import { endianness } from 'node:os';
import * as t from '../core/index.ts';
import { type ProgressHook, type WrittenFile, writeFileAtomic } from './atomic.ts';
import { DTYPE_TO_SAFETENSORS, ITEM_BYTES, WRITE_RANK } from './dtypes.ts';
import { SafetensorsError } from './errors.ts';
import { hasPickleExtension, pickleMagic, pickleRefusal } from './pickle.ts';
import {
  encodeHeader,
  headerLength,
  parseHeader,
  type SafetensorsHeader,
  type TensorEntry,
} from './safetensors-header.ts';
import { hasLoneSurrogate } from './strict-json.ts';

export interface SafetensorsContents {
  tensors: Record<string, t.Tensor>;
  metadata: Record<string, string> | null;
}

export interface SaveOptions {
  /** Free-form string → string map stored as `__metadata__`. */
  metadata?: Record<string, string> | null;
}

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
  items: { name: string; tensor: t.Tensor; bytes: number }[];
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
    return { name, tensor, dtype: tensor.dtype, bytes: tensor.numel() * ITEM_BYTES[tensor.dtype] };
  });
  // The reference writer's layout: by dtype rank (widest first), then by name compared
  // as UTF-8 bytes. With the header padded to 8 bytes, every tensor's data is aligned.
  const keyed = items.map((i) => ({ ...i, key: Buffer.from(i.name, 'utf8') }));
  keyed.sort((a, b) => WRITE_RANK[b.dtype] - WRITE_RANK[a.dtype] || Buffer.compare(a.key, b.key));
  items.splice(0, items.length, ...keyed);
  const header = encodeHeader(
    items.map((i) => ({
      name: i.name,
      dtype: DTYPE_TO_SAFETENSORS[i.dtype],
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
export function save(tensors: Record<string, t.Tensor>, opts: SaveOptions = {}): Uint8Array {
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
  opts: SaveOptions & { onProgress?: ProgressHook } = {},
): Promise<WrittenFile> {
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

function materialize(
  entries: TensorEntry[],
  bytesOf: (e: TensorEntry) => Uint8Array,
): Record<string, t.Tensor> {
  const out: Record<string, t.Tensor> = {};
  try {
    for (const e of entries) defineKey(out, e.name, t.fromBytes(bytesOf(e), e.shape, e.dtype));
  } catch (err) {
    for (const x of Object.values(out)) x.dispose();
    throw err;
  }
  return out;
}

/** Parses safetensors bytes held in memory; `name` is used in errors. */
export function deserialize(bytes: Uint8Array, opts: { name?: string } = {}): SafetensorsContents {
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
  const base = header.dataStart;
  const tensors = materialize(header.entries, (e) => bytes.subarray(base + e.begin, base + e.end));
  return { tensors, metadata: header.metadata };
}

/** The tensors in safetensors bytes (like safetensors.torch.load). */
export function load(bytes: Uint8Array, opts: { name?: string } = {}): Record<string, t.Tensor> {
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

/** Reads and validates a safetensors file: tensors and metadata. */
export async function readSafetensors(pathOrSource: string | ByteSource): Promise<SafetensorsContents> {
  return withSource(pathOrSource, async (src) => {
    const header = await headerOf(src);
    // One read per tensor, each bounded by offsets the header validation has checked
    // against the real file size; each buffer is dropped once copied into its tensor.
    const tensors: Record<string, t.Tensor> = {};
    try {
      for (const e of header.entries) {
        const bytes = await exactRead(src, header.dataStart + e.begin, e.end - e.begin);
        defineKey(tensors, e.name, t.fromBytes(bytes, e.shape, e.dtype));
      }
    } catch (err) {
      for (const x of Object.values(tensors)) x.dispose();
      throw err;
    }
    return { tensors, metadata: header.metadata };
  });
}

/** The tensors in a safetensors file (like safetensors.torch.load_file). */
export async function loadFile(path: string): Promise<Record<string, t.Tensor>> {
  return (await readSafetensors(path)).tensors;
}
