// The format torch.save wrote before PyTorch 1.6 (and still writes with
// _use_new_zipfile_serialization=False): five pickles in a row — a magic number, the
// protocol version 1001, the writer's byte order and type sizes, the value itself, and
// the list of storage keys — then each storage in that order, as an 8-byte element count
// and its bytes (torch/serialization.py's _legacy_save). The older tar format is refused,
// as torch.load(weights_only=True) refuses it.
import { SerializationError } from './errors.ts';
import { readPickle } from './pickle-reader.ts';
import { type Py, PyDict, PyList } from './py.ts';
import { StorageTable } from './storages.ts';

const MAGIC = 0x1950a86a20f9469cfc6cn;
const PROTOCOL_VERSION = 1001;

/** Whether `bytes` start as the legacy format does (a pickle of the magic number). */
export function isLegacy(bytes: Uint8Array): boolean {
  // PROTO 2, LONG1 of 10 bytes: the magic number, little-endian.
  const head = [0x80, 0x02, 0x8a, 0x0a, 0x6c, 0xfc, 0x9c, 0x46, 0xf9, 0x20, 0x6a, 0xa8, 0x50, 0x19];
  return head.every((b, i) => bytes[i] === b);
}

/** Whether `bytes` are a tar archive (the format of PyTorch before 0.4's legacy one). */
export function isTar(bytes: Uint8Array): boolean {
  return bytes.length >= 263 && Buffer.from(bytes.subarray(257, 262)).toString('latin1') === 'ustar';
}

export interface LegacyContents {
  root: Py;
  table: StorageTable;
  /** Each storage's bytes (views into the file), by key. */
  data: Map<string, Uint8Array>;
  bigEndian: boolean;
}

function invalid(file: string, detail: string): SerializationError {
  return new SerializationError('PICKLE_INVALID', file, `legacy torch.save file: ${detail}`);
}

/** Whether the writer was big-endian: sys_info's little_endian. */
function bigEndianOf(info: Py, file: string): boolean {
  if (!(info instanceof PyDict)) throw invalid(file, 'its system information is not a dict');
  const at = info.keys.indexOf('little_endian');
  const little = at < 0 ? undefined : info.values[at];
  if (typeof little !== 'boolean') throw invalid(file, 'its system information has no little_endian bool');
  return !little;
}

export function readLegacy(bytes: Uint8Array, file: string): LegacyContents {
  const table = new StorageTable(file, bytes.length);
  const plain = {
    file,
    persistentLoad: (): never => {
      throw invalid(file, 'a storage outside the value');
    },
  };
  const magic = readPickle(bytes, 0, plain);
  if (magic.value !== MAGIC) throw invalid(file, 'wrong magic number');
  const version = readPickle(bytes, magic.end, plain);
  if (version.value !== PROTOCOL_VERSION)
    throw new SerializationError(
      'ARCHIVE',
      file,
      `legacy torch.save protocol ${String(version.value)} (1001 is read)`,
    );
  const info = readPickle(bytes, version.end, plain);
  const bigEndian = bigEndianOf(info.value, file);
  const main = readPickle(bytes, info.end, { file, persistentLoad: (pid) => table.load(pid, true) });
  const keys = readPickle(bytes, main.end, plain);
  if (!(keys.value instanceof PyList) || !keys.value.items.every((k) => typeof k === 'string'))
    throw invalid(file, 'its storage keys are not a list of str');
  const data = new Map<string, Uint8Array>();
  let at = keys.end;
  for (const key of keys.value.items as string[]) {
    const record = table.records.get(key);
    if (record === undefined || data.has(key))
      throw new SerializationError(
        'STORAGE',
        file,
        `storage '${key}' is listed but no tensor names it, or is listed twice`,
      );
    const item = record.type.itemSize;
    if (bytes.length - at < 8 + record.bytes)
      throw new SerializationError(
        'STORAGE',
        file,
        `storage '${key}' (${record.bytes} bytes) runs past the end of the file`,
      );
    const view = new DataView(bytes.buffer, bytes.byteOffset + at, 8);
    const numel = view.getBigInt64(0, !bigEndian);
    if (numel !== BigInt(record.bytes / item))
      throw new SerializationError(
        'STORAGE',
        file,
        `storage '${key}' holds ${numel} elements, the pickle declares ${record.bytes / item}`,
      );
    data.set(key, bytes.subarray(at + 8, at + 8 + record.bytes));
    at += 8 + record.bytes;
  }
  for (const key of table.records.keys())
    if (!data.has(key))
      throw new SerializationError('STORAGE', file, `storage '${key}' has no data in the file`);
  return { root: main.value, table, data, bigEndian };
}
