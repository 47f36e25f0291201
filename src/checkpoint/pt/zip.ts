// The zip container of torch.save (since PyTorch 1.6), through fflate. PyTorch's writer
// (caffe2/serialize/inline_container.cc in PyTorch's sources) puts every record under one
// folder, uncompressed, each record's data aligned to 64 bytes by a padding extra field
// ('FB', filled with 'Z') so that storages can be memory-mapped; it follows each record
// with a data descriptor. The writer here does the same. The reader lists the archive
// before extracting anything, refuses compressed records (PyTorch never writes them, and a
// declared inflated size is what a zip bomb lies about), and extracts only the records it
// was asked for, whose sizes the caller has already checked against what the pickle
// declares: nothing larger than the file is ever allocated.
import { randomBytes } from 'node:crypto';
import { unzipSync, Zip, ZipPassThrough } from 'fflate';
import { SerializationError } from './errors.ts';

/** One record of the archive, by its name under the archive's folder. */
export interface ZipRecord {
  readonly size: number;
  readonly originalSize: number;
  readonly compression: number;
}

// The smallest central directory header (46 bytes): no archive of n bytes lists more records.
const CENTRAL_HEADER = 46;

export class PtArchive {
  private constructor(
    private readonly bytes: Uint8Array,
    readonly file: string,
    /** The folder every record is under ('archive', or the saved file's name). */
    readonly prefix: string,
    readonly records: ReadonlyMap<string, ZipRecord>,
  ) {}

  /** Lists a zip held in memory (extracting nothing). */
  static open(bytes: Uint8Array, file: string): PtArchive {
    const records = new Map<string, ZipRecord>();
    let prefix: string | null = null;
    let count = 0;
    let nameBytes = 0;
    guarded(file, () =>
      unzipSync(bytes, {
        filter: (f) => {
          count++;
          nameBytes += f.name.length;
          if (count * CENTRAL_HEADER > bytes.length || nameBytes > bytes.length)
            throw archiveError(file, 'its central directory lists more records than the file can hold');
          // As PyTorch's reader: the first record's folder is the archive's.
          prefix ??= f.name.includes('/') ? f.name.slice(0, f.name.indexOf('/')) : null;
          if (prefix === null) throw archiveError(file, `its first record '${f.name}' is not in a folder`);
          if (!f.name.startsWith(`${prefix}/`)) return false;
          const name = f.name.slice(prefix.length + 1);
          if (records.has(name)) throw archiveError(file, `it holds the record '${f.name}' twice`);
          records.set(name, { size: f.size, originalSize: f.originalSize, compression: f.compression });
          return false;
        },
      }),
    );
    if (prefix === null) throw archiveError(file, 'it is an empty zip');
    return new PtArchive(bytes, file, prefix, records);
  }

  /**
   * The bytes of `names` (records under the folder), which must be listed and stored
   * uncompressed; one pass over the central directory for all of them.
   */
  read(names: readonly string[]): Map<string, Uint8Array> {
    const wanted = new Set<string>();
    for (const name of names) {
      const r = this.records.get(name);
      if (r === undefined) throw archiveError(this.file, `it has no record '${this.prefix}/${name}'`);
      if (r.compression !== 0 || r.size !== r.originalSize)
        throw archiveError(
          this.file,
          `its record '${this.prefix}/${name}' is compressed (method ${r.compression}); torch.save stores records ` +
            'uncompressed, and t.load reads only such records',
        );
      wanted.add(`${this.prefix}/${name}`);
    }
    const files = guarded(this.file, () => unzipSync(this.bytes, { filter: (f) => wanted.has(f.name) }));
    const out = new Map<string, Uint8Array>();
    for (const name of names) {
      const data = files[`${this.prefix}/${name}`];
      const size = this.records.get(name)?.size;
      if (data === undefined || data.length !== size)
        throw archiveError(this.file, `its record '${this.prefix}/${name}' runs past the end of the file`);
      out.set(name, data);
    }
    return out;
  }
}

function archiveError(file: string, detail: string): SerializationError {
  return new SerializationError('ARCHIVE', file, `not a readable torch.save zip: ${detail}`);
}

/** fflate's own errors (bad signatures, offsets past the end) become ARCHIVE errors. */
function guarded<T>(file: string, fn: () => T): T {
  try {
    return fn();
  } catch (e) {
    if (e instanceof SerializationError) throw e;
    throw archiveError(file, (e as Error).message);
  }
}

// --- writing ------------------------------------------------------------------------

/** A record to write: its name under the archive's folder, its size, and its bytes on demand. */
export interface RecordSource {
  readonly name: string;
  readonly size: number;
  data(): Uint8Array;
}

const ALIGNMENT = 64;
// PyTorch's padding field: id 'FB' (0x4246 little-endian), filled with 'Z'.
const PADDING_ID = 0x4246;
const LOCAL_HEADER = 30;
const DATA_DESCRIPTOR = 16;
// A fixed time, so that the same content gives the same bytes (but for serialization_id).
const MTIME = new Date(1980, 0, 1);
// fflate writes no zip64 records: offsets and sizes must fit 32 bits, and counts 16.
const MAX_ARCHIVE = 2 ** 32 - 1;
const MAX_RECORDS = 65535;

function padding(offset: number, nameLength: number): number {
  return (ALIGNMENT - ((offset + LOCAL_HEADER + nameLength + 4) % ALIGNMENT)) % ALIGNMENT;
}

/** The size of the archive of `records` (to refuse, before writing, one that needs zip64). */
export function archiveSize(prefix: string, records: readonly RecordSource[]): number {
  let offset = 0;
  let central = 22;
  for (const r of records) {
    const n = Buffer.byteLength(`${prefix}/${r.name}`);
    const pad = padding(offset, n);
    offset += LOCAL_HEADER + n + 4 + pad + r.size + DATA_DESCRIPTOR;
    central += CENTRAL_HEADER + n + 4 + pad;
  }
  return offset + central;
}

/** Throws TOO_LARGE for an archive fflate cannot write (no zip64). */
export function checkArchiveSize(prefix: string, records: readonly RecordSource[], file: string): void {
  const size = archiveSize(prefix, records);
  if (size > MAX_ARCHIVE || records.length > MAX_RECORDS)
    throw new SerializationError(
      'TOO_LARGE',
      file,
      `the archive would be ${size} bytes in ${records.length} records; t.save writes up to 4 GiB and 65535 records (no zip64)`,
    );
}

/** The archive's bytes, record by record: each record's data is fetched only when it is written. */
export function* zipChunks(prefix: string, records: readonly RecordSource[]): Generator<Uint8Array> {
  const out: Uint8Array[] = [];
  let failure: Error | null = null;
  const zip = new Zip((err, chunk) => {
    if (err) failure = err;
    else out.push(chunk);
  });
  let offset = 0;
  for (const r of records) {
    const name = `${prefix}/${r.name}`;
    const pad = padding(offset, Buffer.byteLength(name));
    const entry = new ZipPassThrough(name);
    entry.extra = { [PADDING_ID]: new Uint8Array(pad).fill(0x5a) };
    entry.mtime = MTIME;
    zip.add(entry);
    const data = r.data();
    if (data.length !== r.size)
      throw new Error(`zip record ${name}: ${data.length} bytes, ${r.size} planned`);
    entry.push(data, true);
    if (failure) throw failure;
    yield* out.splice(0);
    offset += LOCAL_HEADER + Buffer.byteLength(name) + 4 + pad + data.length + DATA_DESCRIPTOR;
  }
  zip.end();
  if (failure) throw failure;
  yield* out.splice(0);
}

/** PyTorch's .data/serialization_id: 40 digits that tell one save from another. */
export function serializationId(): string {
  const b = randomBytes(16);
  return [b.readBigUInt64LE(0), b.readBigUInt64LE(8)].map((v) => v.toString().padStart(20, '0')).join('');
}
