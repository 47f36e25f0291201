// saveCheckpoint: one directory per checkpoint, each file written to a temp name in that
// directory, fsynced and renamed, the manifest (with every file's sha256) written last.
// A crash at any point leaves either the previous checkpoints untouched and a directory
// without a manifest (ignored by latestCheckpoint), or the new checkpoint committed.
// Rank 0 calls this; the caller then barriers all ranks.
import { lstat, mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import * as t from '../core/index.ts';
import { checkSafeDir } from '../files/index.ts';
import { cleanStaleTemps, fsyncDir, type ProgressHook, type WrittenFile, writeFileAtomic } from './atomic.ts';
import {
  checkpointDirName,
  listCheckpointDirs,
  MODEL_FILE,
  OPTIMIZER_FILE,
  PARTS,
  TRAINER_FILE,
  TRAINER_FORMAT,
  TRAINER_TENSORS_FILE,
  type TrainerRecord,
} from './layout.ts';
import {
  CHECKPOINT_FORMAT,
  CHECKPOINT_VERSION,
  MANIFEST_FILE,
  type Manifest,
  writeManifest,
} from './manifest.ts';
import { removeCheckpointDir } from './remove.ts';
import { saveFile } from './safetensors.ts';
import { tiedNames } from './shared-memory.ts';
import { encodeState } from './state-codec.ts';
import { envWorldSize, type Stateful } from './stateful.ts';

export interface CheckpointState {
  /** Its stateDict() must be a flat name → Tensor record (torchvision names). */
  model: Stateful;
  optimizer?: Stateful;
  scheduler?: Stateful;
  scaler?: Stateful;
  epoch: number;
  /** The global step; names the directory (ckpt-000120). */
  step: number;
  /** The DistributedSampler epoch to restore (default: `epoch`). */
  samplerEpoch?: number;
  /** World size of the run (default: WORLD_SIZE from the environment, else 1). */
  worldSize?: number;
  /** Save the global CPU generator state (default true). */
  rng?: boolean;
  /** Anything else to carry over: plain data and Tensors. */
  extra?: unknown;
}

export interface SaveCheckpointOptions {
  /** Keep only this many committed checkpoints under the root (the newest by step). Default: keep all. */
  keepLast?: number;
  /** Called as each file is written and committed. */
  onProgress?: ProgressHook;
}

export interface SavedCheckpoint {
  /** The checkpoint directory. */
  dir: string;
  manifest: Manifest;
  /** Directories removed by keepLast or as abandoned partial writes. */
  removed: string[];
}

function checkCount(v: unknown, what: string, min = 0): number {
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < min) {
    throw new TypeError(`saveCheckpoint: ${what} must be an integer >= ${min}, got ${String(v)}`);
  }
  return v;
}

/** The model's tensors, tied weights once (the others named in `tied`). */
function modelTensors(model: Stateful): { tensors: Record<string, t.Tensor>; tied: Record<string, string> } {
  const sd = model.stateDict();
  if (sd === null || typeof sd !== 'object')
    throw new TypeError('saveCheckpoint: model.stateDict() must return an object');
  for (const [k, v] of Object.entries(sd)) {
    if (!(v instanceof t.Tensor)) throw new TypeError(`saveCheckpoint: model state '${k}' is not a Tensor`);
  }
  const all = sd as Record<string, t.Tensor>;
  const tied = tiedNames(Object.entries(all).map(([name, tensor]) => ({ name, tensor })));
  const tensors = Object.fromEntries(Object.entries(all).filter(([k]) => !Object.hasOwn(tied, k)));
  return { tensors, tied };
}

/** Writes a checkpoint to `root`/ckpt-<step>/ and returns where. Await it before changing the state. */
export async function saveCheckpoint(
  root: string,
  state: CheckpointState,
  opts: SaveCheckpointOptions = {},
): Promise<SavedCheckpoint> {
  const step = checkCount(state.step, 'step');
  const epoch = checkCount(state.epoch, 'epoch');
  const samplerEpoch = checkCount(state.samplerEpoch ?? epoch, 'samplerEpoch');
  const worldSize = checkCount(state.worldSize ?? envWorldSize(), 'worldSize', 1);
  const keepLast = opts.keepLast === undefined ? undefined : checkCount(opts.keepLast, 'keepLast', 1);

  // Views a stateDict() creates are freed when this settles; the state itself is not ours.
  return t.tidyAsync(async () => {
    // Gather everything up front, so a state that cannot be saved fails before any I/O.
    const { tensors: model, tied } = modelTensors(state.model);
    const optimizerTensors = new Map<string, t.Tensor>();
    const otherTensors = new Map<string, t.Tensor>();
    const parts: TrainerRecord['parts'] = {};
    for (const part of PARTS) {
      const obj = state[part];
      if (obj === undefined) continue;
      parts[part] =
        part === 'optimizer'
          ? encodeState(obj.stateDict(), '', optimizerTensors)
          : encodeState(obj.stateDict(), `${part}.`, otherTensors);
    }
    const extra = encodeState(state.extra ?? null, 'extra.', otherTensors);
    const rng =
      state.rng === false
        ? null
        : { cpu: Buffer.from(t.defaultGenerator().getState().toBytes()).toString('base64') };
    const record: TrainerRecord = {
      format: TRAINER_FORMAT,
      version: 1,
      epoch,
      step,
      samplerEpoch,
      worldSize,
      rng,
      parts,
      extra,
      ...(Object.keys(tied).length > 0 ? { tied } : {}),
    };

    await mkdir(root, { recursive: true });
    checkSafeDir(root, 'the checkpoint folder');
    const dir = join(root, checkpointDirName(step));
    await cleanStaleTemps(root);
    await cleanStaleTemps(dir);
    // A save that fails (a full disk) removes the folder it created: no empty or partial
    // checkpoint folder is left behind. A re-saved step's folder stays, uncommitted.
    const existed = await lstat(dir).then(
      () => true,
      () => false,
    );
    let manifest: Manifest;
    try {
      await mkdir(dir, { recursive: true });
      await fsyncDir(root);
      // Re-saving a step: un-commit first, so no instant exists where the old manifest
      // vouches for half-replaced files. Then drop files this save will not rewrite.
      await rm(join(dir, MANIFEST_FILE), { force: true });
      for (const stale of [OPTIMIZER_FILE, TRAINER_TENSORS_FILE]) await rm(join(dir, stale), { force: true });
      await fsyncDir(dir);

      const files: Record<string, WrittenFile> = {};
      const p = opts.onProgress;
      files[MODEL_FILE] = await saveFile(model, join(dir, MODEL_FILE), {
        metadata: { format: 'pt' },
        onProgress: p,
      });
      if (parts.optimizer !== undefined) {
        files[OPTIMIZER_FILE] = await saveFile(
          Object.fromEntries(optimizerTensors),
          join(dir, OPTIMIZER_FILE),
          {
            onProgress: p,
          },
        );
      }
      if (otherTensors.size > 0) {
        files[TRAINER_TENSORS_FILE] = await saveFile(
          Object.fromEntries(otherTensors),
          join(dir, TRAINER_TENSORS_FILE),
          {
            onProgress: p,
          },
        );
      }
      const json = new TextEncoder().encode(`${JSON.stringify(record, null, 1)}\n`);
      files[TRAINER_FILE] = await writeFileAtomic(join(dir, TRAINER_FILE), [json], p);

      manifest = {
        format: CHECKPOINT_FORMAT,
        version: CHECKPOINT_VERSION,
        step,
        epoch,
        createdAt: new Date().toISOString(),
        files,
      };
      await writeManifest(dir, manifest, p);
    } catch (e) {
      if (!existed) await rm(dir, { recursive: true, force: true }).catch(() => {});
      throw e;
    }
    const removed = await prune(root, step, keepLast);
    return { dir, manifest, removed };
  });
}

/**
 * After committing `step`: removes committed checkpoints beyond `keepLast` (oldest first)
 * and uncommitted directories of earlier steps (writes that died). Each goes manifest
 * first (remove.ts), so a crash mid-removal leaves an uncommitted directory, never a broken
 * committed one; a folder holding something tsddp did not write is kept, with a warning.
 */
async function prune(root: string, step: number, keepLast: number | undefined): Promise<string[]> {
  const all = await listCheckpointDirs(root);
  const committed: { dir: string; step: number }[] = [];
  const doomed: string[] = [];
  for (const c of all) {
    if (c.step === step) continue;
    const hasManifest = await lstat(join(c.dir, MANIFEST_FILE)).then(
      () => true,
      () => false,
    );
    if (hasManifest) committed.push(c);
    else if (c.step < step) doomed.push(c.dir);
  }
  if (keepLast !== undefined) {
    // The new checkpoint counts as one of the kept.
    const excess = committed.length + 1 - keepLast;
    for (const c of committed.slice(0, Math.max(0, excess))) doomed.push(c.dir);
  }
  const removed: string[] = [];
  for (const dir of doomed) {
    const r = removeCheckpointDir(dir);
    if (r.removed) removed.push(dir);
    else
      console.warn(
        `tsddp: checkpoint ${dir} was not pruned: it holds ${r.foreign.join(', ')}, which tsddp did not write`,
      );
  }
  if (removed.length > 0) await fsyncDir(root);
  return removed;
}
