// t.load: a torch.save file (zip, or the legacy format) read as data only, like
// torch.load(weights_only=True). In two phases: first the archive is listed, the pickle
// read and every storage it names checked against the record that holds it (dtype, size,
// every tensor's view inside it) and the value checked to have a JavaScript form — all
// before any tensor memory is allocated — then the storages are read, one base tensor
// each, and every tensor is made as a view of its base.

import { constants } from 'node:buffer';
import { open } from 'node:fs/promises';
import { checkOptions, optionNames } from '../../core/options.ts';
import { pickleMagic } from '../pickle.ts';
import { SerializationError } from './errors.ts';
import { isLegacy, isTar, readLegacy } from './legacy.ts';
import { readPickle } from './pickle-reader.ts';
import type { Py, StorageRecord } from './py.ts';
import { StorageTable, TensorFactory } from './storages.ts';
import { toJs } from './to-js.ts';
import type { PtValue } from './values.ts';
import { PtArchive } from './zip.ts';

// Storages are extracted from the archive in batches of about this many bytes, so that
// the file, one batch and the tensors made so far are what memory holds at once.
const BATCH_BYTES = 64 << 20;
// Format versions PyTorch's reader accepts (caffe2/serialize/versions.h).
const MIN_VERSION = 1;
const MAX_VERSION = 10;

export interface Parsed {
  root: Py;
  /** The storages the value's tensors use (known once the pickles that build them are read). */
  used(): StorageRecord[];
  bigEndian: boolean;
  /** The bytes of these records, each exactly record.bytes long. */
  read(records: StorageRecord[]): Map<string, Uint8Array>;
}

function archiveError(file: string, detail: string): SerializationError {
  return new SerializationError('ARCHIVE', file, detail);
}

/** The small text records of a PyTorch archive: its format version and byte order. */
function checkRecords(archive: PtArchive, file: string): boolean {
  const has = (n: string) => archive.records.has(n);
  if (has('constants.pkl'))
    throw archiveError(file, 'a TorchScript archive (torch.jit.save): t.load reads torch.save files');
  if (!has('data.pkl'))
    throw archiveError(file, `not a torch.save zip: no record '${archive.prefix}/data.pkl'`);
  const versionName = has('.data/version') ? '.data/version' : 'version';
  const small = [versionName, ...(has('byteorder') ? ['byteorder'] : [])];
  for (const n of small)
    if ((archive.records.get(n)?.size ?? 0) > 64) throw archiveError(file, `its '${n}' record is too long`);
  const texts = archive.read(small);
  const version = Number(
    Buffer.from(texts.get(versionName) as Uint8Array)
      .toString('latin1')
      .trim(),
  );
  if (!Number.isInteger(version) || version < MIN_VERSION || version > MAX_VERSION)
    throw archiveError(file, `format version ${version} (PyTorch reads ${MIN_VERSION} to ${MAX_VERSION})`);
  const order = texts.get('byteorder');
  if (order === undefined) return false; // PyTorch's default: little-endian
  const text = Buffer.from(order).toString('latin1');
  if (text !== 'little' && text !== 'big') throw archiveError(file, `byte order '${text}'`);
  return text === 'big';
}

function parseZip(bytes: Uint8Array, file: string): Parsed {
  const archive = PtArchive.open(bytes, file);
  const bigEndian = checkRecords(archive, file);
  const table = new StorageTable(file, bytes.length);
  const pickle = archive.read(['data.pkl']).get('data.pkl') as Uint8Array;
  const { value } = readPickle(pickle, 0, { file, persistentLoad: (pid) => table.load(pid, false) });
  let total = 0;
  for (const r of table.records.values()) {
    const entry = archive.records.get(`data/${r.key}`);
    if (entry === undefined)
      throw new SerializationError(
        'STORAGE',
        file,
        `storage '${r.key}' has no record '${archive.prefix}/data/${r.key}'`,
      );
    if (entry.originalSize !== r.bytes)
      throw new SerializationError(
        'STORAGE',
        file,
        `storage '${r.key}' is declared as ${r.bytes} bytes, its record holds ${entry.originalSize}`,
      );
    total += r.bytes;
  }
  if (total > bytes.length) throw new SerializationError('STORAGE', file, 'its storage records overlap');
  return {
    root: value,
    used: () => table.used(),
    bigEndian,
    read: (records) => {
      const data = archive.read(records.map((r) => `data/${r.key}`));
      return new Map(records.map((r) => [r.key, data.get(`data/${r.key}`) as Uint8Array]));
    },
  };
}

function parseLegacy(bytes: Uint8Array, file: string): Parsed {
  const c = readLegacy(bytes, file);
  return { root: c.root, used: () => c.table.used(), bigEndian: c.bigEndian, read: () => c.data };
}

/** The value of torch.save bytes (zip or legacy), its storages not yet read. */
export function parse(bytes: Uint8Array, file: string): Parsed {
  if (pickleMagic(bytes) === 'zip') return parseZip(bytes, file);
  if (isLegacy(bytes)) return parseLegacy(bytes, file);
  if (isTar(bytes))
    throw archiveError(
      file,
      "PyTorch's tar format (before 0.4), which torch.load(weights_only=True) refuses too",
    );
  throw archiveError(file, 'not a torch.save file (neither its zip nor its legacy pickle format)');
}

/** Batches of records of about BATCH_BYTES each. */
function batches(records: StorageRecord[]): StorageRecord[][] {
  const out: StorageRecord[][] = [];
  let size = Number.POSITIVE_INFINITY;
  for (const r of records) {
    if (size + r.bytes > BATCH_BYTES) {
      out.push([]);
      size = 0;
    }
    out[out.length - 1].push(r);
    size += r.bytes;
  }
  return out;
}

/** Parses torch.save bytes held in memory; `name` is used in errors. */
export function loads<T = PtValue>(bytes: Uint8Array, opts: { name?: string } & LoadOptions = {}): T {
  checkLoadOptions('loads', opts, LOADS_OPTIONS);
  const file = opts.name ?? '<buffer>';
  const parsed = parse(bytes, file);
  toJs(parsed.root, () => null, file); // the dry run: refuses before anything is allocated
  const factory = new TensorFactory();
  try {
    for (const batch of batches(parsed.used())) {
      const data = parsed.read(batch);
      for (const r of batch) factory.addBase(r, data.get(r.key) as Uint8Array, parsed.bigEndian);
    }
    const value = toJs(parsed.root, (spec) => factory.make(spec), file);
    factory.releaseBases();
    return value as T;
  } catch (e) {
    factory.disposeAll();
    throw e;
  }
}

/** Reads a whole file into one buffer (readFile stops at 2 GiB). */
async function readWhole(path: string): Promise<Uint8Array> {
  const fh = await open(path, 'r');
  try {
    const { size } = await fh.stat();
    if (size > constants.MAX_LENGTH)
      throw new SerializationError(
        'TOO_LARGE',
        path,
        `${size} bytes; this Node.js holds at most ${constants.MAX_LENGTH} in one buffer`,
      );
    const buf = Buffer.allocUnsafe(size);
    let got = 0;
    while (got < size) {
      const { bytesRead } = await fh.read(buf, got, size - got, got);
      if (bytesRead === 0) break;
      got += bytesRead;
    }
    return buf.subarray(0, got);
  } finally {
    await fh.close();
  }
}

/**
 * Loads a file torch.save wrote (like torch.load(path, weights_only=True)): tensors, dicts,
 * OrderedDicts, lists, tuples, numbers, strings, bools and None (values.ts says which
 * JavaScript value each becomes). No code runs: a file naming any other Python global
 * is refused (SerializationError 'PICKLE_GLOBAL'). Tensors are on the CPU; tensors that
 * shared a storage share memory.
 */
export async function load<T = PtValue>(path: string, options?: LoadOptions): Promise<T> {
  checkLoadOptions('load', options, LOAD_OPTIONS);
  return loads<T>(await readWhole(path), { name: path });
}

/**
 * torch.load's arguments that tsddp can honour: only the values it does anyway, so a
 * ported call runs unchanged and any other value is refused, never ignored.
 */
export interface LoadOptions {
  /** Where tensors go: 'cpu' (what tsddp does; move them with `.to()` afterwards). */
  mapLocation?: 'cpu';
  /** true (what tsddp does: data only, no pickled code runs). */
  weightsOnly?: true;
}

const LOAD_OPTIONS = optionNames<LoadOptions>({ mapLocation: true, weightsOnly: true });
const LOADS_OPTIONS = [...LOAD_OPTIONS, 'name'];

function checkLoadOptions(fn: string, options: LoadOptions | undefined, names: readonly string[]): void {
  const opts = checkOptions(fn, options, names);
  if (opts.mapLocation !== undefined && opts.mapLocation !== 'cpu')
    throw new TypeError(
      `${fn}(): mapLocation ${JSON.stringify(opts.mapLocation)} is not supported: tensors load on the CPU; move them with .to() afterwards`,
    );
  if (opts.weightsOnly !== undefined && opts.weightsOnly !== true)
    throw new TypeError(
      `${fn}(): weightsOnly ${String(opts.weightsOnly)} is not supported: tsddp loads data only (weights_only=True) and never runs pickled code`,
    );
}
