// Where a run resumes and what it restores (architecture §8, §9): the checkpoint is chosen
// on rank 0 and broadcast, so every rank loads the same one; the options that fix the data
// order and the step numbering must not have changed since it was written.
import { basename, join } from 'node:path';
import {
  CheckpointError,
  checkpointDirName,
  type LoadTargets,
  latestCheckpoint,
  loadCheckpoint,
  stepOfDirName,
} from '../checkpoint/index.ts';
import * as t from '../core/index.ts';
import * as dist from '../distributed/index.ts';
import { ELASTIC_ENV } from '../launch/elastic.ts';
import type { TrainConfig } from './config.ts';
import type { RunPlacement } from './process-group.ts';

/** Options that fix the data order and step numbering: a resumed run must keep them. */
const RESUME_KEYS = ['dataset', 'trainSize', 'imageSize', 'batchSize', 'gradAccum', 'seed', 'model'] as const;

/** Where in the run a checkpoint was taken. */
export interface ResumePoint {
  epoch: number;
  step: number;
  /** Optimizer steps already done in `epoch`. */
  stepInEpoch: number;
  /** Samples of `epoch`'s whole order already consumed (all ranks together). */
  samplesInEpoch: number;
  /** The world size the checkpoint was saved with. */
  savedWorldSize: number;
}

/** What a checkpoint's `extra` holds besides the standard parts: the position in the epoch and the options that must not change. */
export function resumeExtra(
  c: TrainConfig,
  stepInEpoch: number,
  samplesInEpoch: number,
): Record<string, unknown> {
  return {
    stepInEpoch,
    samplesInEpoch,
    config: Object.fromEntries(RESUME_KEYS.map((k) => [k, c[k] ?? null])),
  };
}

/** Which checkpoint to resume from, or null: decided on rank 0 and broadcast. */
export async function findResume(c: TrainConfig, p: RunPlacement): Promise<string | null> {
  let mode = c.resume;
  // A gang the launcher restarted resumes this run's latest checkpoint.
  if (mode === 'none' && p.restartCount > 0 && c.checkpointDir !== undefined) mode = 'auto';
  if (mode === 'none') return null;
  if (mode !== 'auto') return mode;
  const root = c.checkpointDir as string;
  let step = -1;
  if (p.rank === 0) {
    const dir = await latestCheckpoint(root, {
      onSkip: (skipped, why) => console.warn(`resume: skipping ${skipped}: ${why.message}`),
    });
    if (dir !== null) step = stepOfDirName(basename(dir)) ?? -1;
  }
  const group = p.group;
  if (group !== null && group.size > 1) {
    step = await t.tidyAsync(async () => {
      const buf = t.tensor([step], { dtype: 'int64' });
      await dist.broadcast(buf, 0, { group });
      return Number((buf.toTypedArray() as BigInt64Array)[0]);
    });
  }
  return step < 0 ? null : join(root, checkpointDirName(step));
}

/** Loads `dir` into `parts` and returns where the run continues. */
export async function loadResume(
  dir: string,
  parts: LoadTargets,
  c: TrainConfig,
  worldSize: number,
): Promise<ResumePoint> {
  let loaded: Awaited<ReturnType<typeof loadCheckpoint>>;
  // Under tsrun's elastic mode the world may change between rounds.
  const reshard = c.reshard || process.env[ELASTIC_ENV] === '1';
  try {
    loaded = await loadCheckpoint(dir, parts, { worldSize, allowWorldSizeChange: reshard });
  } catch (e) {
    if (e instanceof CheckpointError && e.code === 'WORLD_SIZE_MISMATCH') {
      throw new CheckpointError(
        'WORLD_SIZE_MISMATCH',
        dir,
        `cannot resume with world size ${worldSize}: ${e.message.slice(dir.length + 2).split(';')[0]}. ` +
          'Resume with the same number of workers (the data order and the global batch depend on it), ' +
          'or pass --reshard to continue the epoch re-sharded over the new world',
        { cause: e },
      );
    }
    throw e;
  }
  const extra = loaded.extra as {
    stepInEpoch?: number;
    samplesInEpoch?: number;
    config?: Record<string, unknown>;
  } | null;
  checkUnchanged(extra?.config, c, dir);
  const stepInEpoch = extra?.stepInEpoch ?? 0;
  return {
    epoch: loaded.epoch,
    step: loaded.step,
    stepInEpoch,
    // Checkpoints from before samplesInEpoch was recorded had a constant world.
    samplesInEpoch: extra?.samplesInEpoch ?? stepInEpoch * c.batchSize * c.gradAccum * loaded.savedWorldSize,
    savedWorldSize: loaded.savedWorldSize,
  };
}

function checkUnchanged(saved: Record<string, unknown> | undefined, c: TrainConfig, dir: string): void {
  if (saved === undefined) return;
  const changed = RESUME_KEYS.filter(
    (k) => JSON.stringify(saved[k] ?? null) !== JSON.stringify(c[k] ?? null),
  );
  if (changed.length > 0) {
    throw new CheckpointError(
      'INCOMPATIBLE',
      dir,
      `cannot resume: ${changed.map((k) => `${k} was ${JSON.stringify(saved[k])}, now ${JSON.stringify(c[k])}`).join('; ')} ` +
        '(these fix the data order and the step numbering)',
    );
  }
}
