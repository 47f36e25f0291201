// The records of a .pt zip, as sha256 digests by name under the archive's folder, for
// comparing what tsddp writes today with the file PyTorch read when from_tsddp.json was
// made. .data/serialization_id is left out: it differs on every save, as in PyTorch.
import { createHash } from 'node:crypto';
import { unzipSync } from 'fflate';

export function recordDigests(bytes: Uint8Array): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, data] of Object.entries(unzipSync(bytes))) {
    const rel = name.slice(name.indexOf('/') + 1);
    if (rel !== '.data/serialization_id') out[rel] = createHash('sha256').update(data).digest('hex');
  }
  return out;
}

/** Offsets of each record's data in a zip (from its local header), by name. */
export function dataOffsets(bytes: Uint8Array): Record<string, number> {
  const view = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length);
  const out: Record<string, number> = {};
  for (let at = 0; view.readUInt32LE(at) === 0x04034b50; ) {
    const nameLength = view.readUInt16LE(at + 26);
    const extraLength = view.readUInt16LE(at + 28);
    const name = view.toString('utf8', at + 30, at + 30 + nameLength);
    const start = at + 30 + nameLength + extraLength;
    out[name.slice(name.indexOf('/') + 1)] = start;
    // Every record tsddp writes is followed by a 16-byte data descriptor holding its size.
    const next = view.indexOf(Buffer.from([0x50, 0x4b, 0x07, 0x08]), start);
    at = next + 16;
  }
  return out;
}
