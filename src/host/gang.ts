// Child processes for the benchmarks, --tune's bucket trial (src/train/tune-buckets.ts) and
// the multi-process tests, in three layers:
//   - spawnRanks: a gang of processes, one per rank, with the env:// rendezvous variables
//     (RANK, WORLD_SIZE, MASTER_* ...) on a loopback port; every child this module
//     starts is killed when this process exits. test/helpers/multiproc.ts and
//     test/workers/train-spawn.ts build on it.
//   - JsonLineProcess: one child driven by JSON lines, a request on its stdin, one JSON
//     object per answer on its stdout: a bench/ script's long-lived Python side
//     (bench/reference/*.py --serve), and each rank of a Gang.
//   - Gang: JSON lines to every rank of a gang, resolving with every rank's answer. Both
//     sides of the DDP benchmark (src/benchmark/worker.ts and bench/reference/ddp.py) and
//     the bucket trial's ranks (src/train/bucket-trial-worker.ts) speak it.
// Between requests the workers block on stdin, so an idle worker does not compete for the
// cores while the other side is measured.
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { LineReader } from './line-reader.ts';

/** Children started here and still running; killed when this process exits. */
const live = new Set<ChildProcessWithoutNullStreams>();
process.on('exit', killAllChildren);

/** SIGKILLs every child this module started that is still running. */
export function killAllChildren(): void {
  for (const c of live) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
}

/** `spawn` with piped stdio, the child killed with this process (see killAllChildren). */
export function spawnChild(
  command: string,
  args: string[],
  opts: { env: NodeJS.ProcessEnv; cwd?: string },
): ChildProcessWithoutNullStreams {
  const child = spawn(command, args, { ...opts, stdio: ['pipe', 'pipe', 'pipe'] });
  live.add(child);
  const forget = () => live.delete(child);
  child.once('exit', forget);
  child.once('close', forget);
  return child;
}

/** A loopback port that was free a moment ago (rank 0's TCPStore binds it). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = addr !== null && typeof addr === 'object' ? addr.port : 0;
      srv.close(() => (port > 0 ? resolve(port) : reject(new Error('could not read the bound port'))));
    });
  });
}

export interface RanksSpec {
  command: string;
  args: string[];
  world: number;
  /** MASTER_PORT on 127.0.0.1, e.g. from freePort(). */
  port: number;
  /** The environment of every rank; RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, MASTER_* are added. */
  env: NodeJS.ProcessEnv;
  /** Variables of one rank, added last (they may override the above). */
  rankEnv?: (rank: number) => NodeJS.ProcessEnv;
  /** A command that runs one rank's command elsewhere, e.g. `ip netns exec NS` (bench/lib/netns.ts). */
  wrap?: (rank: number) => string[];
  cwd?: string;
}

/** Starts `world` processes, one per rank, on one machine (the env:// rendezvous); see RanksSpec. */
export function spawnRanks(spec: RanksSpec): ChildProcessWithoutNullStreams[] {
  return Array.from({ length: spec.world }, (_, rank) => {
    const [command, ...args] = [...(spec.wrap?.(rank) ?? []), spec.command, ...spec.args];
    return spawnChild(command, args, {
      cwd: spec.cwd,
      env: {
        ...spec.env,
        RANK: String(rank),
        LOCAL_RANK: String(rank),
        WORLD_SIZE: String(spec.world),
        LOCAL_WORLD_SIZE: String(spec.world),
        MASTER_ADDR: '127.0.0.1',
        MASTER_PORT: String(spec.port),
        ...spec.rankEnv?.(rank),
      },
    });
  });
}

/** One child driven by JSON lines. Its first line (versions, settings) is `ready` once started. */
export class JsonLineProcess<Ready = Record<string, unknown>> {
  private readonly lines: LineReader;
  private stderr = '';
  ready!: Ready;

  /** `label` names the process in errors (`<label> exited during ...`). */
  constructor(
    readonly proc: ChildProcessWithoutNullStreams,
    readonly label: string,
  ) {
    proc.stderr.setEncoding('utf8');
    proc.stderr.on('data', (s: string) => {
      this.stderr = (this.stderr + s).slice(-4000);
    });
    proc.stdin.on('error', () => {}); // a dead worker is reported by its closed stdout
    this.lines = new LineReader(proc.stdout);
  }

  /** Spawns `command args` and waits for its first line, a JSON object (`ready`). */
  static async start<R>(
    command: string,
    args: string[],
    env: NodeJS.ProcessEnv,
    label = `${command} ${args[0] ?? ''}`.trim(),
  ): Promise<JsonLineProcess<R>> {
    const p = new JsonLineProcess<R>(spawnChild(command, args, { env }), label);
    p.ready = await p.answer<R>('start');
    return p;
  }

  /** True once the process has closed its stdout (exited). */
  get exited(): boolean {
    return this.lines.closed;
  }

  /** The last `n` lines of its stderr. */
  stderrTail(n = 20): string {
    return this.stderr.trim().split('\n').slice(-n).join('\n');
  }

  /** The next stdout line that is a JSON object (other output is skipped); null at exit. */
  async nextJson(): Promise<Record<string, unknown> | null> {
    for (;;) {
      const line = await this.lines.next();
      if (line === null) return null;
      if (line.startsWith('{')) return JSON.parse(line) as Record<string, unknown>;
    }
  }

  /** The next answer (nextJson); throws when the process exits first or the answer has `error`. */
  async answer<T = Record<string, unknown>>(what: string): Promise<T> {
    const out = await this.nextJson();
    if (out === null) throw new Error(`${this.label} exited during ${what}:\n${this.stderrTail()}`);
    if (typeof out.error === 'string') {
      throw new Error(`${this.label} (${what}): ${out.error}\n${out.traceback ?? ''}`);
    }
    return out as T;
  }

  /** Writes `obj` as one line to its stdin (nothing once it has exited). */
  send(obj: object): void {
    if (!this.lines.closed) this.proc.stdin.write(`${JSON.stringify(obj)}\n`);
  }

  /** Sends one request and waits for its answer; an answer with `error` throws. */
  async request<T = Record<string, unknown>>(req: object): Promise<T> {
    if (this.lines.closed) throw new Error(`${this.label}: worker has exited`);
    this.send(req);
    return this.answer<T>(JSON.stringify(req));
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  /** Ends it (EOF on stdin), then kills it if still running after `graceMs`. */
  async close(graceMs = 10_000): Promise<void> {
    if (this.proc.exitCode !== null || this.proc.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => this.proc.once('exit', () => resolve()));
    this.proc.stdin.end();
    const timer = setTimeout(() => this.kill(), graceMs);
    await exited;
    clearTimeout(timer);
  }

  kill(): void {
    if (this.proc.exitCode === null && this.proc.signalCode === null) this.proc.kill('SIGKILL');
  }
}

export interface GangSpec {
  /** Shown in errors: 'tsddp' or 'PyTorch'. */
  name: string;
  command: string;
  args: string[];
  world: number;
  /** The environment of every rank; RANK, WORLD_SIZE, MASTER_* are added. */
  env: NodeJS.ProcessEnv;
  /** Limit for one request (a hung collective, a stuck worker). */
  timeoutMs?: number;
  /** Where each rank runs: see RanksSpec. */
  rankEnv?: RanksSpec['rankEnv'];
  wrap?: RanksSpec['wrap'];
}

export class Gang {
  private ranks: JsonLineProcess[] = [];
  /** Every rank's first line: versions and settings. */
  ready: Record<string, unknown>[] = [];

  private constructor(readonly spec: GangSpec) {}

  /** Starts the ranks on a free loopback port and waits for each one's ready line. */
  static async start(spec: GangSpec): Promise<Gang> {
    const g = new Gang(spec);
    const port = await freePort();
    g.ranks = spawnRanks({
      command: spec.command,
      args: spec.args,
      world: spec.world,
      port,
      env: spec.env,
      rankEnv: spec.rankEnv,
      wrap: spec.wrap,
    }).map((proc, rank) => new JsonLineProcess(proc, `${spec.name} worker rank ${rank}`));
    try {
      g.ready = await g.collect('start');
    } catch (e) {
      g.kill();
      throw e;
    }
    return g;
  }

  private async collect(what: string): Promise<Record<string, unknown>[]> {
    const timeoutMs = this.spec.timeoutMs ?? 15 * 60_000;
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new Error(`${this.spec.name} worker: no answer to ${what} within ${timeoutMs} ms`)),
        timeoutMs,
      );
    });
    try {
      return await Promise.race([Promise.all(this.ranks.map((r) => r.answer(what))), timeout]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Sends `req` to every rank; resolves with the answers in rank order. */
  async request<T = Record<string, unknown>>(req: { cmd: string } & Record<string, unknown>): Promise<T[]> {
    for (const r of this.ranks) r.send(req);
    try {
      return (await this.collect(req.cmd)) as T[];
    } catch (e) {
      this.kill(); // a rank that failed leaves its peers blocked in a collective
      throw e;
    }
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  /** Ends the workers (EOF on stdin), then kills any still running after `graceMs`. */
  async close(graceMs = 10_000): Promise<void> {
    await Promise.all(this.ranks.map((r) => r.close(graceMs)));
  }

  kill(): void {
    for (const r of this.ranks) r.kill();
  }
}
