// Never lose a run: before any work, `tsddp train` looks where it would write — the
// checkpoint folder and the metrics file with its rank files — for what an earlier run
// left there. Starting again over it would overwrite its checkpoints, prune the ones
// that are left, truncate its metrics and leave a folder that mixes two runs, so by
// default that is refused, naming what is there; `--resume auto` continues the earlier
// run (its recorded configuration must match) and `--overwrite` deletes it first — only
// what tsddp wrote (metrics files it recognizes, checkpoint folders holding nothing but
// checkpoint files), all checked before the first is deleted. A gang the launcher
// restarted is continuing its own run and resumes without asking.

import { existsSync, readdirSync, statSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { stepOfDirName } from '../checkpoint/layout.ts';
import { foreignEntries, removeCheckpointDir } from '../checkpoint/remove.ts';
import { TsddpError } from '../errors/index.ts';
import {
  checkMetricsPath,
  describeKind,
  isTsddpMetricsFile,
  rankFilesOf,
  removeMetricsFile,
} from '../metrics/index.ts';
import type { IoPlan } from './plan.ts';

/** What an earlier run left where this one would write. */
export interface PriorRun {
  /** Checkpoint directories (committed or not), oldest first. */
  checkpoints: string[];
  /** The merged metrics file and the rank files, those that exist. */
  metrics: string[];
}

/** An earlier run is where this one would write, and the options do not say what to do with it. */
export class PriorRunError extends TsddpError {
  override name = 'PriorRunError';
  readonly code = 'PRIOR_RUN';
}

function checkpointsIn(root: string | undefined): string[] {
  if (root === undefined || !existsSync(root) || !statSync(root).isDirectory()) return [];
  return readdirSync(root, { withFileTypes: true })
    .flatMap((e) => {
      const step = e.isDirectory() ? stepOfDirName(e.name) : null;
      return step === null ? [] : [{ step, dir: join(root, e.name) }];
    })
    .sort((a, b) => a.step - b.step)
    .map((c) => c.dir);
}

function metricsFilesOf(file: string | undefined): string[] {
  if (file === undefined) return [];
  return [...(existsSync(file) ? [file] : []), ...rankFilesOf(file)];
}

export function findPriorRun(c: Pick<IoPlan, 'checkpointDir' | 'metricsFile'>): PriorRun {
  return { checkpoints: checkpointsIn(c.checkpointDir), metrics: metricsFilesOf(c.metricsFile) };
}

export const isEmpty = (p: PriorRun): boolean => p.checkpoints.length === 0 && p.metrics.length === 0;

function describe(p: PriorRun): string {
  const parts: string[] = [];
  if (p.checkpoints.length > 0) {
    const names = p.checkpoints.map((d) => basename(d));
    const shown = names.length > 3 ? [...names.slice(0, 1), '...', ...names.slice(-2)] : names;
    parts.push(`${dirname(p.checkpoints[0])} holds ${names.length} checkpoint(s) (${shown.join(', ')})`);
  }
  if (p.metrics.length > 0) parts.push(`metrics of it are in ${p.metrics.join(', ')}`);
  return parts.join('; ');
}

/** Why --overwrite may not delete `prior`: each thing tsddp did not write (empty: it may). */
function notOurs(prior: PriorRun): string[] {
  const out: string[] = [];
  for (const dir of prior.checkpoints) {
    const foreign = foreignEntries(dir);
    if (foreign.length > 0) out.push(`${dir} holds ${foreign.join(', ')}, which tsddp did not write`);
  }
  for (const f of prior.metrics)
    if (!isTsddpMetricsFile(f)) out.push(`${f} is ${describeKind(f)}, not a tsddp metrics file`);
  return out;
}

/** --overwrite: checks that tsddp wrote everything there, then deletes it. */
function overwrite(prior: PriorRun): void {
  const refused = notOurs(prior);
  if (refused.length > 0)
    throw new PriorRunError(
      `--overwrite deletes only what tsddp wrote, and nothing was deleted: ${refused.join('; ')}. ` +
        'Move those away, or choose another --checkpoint-dir / --metrics-file',
    );
  for (const dir of prior.checkpoints) removeCheckpointDir(dir);
  for (const f of prior.metrics) removeMetricsFile(f);
}

/**
 * Decides what to do with an earlier run before any work: nothing there, or a restarted
 * gang, or `--resume` given (resume decides), or `--overwrite` (deleted here; by rank 0
 * only, before any collective) — else a PriorRunError that names what is there. A
 * --metrics-file that is not a file (a folder, a device, a link) is refused in every case.
 */
export function guardPriorRun(
  c: Pick<IoPlan, 'checkpointDir' | 'metricsFile' | 'resume' | 'overwrite'>,
  opts: { restarting: boolean; rank: number },
): void {
  if (c.metricsFile !== undefined) checkMetricsPath(c.metricsFile);
  if (opts.restarting) return;
  const prior = findPriorRun(c);
  if (isEmpty(prior)) return;
  if (c.overwrite) {
    if (opts.rank === 0) overwrite(prior);
    return;
  }
  if (c.resume === 'none') {
    throw new PriorRunError(
      `an earlier run is where this one would write: ${describe(prior)}. ` +
        'Continue it with --resume auto, or delete it and start again with --overwrite',
    );
  }
  if (c.resume === 'auto' && prior.checkpoints.length === 0) {
    throw new PriorRunError(
      `--resume auto: there is no checkpoint to resume, but an earlier run left metrics: ${prior.metrics.join(', ')}. ` +
        'Delete them and start again with --overwrite',
    );
  }
}
