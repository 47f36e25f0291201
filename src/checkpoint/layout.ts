// What a checkpoint directory holds, and the trainer.json record.
//
//   <root>/ckpt-000120/
//     model.safetensors      module state dict, torchvision names (loads with safetensors.torch.load_file)
//     optimizer.safetensors  optimizer state tensors, keys like "state.3.momentum_buffer"
//     trainer.safetensors    tensors found in scheduler / scaler / extra state (only if any)
//     trainer.json           everything else: epoch, step, world size, RNG, param groups, scheduler, scaler, extra
//     manifest.json          size + sha256 of each file above; written last (the commit record)
//     evaluation.json        written after it by the trainer when the evaluation due at this
//                            step has finished (not in the manifest: it comes later)
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { CheckpointError } from './errors.ts';
import { isCount, parseRecord } from './manifest.ts';
import type { EncodedState } from './state-codec.ts';

export const MODEL_FILE = 'model.safetensors';
export const OPTIMIZER_FILE = 'optimizer.safetensors';
export const TRAINER_TENSORS_FILE = 'trainer.safetensors';
export const TRAINER_FILE = 'trainer.json';
export const TRAINER_FORMAT = 'tsddp.trainer';
export const EVALUATION_FILE = 'evaluation.json';

/** The parts of trainer state that come from stateful objects. */
export const PARTS = ['optimizer', 'scheduler', 'scaler'] as const;
export type Part = (typeof PARTS)[number];

export interface TrainerRecord {
  format: typeof TRAINER_FORMAT;
  version: number;
  epoch: number;
  step: number;
  samplerEpoch: number;
  worldSize: number;
  /** The global CPU generator state (base64), or null when it was not saved. */
  rng: { cpu: string } | null;
  /** Encoded state dicts; a part is present only if it was saved. */
  parts: Partial<Record<Part, EncodedState>>;
  extra: EncodedState;
  /**
   * Tied model weights written once: alias -> the name it is stored under (as
   * safetensors.torch.save_model dedupes them). Absent when nothing is tied.
   */
  tied?: Record<string, string>;
}

const DIR_NAME = /^ckpt-(\d+)$/;

export function checkpointDirName(step: number): string {
  return `ckpt-${String(step).padStart(6, '0')}`;
}

/** The step a checkpoint directory name encodes, or null for other names. */
export function stepOfDirName(name: string): number | null {
  const m = DIR_NAME.exec(name);
  return m === null ? null : Number(m[1]);
}

/** Checkpoint directories under `root` (committed or not), oldest step first. */
export async function listCheckpointDirs(root: string): Promise<{ dir: string; step: number }[]> {
  let entries: import('node:fs').Dirent[];
  try {
    entries = await readdir(root, { withFileTypes: true });
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw e;
  }
  const out: { dir: string; step: number }[] = [];
  for (const e of entries) {
    const step = stepOfDirName(e.name);
    if (step !== null && e.isDirectory()) out.push({ dir: join(root, e.name), step });
  }
  return out.sort((a, b) => a.step - b.step);
}

/** Parses and validates trainer.json (already digest-checked). */
export function parseTrainerRecord(bytes: Uint8Array, path: string): TrainerRecord {
  const r = parseRecord(bytes, path, 'trainer state');
  const bad = (what: string): never => {
    throw new CheckpointError('CORRUPT', path, `trainer state ${what}`);
  };
  if (r.format !== TRAINER_FORMAT)
    bad(`has format ${JSON.stringify(r.format)}, expected '${TRAINER_FORMAT}'`);
  if (!isCount(r.version) || r.version !== 1) bad(`has unsupported version ${JSON.stringify(r.version)}`);
  for (const k of ['epoch', 'step', 'samplerEpoch'] as const) if (!isCount(r[k])) bad(`has no valid ${k}`);
  if (!isCount(r.worldSize) || r.worldSize < 1) bad('has no valid worldSize');
  const rng = r.rng as { cpu?: unknown } | null;
  if (rng !== null && (typeof rng !== 'object' || typeof rng.cpu !== 'string'))
    bad('has an invalid rng record');
  if (r.parts === null || typeof r.parts !== 'object' || Array.isArray(r.parts)) bad('has no parts object');
  for (const k of Object.keys(r.parts as object)) {
    if (!(PARTS as readonly string[]).includes(k)) bad(`has an unknown part '${k}'`);
  }
  if (!('extra' in r)) bad('has no extra field');
  const tied = r.tied as Record<string, unknown> | undefined;
  if (
    tied !== undefined &&
    (tied === null || typeof tied !== 'object' || Object.values(tied).some((v) => typeof v !== 'string'))
  )
    bad('has an invalid tied-weights record');
  // The loader assigns each alias into the model's state record: '__proto__' would set its
  // prototype (aliasing every lookup), and no parameter is called any of these.
  for (const alias of Object.keys(tied ?? {}))
    if (PROTOTYPE_KEYS.has(alias)) bad(`has a tied weight named '${alias}', which no parameter can be`);
  const at = protoKeyPath(r, []);
  if (at !== null)
    bad(
      `has the key '__proto__' at ${at}: no state tsddp saves has one, and a loader assigning it would set an object's prototype`,
    );
  return r as unknown as TrainerRecord;
}

const PROTOTYPE_KEYS = new Set(['__proto__', 'constructor', 'prototype']);

/** The dotted path of the first object holding a '__proto__' key in `v`, or null. */
function protoKeyPath(v: unknown, path: string[]): string | null {
  if (v === null || typeof v !== 'object') return null;
  const entries: [string, unknown][] = Array.isArray(v)
    ? v.map((x, i) => [String(i), x])
    : Object.entries(v as Record<string, unknown>);
  for (const [k, x] of entries) {
    if (k === '__proto__' && !Array.isArray(v)) return path.join('.') || '(root)';
    const found = protoKeyPath(x, [...path, k]);
    if (found !== null) return found;
  }
  return null;
}
