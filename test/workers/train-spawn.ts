// Starts training workers the way tsrun does (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR,
// MASTER_PORT, one thread each) and collects how each ended. The ranks are started by
// src/host/gang.ts (spawnRanks), which kills any still running when the test process
// exits, so a failing test never leaves any behind.
import type { ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort, spawnRanks } from '../../src/host/gang.ts';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const WORKER = fileURLToPath(new URL('./train-worker.ts', import.meta.url));

export interface Exit {
  rank: number;
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

export interface RunOptions {
  /** Extra environment (e.g. TORCHELASTIC_RESTART_COUNT). */
  env?: Record<string, string>;
  /** Kill every worker after this long (default 60 s). */
  timeoutMs?: number;
  /** When one worker dies by a signal, stop the others (what the launcher does). */
  stopAllOnCrash?: boolean;
}

/** Runs `worldSize` workers on `job` (written to dir/job-<n>.json) and waits for all of them. */
export async function runWorkers(
  dir: string,
  job: unknown,
  worldSize: number,
  opts: RunOptions = {},
): Promise<Exit[]> {
  const jobFile = join(dir, `job-${Date.now()}-${Math.random().toString(36).slice(2)}.json`);
  writeFileSync(jobFile, JSON.stringify(job));
  const port = await freePort();
  const children: ChildProcess[] = spawnRanks({
    command: process.execPath,
    args: ['--import', 'tsx', WORKER, jobFile],
    world: worldSize,
    port,
    cwd: ROOT,
    env: process.env,
    rankEnv: () => ({ OMP_NUM_THREADS: '1', ...opts.env }),
  });
  const exits = children.map((child, rank) => {
    child.stdin?.end(); // the workers read no input
    let stdout = '';
    let stderr = '';
    child.stdout?.on('data', (b: Buffer) => {
      stdout += b;
    });
    child.stderr?.on('data', (b: Buffer) => {
      stderr += b;
    });
    return new Promise<Exit>((resolve) => {
      child.on('close', (code, signal) => {
        if (signal !== null && opts.stopAllOnCrash)
          for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
        resolve({ rank, code, signal, stdout, stderr });
      });
    });
  });
  const timer = setTimeout(() => {
    for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
  }, opts.timeoutMs ?? 60_000);
  try {
    return await Promise.all(exits);
  } finally {
    clearTimeout(timer);
  }
}

/** A readable account of how workers ended, for assertion messages. */
export function describe(exits: Exit[]): string {
  return exits
    .map((e) => `rank ${e.rank}: code ${e.code} signal ${e.signal}\n${e.stderr.slice(-2000)}`)
    .join('\n');
}
