// t.save: a value written in torch.save's zip format, which torch.load (weights_only=True
// included) reads. The value is checked and its tensors grouped by storage before
// anything is written; the file is then written record by record through a temp file
// renamed into place (checkpoint/atomic.ts, src/files), so no half-written .pt is ever
// left, and each storage's bytes are fetched only when its record is written.
import { basename, extname } from 'node:path';
import { ITEM_SIZE } from '../../core/dtype.ts';
import { writeFileAtomic } from '../atomic.ts';
import { writePickle } from './pickle-writer.ts';
import { groupBytes, planSave } from './save-plan.ts';
import { checkArchiveSize, type RecordSource, serializationId, zipChunks } from './zip.ts';

const text = (name: string, s: string): RecordSource => {
  const b = Buffer.from(s, 'latin1');
  return { name, size: b.length, data: () => b };
};

/** The records torch.save writes, in its order (torch/serialization.py's _save). */
function records(value: unknown, file: string): RecordSource[] {
  const { pickle, storages } = writePickle(value, planSave(value, file));
  return [
    { name: 'data.pkl', size: pickle.length, data: () => pickle },
    text('.format_version', '1'),
    text('.storage_alignment', '64'),
    text('byteorder', 'little'),
    ...storages.map((g) => ({
      name: `data/${g.key}`,
      size: (g.stop - g.start) * ITEM_SIZE[g.dtype],
      data: () => groupBytes(g),
    })),
    text('version', '3\n'),
    text('.data/serialization_id', serializationId()),
  ];
}

/** The archive's folder: the file's name without its extension, as torch.save names it. */
function prefixFor(path: string): string {
  const name = basename(path, extname(path));
  return /^[A-Za-z0-9_.-]+$/.test(name) ? name : 'archive';
}

/** The bytes of torch.save(value, buffer) (held in memory: for small values, tests, or a transport of your own). */
export function dumps(value: unknown): Uint8Array {
  const rs = records(value, '<buffer>');
  checkArchiveSize('archive', rs, '<buffer>');
  return Buffer.concat([...zipChunks('archive', rs)]);
}

/**
 * Writes `value` to `path` as torch.save does (the zip format, pickle protocol 2,
 * storages aligned to 64 bytes), atomically. Tensors that share a storage (views, tied
 * weights) are written once and load back sharing it, in PyTorch and in t.load.
 * Throws SerializationError naming the first value that has no .pt form (values.ts),
 * before anything is written.
 */
export async function save(value: unknown, path: string): Promise<void> {
  const rs = records(value, path);
  const prefix = prefixFor(path);
  checkArchiveSize(prefix, rs, path);
  await writeFileAtomic(path, zipChunks(prefix, rs));
}
