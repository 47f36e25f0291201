// Facts about the machine a benchmark ran on, for its header line and JSON.
import { readFileSync } from 'node:fs';
import { availableParallelism, cpus, loadavg } from 'node:os';

export interface MachineInfo {
  cpu: string;
  cores: number;
  node: string;
  platform: string;
  /** 1-minute load average when the benchmark started (others' work makes numbers noisy). */
  loadAvg1: number;
}

function cpuModel(): string {
  try {
    const m = /^model name\s*:\s*(.+)$/m.exec(readFileSync('/proc/cpuinfo', 'utf8'));
    if (m) return m[1].trim();
  } catch {
    // not Linux: fall back to os.cpus()
  }
  return cpus()[0]?.model?.trim() || 'unknown CPU';
}

export function machineInfo(): MachineInfo {
  return {
    cpu: cpuModel(),
    cores: availableParallelism(),
    node: process.version,
    platform: `${process.platform}-${process.arch}`,
    loadAvg1: loadavg()[0],
  };
}

/** One line: `AMD EPYC, 2 cores, linux-x64, Node v20.20.2, load 1.23`. */
export function describeMachine(m: MachineInfo): string {
  return `${m.cpu}, ${m.cores} cores, ${m.platform}, Node ${m.node}, load ${m.loadAvg1.toFixed(2)}`;
}
