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

/** The CPU's model name (/proc/cpuinfo, else os.cpus()). */
export function cpuModel(): string {
  try {
    const m = /^model name\s*:\s*(.+)$/m.exec(readFileSync('/proc/cpuinfo', 'utf8'));
    if (m) return m[1].trim();
  } catch {
    // not Linux: os.cpus() below
  }
  return cpus()[0]?.model?.trim() || 'unknown CPU';
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
