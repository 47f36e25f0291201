// A child's stdout as awaitable lines: `next()` resolves with the next line, or null once
// the stream has ended. Used by the benchmarks' worker drivers (gang.ts).
import { createInterface } from 'node:readline';
import type { Readable } from 'node:stream';

export class LineReader {
  private readonly pending: string[] = [];
  private waiter: ((line: string | null) => void) | null = null;
  /** True once the stream has ended (the process closed its stdout). */
  closed = false;

  constructor(input: Readable) {
    const lines = createInterface({ input });
    lines.on('line', (l) => this.push(l));
    lines.on('close', () => {
      this.closed = true;
      this.push(null);
    });
  }

  next(): Promise<string | null> {
    const line = this.pending.shift();
    if (line !== undefined) return Promise.resolve(line);
    if (this.closed) return Promise.resolve(null);
    return new Promise((resolve) => {
      this.waiter = resolve;
    });
  }

  private push(line: string | null): void {
    if (this.waiter) {
      const w = this.waiter;
      this.waiter = null;
      w(line);
    } else if (line !== null) this.pending.push(line);
  }
}
