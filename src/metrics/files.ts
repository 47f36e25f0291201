// Training metrics as JSON lines. Each rank appends its own records to
// `<metricsFile>.rank<N>` as it goes (no collective per step, and nothing is lost when a
// run dies); at the end of the run rank 0 merges all ranks' files into `<metricsFile>`,
// ordered by step and rank. A resumed run appends a `resume` marker: records of the
// interrupted attempt after the resumed step are dropped by the merge, so the merged
// file describes the run that actually produced the final model. (The rank files must
// be visible to rank 0: one node, or a shared file system.)
//
// Files are created as src/files says (no symbolic link followed, temp names unguessable,
// folders checked); --overwrite removes only what isTsddpMetricsFile() recognizes.
import {
  closeSync,
  existsSync,
  fstatSync,
  openSync,
  readdirSync,
  readFileSync,
  readSync,
  statSync,
  unlinkSync,
  writeSync,
} from 'node:fs';
import { basename, dirname, join } from 'node:path';
import {
  ensureSafeDir,
  kindOf,
  openAppend,
  openNew,
  UnsafePathError,
  writeFileAtomicSync,
} from '../files/index.ts';
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
  private fd: number | null = null;

  /**
   * `fresh`: start the rank file anew (a run that does not resume); an earlier attempt's
   * rank file there is removed if it is a tsddp metrics file, else refused.
   */
  constructor(
    path: string | undefined,
    readonly rank: number,
    fresh: boolean,
  ) {
    this.file = path === undefined ? null : rankFile(path, rank);
    if (this.file === null) return;
    ensureSafeDir(dirname(this.file), 'the metrics folder');
    if (fresh && kindOf(this.file) !== 'missing') removeMetricsFile(this.file);
    this.fd = fresh ? openNew(this.file) : openAppend(this.file);
    // Appending to a rank file another user planted would hand them the run's records.
    const uid = process.getuid?.();
    const owner = fstatSync(this.fd).uid;
    if (uid !== undefined && owner !== uid && owner !== 0) {
      this.close();
      throw new UnsafePathError(
        this.file,
        `${this.file} belongs to another user (uid ${owner}); tsddp does not append to it`,
      );
    }
  }

  write(record: MetricRecord): void {
    if (this.fd !== null) writeSync(this.fd, `${JSON.stringify(record)}\n`);
  }

  /** Closes the rank file; later writes are dropped. Idempotent. */
  close(): void {
    if (this.fd !== null) closeSync(this.fd);
    this.fd = null;
  }

  [Symbol.dispose](): void {
    this.close();
  }
}

const RECORD_TYPES = new Set(['resume', 'step', 'eval', 'summary']);

/**
 * Whether `path` is a metrics file tsddp wrote: a regular file (not a link) that is empty
 * (a run that ended before its first record) or whose first line is a metric record.
 */
export function isTsddpMetricsFile(path: string): boolean {
  if (kindOf(path) !== 'file') return false;
  const fd = openSync(path, 'r');
  let head: string;
  try {
    const buf = Buffer.alloc(64 * 1024);
    head = buf.subarray(0, readSync(fd, buf, 0, buf.length, 0)).toString('utf8');
  } finally {
    closeSync(fd);
  }
  if (head.length === 0) return true;
  const nl = head.indexOf('\n');
  try {
    const r = JSON.parse(nl < 0 ? head : head.slice(0, nl)) as Record<string, unknown>;
    return RECORD_TYPES.has(r.type as string) && Number.isInteger(r.rank) && Number.isInteger(r.step);
  } catch {
    return false;
  }
}

/** Removes a metrics file tsddp wrote; anything else is refused with an UnsafePathError. */
export function removeMetricsFile(path: string): void {
  if (!isTsddpMetricsFile(path))
    throw new UnsafePathError(
      path,
      `${path} is not a tsddp metrics file (${describeKind(path)}); tsddp will not delete it`,
    );
  unlinkSync(path);
}

/** What is at `path`, in words, for messages. */
export function describeKind(path: string): string {
  const kind = kindOf(path);
  if (kind === 'file') return 'a file whose first line is not a metric record';
  if (kind === 'folder') return 'a folder';
  if (kind === 'link') return 'a symbolic link';
  if (kind === 'missing') return 'nothing';
  const st = statSync(path);
  if (st.isCharacterDevice()) return 'a character device';
  if (st.isBlockDevice()) return 'a block device';
  if (st.isFIFO()) return 'a named pipe';
  if (st.isSocket()) return 'a socket';
  return 'not a regular file';
}

/**
 * Refuses a --metrics-file path tsddp could not write safely: anything there but a regular
 * file (a folder, a device, a link), or a folder another user controls.
 */
export function checkMetricsPath(path: string): void {
  for (const p of [path, ...rankFilesOf(path)]) {
    const kind = kindOf(p);
    if (kind !== 'missing' && kind !== 'file')
      throw new UnsafePathError(
        p,
        `--metrics-file ${path}: ${p} is ${describeKind(p)}, not a file; give the path of a metrics file (it is created)`,
      );
  }
  if (existsSync(dirname(path))) ensureSafeDir(dirname(path), "--metrics-file's folder");
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
 * when its workers have exited, cleanly or not. Null when there is none, or when `<path>`
 * is newer than every rank file (nothing to merge: a run refused before its first record
 * leaves the earlier run's files as they were).
 */
export function mergeRankFiles(path: string): number | null {
  const files = rankFilesOf(path);
  if (files.length === 0) return null;
  if (kindOf(path) === 'file') {
    const merged = statSync(path).mtimeMs;
    // Strictly older: a record appended in the same clock tick as the merge still counts.
    if (files.every((f) => statSync(f).mtimeMs < merged)) return null;
  }
  return writeMerged(path, mergedRecords(files));
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
  // A rename would replace whatever is there, a device node included.
  // A rename would replace whatever is there, a device node or a file of the user's.
  if (kindOf(path) !== 'missing' && !isTsddpMetricsFile(path))
    throw new UnsafePathError(
      path,
      `cannot merge the metrics into ${path}: it is ${describeKind(path)}, not a tsddp metrics file`,
    );
  writeFileAtomicSync(path, all.map((r) => `${JSON.stringify(r)}\n`).join(''));
  return all.length;
}
