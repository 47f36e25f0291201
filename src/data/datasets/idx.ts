// The idx format of MNIST and its relatives (LeCun's "IDX" files, torchvision's
// read_sn3_pascalvincent_tensor): a 4-byte magic (two zero bytes, a type code, the number
// of dimensions), one big-endian uint32 per dimension, then the elements, big-endian,
// row-major. An uncompressed file is read item by item with positional reads, so data
// workers share the OS page cache as the CIFAR reader does (cifar.ts); a `.gz` file (as
// torchvision downloads them) cannot be read at an offset and is decompressed into memory.
import { closeSync, fstatSync, openSync, readFileSync, readSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';
import { DataError } from '../types.ts';

/** An idx element type, by the type code of the magic number. */
export type IdxDtype = 'uint8' | 'int8' | 'int16' | 'int32' | 'float32' | 'float64';

const TYPES: Record<number, [IdxDtype, number]> = {
  8: ['uint8', 1],
  9: ['int8', 1],
  11: ['int16', 2],
  12: ['int32', 4],
  13: ['float32', 4],
  14: ['float64', 8],
};

/** What an idx header says. */
export interface IdxHeader {
  /** The magic number as a big-endian uint32 (MNIST images: 2051, labels: 2049). */
  magic: number;
  dtype: IdxDtype;
  /** Bytes per element. */
  itemSize: number;
  shape: number[];
  /** Where the elements start. */
  offset: number;
}

/**
 * Parses the header at the start of `bytes` (at least the first 4 + 4 * ndims bytes);
 * `path` names the file in the errors.
 */
export function parseIdxHeader(bytes: Uint8Array, path: string): IdxHeader {
  if (bytes.length < 4) throw new DataError(`${path} is not an idx file: only ${bytes.length} bytes`, path);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const magic = view.getUint32(0);
  const type = TYPES[bytes[2]];
  const ndims = bytes[3];
  if (bytes[0] !== 0 || bytes[1] !== 0 || type === undefined || ndims === 0) {
    throw new DataError(
      `${path} is not an idx file: magic number 0x${magic.toString(16).padStart(8, '0')} ` +
        '(expected 0x0000TTNN: a type code 08, 09, 0b, 0c, 0d or 0e, then at least one dimension)',
      path,
    );
  }
  const offset = 4 + 4 * ndims;
  if (bytes.length < offset) {
    throw new DataError(
      `${path} is truncated: its header needs ${offset} bytes, the file has ${bytes.length}`,
      path,
    );
  }
  const shape = Array.from({ length: ndims }, (_, d) => view.getUint32(4 + 4 * d));
  return { magic, dtype: type[0], itemSize: type[1], shape, offset };
}

/** Bytes a header's elements take. */
function dataBytes(h: IdxHeader): number {
  return h.shape.reduce((a, b) => a * b, 1) * h.itemSize;
}

/**
 * An opened idx file: its header, and its items (the slices along the first dimension)
 * read one at a time. Its size must be exactly what the header says, as torchvision checks.
 */
export class IdxFile {
  readonly header: IdxHeader;
  /** Bytes per item: the product of the dimensions after the first, times the element size. */
  readonly itemBytes: number;
  /** The decompressed contents of a `.gz` file; null for a file read at offsets. */
  private readonly bytes: Buffer | null;
  private fd: number | null = null;

  /** Opens `path` (a `.gz` name is decompressed into memory) and checks its size against its header. */
  constructor(readonly path: string) {
    let size: number;
    let head: Buffer;
    if (path.endsWith('.gz')) {
      try {
        this.bytes = gunzipSync(readFileSync(path));
      } catch (e) {
        throw new DataError(`cannot decompress ${path}: ${(e as Error).message}`, path, { cause: e });
      }
      size = this.bytes.length;
      head = this.bytes;
    } else {
      this.bytes = null;
      const fd = openSync(path, 'r');
      try {
        size = fstatSync(fd).size;
        head = Buffer.alloc(Math.min(size, 4 + 4 * 255));
        readSync(fd, head, 0, head.length, 0);
      } finally {
        closeSync(fd);
      }
      head = head.subarray(0, Math.min(size, 4 + 4 * (head[3] ?? 0)));
    }
    this.header = parseIdxHeader(head, path);
    const need = this.header.offset + dataBytes(this.header);
    if (size !== need) {
      throw new DataError(
        `${path} is truncated or corrupt: ${size} bytes, but its header ` +
          `(${this.header.dtype} [${this.header.shape.join(', ')}]) needs ${need}`,
        path,
      );
    }
    this.itemBytes = this.header.shape.slice(1).reduce((a, b) => a * b, 1) * this.header.itemSize;
  }

  /** The number of items: the first dimension. */
  get length(): number {
    return this.header.shape[0];
  }

  /** Item `i`'s raw (big-endian) bytes, into `out` if given. */
  item(i: number, out: Uint8Array = new Uint8Array(this.itemBytes)): Uint8Array {
    const at = this.header.offset + i * this.itemBytes;
    if (this.bytes !== null) {
      out.set(this.bytes.subarray(at, at + this.itemBytes));
      return out;
    }
    this.fd ??= openSync(this.path, 'r');
    const n = readSync(this.fd, out, 0, this.itemBytes, at);
    if (n !== this.itemBytes) throw new DataError(`short read from ${this.path}`, this.path);
    return out;
  }

  /** Every element, as a typed array of the file's type in this machine's byte order. */
  readAll(): Uint8Array | Int8Array | Int16Array | Int32Array | Float32Array | Float64Array {
    const n = dataBytes(this.header);
    const raw = new Uint8Array(n);
    if (this.bytes !== null) raw.set(this.bytes.subarray(this.header.offset));
    else {
      this.fd ??= openSync(this.path, 'r');
      if (readSync(this.fd, raw, 0, n, this.header.offset) !== n)
        throw new DataError(`short read from ${this.path}`, this.path);
    }
    return fromBigEndian(raw, this.header.dtype);
  }

  /** Closes the file (it is reopened by the next read). */
  close(): void {
    if (this.fd !== null) closeSync(this.fd);
    this.fd = null;
  }
}

/** Big-endian elements as a typed array: idx stores every multi-byte type big-endian. */
function fromBigEndian(
  raw: Uint8Array,
  dtype: IdxDtype,
): Uint8Array | Int8Array | Int16Array | Int32Array | Float32Array | Float64Array {
  const view = new DataView(raw.buffer, raw.byteOffset, raw.byteLength);
  switch (dtype) {
    case 'uint8':
      return raw;
    case 'int8':
      return new Int8Array(raw.buffer, raw.byteOffset, raw.length);
    case 'int16':
      return Int16Array.from({ length: raw.length / 2 }, (_, k) => view.getInt16(2 * k));
    case 'int32':
      return Int32Array.from({ length: raw.length / 4 }, (_, k) => view.getInt32(4 * k));
    case 'float32':
      return Float32Array.from({ length: raw.length / 4 }, (_, k) => view.getFloat32(4 * k));
    case 'float64':
      return Float64Array.from({ length: raw.length / 8 }, (_, k) => view.getFloat64(8 * k));
  }
}

/** Reads a whole idx file (or its `.gz`): its header and its elements. */
export function readIdx(path: string): IdxHeader & {
  data: Uint8Array | Int8Array | Int16Array | Int32Array | Float32Array | Float64Array;
} {
  const f = new IdxFile(path);
  try {
    return { ...f.header, data: f.readAll() };
  } finally {
    f.close();
  }
}
