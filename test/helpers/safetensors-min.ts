// A minimal safetensors reader for committed test fixtures (trusted files). Not the
// project's checkpoint reader (src/checkpoint), which validates hostile input; this one
// only checks what a fixture mix-up would get wrong.
import { readFileSync } from 'node:fs';
import * as t from '../../src/index.ts';

const DTYPES: Record<string, { dtype: t.DType; bytes: number }> = {
  F32: { dtype: 'float32', bytes: 4 },
  F64: { dtype: 'float64', bytes: 8 },
  I64: { dtype: 'int64', bytes: 8 },
  I32: { dtype: 'int32', bytes: 4 },
};

export interface SafetensorsFile {
  /** Tensors by name, in file order; kept (not freed by scopes). */
  tensors: Map<string, t.Tensor>;
  metadata: Record<string, string>;
}

/** Reads a safetensors file, from its path or its bytes. */
export function readSafetensors(file: URL | string | Buffer): SafetensorsFile {
  const buf = Buffer.isBuffer(file) ? file : readFileSync(file);
  const headerLen = Number(buf.readBigUInt64LE(0));
  const header = JSON.parse(buf.subarray(8, 8 + headerLen).toString('utf8')) as Record<string, unknown>;
  const base = 8 + headerLen;
  const tensors = new Map<string, t.Tensor>();
  let metadata: Record<string, string> = {};
  for (const [name, info] of Object.entries(header)) {
    if (name === '__metadata__') {
      metadata = info as Record<string, string>;
      continue;
    }
    const {
      dtype,
      shape,
      data_offsets: off,
    } = info as { dtype: string; shape: number[]; data_offsets: [number, number] };
    const d = DTYPES[dtype];
    if (!d) throw new Error(`${name}: unsupported dtype ${dtype}`);
    const numel = shape.reduce((a, b) => a * b, 1);
    if (off[1] - off[0] !== numel * d.bytes) throw new Error(`${name}: size does not match shape ${shape}`);
    // Copy into a fresh, aligned buffer: fromBytes copies again, but wants whole elements.
    const bytes = new Uint8Array(buf.subarray(base + off[0], base + off[1]));
    tensors.set(name, t.fromBytes(bytes, shape, d.dtype).keep());
  }
  return { tensors, metadata };
}
