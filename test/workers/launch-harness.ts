// Test-side helpers for the tsrun tests (not a worker): start a launcher, read its output
// as it comes, and find processes left behind through a marker in their environment.
import { type ChildProcess, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/** A port that was free a moment ago (for jobs that need a fixed one, like multi-node). */
export { freePort } from '../../src/host/gang.ts';

export const root = fileURLToPath(new URL('../..', import.meta.url));
export const worker = (name: string) => fileURLToPath(new URL(`./${name}`, import.meta.url));

export interface LauncherExit {
  code: number | null;
  signal: NodeJS.Signals | null;
  /** Milliseconds from start to exit. */
  ms: number;
}

export class Launcher {
  readonly child: ChildProcess;
  readonly marker: string;
  stdout = '';
  stderr = '';
  readonly exited: Promise<LauncherExit>;
  private readonly started = Date.now();
  private readonly listeners = new Set<() => void>();

  /** `prefix`: a command to run the launcher under (e.g. `ip netns exec ns0`). */
  /** `bin`: ['bin/tsrun.mjs'] (default) or ['bin/tsddp.mjs', 'run']. */
  constructor(
    args: string[],
    opts: { env?: NodeJS.ProcessEnv; prefix?: string[]; marker?: string; bin?: string[] } = {},
  ) {
    this.marker = opts.marker ?? `tsrun-test-${randomUUID()}`;
    const argv = [...(opts.prefix ?? []), process.execPath, ...(opts.bin ?? ['bin/tsrun.mjs']), ...args];
    this.child = spawn(argv[0], argv.slice(1), {
      cwd: root,
      env: { ...process.env, OMP_NUM_THREADS: '1', TSRUN_TEST_MARKER: this.marker, ...opts.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.child.stdout?.on('data', (b: Buffer) => {
      this.stdout += b.toString();
      for (const l of this.listeners) l();
    });
    this.child.stderr?.on('data', (b: Buffer) => {
      this.stderr += b.toString();
      for (const l of this.listeners) l();
    });
    this.exited = new Promise((resolve) => {
      this.child.once('exit', (code, signal) => {
        for (const l of this.listeners) l();
        resolve({ code, signal, ms: Date.now() - this.started });
      });
    });
  }

  get output(): string {
    return `${this.stdout}\n${this.stderr}`;
  }

  /** Waits until the combined output matches `re` (rejects after `timeoutMs` or on exit). */
  waitFor(re: RegExp, timeoutMs = 20_000): Promise<RegExpMatchArray> {
    return new Promise((resolve, reject) => {
      const check = () => {
        const m = re.exec(this.output);
        if (m) return done(() => resolve(m));
        if (this.child.exitCode !== null || this.child.signalCode !== null)
          done(() => reject(new Error(`launcher exited before printing ${re}:\n${this.output}`)));
      };
      const timer = setTimeout(
        () => done(() => reject(new Error(`no ${re} within ${timeoutMs} ms:\n${this.output}`))),
        timeoutMs,
      );
      const done = (f: () => void) => {
        clearTimeout(timer);
        this.listeners.delete(check);
        f();
      };
      this.listeners.add(check);
      check();
    });
  }

  /** The store port the launcher announced. */
  async port(): Promise<number> {
    const m = await this.waitFor(/rendezvous store on [^\s:]+:(\d+)/);
    return Number(m[1]);
  }

  /** Waits for the exit, failing the test (and killing everything) past `timeoutMs`. */
  async exit(timeoutMs = 60_000): Promise<LauncherExit> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        this.kill();
        reject(new Error(`launcher still running after ${timeoutMs} ms:\n${this.output}`));
      }, timeoutMs);
    });
    try {
      return await Promise.race([this.exited, timeout]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Kills the launcher and anything carrying its marker (cleanup after a failed test). */
  kill(): void {
    this.child.kill('SIGKILL');
    for (const pid of survivors(this.marker)) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {}
    }
  }
}

/** Live (non-zombie) processes whose environment holds `marker`. */
export function survivors(marker: string): number[] {
  const out: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name) || Number(name) === process.pid) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      if (stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z')) continue;
      if (readFileSync(`/proc/${name}/environ`).includes(marker)) out.push(Number(name));
    } catch {
      // Gone meanwhile, or not ours to read.
    }
  }
  return out;
}

/** Polls until no process carries `marker`; returns what is still there at the deadline. */
export async function waitGone(marker: string, timeoutMs: number): Promise<number[]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const left = survivors(marker);
    if (left.length === 0 || Date.now() >= deadline) return left;
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Whether a process is alive (and not a zombie). */
export function alive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return !stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z');
  } catch {
    return false;
  }
}

/** Lines a worker printed as JSON (after the `[rank N] ` prefix). */
export function jsonLines<T>(stdout: string): T[] {
  const out: T[] = [];
  for (const line of stdout.split('\n')) {
    const m = /^\[rank \d+\] (\{.*\})$/.exec(line);
    if (m) out.push(JSON.parse(m[1]) as T);
  }
  return out;
}
