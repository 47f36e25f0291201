// saveCheckpoint: one directory per checkpoint, each file written to a temp name in that
// directory, fsynced and renamed, the manifest (with every file's sha256) written last.
// A crash at any point leaves either the previous checkpoints untouched and a directory
// without a manifest (ignored by latestCheckpoint), or the new checkpoint committed.
// Rank 0 calls this; the caller then barriers all ranks.
import { lstat, mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import * as t from '../core/index.ts';
import { checkOptions, optionNames } from '../core/options.ts';
import { checkSafeDir } from '../files/index.ts';
import { cleanStaleTemps, fsyncDir, type ProgressHook, type WrittenFile, writeFileAtomic } from './atomic.ts';
import {
  checkpointDirName,
  EVALUATION_FILE,
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

const SAVE_OPTIONS = optionNames<SaveCheckpointOptions>({ keepLast: true, onProgress: true });

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

/** Everything a checkpoint holds, gathered from the live state before any I/O. */
interface GatheredState {
  /** The model's tensors, tied weights once. */
  model: Record<string, t.Tensor>;
  optimizerTensors: Map<string, t.Tensor>;
  /** Tensors of the scheduler, scaler and `extra` state. */
  otherTensors: Map<string, t.Tensor>;
  record: TrainerRecord;
}

/** Writes a checkpoint to `root`/ckpt-<step>/ and returns where. Await it before changing the state. */
export async function saveCheckpoint(
  root: string,
  state: CheckpointState,
  options?: SaveCheckpointOptions,
): Promise<SavedCheckpoint> {
  const opts = checkOptions('saveCheckpoint', options, SAVE_OPTIONS);
  const step = checkCount(state.step, 'step');
  const epoch = checkCount(state.epoch, 'epoch');
  const samplerEpoch = checkCount(state.samplerEpoch ?? epoch, 'samplerEpoch');
  const worldSize = checkCount(state.worldSize ?? envWorldSize(), 'worldSize', 1);
  const keepLast = opts.keepLast === undefined ? undefined : checkCount(opts.keepLast, 'keepLast', 1);

  // Views a stateDict() creates are freed when this settles; the state itself is not ours.
  return t.tidyAsync(async () => {
    // Gather everything up front, so a state that cannot be saved fails before any I/O.
    const gathered = gatherState(state, { epoch, step, samplerEpoch, worldSize });

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
      await prepareDir(root, dir);
      const p = opts.onProgress;
      const files = await writeFiles(dir, gathered, p);
      manifest = await commit(dir, step, epoch, files, p);
    } catch (e) {
      if (!existed) await rm(dir, { recursive: true, force: true }).catch(() => {});
      throw e;
    }
    const removed = await prune(root, step, keepLast);
    return { dir, manifest, removed };
  });
}

/** Encodes the model, each part, `extra` and the RNG state into tensors and the trainer record. */
function gatherState(
  state: CheckpointState,
  counts: Pick<TrainerRecord, 'epoch' | 'step' | 'samplerEpoch' | 'worldSize'>,
): GatheredState {
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
  const { epoch, step, samplerEpoch, worldSize } = counts;
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
  return { model, optimizerTensors, otherTensors, record };
}

/**
 * Creates the checkpoint directory (made durable in `root`) or, re-saving a step,
 * un-commits it: the manifest goes first, so no instant exists where the old manifest
 * vouches for half-replaced files; then the files this save will not rewrite.
 */
async function prepareDir(root: string, dir: string): Promise<void> {
  await mkdir(dir, { recursive: true });
  await fsyncDir(root);
  await rm(join(dir, MANIFEST_FILE), { force: true });
  // An evaluation.json of the earlier save spoke of other weights: it goes too.
  for (const stale of [OPTIMIZER_FILE, TRAINER_TENSORS_FILE, EVALUATION_FILE])
    await rm(join(dir, stale), { force: true });
  await fsyncDir(dir);
}

/** Writes the tensor files and trainer.json, each to a temp name, fsynced and renamed. */
async function writeFiles(
  dir: string,
  { model, optimizerTensors, otherTensors, record }: GatheredState,
  p: ProgressHook | undefined,
): Promise<Record<string, WrittenFile>> {
  const files: Record<string, WrittenFile> = {};
  files[MODEL_FILE] = await saveFile(model, join(dir, MODEL_FILE), {
    metadata: { format: 'pt' },
    onProgress: p,
  });
  if (record.parts.optimizer !== undefined) {
    files[OPTIMIZER_FILE] = await saveFile(Object.fromEntries(optimizerTensors), join(dir, OPTIMIZER_FILE), {
      onProgress: p,
    });
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
  return files;
}

/** Commits the checkpoint: writes the manifest (every file's size and sha256) last. */
async function commit(
  dir: string,
  step: number,
  epoch: number,
  files: Record<string, WrittenFile>,
  p: ProgressHook | undefined,
): Promise<Manifest> {
  const manifest: Manifest = {
    format: CHECKPOINT_FORMAT,
    version: CHECKPOINT_VERSION,
    step,
    epoch,
    createdAt: new Date().toISOString(),
    files,
  };
  await writeManifest(dir, manifest, p);
  return manifest;
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
