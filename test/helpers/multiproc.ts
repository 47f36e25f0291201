// Multi-process test harness: one real process per rank (`node --import tsx
// test/workers/<name>.ts`), rendezvous over loopback (env://), results back as JSON files.
// The ranks are started by src/host/gang.ts (spawnRanks), which also kills them when
// the test process exits; here they are also killed when their job times out, on SIGINT
// and SIGTERM, and (after a short grace period) when a sibling fails, so a broken test
// never leaves processes behind or hangs.
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort, killAllChildren, spawnRanks } from '../../src/host/gang.ts';

export { freePort };

const ROOT = new URL('../..', import.meta.url).pathname;
const WORKERS = new URL('../workers/', import.meta.url).pathname;

for (const sig of ['SIGINT', 'SIGTERM'] as const) {
  process.once(sig, () => {
    killAllChildren();
    process.kill(process.pid, sig);
  });
}

export interface RankResult<R = unknown> {
  rank: number;
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  /** What the worker passed to writeResult(), or undefined when it wrote nothing. */
  result: R | undefined;
}

export interface JobOptions {
  worldSize: number;
  /** JSON-serialisable configuration, read by the worker with workerConfig(). */
  config?: unknown;
  /** Wall-clock limit for the whole job; then every rank is SIGKILLed and `done` rejects. */
  timeoutMs?: number;
  /** After one rank fails (non-zero exit or a signal), the others get this long before SIGKILL. */
  failureGraceMs?: number;
  env?: Record<string, string>;
}

export interface Job<R> {
  readonly procs: ChildProcess[];
  readonly port: number;
  /** Every rank's outcome once all have exited; rejects on timeout. */
  readonly done: Promise<RankResult<R>[]>;
  /** Resolves when `rank` prints `line` on stdout (rejects if it exits first). */
  waitForLine(rank: number, line: string): Promise<void>;
  /** Writes a line to `rank`'s stdin. */
  send(rank: number, line: string): void;
  /** SIGKILLs every rank still running (also stopped ones). */
  kill(): void;
}

/** Starts `worldSize` ranks of test/workers/<worker>.ts; see Job. */
export async function startJob<R = unknown>(worker: string, opts: JobOptions): Promise<Job<R>> {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), `tsddp-${worker}-`));
  const timeoutMs = opts.timeoutMs ?? 60_000;
  const grace = opts.failureGraceMs ?? 5_000;
  const procs: ChildProcess[] = [];
  const stdout: string[] = [];
  const stderr: string[] = [];
  const lineWaiters: { rank: number; line: string; resolve: () => void; reject: (e: Error) => void }[] = [];
  const exits: Promise<RankResult<R>>[] = [];
  let failTimer: NodeJS.Timeout | undefined;

  const kill = () => {
    for (const p of procs) if (p.exitCode === null && p.signalCode === null) p.kill('SIGKILL');
  };

  const resultFile = (rank: number) => join(dir, `rank${rank}.json`);
  const children = spawnRanks({
    command: process.execPath,
    args: ['--import', 'tsx', join(WORKERS, `${worker}.ts`)],
    world: opts.worldSize,
    port,
    cwd: ROOT,
    env: { ...process.env, ...opts.env },
    rankEnv: (rank) => ({
      OMP_NUM_THREADS: '1',
      TSDDP_TEST_RESULT: resultFile(rank),
      TSDDP_TEST_CONFIG: JSON.stringify(opts.config ?? {}),
    }),
  });
  for (const [rank, child] of children.entries()) {
    procs.push(child);
    stdout[rank] = '';
    stderr[rank] = '';
    let partial = '';
    child.stdout?.on('data', (d: Buffer) => {
      stdout[rank] += d;
      partial += d;
      for (let i = partial.indexOf('\n'); i >= 0; i = partial.indexOf('\n')) {
        const line = partial.slice(0, i);
        partial = partial.slice(i + 1);
        for (const w of lineWaiters.filter((x) => x.rank === rank && x.line === line)) {
          lineWaiters.splice(lineWaiters.indexOf(w), 1);
          w.resolve();
        }
      }
    });
    child.stderr?.on('data', (d: Buffer) => {
      stderr[rank] += d;
    });
    // A child that already exited makes writes fail with EPIPE; that is reported by its exit.
    child.stdin?.on('error', () => {});
    child.on('error', (e) => {
      stderr[rank] += `\n[harness] ${e.message}`;
    });
    // 'close' comes after 'exit' once stdout/stderr are drained.
    exits.push(
      new Promise((resolve) => {
        child.on('close', (code, signal) => {
          for (const w of lineWaiters.filter((x) => x.rank === rank)) {
            lineWaiters.splice(lineWaiters.indexOf(w), 1);
            w.reject(
              new Error(
                `rank ${rank} exited (code ${code}, signal ${signal}) before printing '${w.line}'\n${tail(stderr[rank])}`,
              ),
            );
          }
          if ((code !== 0 || signal !== null) && failTimer === undefined) {
            failTimer = setTimeout(kill, grace);
          }
          resolve({
            rank,
            code,
            signal,
            stdout: stdout[rank],
            stderr: stderr[rank],
            result: existsSync(resultFile(rank))
              ? (JSON.parse(readFileSync(resultFile(rank), 'utf8')) as R)
              : undefined,
          });
        });
      }),
    );
  }

  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      kill();
      const tails = procs.map((_, r) => `--- rank ${r} stderr:\n${tail(stderr[r])}`).join('\n');
      reject(new Error(`${worker}: job did not finish within ${timeoutMs} ms; killed all ranks\n${tails}`));
    }, timeoutMs);
  });
  const done = Promise.race([Promise.all(exits), timedOut]).finally(() => {
    clearTimeout(timer);
    clearTimeout(failTimer);
    kill();
    rmSync(dir, { recursive: true, force: true });
  });
  // The caller may await `done` later than it settles; that is not an unhandled rejection.
  done.catch(() => {});

  return {
    procs,
    port,
    done,
    kill,
    waitForLine(rank, line) {
      if (stdout[rank].split('\n').includes(line)) return Promise.resolve();
      return new Promise((resolve, reject) => lineWaiters.push({ rank, line, resolve, reject }));
    },
    send(rank, line) {
      procs[rank].stdin?.write(`${line}\n`);
    },
  };
}

/** Runs a job to completion (see startJob) and returns each rank's outcome. */
export async function runJob<R = unknown>(worker: string, opts: JobOptions): Promise<RankResult<R>[]> {
  const job = await startJob<R>(worker, opts);
  try {
    return await job.done;
  } finally {
    job.kill();
  }
}

/** Asserts that every rank exited with code 0 and wrote a result; returns the results by rank. */
export function okResults<R>(outcomes: RankResult<R>[]): R[] {
  for (const o of outcomes) {
    assert.equal(
      o.code,
      0,
      `rank ${o.rank} exited with code ${o.code}, signal ${o.signal}\n${tail(o.stderr)}`,
    );
    assert.ok(o.result !== undefined, `rank ${o.rank} wrote no result\n${tail(o.stderr)}`);
  }
  return outcomes.map((o) => o.result as R);
}

function tail(s: string, n = 3000): string {
  return s.length > n ? `...${s.slice(-n)}` : s;
}
