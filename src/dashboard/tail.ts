// Follows the workers' metric files (`<metricsFile>.rank<N>`, appended one JSON line per
// record by metrics/files.ts) by polling: new complete lines become events. A file that
// shrinks or is replaced (a restarted worker without a checkpoint starts it anew) is read
// again from the start, after a `truncate` event that tells the page to forget that rank.
import { closeSync, openSync, readSync, type Stats, statSync } from 'node:fs';
import { type MetricRecord, rankFile } from '../metrics/index.ts';
import type { DashboardEvent } from './events.ts';

interface RankState {
  rank: number;
  file: string;
  /** Identity of the file read so far (inode and birth time), null before it exists. */
  id: string | null;
  offset: number;
  /** Bytes after the last newline: a line still being written. */
  partial: Buffer;
}

const identity = (st: Stats) => `${st.ino}:${st.birthtimeMs}`;

export class MetricsTail {
  private readonly states: RankState[];
  private timer: NodeJS.Timeout | null = null;

  constructor(
    metricsFile: string,
    ranks: readonly number[],
    private readonly onEvent: (e: DashboardEvent) => void,
    private readonly intervalMs = 250,
  ) {
    this.states = ranks.map((rank) => ({
      rank,
      file: rankFile(metricsFile, rank),
      id: null,
      offset: 0,
      partial: Buffer.alloc(0),
    }));
  }

  [Symbol.dispose](): void {
    this.close();
  }

  start(): this {
    this.timer ??= setInterval(() => this.poll(), this.intervalMs).unref();
    return this;
  }

  /** Stops polling after reading what the files hold now. */
  close(): void {
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
    this.poll();
  }

  /** Reads every rank file's new lines now. */
  poll(): void {
    for (const s of this.states) this.pollRank(s);
  }

  private pollRank(s: RankState): void {
    let st: Stats;
    try {
      st = statSync(s.file);
    } catch {
      return; // not written yet, or being replaced
    }
    if (s.id !== null && (identity(st) !== s.id || st.size < s.offset)) {
      s.offset = 0;
      s.partial = Buffer.alloc(0);
      this.onEvent({ type: 'truncate', rank: s.rank, time: Date.now() });
    }
    s.id = identity(st);
    if (st.size <= s.offset) return;
    const buf = Buffer.alloc(st.size - s.offset);
    let fd: number;
    try {
      fd = openSync(s.file, 'r');
    } catch {
      return;
    }
    let n: number;
    try {
      n = readSync(fd, buf, 0, buf.length, s.offset);
    } finally {
      closeSync(fd);
    }
    s.offset += n;
    const data = Buffer.concat([s.partial, buf.subarray(0, n)]);
    const end = data.lastIndexOf(0x0a);
    s.partial = Buffer.from(data.subarray(end + 1));
    if (end < 0) return;
    for (const line of data.subarray(0, end).toString('utf8').split('\n')) {
      if (line.trim() === '') continue;
      let record: MetricRecord;
      try {
        record = JSON.parse(line) as MetricRecord;
      } catch {
        continue; // a torn line from a killed worker
      }
      this.onEvent(record);
    }
  }
}
