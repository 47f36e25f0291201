// Where a run resumes and what it restores (architecture §8, §9): the checkpoint is chosen
// on rank 0 and broadcast, so every rank loads the same one; the options that fix the data
// order and the step numbering must not have changed since it was written.
import { existsSync } from 'node:fs';
import { basename, join } from 'node:path';
import {
  CheckpointError,
  type CheckpointState,
  checkpointDirName,
  type LoadTargets,
  latestCheckpoint,
  loadCheckpoint,
  saveCheckpoint,
  stepOfDirName,
} from '../checkpoint/index.ts';
import { EVALUATION_FILE } from '../checkpoint/layout.ts';
import * as t from '../core/index.ts';
import * as dist from '../distributed/index.ts';
import { writeFileAtomicSync } from '../files/index.ts';
import { ELASTIC_ENV } from '../launch/elastic.ts';
import type { TrainConfig } from './config.ts';
import type { DataIdentity } from './data.ts';
import type { EvalResult } from './evaluate.ts';
import { type IoPlan, imagesPerRankStep, type RunPlan } from './plan.ts';
import { PriorRunError } from './prior-run.ts';
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
  /** The evaluation due right after the checkpoint never finished (the run stopped in it). */
  evalPending: boolean;
  /** How the training data changed since the checkpoint (--allow-data-change), or null. */
  dataChange: string | null;
}

/** Where the run stands when a checkpoint is written, beside what the checkpoint's standard parts hold. */
export interface ResumeState {
  stepInEpoch: number;
  samplesInEpoch: number;
  /** The training set's identity (data.ts dataIdentity). */
  data: DataIdentity;
  /** An evaluation is due right after this checkpoint (evaluation.json records that it finished). */
  evalPending: boolean;
}

/** What a checkpoint's `extra` holds besides the standard parts: the position in the epoch and the options that must not change. */
export function resumeExtra(c: TrainConfig, s: ResumeState): Record<string, unknown> {
  return {
    stepInEpoch: s.stepInEpoch,
    samplesInEpoch: s.samplesInEpoch,
    evalPending: s.evalPending,
    config: { ...Object.fromEntries(RESUME_KEYS.map((k) => [k, c[k] ?? null])), data: s.data },
  };
}

/** Where in the run a checkpoint is saved (position.ts: a finished epoch is saved as the start of the next one). */
export interface SavedPosition {
  epoch: number;
  step: number;
  stepInEpoch: number;
  samplesInEpoch: number;
}

/** What a checkpoint saves of a run's parts (setup.ts RunParts). */
export interface CheckpointParts
  extends Required<Pick<CheckpointState, 'model' | 'optimizer' | 'scheduler'>> {
  scaler: CheckpointState['scaler'] | null;
  plan: Pick<RunPlan, 'options' | 'io'>;
  dataIdentity: DataIdentity;
  pg: { worldSize: number };
}

/** Rank 0 writes the run's checkpoint: model, optimizer, schedule, scaler, and where the run stands (resumeExtra). */
export async function saveRunCheckpoint(
  parts: CheckpointParts,
  at: SavedPosition,
  evalPending: boolean,
): Promise<void> {
  const { model, optimizer, scheduler, plan, dataIdentity: data } = parts;
  const { epoch, step, stepInEpoch, samplesInEpoch } = at;
  const extra = resumeExtra(plan.options, { stepInEpoch, samplesInEpoch, data, evalPending });
  await saveCheckpoint(
    plan.io.checkpointDir as string,
    {
      model,
      optimizer,
      scheduler,
      scaler: parts.scaler ?? undefined,
      epoch,
      step,
      samplerEpoch: epoch,
      worldSize: parts.pg.worldSize,
      extra,
    },
    { keepLast: plan.io.checkpointKeep },
  );
}

/** Records in checkpoint `dir` that the evaluation due after it finished (rank 0, after evaluate()). */
export function recordEvaluation(dir: string, r: EvalResult & { epoch: number; step: number }): void {
  try {
    writeFileAtomicSync(join(dir, EVALUATION_FILE), `${JSON.stringify(r)}\n`, { durable: true });
  } catch (e) {
    // The run goes on: the cost is an evaluation run again if the run resumes from here.
    console.warn(`tsddp train: could not record the evaluation in ${dir}: ${(e as Error).message}`);
  }
}

/** Whether this run resumes the latest checkpoint: --resume auto, or a gang the launcher restarted. */
export function resumesLatest(c: Pick<IoPlan, 'resume' | 'checkpointDir'>, restartCount: number): boolean {
  return c.resume === 'auto' || (c.resume === 'none' && restartCount > 0 && c.checkpointDir !== undefined);
}

/**
 * Rank 0's choice when the run resumes the latest checkpoint: the step of the newest one
 * that verifies, or null to start at step 0. Refused with a PriorRunError, before anything
 * is written, when checkpoints are there but none can be resumed: starting over would
 * overwrite them and the earlier run's metrics. (A restarted gang whose checkpoints are
 * all uncommitted writes of its own first save starts over.)
 */
export async function chooseLatest(
  c: Pick<IoPlan, 'checkpointDir'>,
  restarting: boolean,
): Promise<number | null> {
  const root = c.checkpointDir as string;
  const skipped: { dir: string; why: CheckpointError }[] = [];
  // clean: false: a refusal below leaves every byte as it was (saving removes stale temp files).
  const dir = await latestCheckpoint(root, {
    clean: false,
    onSkip: (d, why) => {
      skipped.push({ dir: d, why });
      console.warn(`resume: skipping ${why.message}`); // the message names the checkpoint's file
    },
  });
  if (dir !== null) return stepOfDirName(basename(dir));
  const corrupt = skipped.filter((s) => s.why.code !== 'MISSING');
  if (skipped.length > 0 && (corrupt.length > 0 || !restarting)) {
    throw new PriorRunError(
      `--resume auto: no checkpoint in ${root} can be resumed, and starting over would overwrite them: ` +
        `${skipped.map((s) => s.why.message).join('; ')}. ` +
        'Nothing was changed. Restore them, resume one by name (--resume <folder>) once it is repaired, or start again with --overwrite',
    );
  }
  return null;
}

/**
 * Which checkpoint to resume from, or null. `latestStep` is rank 0's chooseLatest() (null
 * on the other ranks); it is broadcast, so every rank loads the same checkpoint.
 */
export async function findResume(
  c: Pick<IoPlan, 'resume' | 'checkpointDir'>,
  p: RunPlacement,
  latestStep: number | null,
): Promise<string | null> {
  if (!resumesLatest(c, p.restartCount)) return c.resume === 'none' ? null : c.resume;
  let step = latestStep ?? -1;
  const group = p.group;
  if (group !== null && group.size > 1) {
    step = await t.tidyAsync(async () => {
      const buf = t.tensor([step], { dtype: 'int64' });
      await dist.broadcast(buf, 0, { group });
      return Number((buf.toTypedArray() as BigInt64Array)[0]);
    });
  }
  return step < 0 ? null : join(c.checkpointDir as string, checkpointDirName(step));
}

/**
 * Loads `dir` into `parts` and returns where the run continues. The options the checkpoint
 * recorded (resumeExtra) are compared with `plan.options`, the ones this run was given.
 */
export async function loadResume(
  dir: string,
  parts: LoadTargets,
  plan: Pick<RunPlan, 'options' | 'io' | 'data' | 'loop'>,
  worldSize: number,
  data: DataIdentity,
): Promise<ResumePoint> {
  let loaded: Awaited<ReturnType<typeof loadCheckpoint>>;
  // Under tsrun's elastic mode the world may change between rounds.
  const reshard = plan.io.reshard || process.env[ELASTIC_ENV] === '1';
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
    evalPending?: boolean;
    config?: Record<string, unknown>;
  } | null;
  checkUnchanged(extra?.config, plan.options, dir);
  const dataChange = dataChangeOf(extra?.config?.data as DataIdentity | undefined, data);
  if (dataChange !== null && !plan.io.allowDataChange)
    throw new CheckpointError(
      'INCOMPATIBLE',
      dir,
      `cannot resume: the training data changed since this checkpoint (${dataChange}), so the saved position ` +
        'in the epoch no longer points at the same samples. Restore the data, or pass --allow-data-change ' +
        'to go on with the new data (the epoch continues at the same step, or the next epoch starts if it is past the end)',
    );
  const stepInEpoch = extra?.stepInEpoch ?? 0;
  return {
    epoch: loaded.epoch,
    step: loaded.step,
    stepInEpoch,
    // Checkpoints from before samplesInEpoch was recorded had a constant world.
    samplesInEpoch: extra?.samplesInEpoch ?? stepInEpoch * imagesPerRankStep(plan) * loaded.savedWorldSize,
    savedWorldSize: loaded.savedWorldSize,
    evalPending: extra?.evalPending === true && !existsSync(join(dir, EVALUATION_FILE)),
    dataChange,
  };
}

/** How the data differs from the checkpoint's record, in words, or null (also for checkpoints without one). */
function dataChangeOf(saved: DataIdentity | undefined, now: DataIdentity): string | null {
  if (saved === undefined || saved === null) return null;
  if (saved.samples !== now.samples) return `${saved.samples} training samples then, ${now.samples} now`;
  if (saved.fingerprint !== now.fingerprint)
    return `the same number of samples (${now.samples}), but other files or labels`;
  return null;
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
