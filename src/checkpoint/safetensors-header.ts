// The safetensors header: validating an untrusted one, and encoding one for a writer.
// Format: 8-byte little-endian u64 N, N bytes of UTF-8 JSON (an object of tensor entries
// {dtype, shape, data_offsets} plus an optional "__metadata__" string→string map, padded
// with spaces), then the data buffer, every byte of it covered by exactly one tensor.
// Everything here is checked before a single data byte is read or allocated.
import type { DType } from '../core/index.ts';
import { FORMAT_DTYPES } from './dtypes.ts';
import { SafetensorsError } from './errors.ts';
import { type JsonObject, JsonSyntaxError, type JsonValue, parseStrictJson } from './strict-json.ts';

/** The reference implementation's cap on the header length. */
export const MAX_HEADER_BYTES = 100_000_000;
const U64_LIMIT = 1n << 64n;
const METADATA_KEY = '__metadata__';

/** One tensor as the header describes it; offsets are relative to the data buffer. */
export interface TensorEntry {
  name: string;
  /** The tsddp dtype, or null for a format dtype tsddp's Tensor has none for (F8_E8M0, F8_E4M3FNUZ, ...). */
  dtype: DType | null;
  /** The dtype code as the header spells it ('F32', 'U16', ...). */
  safetensorsDtype: string;
  shape: number[];
  begin: number;
  end: number;
}

export interface SafetensorsHeader {
  /** Tensors in the order their data appears in the file. */
  entries: TensorEntry[];
  /** The `__metadata__` map, or null when the file has none. */
  metadata: Record<string, string> | null;
  /** Where the data buffer starts in the file (8 + header length). */
  dataStart: number;
}

/**
 * Validates the 8-byte prefix against the file size and the 100 MB cap; returns N.
 * `fileSize` is what the file really holds, so nothing larger is ever requested.
 */
export function headerLength(prefix: Uint8Array, fileSize: number, file: string): number {
  if (fileSize < 8 || prefix.length < 8) {
    throw new SafetensorsError(
      'HEADER_LENGTH',
      file,
      `file is ${fileSize} bytes, shorter than the 8-byte header length`,
    );
  }
  const n = new DataView(prefix.buffer, prefix.byteOffset, 8).getBigUint64(0, true);
  if (n > BigInt(MAX_HEADER_BYTES)) {
    throw new SafetensorsError(
      'HEADER_LENGTH',
      file,
      `header length ${n} exceeds the ${MAX_HEADER_BYTES}-byte limit`,
    );
  }
  if (n > BigInt(fileSize - 8)) {
    throw new SafetensorsError(
      'HEADER_LENGTH',
      file,
      `header length ${n} runs past the end of the file (${fileSize} bytes)`,
    );
  }
  return Number(n);
}

const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/** Parses and validates the header bytes; `dataLength` is the file size after the header. */
export function parseHeader(bytes: Uint8Array, dataLength: number, file: string): SafetensorsHeader {
  let text: string;
  try {
    text = utf8.decode(bytes);
  } catch {
    throw new SafetensorsError('HEADER_ENCODING', file, 'header is not valid UTF-8');
  }
  if (!text.startsWith('{')) {
    throw new SafetensorsError('HEADER_JSON', file, "header does not start with '{'");
  }
  let root: JsonValue;
  try {
    // A valid header nests three deep (root → entry → shape); allow a little slack so
    // the error for a deeper one names the structure rather than the depth.
    root = parseStrictJson(text, 8);
  } catch (e) {
    // Deliberately stricter than the reference parser, which keeps the last of two equal
    // tensor names (it refuses only a repeated field inside an entry): which of the two
    // a file means is ambiguous, so it is not loaded.
    if (e instanceof JsonSyntaxError && e.duplicateKey !== undefined) {
      throw new SafetensorsError('DUPLICATE_KEY', file, `header has a duplicate key: ${e.message}`);
    }
    throw new SafetensorsError('HEADER_JSON', file, `header is not valid JSON: ${(e as Error).message}`);
  }
  if (!(root instanceof Map)) throw new SafetensorsError('HEADER_JSON', file, 'header is not a JSON object');

  let metadata: Record<string, string> | null = null;
  const entries: TensorEntry[] = [];
  for (const [name, value] of root) {
    if (name === METADATA_KEY) metadata = parseMetadata(value, file);
    else entries.push(parseEntry(name, value, dataLength, file));
  }

  // Every byte of the data buffer belongs to exactly one tensor: sorted by offsets, each
  // tensor starts where the previous ended, and the last ends at the end of the file.
  entries.sort((a, b) => a.begin - b.begin || a.end - b.end);
  let cursor = 0;
  for (const e of entries) {
    if (e.begin !== cursor) {
      const what = e.begin > cursor ? `a gap of ${e.begin - cursor} bytes before` : 'overlapping data at';
      throw new SafetensorsError(
        'INVALID_OFFSETS',
        file,
        `data_offsets leave ${what} tensor '${e.name}' [${e.begin}, ${e.end}) (previous data ends at ${cursor})`,
      );
    }
    cursor = e.end;
  }
  if (cursor !== dataLength) {
    throw new SafetensorsError(
      'TRAILING_BYTES',
      file,
      `${dataLength - cursor} bytes after the last tensor's data (the data buffer is ${dataLength} bytes, tensors cover ${cursor})`,
    );
  }
  return { entries, metadata, dataStart: 8 + bytes.length };
}

function parseMetadata(value: JsonValue, file: string): Record<string, string> | null {
  // The reference reader accepts null as "no metadata".
  if (value === null) return null;
  if (!(value instanceof Map)) {
    throw new SafetensorsError('METADATA', file, '__metadata__ is not an object of strings');
  }
  const out: Record<string, string> = {};
  for (const [k, v] of value) {
    if (typeof v !== 'string') {
      throw new SafetensorsError(
        'METADATA',
        file,
        `__metadata__[${JSON.stringify(k)}] is ${describe(v)}, not a string`,
      );
    }
    Object.defineProperty(out, k, { value: v, enumerable: true, writable: true, configurable: true });
  }
  return out;
}

function parseEntry(name: string, value: JsonValue, dataLength: number, file: string): TensorEntry {
  const where = `tensor '${name}'`;
  if (!(value instanceof Map)) {
    throw new SafetensorsError('INVALID_ENTRY', file, `${where} is ${describe(value)}, not an object`);
  }
  for (const k of value.keys()) {
    if (k !== 'dtype' && k !== 'shape' && k !== 'data_offsets') {
      throw new SafetensorsError('INVALID_ENTRY', file, `${where} has an unknown field '${k}'`);
    }
  }
  const obj = value as JsonObject;
  const st = obj.get('dtype');
  if (typeof st !== 'string') {
    throw new SafetensorsError('INVALID_ENTRY', file, `${where} has no string 'dtype'`);
  }
  const format = FORMAT_DTYPES.get(st);
  if (format === undefined) {
    throw new SafetensorsError(
      'UNKNOWN_DTYPE',
      file,
      `${where} has dtype ${JSON.stringify(st)}; the format's dtypes are ${[...FORMAT_DTYPES.keys()].join(', ')}`,
    );
  }
  const shapeValue = obj.get('shape');
  if (!Array.isArray(shapeValue)) {
    throw new SafetensorsError('INVALID_ENTRY', file, `${where} has no 'shape' array`);
  }
  // The byte size, in u64 arithmetic like the reference: overflow is its own error.
  let bytes = BigInt(format.bytes);
  const shape: number[] = [];
  for (const d of shapeValue) {
    if (typeof d !== 'bigint' || d < 0n) {
      throw new SafetensorsError(
        'INVALID_ENTRY',
        file,
        `${where} has shape entry ${describe(d)}, not a non-negative integer`,
      );
    }
    if (d > BigInt(Number.MAX_SAFE_INTEGER)) {
      throw new SafetensorsError('OVERFLOW', file, `${where} has a dimension of ${d}, too large to address`);
    }
    shape.push(Number(d));
    // Stop multiplying once past u64 (and keep the bigint small); a later 0 dim cannot
    // rescue an overflowed product in the reference's checked arithmetic either.
    if (bytes < U64_LIMIT) bytes *= d;
  }
  if (bytes >= U64_LIMIT) {
    throw new SafetensorsError(
      'OVERFLOW',
      file,
      `${where}: shape [${shape.join(', ')}] × ${format.bytes} bytes overflows 64 bits`,
    );
  }
  const offsets = obj.get('data_offsets');
  if (
    !Array.isArray(offsets) ||
    offsets.length !== 2 ||
    typeof offsets[0] !== 'bigint' ||
    typeof offsets[1] !== 'bigint'
  ) {
    const bad = Array.isArray(offsets) ? offsets.find((o) => typeof o !== 'bigint') : undefined;
    throw new SafetensorsError(
      'INVALID_ENTRY',
      file,
      `${where} has no 'data_offsets' pair of non-negative integers${bad === undefined ? '' : ` (it holds ${describe(bad)})`}`,
    );
  }
  const [b, e] = offsets as [bigint, bigint];
  if (b < 0n || e < b || e > BigInt(dataLength)) {
    throw new SafetensorsError(
      'INVALID_OFFSETS',
      file,
      `${where} has data_offsets [${b}, ${e}] outside the ${dataLength}-byte data buffer`,
    );
  }
  if (e - b !== bytes) {
    throw new SafetensorsError(
      'SIZE_MISMATCH',
      file,
      `${where} spans ${e - b} bytes but shape [${shape.join(', ')}] of ${st} needs ${bytes}`,
    );
  }
  return { name, dtype: format.dtype, safetensorsDtype: st, shape, begin: Number(b), end: Number(e) };
}

function describe(v: unknown): string {
  if (v === null) return 'null';
  if (v instanceof Map) return 'an object';
  if (Array.isArray(v)) return 'an array';
  if (typeof v === 'bigint') return `the number ${v}`;
  if (typeof v === 'number') return Object.is(v, -0) ? 'the number -0 (negative zero)' : `the number ${v}`;
  if (typeof v === 'string') return `the string ${JSON.stringify(v.length > 40 ? `${v.slice(0, 40)}…` : v)}`;
  return `${typeof v} ${String(v)}`;
}

/** A header for tensors laid out back to back in `specs` order, padded to 8 bytes. */
export function encodeHeader(
  specs: readonly { name: string; dtype: string; shape: readonly number[]; bytes: number }[],
  metadata: Record<string, string> | null,
): Uint8Array {
  const header: Record<string, unknown> = {};
  // defineProperty: a tensor called "__proto__" must stay a key, not set a prototype.
  const put = (k: string, v: unknown) =>
    Object.defineProperty(header, k, { value: v, enumerable: true, writable: true, configurable: true });
  if (metadata !== null) put(METADATA_KEY, metadata);
  let offset = 0;
  for (const s of specs) {
    put(s.name, { dtype: s.dtype, shape: s.shape, data_offsets: [offset, offset + s.bytes] });
    offset += s.bytes;
  }
  const json = new TextEncoder().encode(JSON.stringify(header));
  const padded = Math.ceil(json.length / 8) * 8;
  const out = new Uint8Array(8 + padded).fill(0x20, 8 + json.length);
  new DataView(out.buffer).setBigUint64(0, BigInt(padded), true);
  out.set(json, 8);
  return out;
}
