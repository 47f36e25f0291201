// torch.profiler for tsddp: libtorch's own profiler (Kineto, CPU activity) records every
// aten op and autograd node a region runs, with its thread, start and duration; the same
// events torch.profiler.profile(activities=[ProfilerActivity.CPU]) records in Python, so
// a tsddp step and a PyTorch step can be compared op by op (native/src/profiler.cc).
import { native, type ProfilerEvent } from './native.ts';

export type { ProfilerEvent };

/** Per op name: how often it ran and its inclusive time (torch's key_averages, without self time). */
export interface EventAverage {
  name: string;
  count: number;
  totalUs: number;
  meanUs: number;
}

export interface ProfileOptions {
  /** Record input shapes (torch.profiler's record_shapes). */
  recordShapes?: boolean;
}

/** The result of a profiled region. */
export class Profile {
  constructor(readonly events: ProfilerEvent[]) {}

  /** Events grouped by name, by total time (largest first). */
  keyAverages(): EventAverage[] {
    const by = new Map<string, EventAverage>();
    for (const e of this.events) {
      const a = by.get(e.name) ?? { name: e.name, count: 0, totalUs: 0, meanUs: 0 };
      a.count += 1;
      a.totalUs += e.durationUs;
      by.set(e.name, a);
    }
    for (const a of by.values()) a.meanUs = a.totalUs / a.count;
    return [...by.values()].sort((p, q) => q.totalUs - p.totalUs);
  }

  /** keyAverages() as a text table of its first `rowLimit` rows. */
  table(rowLimit = 20): string {
    const rows = this.keyAverages().slice(0, rowLimit);
    const width = Math.max(4, ...rows.map((r) => r.name.length));
    const line = (name: string, count: string, total: string, mean: string) =>
      `${name.padEnd(width)}  ${count.padStart(7)}  ${total.padStart(12)}  ${mean.padStart(10)}`;
    return [
      line('name', 'calls', 'total ms', 'mean us'),
      ...rows.map((r) => line(r.name, String(r.count), (r.totalUs / 1000).toFixed(3), r.meanUs.toFixed(1))),
    ].join('\n');
  }
}

let active = false;

function start(opts: ProfileOptions): void {
  if (active) throw new Error('profiler.profile(): a profile is already running (regions do not nest)');
  native.profilerStart(opts.recordShapes ?? false);
  active = true;
}

function stop(): Profile {
  active = false;
  return new Profile(native.profilerStop());
}

/** Records the ops `fn` runs (synchronously); returns the profile. */
export function profile(fn: () => void, opts: ProfileOptions = {}): Profile {
  start(opts);
  try {
    fn();
  } catch (e) {
    stop();
    throw e;
  }
  return stop();
}

/** profile() for an async region (e.g. a training step that awaits a collective). */
export async function profileAsync(fn: () => Promise<void>, opts: ProfileOptions = {}): Promise<Profile> {
  start(opts);
  try {
    await fn();
  } catch (e) {
    stop();
    throw e;
  }
  return stop();
}
