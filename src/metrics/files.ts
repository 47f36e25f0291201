// Training metrics as JSON lines. Each rank appends its own records to
// `<metricsFile>.rank<N>` as it goes (no collective per step, and nothing is lost when a
// run dies); at the end of the run rank 0 merges all ranks' files into `<metricsFile>`,
// ordered by step and rank. A resumed run appends a `resume` marker: records of the
// interrupted attempt after the resumed step are dropped by the merge, so the merged
// file describes the run that actually produced the final model. (The rank files must
// be visible to rank 0: one node, or a shared file system.)
import {
  appendFileSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { basename, dirname, join } from 'node:path';
import type { MetricRecord } from './records.ts';

export function rankFile(path: string, rank: number): string {
  return `${path}.rank${rank}`;
}

/** The rank files `<path>.rank<N>` that exist, in rank order. */
export function rankFilesOf(path: string): string[] {
  const dir = dirname(path);
  if (!existsSync(dir) || !statSync(dir).isDirectory()) return [];
  const prefix = `${basename(path)}.rank`;
  return readdirSync(dir)
    .filter((f) => f.startsWith(prefix) && /^\d+$/.test(f.slice(prefix.length)))
    .sort((a, b) => Number(a.slice(prefix.length)) - Number(b.slice(prefix.length)))
    .map((f) => join(dir, f));
}

/** Appends one rank's records to its rank file. */
export class MetricsWriter {
  readonly file: string | null;

  /** `fresh`: start the rank file anew (a run that does not resume). */
  constructor(
    path: string | undefined,
    readonly rank: number,
    fresh: boolean,
  ) {
    this.file = path === undefined ? null : rankFile(path, rank);
    if (this.file !== null) mkdirSync(dirname(this.file), { recursive: true });
    if (this.file !== null && fresh) rmSync(this.file, { force: true });
  }

  write(record: MetricRecord): void {
    if (this.file !== null) appendFileSync(this.file, `${JSON.stringify(record)}\n`);
  }
}

const TYPE_ORDER: Record<string, number> = { resume: 0, step: 1, eval: 2, summary: 3 };

/** Reads JSON lines, skipping a torn last line (a rank killed mid-write). */
export function readJsonLines(file: string): MetricRecord[] {
  const out: MetricRecord[] = [];
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    if (line.trim() === '') continue;
    try {
      out.push(JSON.parse(line) as MetricRecord);
    } catch {
      // An interrupted append; the run that resumed rewrote that step.
    }
  }
  return out;
}

/** The records of one rank file, without those a later resume superseded. */
export function effectiveRecords(records: MetricRecord[]): MetricRecord[] {
  let kept: MetricRecord[] = [];
  for (const r of records) {
    if (r.type === 'resume') kept = kept.filter((k) => k.step <= r.step && k.type !== 'summary');
    kept.push(r);
  }
  return kept;
}

/**
 * Merges `<path>.rank0..N-1` into `<path>` (written to a temp file, then renamed), sorted
 * by step, then record type, then rank. Returns the number of records written.
 */
export function mergeMetrics(path: string, worldSize: number, extra: MetricRecord[] = []): number {
  const files = Array.from({ length: worldSize }, (_, r) => rankFile(path, r));
  return writeMerged(
    path,
    mergedRecords(
      files.filter((f) => existsSync(f)),
      extra,
    ),
  );
}

/**
 * Merges whatever rank files `<path>.rank<N>` exist into `<path>`: what the launcher does
 * when its workers have exited, cleanly or not. Null when there is none.
 */
export function mergeRankFiles(path: string): number | null {
  const files = rankFilesOf(path);
  return files.length === 0 ? null : writeMerged(path, mergedRecords(files));
}

/** The records of rank files, superseded ones dropped, sorted by step, then record type, then rank. */
export function mergedRecords(files: string[], extra: MetricRecord[] = []): MetricRecord[] {
  const all: MetricRecord[] = [];
  for (const f of files) all.push(...effectiveRecords(readJsonLines(f)));
  all.push(...extra);
  all.sort((a, b) => a.step - b.step || TYPE_ORDER[a.type] - TYPE_ORDER[b.type] || a.rank - b.rank);
  return all;
}

function writeMerged(path: string, all: MetricRecord[]): number {
  const tmp = `${path}.tmp${process.pid}`;
  writeFileSync(tmp, all.map((r) => `${JSON.stringify(r)}\n`).join(''));
  renameSync(tmp, path);
  return all.length;
}
