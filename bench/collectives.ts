// torch.distributed collectives over Gloo on loopback: tsddp against PyTorch (Python) on
// this machine, in one run, reported as nccl-tests reports them:
//
//   npm run bench:collectives [-- --worlds 2,4 --sizes 1K,4K,...,64M --collectives all-reduce,...
//       --iters 50 --warmup 5 --cell-s 1 --repeats 2 --out DIR --python PATH]
//
// Collectives: all-reduce (SUM), all-gather (allGatherIntoTensor / all_gather_into_tensor),
// reduce-scatter (reduceScatterTensor / reduce_scatter_tensor, SUM), all-to-all
// (allToAllSingle / all_to_all_single), broadcast (from rank 0), on float32 tensors whose
// size is all-gather's output, reduce-scatter's input, the others' input (nccl-tests' size).
// For each world size a gang of one process per rank (env://, OMP_NUM_THREADS=1) runs every
// collective and size, tsddp (bench/workers/collectives.mts) and PyTorch
// (bench/reference/collectives.py) in turn, --repeats times each: A B A B. A gang times each
// cell for about --cell-s seconds (at most --iters ops, at least 3) after up to --warmup
// untimed ops; a cell's time is the slowest rank's median time per op (see the workers), and
// the best (smallest) over the repeats is reported:
//   algbw = bytes / time
//   busbw = algbw x 2(n-1)/n (all-reduce), x (n-1)/n (all-gather, reduce-scatter, all-to-all),
//           x 1 (broadcast)
// and the ratio tsddp busbw / PyTorch busbw (> 1: tsddp faster). Writes collectives.md and
// collectives.json to --out (default runs/bench-collectives) and prints the markdown.
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { probeTorchPython, REPO_ROOT, referenceScript } from '../src/benchmark/reference.ts';
import { fmt, markdownTable } from '../src/benchmark/stats.ts';
import { ensureSafeDir, writeFileAtomicSync } from '../src/files/index.ts';
import { describeMachine, machineInfo } from '../src/host/machine.ts';
import { intFlag, positiveFlag } from './lib/flags.ts';
import { runGang } from './lib/gang.ts';

/** busbw / algbw at world size n, as nccl-tests. */
const BUS_FACTOR: Record<string, (n: number) => number> = {
  'all-reduce': (n) => (2 * (n - 1)) / n,
  'all-gather': (n) => (n - 1) / n,
  'reduce-scatter': (n) => (n - 1) / n,
  'all-to-all': (n) => (n - 1) / n,
  broadcast: () => 1,
};

const { values: opts } = parseArgs({
  options: {
    worlds: { type: 'string', default: '2,4' },
    sizes: { type: 'string', default: '1K,4K,16K,64K,256K,1M,4M,16M,64M' },
    collectives: { type: 'string', default: Object.keys(BUS_FACTOR).join(',') },
    iters: { type: 'string', default: '50' },
    warmup: { type: 'string', default: '5' },
    'cell-s': { type: 'string', default: '1' },
    repeats: { type: 'string', default: '2' },
    out: { type: 'string', default: 'runs/bench-collectives' },
    python: { type: 'string' },
    help: { type: 'boolean', short: 'h', default: false },
  },
});
if (opts.help) {
  console.log(
    'usage: node --import tsx bench/collectives.ts [--worlds 2,4] [--sizes 1K,4K,16K,64K,256K,1M,4M,16M,64M]\n' +
      `         [--collectives ${Object.keys(BUS_FACTOR).join(',')}] [--iters 50] [--warmup 5]\n` +
      '         [--cell-s 1] [--repeats 2] [--out runs/bench-collectives] [--python PATH]\n' +
      '  --sizes   bytes per tensor (K = 1024, M = 2^20): all-gather output, reduce-scatter input\n' +
      '  --cell-s  seconds of timed ops per collective and size (at most --iters ops, at least 3)',
  );
  process.exit(0);
}

const list = (s: string) =>
  s
    .split(',')
    .map((x) => x.trim())
    .filter((x) => x !== '');
const worlds = list(opts.worlds).map((w) => intFlag('worlds', w, 2));
const sizes = list(opts.sizes).map((s) => {
  const m = /^(\d+)([KMG]?)$/i.exec(s);
  const bytes = m ? Number(m[1]) * 1024 ** ' KMG'.indexOf(m[2].toUpperCase() || ' ') : Number.NaN;
  if (!(bytes >= 4 * Math.max(...worlds)))
    throw new TypeError(`--sizes ${s}: expected at least 4 bytes per rank, e.g. 1024, 4K, 64M`);
  return bytes;
});
const collectives = list(opts.collectives);
for (const c of collectives) {
  if (!BUS_FACTOR[c])
    throw new TypeError(`--collectives ${c}: expected one of ${Object.keys(BUS_FACTOR).join(', ')}`);
}
const iters = intFlag('iters', opts.iters, 1);
const warmup = intFlag('warmup', opts.warmup, 1);
const cellS = positiveFlag('cell-s', opts['cell-s']);
const repeats = intFlag('repeats', opts.repeats, 1);
const log = (line: string) => process.stderr.write(`${line}\n`);

/** One cell of a worker's answer (see the workers' header). */
interface Cell {
  collective: string;
  bytes: number;
  iters: number;
  warmup: number;
  medianS: number;
  meanS: number;
}
interface GangRun {
  side: 'tsddp' | 'pytorch';
  torch: string;
  runtime: string;
  world: number;
  cells: Cell[];
}

const torch = probeTorchPython(opts.python);
if (torch === null) log('no Python that can import torch (--python PATH): tsddp only, no ratios.');
const workerArgs = [collectives.join(','), sizes.join(','), String(iters), String(warmup), String(cellS)];
/** Each side's worker command line, [command, args]; PyTorch's is null without a torch Python. */
const SIDES: Record<GangRun['side'], [string, string[]] | null> = {
  tsddp: [
    process.execPath,
    ['--import', import.meta.resolve('tsx'), join(REPO_ROOT, 'bench/workers/collectives.mts'), ...workerArgs],
  ],
  pytorch: torch && [torch.python, [referenceScript('collectives.py'), ...workerArgs]],
};

// world -> side -> one run per repeat, A B A B.
const t0 = performance.now();
const runs = new Map<number, { tsddp: GangRun[]; pytorch: GangRun[] }>();
for (const world of worlds) {
  const byside = { tsddp: [] as GangRun[], pytorch: [] as GangRun[] };
  runs.set(world, byside);
  for (let r = 0; r < repeats; r++) {
    for (const side of ['tsddp', 'pytorch'] as const) {
      const spec = SIDES[side];
      if (!spec) continue;
      const s0 = performance.now();
      byside[side].push(await runGang<GangRun>(spec[0], spec[1], world));
      log(`world ${world}, round ${r + 1}/${repeats}, ${side}: ${fmt((performance.now() - s0) / 1000)} s`);
    }
  }
}

/** The best (smallest) time of one cell over the repeats, with its bandwidths (GB/s, 1e9 bytes). */
function best(rs: GangRun[], world: number, collective: string, i: number) {
  const cells = rs.map((run) => run.cells.filter((c) => c.collective === collective)[i]);
  if (cells.length === 0) return null;
  const s = Math.min(...cells.map((c) => c.medianS));
  const bytes = cells[0].bytes;
  const algbw = bytes / s / 1e9;
  const busbw = algbw * BUS_FACTOR[collective](world);
  return { s, algbw, busbw, perRepeatS: cells.map((c) => c.medianS), iters: cells.map((c) => c.iters) };
}

const label = (b: number) =>
  b % 2 ** 20 === 0 ? `${b / 2 ** 20}M` : b % 1024 === 0 ? `${b / 1024}K` : `${b} B`;
const rows = [];
for (const [world, byside] of runs) {
  for (const collective of collectives) {
    for (let i = 0; i < sizes.length; i++) {
      const ts = best(byside.tsddp, world, collective, i);
      const py = best(byside.pytorch, world, collective, i);
      const bytes = byside.tsddp[0].cells.filter((c) => c.collective === collective)[i].bytes;
      rows.push({
        world,
        collective,
        bytes,
        tsddp: ts,
        pytorch: py,
        ratio: ts && py ? ts.busbw / py.busbw : null,
      });
    }
  }
}

const tsInfo = runs.get(worlds[0])?.tsddp[0];
const pyInfo = runs.get(worlds[0])?.pytorch[0];
const rounds = `${repeats} alternating round${repeats === 1 ? '' : 's'}`;
const header =
  `${describeMachine(machineInfo(), { load: true })}; tsddp on torch ${tsInfo?.torch}` +
  (pyInfo ? `, PyTorch ${pyInfo.torch} (${pyInfo.runtime})` : ', no PyTorch side') +
  `; Gloo on loopback, 1 thread per rank; ${rounds}, best of the slowest rank's median time per op ` +
  `(${cellS} s of ops per cell, at most ${iters}, after at most ${warmup} warm-up); ` +
  'busbw as nccl-tests, GB/s = 1e9 bytes/s';
const markdown = `${header}\n\n${markdownTable(
  ['world', 'collective', 'size', 'tsddp busbw GB/s', 'PyTorch busbw GB/s', 'ratio'],
  rows.map((r) => [
    String(r.world),
    r.collective,
    label(r.bytes),
    fmt(r.tsddp?.busbw),
    fmt(r.pytorch?.busbw),
    r.ratio === null ? '—' : `${fmt(r.ratio)}x`,
  ]),
  ['right', 'left', 'right'],
)}`;
console.log(markdown);

const out = resolve(opts.out);
ensureSafeDir(out, 'the benchmark folder');
const md = join(out, 'collectives.md');
const json = join(out, 'collectives.json');
writeFileAtomicSync(md, `${markdown}\n`);
const options = { worlds, sizes, collectives, iters, warmup, cellS, repeats };
const result = {
  date: new Date().toISOString(),
  machine: machineInfo(),
  options,
  rows,
  runs: Object.fromEntries(runs),
};
writeFileAtomicSync(json, `${JSON.stringify(result, null, 2)}\n`);
log(`wrote ${md}, ${json} (${fmt((performance.now() - t0) / 1000)} s)`);
