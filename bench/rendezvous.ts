// Launch-to-rendezvous time: a launcher starts 2 workers that join the process group,
// pass one barrier and exit; the time is the launcher's whole run (process start,
// imports, store, Gloo's full mesh). tsrun with tsddp workers against torchrun with
// PyTorch workers (and torchrun with tsddp workers), alternating, on this machine.
//
//   node --import tsx bench/rendezvous.ts [--rounds 5] [--python PATH]
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { probeTorchPython, REPO_ROOT } from '../src/benchmark/reference.ts';
import { fmt, markdownTable, median } from '../src/benchmark/stats.ts';
import { describeMachine, machineInfo } from '../src/host/machine.ts';

const { values: opts } = parseArgs({
  options: { rounds: { type: 'string', default: '5' }, python: { type: 'string' } },
});
const rounds = Number(opts.rounds);
const torch = probeTorchPython(opts.python);
if (torch === null)
  throw new Error('bench/rendezvous.ts needs a Python with torch (npm run setup, or --python)');

const TS_WORKER = join(REPO_ROOT, 'bench/workers/rendezvous.mts');
const PY_WORKER = join(REPO_ROOT, 'bench/reference/rendezvous.py');
const torchrun = [torch.python, '-m', 'torch.distributed.run', '--standalone', '--nproc-per-node', '2'];
const sides: [string, string[]][] = [
  [
    'tsrun + tsddp workers',
    [process.execPath, join(REPO_ROOT, 'bin/tsrun.mjs'), '--standalone', '--nproc-per-node', '2', TS_WORKER],
  ],
  ['torchrun + PyTorch workers', [...torchrun, PY_WORKER]],
  ['torchrun + tsddp workers', [...torchrun, '--no-python', process.execPath, '--import', 'tsx', TS_WORKER]],
];

function once(cmd: string[]): number {
  const t0 = performance.now();
  const r = spawnSync(cmd[0], cmd.slice(1), {
    cwd: REPO_ROOT,
    encoding: 'utf8',
    env: { ...process.env, OMP_NUM_THREADS: '1' },
  });
  if (r.status !== 0) throw new Error(`${cmd.join(' ')} failed (exit ${r.status}):\n${r.stderr}`);
  return (performance.now() - t0) / 1000;
}

const times = sides.map((): number[] => []);
for (let round = 0; round < rounds; round++) {
  // Alternate the order, so a busy moment of this shared machine hits every side.
  const order = round % 2 === 0 ? [0, 1, 2] : [2, 1, 0];
  for (const i of order) times[i].push(once(sides[i][1]));
}
const base = median(times[1]);
console.log(
  `${describeMachine(machineInfo(), { load: true })}; torch ${torch.torchVersion}; ${rounds} rounds\n`,
);
console.log(
  markdownTable(
    ['launcher + workers (2, Gloo)', 'median s', 'min s', 'vs torchrun + PyTorch'],
    sides.map(([name], i) => [
      name,
      fmt(median(times[i])),
      fmt(Math.min(...times[i])),
      `${fmt(median(times[i]) / base)}x`,
    ]),
  ),
);
