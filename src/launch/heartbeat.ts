// Progress heartbeats for the launcher's watchdog: a worker writes its step and what it is
// doing (data loading, forward, backward, optimizer step, checkpoint, evaluation) into a
// small file the launcher named for it (TSDDP_HEARTBEAT_FILE); the launcher reads its
// local workers' files and reports a rank that has made no step for a while — and, with
// --watchdog, stops the attempt (and restarts it, within --max-restarts). A write is one
// pwrite of a few dozen bytes (microseconds), so every phase is recorded: a rank stuck
// in native code, which can run no JavaScript, is caught in the phase it is stuck in.
//
// A phase may be marked `waiting`: the rank is in a collective, blocked by whichever peer
// has not joined it. When one rank hangs, every peer soon waits for it and makes no step
// either; the launcher gives waiting ranks a grace period (COLLECTIVE_GRACE_MS) beyond
// --watchdog, so the node of the rank stuck elsewhere reports first and names the culprit.
import { closeSync, constants, openSync, readFileSync, writeSync } from 'node:fs';

/** The environment variable that names a worker's heartbeat file. */
export const HEARTBEAT_FILE_ENV = 'TSDDP_HEARTBEAT_FILE';

export interface HeartbeatRecord {
  step: number;
  phase: string;
  /** In a collective, waiting for peers: a stall here is most likely a peer's. */
  waiting?: boolean;
}

/**
 * The step a rank reports while it sets up, before its first step. There, moving on to
 * the next phase (the process group, the data, the model, the checkpoint) is progress: a
 * rank is stalled only when one phase of its setup outlasts the limit.
 */
export const SETUP_STEP = -1;

/** How much longer than --watchdog a rank waiting in a collective may go without a step. */
export const COLLECTIVE_GRACE_MS = 5000;

const SIZE = 160; // bytes: the record, padded with spaces, rewritten in place

/** The worker's side: `beat()` at every phase change. */
export class Heartbeat {
  private readonly buf = Buffer.alloc(SIZE, ' ');

  private constructor(private fd: number | null) {}

  /** A heartbeat when the launcher asked for one (TSDDP_HEARTBEAT_FILE), else null. */
  static fromEnv(env: NodeJS.ProcessEnv = process.env): Heartbeat | null {
    const file = env[HEARTBEAT_FILE_ENV];
    if (!file) return null;
    try {
      // In the launcher's private folder; O_NOFOLLOW all the same (src/files).
      return new Heartbeat(openSync(file, constants.O_WRONLY | constants.O_CREAT | constants.O_NOFOLLOW));
    } catch {
      return null; // the launcher's folder is gone: no watchdog, nothing else lost
    }
  }

  /** `waiting`: this phase is (or includes) a collective that waits for every peer. */
  beat(step: number, phase: string, waiting = false): void {
    if (this.fd === null) return;
    this.buf.fill(' ');
    const record: HeartbeatRecord = waiting ? { step, phase, waiting } : { step, phase };
    this.buf.write(JSON.stringify(record).slice(0, SIZE));
    writeSync(this.fd, this.buf, 0, SIZE, 0);
  }

  close(): void {
    if (this.fd !== null) closeSync(this.fd);
    this.fd = null;
  }

  [Symbol.dispose](): void {
    this.close();
  }
}

function readRecord(file: string): HeartbeatRecord | null {
  try {
    const r = JSON.parse(readFileSync(file, 'utf8').trim()) as HeartbeatRecord;
    return Number.isInteger(r.step) && typeof r.phase === 'string' ? r : null;
  } catch {
    return null; // not written yet (starting up, or not a tsddp program), or mid-write
  }
}

export interface Stall {
  rank: number;
  pid: number;
  secs: number;
  record: HeartbeatRecord;
}

/** The launcher's side: which of its workers have made no step for how long. */
export class StallWatch {
  /** rank -> the progress mark last seen (the step; in setup, the phase) and when it was first seen. */
  private readonly seen = new Map<number, { mark: string; since: number; record: HeartbeatRecord }>();
  private readonly warned = new Set<string>();

  constructor(private readonly workers: { rank: number; pid: number; file: string }[]) {}

  /** Reads the heartbeats; returns the workers without a new step for `ms`. */
  stalled(ms: number, now = Date.now()): Stall[] {
    const out: Stall[] = [];
    for (const w of this.workers) {
      const record = readRecord(w.file);
      if (record === null) continue;
      const prev = this.seen.get(w.rank);
      const mark = record.step === SETUP_STEP ? `setup ${record.phase}` : String(record.step);
      if (prev === undefined || prev.mark !== mark) this.seen.set(w.rank, { mark, since: now, record });
      else prev.record = record;
      const entry = this.seen.get(w.rank) as { since: number; record: HeartbeatRecord };
      if (now - entry.since >= ms)
        out.push({ rank: w.rank, pid: w.pid, secs: (now - entry.since) / 1000, record: entry.record });
    }
    return out;
  }

  /** True the first time a rank's stall at this step is reported (one warning per stall). */
  firstReport(rank: number): boolean {
    const key = `${rank}@${this.seen.get(rank)?.mark}`;
    if (this.warned.has(key)) return false;
    this.warned.add(key);
    return true;
  }
}

const STATES: Record<string, string> = {
  R: 'running',
  S: 'sleeping',
  D: 'in uninterruptible I/O',
  T: 'stopped by a signal',
  t: 'stopped by a debugger',
  Z: 'exited',
};

/** The state Linux reports for a local process (/proc/<pid>/stat), or null elsewhere. */
export function processState(pid: number): string | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const code = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
    return STATES[code] ?? code;
  } catch {
    return null;
  }
}

/**
 * Whether a stalled rank is most likely held up by a peer: it is waiting in a collective
 * and is not itself stopped (SIGSTOP, a debugger) — such a rank gets COLLECTIVE_GRACE_MS.
 */
export function waitsForPeers(s: Stall): boolean {
  return s.record.waiting === true && !isStopped(s.pid);
}

function isStopped(pid: number): boolean {
  const state = processState(pid);
  return state === STATES.T || state === STATES.t;
}

/** Orders stalled ranks by blame: stopped processes, then ranks stuck outside a collective, then waiting ones. */
export function likelyCulpritsFirst(stalls: Stall[]): Stall[] {
  const blame = (s: Stall) => (isStopped(s.pid) ? 0 : waitsForPeers(s) ? 2 : 1);
  return [...stalls].sort((a, b) => blame(a) - blame(b));
}

export function describeStall(s: Stall, host: string): string {
  const state = processState(s.pid);
  return (
    `rank ${s.rank} (pid ${s.pid} on ${host}${state === null ? '' : `, ${state}`}) has made no step for ` +
    `${s.secs.toFixed(0)} s: ` +
    (s.record.step === SETUP_STEP
      ? `${s.record.phase}, before its first step`
      : `last step ${s.record.step}, then ${s.record.phase}`) +
    (waitsForPeers(s) ? ' (waiting for its peers)' : '')
  );
}
