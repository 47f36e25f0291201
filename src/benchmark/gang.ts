// A gang of worker processes, one per rank, driven by JSON lines: every request goes to
// all ranks and resolves with every rank's answer. Both sides of the DDP benchmark
// (src/benchmark/worker.ts and bench/reference/ddp.py) speak this protocol. Between
// requests the workers block on stdin, so an idle gang does not compete for the cores
// while the other side is measured.
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { LineReader } from './line-reader.ts';

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
}

/** Gangs still running when this process exits are killed with it. */
const liveGangs = new Set<Gang>();
process.on('exit', () => {
  for (const g of liveGangs) g.kill();
});

class RankProcess {
  readonly proc: ChildProcessWithoutNullStreams;
  private readonly lines: LineReader;
  stderrTail = '';

  constructor(command: string, args: string[], env: NodeJS.ProcessEnv) {
    this.proc = spawn(command, args, { env, stdio: ['pipe', 'pipe', 'pipe'] });
    this.proc.stderr.setEncoding('utf8');
    this.proc.stderr.on('data', (s: string) => {
      this.stderrTail = (this.stderrTail + s).slice(-4000);
    });
    this.proc.stdin.on('error', () => {}); // a dead worker is reported by its closed stdout
    this.lines = new LineReader(this.proc.stdout);
  }

  /** The next stdout line that is a JSON object (other output is skipped); null at exit. */
  async nextJson(): Promise<Record<string, unknown> | null> {
    for (;;) {
      const line = await this.lines.next();
      if (line === null) return null;
      if (line.startsWith('{')) return JSON.parse(line) as Record<string, unknown>;
    }
  }

  send(obj: object): void {
    if (!this.lines.closed) this.proc.stdin.write(`${JSON.stringify(obj)}\n`);
  }
}

export class Gang {
  private readonly ranks: RankProcess[] = [];
  /** Every rank's first line: versions and settings. */
  ready: Record<string, unknown>[] = [];

  private constructor(readonly spec: GangSpec) {}

  /** Starts the ranks on a free loopback port and waits for each one's ready line. */
  static async start(spec: GangSpec): Promise<Gang> {
    const g = new Gang(spec);
    liveGangs.add(g);
    const port = await freePort();
    for (let rank = 0; rank < spec.world; rank++) {
      const env = {
        ...spec.env,
        RANK: String(rank),
        LOCAL_RANK: String(rank),
        WORLD_SIZE: String(spec.world),
        LOCAL_WORLD_SIZE: String(spec.world),
        MASTER_ADDR: '127.0.0.1',
        MASTER_PORT: String(port),
      };
      g.ranks.push(new RankProcess(spec.command, spec.args, env));
    }
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
    const answers = this.ranks.map(async (r, rank) => {
      const out = await r.nextJson();
      if (out === null) {
        const tail = r.stderrTail.trim().split('\n').slice(-20).join('\n');
        throw new Error(`${this.spec.name} worker rank ${rank} exited during ${what}:\n${tail}`);
      }
      if (typeof out.error === 'string') {
        throw new Error(
          `${this.spec.name} worker rank ${rank} (${what}): ${out.error}\n${out.traceback ?? ''}`,
        );
      }
      return out;
    });
    try {
      return await Promise.race([Promise.all(answers), timeout]);
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

  /** Ends the workers (EOF on stdin), then kills any still running after `graceMs`. */
  async close(graceMs = 10_000): Promise<void> {
    const exits = this.ranks.map((r) =>
      r.proc.exitCode !== null || r.proc.signalCode !== null
        ? Promise.resolve()
        : new Promise<void>((resolve) => r.proc.once('exit', () => resolve())),
    );
    for (const r of this.ranks) r.proc.stdin.end();
    const timer = setTimeout(() => this.kill(), graceMs);
    await Promise.all(exits);
    clearTimeout(timer);
    liveGangs.delete(this);
  }

  kill(): void {
    for (const r of this.ranks) {
      if (r.proc.exitCode === null && r.proc.signalCode === null) r.proc.kill('SIGKILL');
    }
    liveGangs.delete(this);
  }
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
