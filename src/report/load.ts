// Reading a metrics JSONL file (src/metrics/) for the report, with errors that say
// which file is wrong and how. Numbers a run could not compute (a diverged loss is written
// by JSON.stringify as null) become NaN, which the charts draw as gaps.

import { existsSync, readFileSync, statSync } from 'node:fs';
import { TsddpError } from '../errors/index.ts';
import {
  type EvalRecord,
  type MetricRecord,
  mergedRecords,
  type ResumeRecord,
  rankFilesOf,
  readJsonLines,
  type StepRecord,
  type SummaryRecord,
} from '../metrics/index.ts';

/** The metrics file cannot be reported on: missing, empty, or not tsddp metrics. */
export class ReportError extends TsddpError {
  override name = 'ReportError';
  readonly code = 'REPORT';

  constructor(
    readonly file: string,
    problem: string,
  ) {
    super(`${file}: ${problem}`);
  }
}

export interface Metrics {
  file: string;
  /** The rank files read instead of `file`, which an interrupted run did not write; else empty. */
  mergedFrom: string[];
  /** Sorted by step, then rank. */
  steps: StepRecord[];
  /** One per evaluation (every rank records the same all-rank result; the lowest rank's is kept). */
  evals: EvalRecord[];
  /** One per resume. */
  resumes: ResumeRecord[];
  summaries: SummaryRecord[];
}

const TYPES = new Set(['step', 'eval', 'resume', 'summary']);

const STEP_NUMBERS = [
  'epoch',
  'loss',
  'acc',
  'lr',
  'images',
  'imagesPerSec',
  'dataMs',
  'forwardMs',
  'backwardMs',
  'optimizerMs',
  'stepMs',
  'liveTensors',
  'time',
] as const;

function num(v: unknown): number {
  return typeof v === 'number' ? v : Number.NaN;
}

function isRecord(r: unknown): r is MetricRecord {
  return typeof r === 'object' && r !== null && TYPES.has((r as { type?: unknown }).type as string);
}

/** Step and rank place a record on the charts; without them it is not a metrics record. */
function checkPlace(file: string, r: MetricRecord): void {
  if (!Number.isInteger(r.step) || !Number.isInteger(r.rank)) {
    const shown = JSON.stringify(r);
    throw new ReportError(
      file,
      `a ${r.type} record has no integer step/rank: ${shown.length > 120 ? `${shown.slice(0, 117)}...` : shown}`,
    );
  }
}

function normalizeStep(r: StepRecord): StepRecord {
  const out = { ...r };
  for (const k of STEP_NUMBERS) out[k] = num(r[k]);
  out.commMs = r.commMs === undefined ? undefined : num(r.commMs);
  out.overlapMs = r.overlapMs === undefined ? undefined : num(r.overlapMs);
  return out;
}

function lowestRankPerStep<T extends MetricRecord>(records: T[]): T[] {
  const byStep = new Map<number, T>();
  for (const r of records) {
    const seen = byStep.get(r.step);
    if (seen === undefined || r.rank < seen.rank) byStep.set(r.step, r);
  }
  return [...byStep.values()].sort((a, b) => a.step - b.step);
}

/**
 * Reads and checks `file`; a torn last line is skipped (as readJsonLines does). A run that
 * was interrupted before rank 0 merged its metrics left only `<file>.rank<N>`: those are
 * merged here, as the run would have.
 */
export function loadMetrics(file: string): Metrics {
  const rankFiles = existsSync(file) ? [] : rankFilesOf(file);
  if (rankFiles.length > 0) {
    const records = mergedRecords(rankFiles);
    const where = `${file} (merged from ${rankFiles.join(', ')})`;
    if (records.length === 0) throw new ReportError(where, 'the rank files hold no tsddp metrics');
    return fromRecords(where, file, records, rankFiles);
  }
  let text: string;
  try {
    if (statSync(file).isDirectory()) throw new ReportError(file, 'is a directory, not a metrics JSONL file');
    text = readFileSync(file, 'utf8');
  } catch (e) {
    if (e instanceof ReportError) throw e;
    const err = e as NodeJS.ErrnoException;
    throw new ReportError(file, err.code === 'ENOENT' ? 'no such file' : `cannot be read (${err.message})`);
  }
  const lines = text.split('\n').filter((l) => l.trim() !== '').length;
  if (lines === 0) throw new ReportError(file, 'is empty: the run recorded no metrics');
  const records = readJsonLines(file).filter(isRecord);
  if (records.length === 0) {
    throw new ReportError(
      file,
      `is not a tsddp metrics file: none of its ${lines} line(s) is a JSON record of type step, eval, resume or summary`,
    );
  }
  return fromRecords(file, file, records, []);
}

/** `where` names the source in errors; `file` is what the report is of. */
function fromRecords(where: string, file: string, all: MetricRecord[], mergedFrom: string[]): Metrics {
  const records = all.filter(isRecord);
  for (const r of records) checkPlace(where, r);
  const steps = records
    .filter((r): r is StepRecord => r.type === 'step')
    .map(normalizeStep)
    .sort((a, b) => a.step - b.step || a.rank - b.rank);
  if (steps.length === 0) {
    const kinds = [...new Set(records.map((r) => r.type))].join(', ');
    throw new ReportError(where, `has no step records (only ${kinds}): the run recorded no training step`);
  }
  return {
    file,
    mergedFrom,
    steps,
    evals: lowestRankPerStep(records.filter((r): r is EvalRecord => r.type === 'eval')),
    resumes: lowestRankPerStep(records.filter((r): r is ResumeRecord => r.type === 'resume')),
    summaries: records
      .filter((r): r is SummaryRecord => r.type === 'summary')
      .sort((a, b) => a.rank - b.rank),
  };
}
