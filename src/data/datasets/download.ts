// Downloading dataset archives with an MD5 check, and extracting .tar.gz files — with
// nothing but Node: fetch, crypto, zlib and a small ustar reader. A file is only ever
// visible under its final name once it is complete and verified.
import { createHash } from 'node:crypto';
import { createReadStream, createWriteStream, existsSync, mkdirSync, renameSync, rmSync } from 'node:fs';
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

function octal(buf: Buffer, start: number, len: number): number {
  const s = buf
    .toString('latin1', start, start + len)
    .replace(/\0.*$/, '')
    .trim();
  return s === '' ? 0 : Number.parseInt(s, 8);
}

/**
 * Extracts the regular files and folders of a .tar.gz (ustar/GNU; long GNU names
 * supported) into `dest`. Links and devices are skipped; each file is written via a
 * temporary name and renamed when complete.
 */
export async function extractTarGz(archive: string, dest: string): Promise<string[]> {
  const written: string[] = [];
  let pending: Buffer = Buffer.alloc(0);
  let file: {
    fd: ReturnType<typeof createWriteStream>;
    path: string;
    tmp: string;
    left: number;
    pad: number;
  } | null = null;
  let skip = 0;
  let longName: string | null = null;
  let collecting: { left: number; chunks: Buffer[]; pad: number } | null = null;
  let ended = false;
  let aborted = false;
  let writeError: Error | null = null;

  const finishFile = async (): Promise<void> => {
    const f = file!;
    file = null;
    await new Promise<void>((res, rej) => f.fd.end((e?: Error | null) => (e ? rej(e) : res())));
    renameSync(f.tmp, f.path);
    written.push(f.path);
  };

  const removePart = (): void => {
    aborted = true;
    const f = file as { fd: ReturnType<typeof createWriteStream>; tmp: string } | null;
    if (f === null) return;
    f.fd.destroy();
    rmSync(f.tmp, { force: true });
  };

  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      pending = pending.length === 0 ? chunk : Buffer.concat([pending, chunk]);
      (async () => {
        for (;;) {
          if (aborted) return;
          if (writeError !== null) throw writeError;
          if (file !== null) {
            const n = Math.min(file.left, pending.length);
            if (n > 0) {
              const part = pending.subarray(0, n);
              pending = pending.subarray(n);
              file.left -= n;
              if (!file.fd.write(part)) await new Promise<void>((r) => file!.fd.once('drain', () => r()));
              if (aborted) return;
            }
            if (file.left > 0) return;
            skip = file.pad;
            await finishFile();
            continue;
          }
          if (collecting !== null) {
            const n = Math.min(collecting.left, pending.length);
            collecting.chunks.push(pending.subarray(0, n));
            pending = pending.subarray(n);
            collecting.left -= n;
            if (collecting.left > 0) return;
            longName = Buffer.concat(collecting.chunks).toString('utf8').replace(/\0.*$/s, '');
            skip = collecting.pad;
            collecting = null;
            continue;
          }
          if (skip > 0) {
            const n = Math.min(skip, pending.length);
            pending = pending.subarray(n);
            skip -= n;
            if (skip > 0) return;
            continue;
          }
          if (ended || pending.length < 512) return;
          const header = pending.subarray(0, 512);
          pending = pending.subarray(512);
          if (header.every((b) => b === 0)) {
            ended = true;
            return;
          }
          const size = octal(header, 124, 12);
          const pad = (512 - (size % 512)) % 512;
          const type = String.fromCharCode(header[156] || 48);
          const prefix = header.toString('utf8', 345, 500).replace(/\0.*$/s, '');
          const base = header.toString('utf8', 0, 100).replace(/\0.*$/s, '');
          const name = longName ?? (prefix ? `${prefix}/${base}` : base);
          longName = null;
          if (type === 'L') {
            collecting = { left: size, chunks: [], pad };
          } else if (type === '0' || type === '7') {
            const path = join(dest, safeName(name, archive));
            mkdirSync(dirname(path), { recursive: true });
            const tmp = tempPathFor(path);
            const fd = createWriteStream(tmp, { fd: openNew(tmp) });
            fd.on('error', (e) => {
              writeError = e;
            });
            file = { fd, path, tmp, left: size, pad };
            if (size === 0) {
              skip = pad;
              await finishFile();
            }
          } else {
            if (type === '5') mkdirSync(join(dest, safeName(name, archive)), { recursive: true });
            skip = size + pad; // links, devices, pax headers: not needed for datasets
          }
        }
      })().then(() => done(), done);
    },
  });
  try {
    await pipeline(createReadStream(archive), createGunzip(), sink);
  } catch (e) {
    removePart();
    throw new DataError(`cannot extract ${archive}: ${(e as Error).message}`, archive, { cause: e });
  }
  if (file !== null || collecting !== null || !ended) {
    removePart();
    throw new DataError(`cannot extract ${archive}: the archive is truncated`, archive);
  }
  return written;
}
