// Facts about the machine a benchmark ran on: the same description `tsddp bench` uses, plus
// the load average at the start (others' work makes numbers noisy).
import { describeMachine as describe, type MachineInfo } from '../../src/benchmark/machine.ts';

export { type MachineInfo, machineInfo } from '../../src/benchmark/machine.ts';

/** One line: `AMD EPYC, 2 cores, 24 GiB, linux-x64, Node v20.20.2, load 1.23`. */
export function describeMachine(m: MachineInfo): string {
  return `${describe(m)}, load ${m.loadAvg1.toFixed(2)}`;
}
