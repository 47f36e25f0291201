// loadCheckpoint / verifyCheckpoint / latestCheckpoint. Loading is two-phase: first
// everything is read and checked — manifest, sizes, sha256 digests, safetensors
// structure, trainer record, world size, and whether the state fits the targets — and
// only then is anything applied. A refused checkpoint leaves every target untouched.
import { open, stat } from 'node:fs/promises';
import { basename, join } from 'node:path';
import * as t from '../core/index.ts';
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

/** Reads, verifies and applies the checkpoint in `dir` to `targets`. */
export async function loadCheckpoint(
  dir: string,
  targets: LoadTargets,
  opts: LoadCheckpointOptions = {},
): Promise<LoadedCheckpoint> {
  // --- phase 1: read and check everything -------------------------------------------
  await refuseFiles(dir);
  const manifest = await readManifest(dir);
  const files = await readVerifiedFiles(dir, manifest);
  const need = (name: string): Buffer => {
    const b = files.get(name);
    if (b === undefined)
      throw new CheckpointError('CORRUPT', join(dir, name), 'required file is not in the manifest');
    return b;
  };
  const trainerPath = join(dir, TRAINER_FILE);
  const record = parseTrainerRecord(need(TRAINER_FILE), trainerPath);
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
  const rngBytes =
    targets.rng !== false && record.rng !== null ? Buffer.from(record.rng.cpu, 'base64') : null;

  // Tensors are made only now, from verified bytes. Model tensors are freed once loaded
  // (modules copy them); the rest are kept, as optimizers may adopt their state tensors.
  return t.tidy(() => {
    const model = targets.model === undefined ? null : parseTensors(dir, MODEL_FILE, need(MODEL_FILE));
    // Tied weights were written once: every alias gets the stored tensor back.
    if (model !== null) {
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
    }
    const decoded: Partial<Record<Part, unknown>> = {};
    let extra: unknown = null;
    let adopted: t.Tensor[] = [];
    {
      const optimizerTensors = files.has(OPTIMIZER_FILE)
        ? parseTensors(dir, OPTIMIZER_FILE, need(OPTIMIZER_FILE))
        : {};
      const otherTensors = files.has(TRAINER_TENSORS_FILE)
        ? parseTensors(dir, TRAINER_TENSORS_FILE, need(TRAINER_TENSORS_FILE))
        : {};
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
        throw corrupt(trainerPath, e);
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
      adopted = [...Object.values(optimizerTensors), ...Object.values(otherTensors)];
    }
    preflight(dir, targets, model, decoded, rngBytes, opts.strict ?? true);
    for (const x of adopted) x.keep();

    // --- phase 2: apply ----------------------------------------------------------------
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
      apply('model', () => m.loadStateDict(model, { strict: opts.strict ?? true }));
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
    return {
      dir,
      epoch: record.epoch,
      step: record.step,
      samplerEpoch: record.samplerEpoch,
      savedWorldSize: record.worldSize,
      worldSizeChanged: record.worldSize !== worldSize,
      extra,
      manifest,
    };
  });
}

function parseTensors(dir: string, name: string, bytes: Uint8Array): Record<string, t.Tensor> {
  try {
    return deserialize(bytes, { name: join(dir, name) }).tensors;
  } catch (e) {
    throw corrupt(join(dir, name), e);
  }
}

/**
 * The checks PyTorch's load_state_dict would make, done before anything is applied:
 * model keys (strict) and shapes, optimizer parameter-group sizes, RNG state size.
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
  if (targets.model !== undefined && model !== null) {
    const current = targets.model.stateDict() as Record<string, unknown>;
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
  if (targets.optimizer !== undefined) {
    const groups = (sd: unknown): unknown[] | null => {
      const g = (sd as { paramGroups?: unknown } | null)?.paramGroups;
      return Array.isArray(g) ? g : null;
    };
    const saved = groups(decoded.optimizer);
    const current = groups(targets.optimizer.stateDict());
    if (saved !== null && current !== null) {
      if (saved.length !== current.length) {
        refuse(`optimizer has ${current.length} parameter groups, the checkpoint ${saved.length}`);
      }
      saved.forEach((g, i) => {
        const a = (g as { params?: unknown[] }).params?.length;
        const b = (current[i] as { params?: unknown[] }).params?.length;
        if (a !== b) refuse(`optimizer parameter group ${i} has ${b} parameters, the checkpoint ${a}`);
      });
    }
  }
  if (targets.scaler !== undefined) {
    // A GradScaler's loadStateDict throws on an empty or non-numeric state only after the
    // model and optimizer were applied; check here that each number it has is in the file.
    const current = targets.scaler.stateDict() as Record<string, unknown> | null;
    const saved = (decoded.scaler ?? {}) as Record<string, unknown>;
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
  if (rngBytes !== null) {
    const n = t.defaultGenerator().getState().numel();
    if (n !== rngBytes.length) refuse(`RNG state is ${rngBytes.length} bytes, this generator's is ${n}`);
  }
}
