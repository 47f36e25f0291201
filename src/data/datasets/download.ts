// Downloading dataset archives with an MD5 check, and extracting .tar.gz and .gz files — with
// nothing but Node: fetch, crypto, zlib and a small ustar reader. A file is only ever
// visible under its final name once it is complete and verified.
import { createHash } from 'node:crypto';
import {
  createReadStream,
  createWriteStream,
  existsSync,
  mkdirSync,
  renameSync,
  rmSync,
  type WriteStream,
} from 'node:fs';
import { dirname, isAbsolute, join, normalize, sep } from 'node:path';
import { Readable, Transform, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGunzip } from 'node:zlib';
import { openNew, tempPathFor } from '../../files/index.ts';
import { DataError } from '../types.ts';

/** The MD5 of a file, hex. */
export async function md5File(path: string): Promise<string> {
  const h = createHash('md5');
  await pipeline(createReadStream(path), h);
  return h.digest('hex');
}

/**
 * Downloads `url` to `path` (via an unguessable temp name beside it, renamed when complete) and checks its MD5.
 * An existing file with the right checksum is kept; a mismatch deletes the download and throws.
 */
export async function downloadUrl(url: string, path: string, md5?: string): Promise<void> {
  if (existsSync(path) && (md5 === undefined || (await md5File(path)) === md5)) return;
  mkdirSync(dirname(path), { recursive: true });
  const part = tempPathFor(path);
  let res: Response;
  try {
    res = await fetch(url);
  } catch (e) {
    throw new DataError(`download of ${url} failed: ${(e as Error).message}`, path, { cause: e });
  }
  if (!res.ok || res.body === null) {
    throw new DataError(`download of ${url} failed: HTTP ${res.status} ${res.statusText}`, path);
  }
  const h = createHash('md5');
  const hashing = new Transform({
    transform(chunk: Buffer, _enc, done) {
      h.update(chunk);
      done(null, chunk);
    },
  });
  try {
    await pipeline(
      Readable.fromWeb(res.body as import('node:stream/web').ReadableStream),
      hashing,
      createWriteStream(part, { fd: openNew(part) }),
    );
  } catch (e) {
    rmSync(part, { force: true });
    throw new DataError(`download of ${url} failed: ${(e as Error).message}`, path, { cause: e });
  }
  const got = h.digest('hex');
  if (md5 !== undefined && got !== md5) {
    rmSync(part, { force: true });
    throw new DataError(
      `download of ${url}: MD5 mismatch (expected ${md5}, got ${got}); the file was deleted`,
      path,
    );
  }
  renameSync(part, path);
}

/** A tar member's name, refusing anything that would land outside the target folder. */
function safeName(name: string, archive: string): string {
  const n = normalize(name);
  if (isAbsolute(n) || n === '..' || n.startsWith(`..${sep}`) || n.includes(`${sep}..${sep}`)) {
    throw new DataError(`archive member '${name}' would be written outside the target folder`, archive);
  }
  return n;
}

/** A numeric header field: octal ASCII, NUL- or space-terminated; empty reads as 0. */
function octal(buf: Buffer, start: number, len: number): number {
  const s = buf
    .toString('latin1', start, start + len)
    .replace(/\0.*$/, '')
    .trim();
  return s === '' ? 0 : Number.parseInt(s, 8);
}

/** A tar header's fields that extraction needs. */
interface TarHeader {
  /** The member's size in bytes (its data is padded to a 512-byte block). */
  size: number;
  /** The padding after the data. */
  pad: number;
  /** The type flag: '0'/'7' file, '5' folder, 'L' GNU long name; NUL reads as '0'. */
  type: string;
  /** The ustar name, with the prefix field joined on. */
  name: string;
}

/** Reads the fields extraction needs from a 512-byte ustar/GNU header block. */
function parseTarHeader(header: Buffer): TarHeader {
  const size = octal(header, 124, 12);
  const pad = (512 - (size % 512)) % 512;
  const type = String.fromCharCode(header[156] || 48);
  const prefix = header.toString('utf8', 345, 500).replace(/\0.*$/s, '');
  const base = header.toString('utf8', 0, 100).replace(/\0.*$/s, '');
  return { size, pad, type, name: prefix ? `${prefix}/${base}` : base };
}

/** The member being written: its temp file and how many data bytes are still to come. */
interface OpenFile {
  fd: WriteStream;
  path: string;
  tmp: string;
  left: number;
  pad: number;
}

/**
 * The ustar reader's state machine, fed the decompressed stream chunk by chunk. Between
 * headers it is in one of three states: writing a file's data, collecting a GNU long
 * name, or skipping (padding, and members that are not extracted).
 */
class TarExtractor {
  /** The final paths of the files written so far. */
  readonly written: string[] = [];
  private pending: Buffer = Buffer.alloc(0);
  private file: OpenFile | null = null;
  private skip = 0;
  private longName: string | null = null;
  private collecting: { left: number; chunks: Buffer[]; pad: number } | null = null;
  private ended = false;
  private aborted = false;
  private writeError: Error | null = null;

  constructor(
    private readonly archive: string,
    private readonly dest: string,
  ) {}

  /** True once the end-of-archive block was read with no member left unfinished. */
  get complete(): boolean {
    return this.file === null && this.collecting === null && this.ended;
  }

  /** Takes the next chunk and consumes as much of the buffered input as it can. */
  push(chunk: Buffer): Promise<void> {
    this.pending = this.pending.length === 0 ? chunk : Buffer.concat([this.pending, chunk]);
    return this.drain();
  }

  /** Stops extraction and removes the file being written, if any. */
  abort(): void {
    this.aborted = true;
    const f = this.file;
    if (f === null) return;
    f.fd.destroy();
    rmSync(f.tmp, { force: true });
  }

  /** Runs the state machine until it needs more input or the archive has ended. */
  private async drain(): Promise<void> {
    for (;;) {
      if (this.aborted) return;
      if (this.writeError !== null) throw this.writeError;
      let progressed: boolean;
      if (this.file !== null) progressed = await this.writeData(this.file);
      else if (this.collecting !== null) progressed = this.collectLongName(this.collecting);
      else if (this.skip > 0) progressed = this.skipBytes();
      else progressed = await this.readHeader();
      if (!progressed) return;
    }
  }

  /** Writes buffered data of the open file; finishes it when complete. False: needs more input. */
  private async writeData(file: OpenFile): Promise<boolean> {
    const n = Math.min(file.left, this.pending.length);
    if (n > 0) {
      const part = this.pending.subarray(0, n);
      this.pending = this.pending.subarray(n);
      file.left -= n;
      if (!file.fd.write(part)) await new Promise<void>((r) => file.fd.once('drain', () => r()));
      if (this.aborted) return false;
    }
    if (file.left > 0) return false;
    this.skip = file.pad;
    await this.finishFile();
    return true;
  }

  /** Collects a GNU long name ('L' member) for the next header. False: needs more input. */
  private collectLongName(c: { left: number; chunks: Buffer[]; pad: number }): boolean {
    const n = Math.min(c.left, this.pending.length);
    c.chunks.push(this.pending.subarray(0, n));
    this.pending = this.pending.subarray(n);
    c.left -= n;
    if (c.left > 0) return false;
    this.longName = Buffer.concat(c.chunks).toString('utf8').replace(/\0.*$/s, '');
    this.skip = c.pad;
    this.collecting = null;
    return true;
  }

  /** Drops padding or an unextracted member's data. False: needs more input. */
  private skipBytes(): boolean {
    const n = Math.min(this.skip, this.pending.length);
    this.pending = this.pending.subarray(n);
    this.skip -= n;
    return this.skip === 0;
  }

  /** Reads the next header and starts its member. False: needs more input, or the archive ended. */
  private async readHeader(): Promise<boolean> {
    if (this.ended || this.pending.length < 512) return false;
    const header = this.pending.subarray(0, 512);
    this.pending = this.pending.subarray(512);
    if (header.every((b) => b === 0)) {
      this.ended = true;
      return false;
    }
    const { size, pad, type, name: ustarName } = parseTarHeader(header);
    const name = this.longName ?? ustarName;
    this.longName = null;
    if (type === 'L') {
      this.collecting = { left: size, chunks: [], pad };
    } else if (type === '0' || type === '7') {
      await this.openFile(name, size, pad);
    } else {
      if (type === '5') mkdirSync(join(this.dest, safeName(name, this.archive)), { recursive: true });
      this.skip = size + pad; // links, devices, pax headers: not needed for datasets
    }
    return true;
  }

  /** Opens a regular file's temp file under `dest` (an empty one is finished at once). */
  private async openFile(name: string, size: number, pad: number): Promise<void> {
    const path = join(this.dest, safeName(name, this.archive));
    mkdirSync(dirname(path), { recursive: true });
    const tmp = tempPathFor(path);
    const fd = createWriteStream(tmp, { fd: openNew(tmp) });
    fd.on('error', (e) => {
      this.writeError = e;
    });
    this.file = { fd, path, tmp, left: size, pad };
    if (size === 0) {
      this.skip = pad;
      await this.finishFile();
    }
  }

  /** Closes the open file and renames it to its final name. */
  private async finishFile(): Promise<void> {
    const f = this.file!;
    this.file = null;
    await new Promise<void>((res, rej) => f.fd.end((e?: Error | null) => (e ? rej(e) : res())));
    renameSync(f.tmp, f.path);
    this.written.push(f.path);
  }
}

/**
 * Extracts the regular files and folders of a .tar.gz (ustar/GNU; long GNU names
 * supported) into `dest`. Links and devices are skipped; each file is written via a
 * temporary name and renamed when complete.
 */
export async function extractTarGz(archive: string, dest: string): Promise<string[]> {
  const tar = new TarExtractor(archive, dest);
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      tar.push(chunk).then(() => done(), done);
    },
  });
  try {
    await pipeline(createReadStream(archive), createGunzip(), sink);
  } catch (e) {
    tar.abort();
    throw new DataError(`cannot extract ${archive}: ${(e as Error).message}`, archive, { cause: e });
  }
  if (!tar.complete) {
    tar.abort();
    throw new DataError(`cannot extract ${archive}: the archive is truncated`, archive);
  }
  return tar.written;
}

/**
 * Decompresses a single-file `.gz` (MNIST's idx files) to `path`, via a temporary name
 * renamed when complete, so a truncated archive leaves nothing under `path`.
 */
export async function gunzipFile(archive: string, path: string): Promise<void> {
  mkdirSync(dirname(path), { recursive: true });
  const part = tempPathFor(path);
  try {
    await pipeline(createReadStream(archive), createGunzip(), createWriteStream(part, { fd: openNew(part) }));
  } catch (e) {
    rmSync(part, { force: true });
    throw new DataError(`cannot extract ${archive}: ${(e as Error).message}`, archive, { cause: e });
  }
  renameSync(part, path);
}
