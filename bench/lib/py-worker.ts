// A long-lived Python process answering JSON requests line by line: the PyTorch side
// of a benchmark whose measurements are too slow to pay for `import torch` each time
// (bench/reference/*.py --serve). The process idles on stdin between requests, so it
// does not compete for the cores while the tsddp side is being measured.
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { LineReader } from '../../src/benchmark/line-reader.ts';

export class PythonWorker<Ready = unknown> {
  private readonly proc: ChildProcessWithoutNullStreams;
  private readonly lines: LineReader;
  private stderrTail = '';
  /** The first line the worker printed (its versions and settings). */
  ready!: Ready;

  private constructor(
    readonly python: string,
    readonly script: string,
    args: string[],
    env: NodeJS.ProcessEnv,
  ) {
    this.proc = spawn(python, [script, ...args], { env, stdio: ['pipe', 'pipe', 'pipe'] });
    this.proc.stderr.setEncoding('utf8');
    this.proc.stderr.on('data', (s: string) => {
      this.stderrTail = (this.stderrTail + s).slice(-4000);
    });
    this.lines = new LineReader(this.proc.stdout);
  }

  /** Starts the worker and waits for its first line (a JSON object). */
  static async start<R>(
    python: string,
    script: string,
    args: string[],
    env: NodeJS.ProcessEnv,
  ): Promise<PythonWorker<R>> {
    const w = new PythonWorker<R>(python, script, args, env);
    w.ready = await w.readJson<R>('start');
    return w;
  }

  /** The next stdout line that parses as a JSON object; other lines (stray prints) are skipped. */
  private async readJson<T>(what: string): Promise<T> {
    for (;;) {
      const line = await this.lines.next();
      if (line === null) {
        const tail = this.stderrTail.trim().split('\n').slice(-20).join('\n');
        throw new Error(`${this.python} ${this.script} exited during ${what}:\n${tail}`);
      }
      if (!line.startsWith('{')) continue;
      const out = JSON.parse(line) as T & { error?: string; traceback?: string };
      if (typeof out.error === 'string') {
        throw new Error(`${this.script} (${what}): ${out.error}\n${out.traceback ?? ''}`);
      }
      return out;
    }
  }

  /** Sends one request and waits for its answer; an answer with `error` throws. */
  async request<T>(req: object): Promise<T> {
    if (this.lines.closed) throw new Error(`${this.script}: worker has exited`);
    this.proc.stdin.write(`${JSON.stringify(req)}\n`);
    return this.readJson<T>(JSON.stringify(req));
  }

  /** Closes stdin (the worker exits on EOF) and waits for the process to end. */
  async close(): Promise<void> {
    if (this.proc.exitCode !== null || this.proc.signalCode !== null) return;
    const done = new Promise<void>((resolve) => this.proc.once('exit', () => resolve()));
    this.proc.stdin.end();
    await done;
  }
}
