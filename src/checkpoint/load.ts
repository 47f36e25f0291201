// loadCheckpoint / verifyCheckpoint / latestCheckpoint. Loading is two-phase: first
// everything is read and checked — manifest, sizes, sha256 digests, safetensors
// structure, trainer record, world size, and whether the state fits the targets — and
// only then is anything applied. A refused checkpoint leaves every target untouched.
import { open, stat } from 'node:fs/promises';
import { basename, join } from 'node:path';
import * as t from '../core/index.ts';
import { checkOptions, optionNames } from '../core/options.ts';
import { cleanStaleTemps } from './atomic.ts';
import { CheckpointError, SafetensorsError } from './errors.ts';
import {
  listCheckpointDirs,
  MODEL_FILE,
  OPTIMIZER_FILE,
  PARTS,
  type Part,
  parseTrainerRecord,
  stepOfDirName,
  TRAINER_FILE,
  TRAINER_TENSORS_FILE,
  type TrainerRecord,
} from './layout.ts';
import { type Manifest, readManifest, readVerifiedFiles, verifyFiles } from './manifest.ts';
import { hasPickleExtension, pickleMagic, pickleRefusal } from './pickle.ts';
import { deserialize } from './safetensors.ts';
import { decodeState } from './state-codec.ts';
import { type EpochSetter, envWorldSize, type Stateful } from './stateful.ts';

export interface LoadTargets {
  model?: Stateful;
  optimizer?: Stateful;
  scheduler?: Stateful;
  scaler?: Stateful;
  /** Gets setEpoch(samplerEpoch). */
  sampler?: EpochSetter;
  /** Restore the global CPU generator (default true, when the checkpoint has it). */
  rng?: boolean;
}

export interface LoadCheckpointOptions {
  /** This run's world size (default: WORLD_SIZE from the environment, else 1). */
  worldSize?: number;
  /**
   * Accept a checkpoint saved with another world size. DDP state is replicated, so
   * model, optimizer, scheduler, scaler and RNG load unchanged; the result reports the
   * change so the caller can restart the data order at `samplerEpoch` for the new sharding.
   */
  allowWorldSizeChange?: boolean;
  /** Require the model's keys to match exactly (default true), like load_state_dict(strict=True). */
  strict?: boolean;
}

const LOAD_OPTIONS = optionNames<LoadCheckpointOptions>({
  worldSize: true,
  allowWorldSizeChange: true,
  strict: true,
});

export interface LoadedCheckpoint {
  dir: string;
  epoch: number;
  step: number;
  samplerEpoch: number;
  /** The world size the checkpoint was saved with. */
  savedWorldSize: number;
  worldSizeChanged: boolean;
  extra: unknown;
  manifest: Manifest;
}

/** Checks a checkpoint directory (manifest, every file's size and digest) without loading it. */
export async function verifyCheckpoint(dir: string): Promise<Manifest> {
  await refuseFiles(dir);
  const manifest = await readManifest(dir);
  await verifyFiles(dir, manifest);
  return manifest;
}

/**
 * The newest committed checkpoint under `root` whose files all verify, or null. Partial
 * directories (no manifest) and corrupt ones are skipped (reported to onSkip); stale
 * temp files of dead writers are removed first unless `clean` is false.
 */
export async function latestCheckpoint(
  root: string,
  opts: { clean?: boolean; onSkip?: (dir: string, reason: CheckpointError) => void } = {},
): Promise<string | null> {
  const dirs = await listCheckpointDirs(root);
  if (opts.clean !== false) {
    await cleanStaleTemps(root);
    for (const d of dirs) await cleanStaleTemps(d.dir);
  }
  for (const { dir } of dirs.reverse()) {
    try {
      await verifyCheckpoint(dir);
      return dir;
    } catch (e) {
      if (!(e instanceof CheckpointError)) throw e;
      opts.onSkip?.(dir, e);
    }
  }
  return null;
}

/** A path that is a file, not a checkpoint directory: a pickle gets the pickle message. */
async function refuseFiles(path: string): Promise<void> {
  if (hasPickleExtension(path)) throw new CheckpointError('PICKLE', path, pickleRefusal('this file'));
  let isFile: boolean;
  try {
    isFile = (await stat(path)).isFile();
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT')
      throw new CheckpointError('MISSING', path, 'does not exist');
    throw e;
  }
  if (!isFile) return;
  const fh = await open(path, 'r');
  const prefix = new Uint8Array(8);
  try {
    await fh.read(prefix, 0, 8, 0);
  } finally {
    await fh.close();
  }
  if (pickleMagic(prefix) !== null) throw new CheckpointError('PICKLE', path, pickleRefusal('this file'));
  throw new CheckpointError('MISSING', path, 'is a file; a checkpoint is a directory holding manifest.json');
}

function corrupt(path: string, e: unknown): CheckpointError {
  if (e instanceof CheckpointError) return e;
  if (e instanceof SafetensorsError && e.code === 'PICKLE')
    return new CheckpointError('PICKLE', path, pickleRefusal('this file'));
  return new CheckpointError('CORRUPT', path, detailOf(e, path), { cause: e });
}

// The CheckpointError names the file: a SafetensorsError (or another error) that already
// begins with it would name it twice.
function detailOf(e: unknown, path: string): string {
  if (e instanceof SafetensorsError && e.file === path) return e.detail;
  const message = (e as Error).message;
  return message.startsWith(`${path}: `) ? message.slice(path.length + 2) : message;
}

/** What phase 1 read from disk and checked, before any tensor is made. */
interface CheckedCheckpoint {
  dir: string;
  manifest: Manifest;
  /** Every file the manifest lists, its size and digest verified. */
  files: Map<string, Buffer>;
  record: TrainerRecord;
  /** This run's world size. */
  worldSize: number;
  /** The saved CPU generator state, when it is to be restored. */
  rngBytes: Buffer | null;
}

/** The state phase 2 applies: made from verified bytes and checked against the targets. */
interface LoadPlan {
  /** The model's tensors (tied aliases included), or null when no model is loaded. */
  model: Record<string, t.Tensor> | null;
  decoded: Partial<Record<Part, unknown>>;
  extra: unknown;
}

/** Reads, verifies and applies the checkpoint in `dir` to `targets`. */
export async function loadCheckpoint(
  dir: string,
  targets: LoadTargets,
  options?: LoadCheckpointOptions,
): Promise<LoadedCheckpoint> {
  const opts = checkOptions('loadCheckpoint', options, LOAD_OPTIONS);
  // --- phase 1: read and check everything -------------------------------------------
  const checked = await readAndCheck(dir, targets, opts);
  const { record, worldSize } = checked;

  // Tensors are made only now, from verified bytes. Model tensors are freed once loaded
  // (modules copy them); the rest are kept, as optimizers may adopt their state tensors.
  return t.tidy(() => {
    const plan = planLoad(checked, targets, opts.strict ?? true);
    // --- phase 2: apply ----------------------------------------------------------------
    applyPlan(checked, targets, plan, opts.strict ?? true);
    return {
      dir,
      epoch: record.epoch,
      step: record.step,
      samplerEpoch: record.samplerEpoch,
      savedWorldSize: record.worldSize,
      worldSizeChanged: record.worldSize !== worldSize,
      extra: plan.extra,
      manifest: checked.manifest,
    };
  });
}

/** Phase 1 on disk: the manifest, every file's size and digest, and the trainer record. */
async function readAndCheck(
  dir: string,
  targets: LoadTargets,
  opts: LoadCheckpointOptions,
): Promise<CheckedCheckpoint> {
  await refuseFiles(dir);
  const manifest = await readManifest(dir);
  const files = await readVerifiedFiles(dir, manifest);
  const record = parseTrainerRecord(need(dir, files, TRAINER_FILE), join(dir, TRAINER_FILE));
  const worldSize = checkRecord(dir, manifest, record, targets, opts);
  const rngBytes =
    targets.rng !== false && record.rng !== null ? Buffer.from(record.rng.cpu, 'base64') : null;
  return { dir, manifest, files, record, worldSize, rngBytes };
}

/**
 * The trainer record agrees with the manifest and the directory's name, was saved with
 * this run's world size (unless a change is allowed), and holds every part the targets
 * ask for. Returns this run's world size.
 */
function checkRecord(
  dir: string,
  manifest: Manifest,
  record: TrainerRecord,
  targets: LoadTargets,
  opts: LoadCheckpointOptions,
): number {
  const dirStep = stepOfDirName(basename(dir));
  if (
    record.step !== manifest.step ||
    record.epoch !== manifest.epoch ||
    (dirStep !== null && dirStep !== record.step)
  ) {
    throw new CheckpointError(
      'CORRUPT',
      dir,
      `step/epoch disagree: directory ${dirStep ?? '-'}, manifest ${manifest.step}/${manifest.epoch}, trainer state ${record.step}/${record.epoch}`,
    );
  }
  const worldSize = opts.worldSize ?? envWorldSize();
  if (record.worldSize !== worldSize && opts.allowWorldSizeChange !== true) {
    throw new CheckpointError(
      'WORLD_SIZE_MISMATCH',
      dir,
      `saved with world size ${record.worldSize}, this run has ${worldSize}; pass allowWorldSizeChange to resume with the new world size (replicated DDP state loads unchanged; the sampler reshards the data)`,
    );
  }
  for (const part of PARTS) {
    if (targets[part] !== undefined && record.parts[part] === undefined) {
      throw new CheckpointError('MISSING', dir, `the checkpoint has no ${part} state to load`);
    }
  }
  return worldSize;
}

/** A verified file's bytes; CORRUPT when the manifest does not list it. */
function need(dir: string, files: Map<string, Buffer>, name: string): Buffer {
  const b = files.get(name);
  if (b === undefined)
    throw new CheckpointError('CORRUPT', join(dir, name), 'required file is not in the manifest');
  return b;
}

/**
 * Phase 1 in memory (inside the caller's tidy): makes the tensors, decodes the trainer
 * state, checks that it all fits the targets, and only then keeps the tensors an
 * optimizer may adopt.
 */
function planLoad(checked: CheckedCheckpoint, targets: LoadTargets, strict: boolean): LoadPlan {
  const model = targets.model === undefined ? null : modelTensors(checked);
  const { decoded, extra, adopted } = decodeTrainerState(checked);
  preflight(checked.dir, targets, model, decoded, checked.rngBytes, strict);
  for (const x of adopted) x.keep();
  return { model, decoded, extra };
}

/** The model's tensors from model.safetensors, each tied alias pointing at its stored tensor. */
function modelTensors({ dir, files, record }: CheckedCheckpoint): Record<string, t.Tensor> {
  const model = parseTensors(dir, MODEL_FILE, need(dir, files, MODEL_FILE));
  // Tied weights were written once: every alias gets the stored tensor back.
  for (const [alias, name] of Object.entries(record.tied ?? {})) {
    if (!Object.hasOwn(model, name))
      throw new CheckpointError(
        'CORRUPT',
        dir,
        `tied weight '${alias}' names '${name}', which is not in ${MODEL_FILE}`,
      );
    // defineProperty: an alias is a key, never a prototype (the record refuses '__proto__' too).
    Object.defineProperty(model, alias, {
      value: model[name],
      enumerable: true,
      writable: true,
      configurable: true,
    });
  }
  return model;
}

/**
 * Decodes each saved part and `extra` against the optimizer and trainer tensor files;
 * every tensor in those files must be referenced. Returns them too, to be kept.
 */
function decodeTrainerState({ dir, files, record }: CheckedCheckpoint): {
  decoded: Partial<Record<Part, unknown>>;
  extra: unknown;
  adopted: t.Tensor[];
} {
  const optimizerTensors = files.has(OPTIMIZER_FILE)
    ? parseTensors(dir, OPTIMIZER_FILE, need(dir, files, OPTIMIZER_FILE))
    : {};
  const otherTensors = files.has(TRAINER_TENSORS_FILE)
    ? parseTensors(dir, TRAINER_TENSORS_FILE, need(dir, files, TRAINER_TENSORS_FILE))
    : {};
  const decoded: Partial<Record<Part, unknown>> = {};
  let extra: unknown = null;
  const used = new Set<string>();
  try {
    for (const part of PARTS) {
      if (record.parts[part] === undefined) continue;
      decoded[part] = decodeState(
        record.parts[part],
        part === 'optimizer' ? optimizerTensors : otherTensors,
        used,
      );
    }
    extra = decodeState(record.extra, otherTensors, used);
  } catch (e) {
    throw corrupt(join(dir, TRAINER_FILE), e);
  }
  const all = [...Object.keys(optimizerTensors), ...Object.keys(otherTensors)];
  const unused = all.filter((k) => !used.has(k));
  if (unused.length > 0) {
    throw new CheckpointError(
      'CORRUPT',
      dir,
      `tensors not referenced by the trainer state: ${unused.slice(0, 5).join(', ')}`,
    );
  }
  const adopted = [...Object.values(optimizerTensors), ...Object.values(otherTensors)];
  return { decoded, extra, adopted };
}

/**
 * Phase 2: hands each target its state (model, optimizer, scheduler, scaler, RNG,
 * sampler). A target that still refuses is INCOMPATIBLE, naming what was already applied.
 */
function applyPlan(checked: CheckedCheckpoint, targets: LoadTargets, plan: LoadPlan, strict: boolean): void {
  const { dir, record, rngBytes } = checked;
  const { model, decoded } = plan;
  const applied: string[] = [];
  const apply = (what: string, fn: () => unknown): void => {
    try {
      const r = fn();
      if (r instanceof Promise) throw new TypeError(`${what}.loadStateDict must be synchronous`);
    } catch (e) {
      const done = applied.length > 0 ? ` (already applied: ${applied.join(', ')})` : '';
      throw new CheckpointError(
        'INCOMPATIBLE',
        dir,
        `${what} refused the saved state: ${(e as Error).message}${done}`,
        {
          cause: e,
        },
      );
    }
    applied.push(what);
  };
  if (targets.model !== undefined && model !== null) {
    const m = targets.model;
    apply('model', () => m.loadStateDict(model, { strict }));
  }
  for (const part of PARTS) {
    const target = targets[part];
    if (target !== undefined) apply(part, () => target.loadStateDict(decoded[part]));
  }
  if (rngBytes !== null)
    apply('rng', () => t.defaultGenerator().setState(t.fromBytes(rngBytes, [rngBytes.length], 'uint8')));
  if (targets.sampler !== undefined) {
    const s = targets.sampler;
    apply('sampler', () => s.setEpoch(record.samplerEpoch));
  }
}

/** A verified safetensors file's tensors; a file that does not parse is CORRUPT (or PICKLE), named. */
function parseTensors(dir: string, name: string, bytes: Uint8Array): Record<string, t.Tensor> {
  try {
    return deserialize(bytes, { name: join(dir, name) }).tensors;
  } catch (e) {
    throw corrupt(join(dir, name), e);
  }
}

/**
 * The checks PyTorch's load_state_dict would make, done before anything is applied:
 * model keys (strict) and shapes, optimizer parameter-group sizes, GradScaler numbers,
 * RNG state size.
 */
function preflight(
  dir: string,
  targets: LoadTargets,
  model: Record<string, t.Tensor> | null,
  decoded: Partial<Record<Part, unknown>>,
  rngBytes: Buffer | null,
  strict: boolean,
): void {
  const refuse = (what: string): never => {
    throw new CheckpointError('INCOMPATIBLE', dir, what);
  };
  if (targets.model !== undefined && model !== null) checkModelFits(targets.model, model, strict, refuse);
  if (targets.optimizer !== undefined) checkOptimizerFits(targets.optimizer, decoded.optimizer, refuse);
  if (targets.scaler !== undefined) checkScalerFits(targets.scaler, decoded.scaler, refuse);
  if (rngBytes !== null) {
    const n = t.defaultGenerator().getState().numel();
    if (n !== rngBytes.length) refuse(`RNG state is ${rngBytes.length} bytes, this generator's is ${n}`);
  }
}

/** The saved model has the target's keys (when strict) and, key by key, its shapes. */
function checkModelFits(
  target: Stateful,
  model: Record<string, t.Tensor>,
  strict: boolean,
  refuse: (what: string) => never,
): void {
  const current = target.stateDict() as Record<string, unknown>;
  const missing = Object.keys(current).filter((k) => !Object.hasOwn(model, k));
  const unexpected = Object.keys(model).filter((k) => !Object.hasOwn(current, k));
  if (strict && (missing.length > 0 || unexpected.length > 0)) {
    refuse(
      `model state does not match: missing keys [${missing.slice(0, 5).join(', ')}${missing.length > 5 ? ', …' : ''}], unexpected keys [${unexpected.slice(0, 5).join(', ')}${unexpected.length > 5 ? ', …' : ''}]`,
    );
  }
  for (const [k, v] of Object.entries(current)) {
    if (!(v instanceof t.Tensor) || !Object.hasOwn(model, k)) continue;
    const want = v.shape.join(',');
    const got = model[k].shape.join(',');
    if (want !== got)
      refuse(`size mismatch for model '${k}': checkpoint has [${got}], the model has [${want}]`);
  }
}

/** The saved optimizer state has the target's number of parameter groups, each as large. */
function checkOptimizerFits(target: Stateful, savedState: unknown, refuse: (what: string) => never): void {
  const groups = (sd: unknown): unknown[] | null => {
    const g = (sd as { paramGroups?: unknown } | null)?.paramGroups;
    return Array.isArray(g) ? g : null;
  };
  const saved = groups(savedState);
  // An optimizer's own groups where it has them: a ZeroRedundancyOptimizer has a whole
  // state dict only on the rank it was consolidated on.
  const own = (target as { paramGroups?: unknown }).paramGroups;
  const current = Array.isArray(own) ? own : groups(target.stateDict());
  if (saved === null || current === null) return;
  if (saved.length !== current.length) {
    refuse(`optimizer has ${current.length} parameter groups, the checkpoint ${saved.length}`);
  }
  saved.forEach((g, i) => {
    const a = (g as { params?: unknown[] }).params?.length;
    const b = (current[i] as { params?: unknown[] }).params?.length;
    if (a !== b) refuse(`optimizer parameter group ${i} has ${b} parameters, the checkpoint ${a}`);
  });
}

/** The saved GradScaler state has a finite number for each number the target's state has. */
function checkScalerFits(target: Stateful, savedState: unknown, refuse: (what: string) => never): void {
  // A GradScaler's loadStateDict throws on an empty or non-numeric state only after the
  // model and optimizer were applied; check here that each number it has is in the file.
  const current = target.stateDict() as Record<string, unknown> | null;
  const saved = (savedState ?? {}) as Record<string, unknown>;
  for (const [k, v] of Object.entries(current ?? {})) {
    if (typeof v === 'number' && !(typeof saved[k] === 'number' && Number.isFinite(saved[k]))) {
      refuse(
        Object.keys(saved).length === 0
          ? 'the checkpoint has an empty GradScaler state (saved with AMP scaling off), this run scales'
          : `GradScaler state '${k}' is ${String(saved[k])} in the checkpoint, a finite number is needed`,
      );
    }
  }
}
