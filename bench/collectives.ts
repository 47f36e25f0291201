// torch.distributed collectives over Gloo on loopback: tsddp against PyTorch (Python) on
// this machine, in one run, reported as nccl-tests reports them:
//
//   npm run bench:collectives [-- --worlds 2,4 --sizes 1K,4K,...,64M --collectives all-reduce,...
//       --iters 200 --warmup 5 --cell-s 0.4 --rounds 6 --out DIR --python PATH]
//
// Collectives: all-reduce (SUM), all-gather (allGatherIntoTensor / all_gather_into_tensor),
// reduce-scatter (reduceScatterTensor / reduce_scatter_tensor, SUM), all-to-all
// (allToAllSingle / all_to_all_single), broadcast (from rank 0), on float32 tensors whose
// size is all-gather's output, reduce-scatter's input, the others' input (nccl-tests' size).
// For each world size, two gangs of one process per rank (env://, OMP_NUM_THREADS=1) stay
// up: tsddp's (bench/workers/collectives.mts) and PyTorch's (bench/reference/collectives.py).
// Each collective and size (a cell) is timed --rounds times by each gang in turn, A B then
// B A (an even count gives each side the first turn as often), so the two sides'
// measurements of a cell are at most about a second apart: a gang times about --cell-s
// seconds of ops (at most --iters, at least 3) after up to --warmup untimed ops, and
// its time is the slowest rank's median time per op (see the workers). Reported per cell:
//   algbw = bytes / (median time over the rounds)
//   busbw = algbw x 2(n-1)/n (all-reduce), x (n-1)/n (all-gather, reduce-scatter, all-to-all),
//           x 1 (broadcast)
// and the ratio tsddp busbw / PyTorch busbw (> 1: tsddp faster) as the median of the rounds'
// paired ratios, with their range. Writes collectives.md and collectives.json to --out
// (default runs/bench-collectives) and prints the markdown.
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { probeTorchPython, REPO_ROOT, referenceScript } from '../src/benchmark/reference.ts';
import { fmt, markdownTable, max, median, min } from '../src/benchmark/stats.ts';
import { ensureSafeDir, writeFileAtomicSync } from '../src/files/index.ts';
import { Gang } from '../src/host/gang.ts';
import { describeMachine, machineInfo } from '../src/host/machine.ts';
import { pairedRatios } from './lib/abab.ts';
import { intFlag, positiveFlag } from './lib/flags.ts';

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
    iters: { type: 'string', default: '200' },
    warmup: { type: 'string', default: '5' },
    'cell-s': { type: 'string', default: '0.4' },
    rounds: { type: 'string', default: '6' },
    out: { type: 'string', default: 'runs/bench-collectives' },
    python: { type: 'string' },
    help: { type: 'boolean', short: 'h', default: false },
  },
});
if (opts.help) {
  console.log(
    'usage: node --import tsx bench/collectives.ts [--worlds 2,4] [--sizes 1K,4K,16K,64K,256K,1M,4M,16M,64M]\n' +
      `         [--collectives ${Object.keys(BUS_FACTOR).join(',')}] [--iters 200] [--warmup 5]\n` +
      '         [--cell-s 0.4] [--rounds 6] [--out runs/bench-collectives] [--python PATH]\n' +
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
const rounds = intFlag('rounds', opts.rounds, 1);
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
type Side = 'tsddp' | 'pytorch';
/** A worker's first line. */
interface Ready {
  side: Side;
  torch: string;
  runtime: string;
  world: number;
}
const SIDES_ORDER: Side[] = ['tsddp', 'pytorch'];

const torch = probeTorchPython(opts.python);
if (torch === null) log('no Python that can import torch (--python PATH): tsddp only, no ratios.');
/** Each side's worker command line, [command, args]; PyTorch's is null without a torch Python. */
const SIDES: Record<Side, [string, string[]] | null> = {
  tsddp: [
    process.execPath,
    ['--import', import.meta.resolve('tsx'), join(REPO_ROOT, 'bench/workers/collectives.mts')],
  ],
  pytorch: torch && [torch.python, [referenceScript('collectives.py')]],
};

// Both sides' gangs stay up for a world size; per collective and size they take turns,
// round after round (A B, then B A), so each pair of measurements is seconds apart and a
// slow spell of the shared machine hits both. The idle gang blocks on its stdin.
const t0 = performance.now();
const env = { ...process.env, OMP_NUM_THREADS: '1' };
/** One cell's measurements: per side, the time per op (s) and the ops timed, round by round. */
interface CellTimes {
  tsddp: number[];
  pytorch: number[];
  iters: { tsddp: number[]; pytorch: number[] };
  bytes: number;
}
/** world -> collective -> one CellTimes per size. */
const times = new Map<number, Map<string, CellTimes[]>>();
const info: Partial<Record<Side, Ready>> = {};
for (const world of worlds) {
  const gangs: Partial<Record<Side, Gang>> = {};
  try {
    for (const side of SIDES_ORDER) {
      const spec = SIDES[side];
      if (spec) gangs[side] = await Gang.start({ name: side, command: spec[0], args: spec[1], world, env });
      info[side] ??= gangs[side]?.ready[0] as Ready | undefined;
    }
    const byCollective = new Map<string, CellTimes[]>();
    times.set(world, byCollective);
    for (const collective of collectives) {
      const cells = sizes.map(
        (): CellTimes => ({ tsddp: [], pytorch: [], iters: { tsddp: [], pytorch: [] }, bytes: 0 }),
      );
      byCollective.set(collective, cells);
      for (const [i, bytes] of sizes.entries()) {
        for (let r = 0; r < rounds; r++) {
          const order = r % 2 === 0 ? SIDES_ORDER : [...SIDES_ORDER].reverse();
          for (const side of order) {
            const gang = gangs[side];
            if (!gang) continue;
            const [cell] = await gang.request<Cell>({ cmd: 'cell', collective, bytes, iters, warmup, cellS });
            cells[i][side].push(cell.medianS);
            cells[i].iters[side].push(cell.iters);
            cells[i].bytes = cell.bytes;
          }
        }
      }
      log(`world ${world}, ${collective}: ${fmt((performance.now() - t0) / 1000)} s`);
    }
  } finally {
    await Promise.all(Object.values(gangs).map((g) => g.close()));
  }
}

const rows = [];
for (const [world, byCollective] of times) {
  for (const [collective, cells] of byCollective) {
    for (const c of cells) {
      const bw = (s: number) => (c.bytes / s / 1e9) * BUS_FACTOR[collective](world);
      const ratios = pairedRatios(c.pytorch, c.tsddp); // time ratio = busbw ratio
      rows.push({
        world,
        collective,
        bytes: c.bytes,
        tsddp: { busbw: bw(median(c.tsddp)), perRoundS: c.tsddp, iters: c.iters.tsddp },
        pytorch:
          c.pytorch.length > 0
            ? { busbw: bw(median(c.pytorch)), perRoundS: c.pytorch, iters: c.iters.pytorch }
            : null,
        ratio: ratios.length > 0 ? median(ratios) : null,
        ratioRange: ratios.length > 0 ? [min(ratios), max(ratios)] : null,
      });
    }
  }
}

const label = (b: number) =>
  b % 2 ** 20 === 0 ? `${b / 2 ** 20}M` : b % 1024 === 0 ? `${b / 1024}K` : `${b} B`;
const withRatio = rows.filter((r) => r.ratio !== null);
const geomean = (xs: number[]) => Math.exp(xs.reduce((a, x) => a + Math.log(x), 0) / xs.length);
const summary =
  withRatio.length === 0
    ? ''
    : `\n\n${withRatio.filter((r) => (r.ratio ?? 0) >= 1).length} of ${withRatio.length} cells at or above 1.0x ` +
      `(${withRatio.filter((r) => (r.ratioRange?.[1] ?? 0) >= 1).length} with a round at or above 1.0x); ` +
      `geometric mean ${worlds.map((w) => `world ${w} ${fmt(geomean(withRatio.filter((r) => r.world === w).map((r) => r.ratio ?? 1)))}x`).join(', ')}.`;
const header =
  `${describeMachine(machineInfo(), { load: true })}; tsddp on torch ${info.tsddp?.torch}` +
  (info.pytorch ? `, PyTorch ${info.pytorch.torch} (${info.pytorch.runtime})` : ', no PyTorch side') +
  `; Gloo on loopback, 1 thread per rank; per cell ${rounds} alternating rounds (A B, B A, ...) of ` +
  `${cellS} s of ops (at most ${iters}, after at most ${warmup} warm-up), the slowest rank's median ` +
  'time per op; busbw from the median over the rounds, as nccl-tests (GB/s = 1e9 bytes/s); ratio: ' +
  "the median of the rounds' paired ratios (> 1: tsddp faster), with their range";
const markdown = `${header}\n\n${markdownTable(
  ['world', 'collective', 'size', 'tsddp busbw GB/s', 'PyTorch busbw GB/s', 'ratio', 'round ratios'],
  rows.map((r) => [
    String(r.world),
    r.collective,
    label(r.bytes),
    fmt(r.tsddp.busbw),
    fmt(r.pytorch?.busbw),
    r.ratio === null ? '—' : `${fmt(r.ratio)}x`,
    r.ratioRange === null ? '—' : `${fmt(r.ratioRange[0])}–${fmt(r.ratioRange[1])}`,
  ]),
  ['right', 'left', 'right', 'right', 'right', 'right', 'right'],
)}${summary}`;
console.log(markdown);

const out = resolve(opts.out);
ensureSafeDir(out, 'the benchmark folder');
const md = join(out, 'collectives.md');
const json = join(out, 'collectives.json');
writeFileAtomicSync(md, `${markdown}\n`);
const options = { worlds, sizes, collectives, iters, warmup, cellS, rounds };
const result = {
  date: new Date().toISOString(),
  machine: machineInfo(),
  options,
  versions: info,
  rows,
};
writeFileAtomicSync(json, `${JSON.stringify(result, null, 2)}\n`);
log(`wrote ${md}, ${json} (${fmt((performance.now() - t0) / 1000)} s)`);
