// What the dashboard page receives over /events: the workers' metric records (as the
// trainer writes them, see metrics/records.ts) and the launcher's own events.
import type { MetricRecord } from '../metrics/index.ts';

/** The job, once at the start: what the header shows before the first step. */
export interface JobEvent {
  type: 'job';
  runId: string;
  worldSize: number;
  maxRestarts: number;
  metricsFile: string;
  time: number;
}

/** A gang of workers started: attempt 0 is the first, each later one a restart. */
export interface AttemptEvent {
  type: 'attempt';
  attempt: number;
  time: number;
}

/** An attempt failed (the launcher's first-failure summary). */
export interface FailureEvent {
  type: 'failure';
  attempt: number;
  summary: string;
  time: number;
}

/** A rank's metrics file started over (a restart without a checkpoint): forget its records. */
export interface TruncateEvent {
  type: 'truncate';
  rank: number;
  time: number;
}

/** The job ended. */
export interface EndEvent {
  type: 'end';
  status: 'finished' | 'failed' | 'stopped';
  exitCode: number;
  time: number;
}

export type LauncherEvent = JobEvent | AttemptEvent | FailureEvent | TruncateEvent | EndEvent;
export type DashboardEvent = MetricRecord | LauncherEvent;

/** The status an exit code means: 0 finished, killed by a signal (128+n) stopped, else failed. */
export function endStatus(exitCode: number): EndEvent['status'] {
  if (exitCode === 0) return 'finished';
  return exitCode > 128 ? 'stopped' : 'failed';
}
