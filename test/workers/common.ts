// The worker side of test/helpers/multiproc.ts: configuration in, JSON results out, and a
// guard that ends the worker when the test process goes away (its stdin pipe closes).
import { writeFileSync } from 'node:fs';
import * as t from '../../src/index.ts';

export const rank = Number(process.env.RANK);
export const worldSize = Number(process.env.WORLD_SIZE);

export function workerConfig<C>(): C {
  return JSON.parse(process.env.TSDDP_TEST_CONFIG ?? '{}') as C;
}

export function writeResult(result: unknown): void {
  const file = process.env.TSDDP_TEST_RESULT;
  if (!file)
    throw new Error('TSDDP_TEST_RESULT is not set: run this worker through test/helpers/multiproc.ts');
  writeFileSync(file, JSON.stringify(result));
}

/** The values of a tensor as plain numbers (float32 values are exact in JSON). */
export function values(x: t.Tensor): number[] {
  return t.tidy(() => Array.from(x.detach().to('float64').contiguous().toTypedArray() as Float64Array));
}

export interface ErrorInfo {
  name: string;
  message: string;
  op?: string;
  rank?: number;
}

export function errorInfo(e: unknown): ErrorInfo {
  if (!(e instanceof Error)) return { name: typeof e, message: String(e) };
  const info: ErrorInfo = { name: e.name, message: e.message };
  const extra = e as { op?: unknown; rank?: unknown };
  if (typeof extra.op === 'string') info.op = extra.op;
  if (typeof extra.rank === 'number') info.rank = extra.rank;
  return info;
}

// Lines from the test process, and the end of the pipe when it dies: a worker must never
// outlive its test.
const lines: string[] = [];
const lineWaiters: { line: string; resolve: () => void }[] = [];
let buffered = '';
process.stdin.on('data', (d: Buffer) => {
  buffered += d;
  for (let i = buffered.indexOf('\n'); i >= 0; i = buffered.indexOf('\n')) {
    const line = buffered.slice(0, i);
    buffered = buffered.slice(i + 1);
    lines.push(line);
    for (const w of lineWaiters.filter((x) => x.line === line)) {
      lineWaiters.splice(lineWaiters.indexOf(w), 1);
      w.resolve();
    }
  }
  if (lineWaiters.length === 0) process.stdin.unref();
});
process.stdin.on('end', () => process.exit(70));
// Reading stdin must not keep the worker alive on its own.
process.stdin.unref();

/** Resolves when the test process sends `line` (see Job.send). */
export function waitForLine(line: string): Promise<void> {
  if (lines.includes(line)) return Promise.resolve();
  process.stdin.ref();
  return new Promise((resolve) => lineWaiters.push({ line, resolve }));
}

/** Ends the worker now; pending native work (Gloo threads) must not keep it alive. */
export function finish(code = 0): never {
  process.exit(code);
}
