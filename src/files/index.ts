// How tsddp creates files (docs/guide/launching.md, "Files tsddp writes"): every file it
// writes is first created under an unguessable temp name with O_CREAT | O_EXCL |
// O_NOFOLLOW (a name someone planted, or a symbolic link, makes the open fail instead of
// writing through it) and renamed over its final name; files that grow (metrics rank
// files, logs) are opened with O_NOFOLLOW; its own temp folders come from mkdtemp (0700);
// and a folder it writes into must belong to this user or root and not be writable by
// every user (unless sticky, as /tmp is), so another local user cannot swap what is
// written there. This module is the floor of src/ with src/errors, the only one it imports.
import { randomBytes } from 'node:crypto';
import {
  closeSync,
  constants,
  fsyncSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  realpathSync,
  renameSync,
  rmSync,
  type Stats,
  statSync,
  writeSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { TsddpError } from '../errors/index.ts';

/** A path tsddp will not write into (or delete), and why. */
export class UnsafePathError extends TsddpError {
  override name = 'UnsafePathError';
  readonly code = 'UNSAFE_PATH';
  constructor(
    readonly path: string,
    message: string,
  ) {
    super(message);
  }
}

/** open(2) flags of a new file that must not exist yet and must not be a symbolic link. */
export const CREATE_NEW = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW;
/** open(2) flags of a file that grows: created if missing, never through a symbolic link. */
const APPEND = constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT | constants.O_NOFOLLOW;

const TEMP = /^\.(.+)\.tmp-(\d+)-[0-9a-f]+$/;

/** A temp name beside `path` that no one can guess: `.<name>.tmp-<pid>-<16 hex digits>`. */
export function tempPathFor(path: string): string {
  return join(dirname(path), `.${basename(path)}.tmp-${process.pid}-${randomBytes(8).toString('hex')}`);
}

/** The pid in a name tempPathFor gave, or null for other names. */
export function tempNameOwner(name: string): number | null {
  const m = TEMP.exec(name);
  return m === null ? null : Number(m[2]);
}

/** A new folder only this user can enter (mkdtemp: mode 0700, an unguessable name) under the temp folder. */
export function makePrivateTempDir(prefix: string): string {
  const safe = prefix.replace(/[^A-Za-z0-9_.-]/g, '_');
  return mkdtempSync(join(tmpdir(), safe));
}

const myUid = (): number | null => process.getuid?.() ?? null;

/**
 * TSDDP_TRUST_FOLDER_OWNERS=1: accept folders of other owners (a container's bind mount of
 * a host user's folder, an NFS export that shows root as nobody); a folder every user may
 * write into is still refused.
 */
const trustOwners = (): boolean => process.env.TSDDP_TRUST_FOLDER_OWNERS === '1';

function trusted(st: Stats, uid: number): boolean {
  return st.uid === uid || st.uid === 0 || trustOwners();
}

const OWNER_HINT = " (TSDDP_TRUST_FOLDER_OWNERS=1 trusts it, for a container's bind mount or an NFS export)";

/** Writable by every user, and without the sticky bit that would stop them replacing others' entries. */
const openToAll = (st: Stats): boolean => (st.mode & 0o002) !== 0 && (st.mode & 0o1000) === 0;

/**
 * Refuses a folder another local user could use to redirect what tsddp writes: one that
 * belongs to someone other than this user or root, a symbolic link someone else made, or
 * one every user may write into without the sticky bit. Its ancestors are checked too:
 * none may be open to every user, and one that another user made inside a sticky folder
 * open to all (a name planted in /tmp) is refused. `what` names the folder in the message
 * (e.g. "--metrics-file's folder").
 */
export function checkSafeDir(dir: string, what: string): void {
  const uid = myUid();
  if (uid === null) return; // no POSIX owners (Windows)
  const link = lstatSync(dir);
  if (link.isSymbolicLink() && !trusted(link, uid))
    throw new UnsafePathError(
      dir,
      `${what} ${dir} is a symbolic link made by another user (uid ${link.uid}); tsddp does not write through it`,
    );
  const st = statSync(dir);
  if (!st.isDirectory()) throw new UnsafePathError(dir, `${what} ${dir} is not a folder`);
  if (!trusted(st, uid))
    throw new UnsafePathError(
      dir,
      `${what} ${dir} belongs to another user (uid ${st.uid}); tsddp writes only into folders of its own user or root${OWNER_HINT}`,
    );
  if (openToAll(st))
    throw new UnsafePathError(
      dir,
      `${what} ${dir} may be written by every user (mode ${(st.mode & 0o7777).toString(8)}); ` +
        'another user could replace what tsddp writes there: choose a folder of your own',
    );
  checkAncestors(realpathSync(dir), what, uid);
}

/** The folders above `real` (a resolved path): see checkSafeDir. */
function checkAncestors(real: string, what: string, uid: number): void {
  for (let child = real, parent = dirname(real); parent !== child; child = parent, parent = dirname(parent)) {
    const up = statSync(parent);
    if (openToAll(up))
      throw new UnsafePathError(
        real,
        `${what} ${real} is under ${parent}, which every user may write into (mode ${(up.mode & 0o7777).toString(8)}): another user could replace the folders below it`,
      );
    const st = statSync(child);
    if ((up.mode & 0o1002) === 0o1002 && !trusted(st, uid))
      throw new UnsafePathError(
        real,
        `${what} ${real} is under ${child}, which another user (uid ${st.uid}) made in ${parent}, a folder open to all: ` +
          `they could replace what is below it${OWNER_HINT}`,
      );
  }
}

/** Creates `dir` and its parents where missing, then checks it (checkSafeDir). */
export function ensureSafeDir(dir: string, what: string): void {
  mkdirSync(dir, { recursive: true });
  checkSafeDir(dir, what);
}

function writeAll(fd: number, data: Uint8Array): void {
  let done = 0;
  while (done < data.length) done += writeSync(fd, data, done, data.length - done);
}

/**
 * Replaces `path` with `data` atomically: a reader sees the old file or the whole new one.
 * The data goes to a new temp file beside it (CREATE_NEW) and is renamed over `path`;
 * `durable`: the file and then its folder are synced, so the new name survives a power
 * loss. On failure the temp file is removed and the error rethrown.
 */
export function writeFileAtomicSync(
  path: string,
  data: string | Uint8Array,
  opts: { mode?: number; durable?: boolean } = {},
): void {
  const tmp = tempPathFor(path);
  const bytes = typeof data === 'string' ? Buffer.from(data) : data;
  let fd: number | null = null;
  try {
    fd = openSync(tmp, CREATE_NEW, opts.mode ?? 0o644);
    writeAll(fd, bytes);
    if (opts.durable) fsyncSync(fd);
    closeSync(fd);
    fd = null;
    renameSync(tmp, path);
  } catch (e) {
    if (fd !== null) closeSync(fd);
    rmSync(tmp, { force: true });
    throw e;
  }
  if (opts.durable) fsyncDirSync(dirname(path));
}

/** Makes a folder's entries (creations, renames, removals) durable. */
export function fsyncDirSync(dir: string): void {
  const fd = openSync(dir, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/** Opens `path` to append to it, creating it if missing, never through a symbolic link (ELOOP). */
export function openAppend(path: string, mode = 0o644): number {
  return openSync(path, APPEND, mode);
}

/** Opens a new file at `path` for writing; fails if anything (a file, a link) is there. */
export function openNew(path: string, mode = 0o644): number {
  return openSync(path, CREATE_NEW, mode);
}

/** The kind of thing at `path` without following a link: 'file', 'folder', 'link', 'missing' or 'other'. */
export function kindOf(path: string): 'file' | 'folder' | 'link' | 'missing' | 'other' {
  let st: Stats;
  try {
    st = lstatSync(path);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return 'missing';
    throw e;
  }
  if (st.isSymbolicLink()) return 'link';
  if (st.isFile()) return 'file';
  if (st.isDirectory()) return 'folder';
  return 'other';
}
