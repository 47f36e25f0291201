// The checkpoint manifest: written last, it is the commit record. It lists every file of
// the checkpoint with its size and sha256; a directory without one was never committed,
// and a file that does not match it is refused before anything is read from it.
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { lstat, open, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { type ProgressHook, writeFileAtomic } from './atomic.ts';
import { CheckpointError } from './errors.ts';
import { hasPickleExtension, pickleRefusal } from './pickle.ts';
import { JsonSyntaxError, parseStrictJson, toPlain } from './strict-json.ts';

export const MANIFEST_FILE = 'manifest.json';
export const CHECKPOINT_FORMAT = 'tsddp.checkpoint';
export const CHECKPOINT_VERSION = 1;
// Far above any real manifest; a larger one is not ours and is not read.
const MAX_MANIFEST_BYTES = 1 << 20;
const FILE_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]*$/;

export interface ManifestEntry {
  size: number;
  sha256: string;
}

export interface Manifest {
  format: typeof CHECKPOINT_FORMAT;
  version: number;
  step: number;
  epoch: number;
  createdAt: string;
  files: Record<string, ManifestEntry>;
}

export async function writeManifest(
  dir: string,
  manifest: Manifest,
  onProgress?: ProgressHook,
): Promise<void> {
  const bytes = new TextEncoder().encode(`${JSON.stringify(manifest, null, 2)}\n`);
  await writeFileAtomic(join(dir, MANIFEST_FILE), [bytes], onProgress);
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** Parses JSON we wrote, strictly (UTF-8, no duplicate keys); throws CheckpointError('CORRUPT'). */
export function parseRecord(bytes: Uint8Array, path: string, what: string): Record<string, unknown> {
  let value: unknown;
  try {
    value = toPlain(parseStrictJson(utf8.decode(bytes), 256));
  } catch (e) {
    const why = e instanceof JsonSyntaxError ? e.message : 'not valid UTF-8';
    throw new CheckpointError('CORRUPT', path, `${what} is unreadable (${why})`);
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new CheckpointError('CORRUPT', path, `${what} is not a JSON object`);
  }
  return value as Record<string, unknown>;
}

export function isCount(v: unknown): v is number {
  return typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;
}

/** Reads and validates `dir`/manifest.json. */
export async function readManifest(dir: string): Promise<Manifest> {
  const path = join(dir, MANIFEST_FILE);
  let st: Awaited<ReturnType<typeof lstat>>;
  try {
    st = await lstat(path);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
    const pickles = (await readdir(dir).catch(() => [] as string[])).filter(hasPickleExtension);
    if (pickles.length > 0)
      throw new CheckpointError('PICKLE', join(dir, pickles[0]), pickleRefusal('this file'));
    throw new CheckpointError(
      'MISSING',
      dir,
      `no ${MANIFEST_FILE}: not a checkpoint, or one whose write never completed`,
    );
  }
  if (!st.isFile()) throw new CheckpointError('CORRUPT', path, 'manifest is not a regular file');
  if (st.size > MAX_MANIFEST_BYTES) {
    throw new CheckpointError(
      'CORRUPT',
      path,
      `manifest is ${st.size} bytes, over the ${MAX_MANIFEST_BYTES}-byte limit`,
    );
  }
  const m = parseRecord(await readExactly(path, st.size), path, 'manifest');
  if (m.format !== CHECKPOINT_FORMAT) {
    throw new CheckpointError(
      'CORRUPT',
      path,
      `manifest format is ${JSON.stringify(m.format)}, expected '${CHECKPOINT_FORMAT}'`,
    );
  }
  if (!isCount(m.version) || m.version < 1)
    throw new CheckpointError('CORRUPT', path, 'manifest has no valid version');
  if (m.version > CHECKPOINT_VERSION) {
    throw new CheckpointError(
      'VERSION',
      path,
      `checkpoint format version ${m.version} is newer than this tsddp reads (${CHECKPOINT_VERSION}); upgrade tsddp`,
    );
  }
  if (!isCount(m.step) || !isCount(m.epoch))
    throw new CheckpointError('CORRUPT', path, 'manifest has no valid step/epoch');
  if (typeof m.createdAt !== 'string')
    throw new CheckpointError('CORRUPT', path, 'manifest has no createdAt');
  const files = m.files;
  if (files === null || typeof files !== 'object' || Array.isArray(files)) {
    throw new CheckpointError('CORRUPT', path, 'manifest has no file list');
  }
  for (const [name, entry] of Object.entries(files as Record<string, unknown>)) {
    if (hasPickleExtension(name))
      throw new CheckpointError('PICKLE', join(dir, name), pickleRefusal('this file'));
    if (!FILE_NAME.test(name) || name === MANIFEST_FILE || !/\.(safetensors|json)$/.test(name)) {
      throw new CheckpointError(
        'CORRUPT',
        path,
        `manifest lists an invalid file name ${JSON.stringify(name)}`,
      );
    }
    const e = entry as Partial<ManifestEntry> | null;
    if (
      e === null ||
      typeof e !== 'object' ||
      !isCount(e.size) ||
      typeof e.sha256 !== 'string' ||
      !/^[0-9a-f]{64}$/.test(e.sha256)
    ) {
      throw new CheckpointError('CORRUPT', path, `manifest entry for '${name}' has no valid size and sha256`);
    }
  }
  return m as unknown as Manifest;
}

async function readExactly(path: string, size: number): Promise<Buffer> {
  const fh = await open(path, 'r');
  try {
    const buf = Buffer.allocUnsafe(size);
    let got = 0;
    while (got < size) {
      const { bytesRead } = await fh.read(buf, got, size - got, got);
      if (bytesRead === 0) break;
      got += bytesRead;
    }
    // The file may grow or shrink under us; only what was fully read counts.
    if (got !== size)
      throw new CheckpointError('CORRUPT', path, `file changed while being read (${got} of ${size} bytes)`);
    return buf;
  } finally {
    await fh.close();
  }
}

/** Checks that `name` exists as a regular file of the manifest's size; returns its path. */
async function checkPresent(dir: string, name: string, entry: ManifestEntry): Promise<string> {
  const path = join(dir, name);
  let st: Awaited<ReturnType<typeof lstat>>;
  try {
    st = await lstat(path);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
    throw new CheckpointError('CORRUPT', path, 'file listed in the manifest is missing');
  }
  if (!st.isFile()) throw new CheckpointError('CORRUPT', path, 'not a regular file (links are not followed)');
  if (st.size !== entry.size) {
    const how = st.size < entry.size ? 'truncated' : 'longer than recorded';
    throw new CheckpointError('CORRUPT', path, `${how}: ${st.size} bytes, the manifest says ${entry.size}`);
  }
  return path;
}

function digestMismatch(path: string, got: string, want: string): CheckpointError {
  return new CheckpointError(
    'DIGEST_MISMATCH',
    path,
    `sha256 is ${got}, the manifest says ${want}: the file is corrupt`,
  );
}

/** Reads every file of the manifest into memory, each checked against its size and sha256. */
export async function readVerifiedFiles(dir: string, manifest: Manifest): Promise<Map<string, Buffer>> {
  const out = new Map<string, Buffer>();
  for (const [name, entry] of Object.entries(manifest.files)) {
    const path = await checkPresent(dir, name, entry);
    const bytes = await readExactly(path, entry.size);
    const got = createHash('sha256').update(bytes).digest('hex');
    if (got !== entry.sha256) throw digestMismatch(path, got, entry.sha256);
    out.set(name, bytes);
  }
  return out;
}

/** Checks every file of the manifest by streaming it through sha256 (nothing kept in memory). */
export async function verifyFiles(dir: string, manifest: Manifest): Promise<void> {
  for (const [name, entry] of Object.entries(manifest.files)) {
    const path = await checkPresent(dir, name, entry);
    const hash = createHash('sha256');
    let size = 0;
    for await (const chunk of createReadStream(path, { highWaterMark: 1 << 20 })) {
      hash.update(chunk as Buffer);
      size += (chunk as Buffer).length;
    }
    if (size !== entry.size)
      throw new CheckpointError(
        'CORRUPT',
        path,
        `file changed while being read (${size} of ${entry.size} bytes)`,
      );
    const got = hash.digest('hex');
    if (got !== entry.sha256) throw digestMismatch(path, got, entry.sha256);
  }
}
