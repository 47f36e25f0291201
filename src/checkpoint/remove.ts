// Removing a checkpoint folder, which tsddp does in two places (keepLast pruning, and
// `tsddp train --overwrite`), deletes only what saveCheckpoint writes: a folder whose
// every entry is a regular file with one of the checkpoint's names (or a temp name of a
// write that died) goes, manifest first, so a crash midway leaves an uncommitted folder
// and never a committed one with files missing. A folder holding anything else (a file
// the user put there, a subfolder, a link) is left whole.
import { lstatSync, readdirSync, rmdirSync, unlinkSync } from 'node:fs';
import { join } from 'node:path';
import { fsyncDirSync, tempNameOwner } from '../files/index.ts';
import { EVALUATION_FILE, MODEL_FILE, OPTIMIZER_FILE, TRAINER_FILE, TRAINER_TENSORS_FILE } from './layout.ts';
import { MANIFEST_FILE } from './manifest.ts';

const CHECKPOINT_NAMES = new Set([
  MODEL_FILE,
  OPTIMIZER_FILE,
  TRAINER_TENSORS_FILE,
  TRAINER_FILE,
  EVALUATION_FILE,
  MANIFEST_FILE,
]);

/** The entries of `dir` that are not tsddp's (empty: tsddp wrote everything in it). */
export function foreignEntries(dir: string): string[] {
  return readdirSync(dir).filter((name) => {
    const ours = CHECKPOINT_NAMES.has(name) || tempNameOwner(name) !== null;
    return !ours || !lstatSync(join(dir, name)).isFile();
  });
}

/**
 * Removes the checkpoint folder `dir` if tsddp wrote everything in it (manifest first);
 * else leaves it untouched and returns the entries that are not tsddp's.
 */
export function removeCheckpointDir(dir: string): { removed: true } | { removed: false; foreign: string[] } {
  const foreign = foreignEntries(dir);
  if (foreign.length > 0) return { removed: false, foreign };
  const names = readdirSync(dir);
  if (names.includes(MANIFEST_FILE)) {
    unlinkSync(join(dir, MANIFEST_FILE));
    fsyncDirSync(dir); // un-committed on disk before any of its files goes
  }
  for (const name of names) if (name !== MANIFEST_FILE) unlinkSync(join(dir, name));
  rmdirSync(dir);
  return { removed: true };
}
