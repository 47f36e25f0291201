// Pre-flight, before the first step: every rank checks what would
// otherwise fail late — the checkpoint folder (creatable, writable, room for about two
// checkpoints), its data, an earlier run in its way — and the ranks compare their run
// configuration through the store. Rank 0 collects every rank's result and publishes one
// verdict, so a problem on one rank stops all of them at once with the same message,
// instead of one rank failing and the others hanging in their next collective until the
// timeout. A rank that failed a check throws its own error; the others say which rank
// failed and why.

import { closeSync, mkdirSync, statfsSync, unlinkSync } from 'node:fs';
import { join } from 'node:path';
import { ITEM_SIZE } from '../core/dtype.ts';
import type { Tensor } from '../core/index.ts';
import type { ProcessGroup } from '../distributed/index.ts';
import { TsddpError } from '../errors/index.ts';
import { checkSafeDir, openNew, tempPathFor } from '../files/index.ts';
import type { TrainConfig } from './config.ts';

/** A pre-flight check failed on some rank; the message names the rank and the problem. */
export class PreflightError extends TsddpError {
  override name = 'PreflightError';
  readonly code = 'PREFLIGHT';
}

const MB = 1024 * 1024;

/** Bytes a checkpoint of these tensors takes (safetensors: the data plus small headers). */
export function tensorBytes(tensors: Tensor[]): number {
  return tensors.reduce((n, t) => n + t.numel() * ITEM_SIZE[t.dtype], 0);
}

/**
 * The checkpoint folder can be created and written, and its file system has room for
 * `twoCheckpoints` bytes. Throws a PreflightError naming the folder.
 */
export function checkCheckpointFolder(dir: string, twoCheckpoints: number): void {
  try {
    mkdirSync(dir, { recursive: true });
  } catch (e) {
    throw new PreflightError(`--checkpoint-dir ${dir} cannot be created: ${(e as Error).message}`);
  }
  try {
    checkSafeDir(dir, '--checkpoint-dir');
  } catch (e) {
    throw new PreflightError((e as Error).message);
  }
  // A new file of an unguessable name (src/files), removed at once: the folder takes writes.
  const probe = tempPathFor(join(dir, 'tsddp-preflight'));
  try {
    closeSync(openNew(probe));
    unlinkSync(probe);
  } catch (e) {
    throw new PreflightError(`--checkpoint-dir ${dir} is not writable: ${(e as Error).message}`);
  }
  const fs = statfsSync(dir);
  const free = fs.bavail * fs.bsize;
  if (free < twoCheckpoints) {
    throw new PreflightError(
      `--checkpoint-dir ${dir}: ${(free / MB).toFixed(0)} MB free, but two checkpoints of this model and ` +
        `optimizer take about ${(twoCheckpoints / MB).toFixed(0)} MB; free some space or choose another folder`,
    );
  }
}

/** The options every rank must agree on (all but where the dashboard is served). */
function comparable(c: TrainConfig): Record<string, unknown> {
  const { dashboard: _dashboard, ...rest } = c;
  return rest;
}

interface Report {
  config: Record<string, unknown>;
  problem: string | null;
}

const describe = (v: unknown) => (v === undefined ? 'unset' : JSON.stringify(v));

/** Rank 0's verdict from every rank's report: null when all is well. */
export function verdict(reports: Report[]): string | null {
  const lines: string[] = [];
  reports.forEach((r, rank) => {
    if (r.problem !== null) lines.push(`rank ${rank}: ${r.problem}`);
  });
  const base = reports[0].config;
  reports.forEach((r, rank) => {
    if (rank === 0) return;
    const keys = [...new Set([...Object.keys(base), ...Object.keys(r.config)])].sort();
    const differ = keys.filter((k) => JSON.stringify(r.config[k]) !== JSON.stringify(base[k]));
    if (differ.length > 0)
      lines.push(
        `rank ${rank} was started with another configuration than rank 0: ` +
          differ.map((k) => `${k} ${describe(r.config[k])} (rank 0: ${describe(base[k])})`).join(', '),
      );
  });
  return lines.length === 0 ? null : lines.join('\n');
}

/**
 * Runs this rank's checks (which build what the run needs and return it), then, with
 * several ranks, exchanges the results through the store. Throws this rank's own error if
 * a check failed here, else a PreflightError when another rank failed or the
 * configurations differ.
 */
export async function preflight<T>(
  c: TrainConfig,
  group: ProcessGroup | null,
  attempt: number,
  checks: () => Promise<T>,
): Promise<T> {
  let mine: Error | null = null;
  let result: T | undefined;
  try {
    result = await checks();
  } catch (e) {
    mine = e as Error;
  }
  if (group === null || group.size === 1) {
    if (mine !== null) throw mine;
    return result as T;
  }
  // The launcher's store outlives a restarted gang: each attempt has its own keys.
  const key = `tsddp/preflight/${attempt}`;
  const report: Report = { config: comparable(c), problem: mine && `${mine.name}: ${mine.message}` };
  group.store.set(`${key}/${group.rank}`, JSON.stringify(report));
  let found: string | null;
  if (group.rank === 0) {
    const reports: Report[] = [];
    for (let r = 0; r < group.size; r++)
      reports.push(JSON.parse(await group.store.get(`${key}/${r}`)) as Report);
    found = verdict(reports);
    group.store.set(`${key}/verdict`, found ?? '');
  } else {
    found = (await group.store.get(`${key}/verdict`)) || null;
  }
  if (mine !== null) throw mine;
  if (found !== null) throw new PreflightError(`pre-flight checks failed before the first step:\n${found}`);
  return result as T;
}
