// The machine a benchmark ran on, stated next to its numbers.
import { readFileSync } from 'node:fs';
import { availableParallelism, cpus, loadavg, totalmem } from 'node:os';

export interface MachineInfo {
  cpu: string;
  cores: number;
  memoryGiB: number;
  platform: string;
  node: string;
  /** 1-minute load average at the start (others' work makes numbers noisy). */
  loadAvg1: number;
}

/** /proc/cpuinfo's text, or null where there is none (not Linux). */
export function readCpuinfo(): string | null {
  try {
    return readFileSync('/proc/cpuinfo', 'utf8');
  } catch {
    return null;
  }
}

/** The first value of `key` in /proc/cpuinfo's text (its first CPU's), trimmed. */
export function cpuinfoField(text: string, key: string): string | undefined {
  return new RegExp(`^${key}\\s*:\\s*(.+)$`, 'm').exec(text)?.[1]?.trim();
}

/** The CPU's feature flags (avx2, avx512f, avx512_bf16, ...) from /proc/cpuinfo's text. */
export function cpuFlags(text: string): Set<string> {
  return new Set((cpuinfoField(text, 'flags') ?? '').split(/\s+/));
}

/** The CPU's model name (/proc/cpuinfo, else os.cpus()). */
export function cpuModel(): string {
  const text = readCpuinfo();
  const name = text === null ? undefined : cpuinfoField(text, 'model name');
  return name || cpus()[0]?.model?.trim() || 'unknown CPU';
}

export function machineInfo(): MachineInfo {
  return {
    cpu: cpuModel(),
    cores: availableParallelism(),
    memoryGiB: Math.round(totalmem() / 2 ** 30),
    platform: `${process.platform}-${process.arch}`,
    node: process.version,
    loadAvg1: loadavg()[0],
  };
}

/**
 * One line: `AMD EPYC, 2 cores, 24 GiB, linux-x64, Node v20.20.2`, and with `load`,
 * `, load 1.23` (the bench/ scripts state it; the report of `tsddp bench` has no load).
 */
export function describeMachine(m: MachineInfo, opts: { load?: boolean } = {}): string {
  const base = `${m.cpu}, ${m.cores} cores, ${m.memoryGiB} GiB, ${m.platform}, Node ${m.node}`;
  return opts.load ? `${base}, load ${m.loadAvg1.toFixed(2)}` : base;
}
