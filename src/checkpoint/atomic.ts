// Crash-safe file writes: write to a temp name in the same directory, fsync, rename over
// the final name, fsync the directory. A reader sees the old file or the whole new one,
// never a torn one. Temp names (src/files: unguessable, opened O_EXCL | O_NOFOLLOW) carry
// the writer's pid so a later run can tell a dead writer's leftovers (removed) from a live
// writer's file (left alone).
import { createHash } from 'node:crypto';
import { lstat, open, readdir, rename, rm } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { CREATE_NEW, tempNameOwner, tempPathFor } from '../files/index.ts';
import { CheckpointError } from './errors.ts';

export interface WrittenFile {
  /** Bytes written. */
  size: number;
  /** Lowercase hex sha256 of the content. */
  sha256: string;
}

/** Progress of a checkpoint write, for logs and for crash tests. */
export interface WriteProgress {
  /** The final file name (not the temp name). */
  file: string;
  /** 'writing': a chunk reached the temp file; 'committed': it was renamed into place and the directory synced. */
  stage: 'writing' | 'committed';
  /** Bytes written so far. */
  bytes: number;
}
export type ProgressHook = (p: WriteProgress) => void | Promise<void>;

// Temp files this process is writing right now (never cleaned as stale).
const inFlight = new Set<string>();

/** Writes `chunks` to `path` atomically and durably; returns size and sha256 of what was written. */
export async function writeFileAtomic(
  path: string,
  chunks: Iterable<Uint8Array>,
  onProgress?: ProgressHook,
): Promise<WrittenFile> {
  const tmp = tempPathFor(path);
  const file = basename(path);
  const hash = createHash('sha256');
  let size = 0;
  inFlight.add(tmp);
  try {
    const fh = await open(tmp, CREATE_NEW, 0o644);
    try {
      for (const chunk of chunks) {
        let done = 0;
        while (done < chunk.length) {
          const { bytesWritten } = await fh.write(chunk, done, chunk.length - done);
          done += bytesWritten;
        }
        hash.update(chunk);
        size += chunk.length;
        await onProgress?.({ file, stage: 'writing', bytes: size });
      }
      await fh.sync();
    } finally {
      await fh.close();
    }
    await rename(tmp, path);
    await fsyncDir(dirname(path));
  } catch (e) {
    await rm(tmp, { force: true }).catch(() => {});
    // Node's write errors do not name the file ("ENOSPC: no space left on device, write").
    throw new CheckpointError('WRITE', path, `cannot be written: ${withoutPath(e)}`, { cause: e });
  } finally {
    inFlight.delete(tmp);
  }
  await onProgress?.({ file, stage: 'committed', bytes: size });
  return { size, sha256: hash.digest('hex') };
}

/**
 * A Node file-system error's message without the path it ends with ("ENOENT: no such file
 * or directory, open '/ck/.model.safetensors.tmp-…'"): the CheckpointError names the file,
 * and the temp file's path would name its folder a second time.
 */
function withoutPath(e: unknown): string {
  const message = (e as Error).message;
  const path = (e as NodeJS.ErrnoException).path;
  const suffix = ` '${path}'`;
  return typeof path === 'string' && message.endsWith(suffix) ? message.slice(0, -suffix.length) : message;
}

/** Makes a directory's entries (creations, renames, removals) durable. */
export async function fsyncDir(dir: string): Promise<void> {
  const fh = await open(dir, 'r');
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}

/** True for names writeFileAtomic gives its temp files. */
export function isTempName(name: string): boolean {
  return tempNameOwner(name) !== null;
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    // EPERM: it exists but belongs to someone else.
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Removes temp files left in `dir` by writers that died (their pid is gone) or by this
 * process's own abandoned writes; returns the names removed. A missing dir is fine.
 */
export async function cleanStaleTemps(dir: string): Promise<string[]> {
  let names: string[];
  try {
    names = await readdir(dir);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw e;
  }
  const removed: string[] = [];
  for (const name of names) {
    const pid = tempNameOwner(name);
    if (pid === null) continue;
    const path = join(dir, name);
    const stale = pid === process.pid ? !inFlight.has(path) : !processAlive(pid);
    // Only a regular file is one of ours: anything else with such a name is left alone.
    if (!stale || !(await lstat(path)).isFile()) continue;
    await rm(path, { force: true });
    removed.push(name);
  }
  if (removed.length > 0) await fsyncDir(dir);
  return removed;
}
