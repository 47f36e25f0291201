// Memory per rank and speed of DDP, ZeRO-1 and FSDP, with and without activation
// checkpointing, tsddp against PyTorch (Python) on this machine, in one run:
//
//   npm run bench:memory [-- --strategies ddp,ddp_ac,zero1,fsdp,fsdp_ac --layers 12 --width 768
//       --heads 12 --vocab 50304 --block 256 --batch 4 --steps 3 --world 2 --out DIR --python PATH]
//
// The default is GPT-2 small (124M parameters) at world 2, 4 sequences of 256 tokens per
// rank, AdamW. For each strategy a gang of --world processes (env://, one thread each) runs
// tsddp (bench/workers/memory.mts), then PyTorch (bench/reference/memory.py): --steps steps,
// the first a warm-up. Both run with MALLOC_MMAP_THRESHOLD_=65536 (and tsddp without its
// malloc tuning, TSDDP_MALLOC_TUNING=0), so that glibc returns freed tensors (>= 64 KiB) to
// the system and the resident set follows the live tensors.
// Reported per strategy and side (the largest over the ranks): the peak resident set
// (VmHWM), the base before the model was built, the activations backward keeps (RSS after
// the last forward minus before it), and tokens/s; the ratios are tsddp / PyTorch. Writes
// memory.md and memory.json to --out (default runs/bench-memory).
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { probeTorchPython, REPO_ROOT, referenceScript } from '../src/benchmark/reference.ts';
import { fmt, markdownTable } from '../src/benchmark/stats.ts';
import { ensureSafeDir, writeFileAtomicSync } from '../src/files/index.ts';
import { describeMachine, machineInfo } from '../src/host/machine.ts';
import { intFlag } from './lib/flags.ts';
import { runGang } from './lib/gang.ts';

const STRATEGIES = ['ddp', 'ddp_ac', 'zero1', 'fsdp', 'fsdp_ac'];
const { values: opts } = parseArgs({
  options: {
    strategies: { type: 'string', default: STRATEGIES.join(',') },
    layers: { type: 'string', default: '12' },
    width: { type: 'string', default: '768' },
    heads: { type: 'string', default: '12' },
    vocab: { type: 'string', default: '50304' },
    block: { type: 'string', default: '256' },
    batch: { type: 'string', default: '4' },
    steps: { type: 'string', default: '3' },
    world: { type: 'string', default: '2' },
    out: { type: 'string', default: 'runs/bench-memory' },
    python: { type: 'string' },
    help: { type: 'boolean', short: 'h', default: false },
  },
});
if (opts.help) {
  console.log(
    `usage: node --import tsx bench/memory.ts [--strategies ${STRATEGIES.join(',')}] [--layers 12] [--width 768]\n` +
      '         [--heads 12] [--vocab 50304] [--block 256] [--batch 4] [--steps 3] [--world 2]\n' +
      '         [--out runs/bench-memory] [--python PATH]',
  );
  process.exit(0);
}
const strategies = opts.strategies.split(',').filter((s) => s !== '');
for (const s of strategies)
  if (!STRATEGIES.includes(s))
    throw new TypeError(`--strategies ${s}: expected some of ${STRATEGIES.join(', ')}`);
const shape = ['layers', 'width', 'heads', 'vocab', 'block', 'batch'].map((k) =>
  String(intFlag(k, opts[k as 'layers'], 1)),
);
const steps = intFlag('steps', opts.steps, 2);
const world = intFlag('world', opts.world, 2);
const log = (line: string) => process.stderr.write(`${line}\n`);

interface Run {
  side: 'tsddp' | 'pytorch';
  torch: string;
  strategy: string;
  params: number;
  peakMiB: number;
  baseMiB: number;
  activationsMiB: number;
  tokensPerS: number;
  losses: number[];
}

const torch = probeTorchPython(opts.python);
if (torch === null) log('no Python that can import torch (--python PATH): tsddp only, no ratios.');
// Both sides on glibc's allocator as configured here: without tsddp's own tuning (which keeps
// freed blocks in the heap for speed, native/src/addon.cc), so the resident set follows the
// live tensors on both.
const env = { MALLOC_MMAP_THRESHOLD_: '65536', TSDDP_MALLOC_TUNING: '0' };
const t0 = performance.now();
const runs: Run[] = [];
for (const strategy of strategies) {
  const args = [strategy, ...shape, String(steps)];
  const sides: [Run['side'], string, string[]][] = [
    [
      'tsddp',
      process.execPath,
      ['--import', import.meta.resolve('tsx'), join(REPO_ROOT, 'bench/workers/memory.mts'), ...args],
    ],
  ];
  if (torch) sides.push(['pytorch', torch.python, [referenceScript('memory.py'), ...args]]);
  for (const [side, command, a] of sides) {
    const s0 = performance.now();
    runs.push(await runGang<Run>(command, a, world, env, 20 * 60_000));
    log(`${strategy}, ${side}: ${fmt((performance.now() - s0) / 1000)} s`);
  }
}

const get = (strategy: string, side: Run['side']) =>
  runs.find((r) => r.strategy === strategy && r.side === side);
const ratio = (a?: number, b?: number) => (a === undefined || b === undefined ? '—' : `${fmt(a / b)}x`);
const ddp = get('ddp', 'tsddp');
const rows = strategies.map((s) => {
  const ts = get(s, 'tsddp');
  const py = get(s, 'pytorch');
  return [
    s,
    fmt(ts?.peakMiB),
    fmt(py?.peakMiB),
    ratio(ts?.peakMiB, py?.peakMiB),
    fmt(ts && ts.peakMiB - ts.baseMiB),
    fmt(py && py.peakMiB - py.baseMiB),
    ratio(ts && ddp ? ts.peakMiB - ts.baseMiB : undefined, ddp ? ddp.peakMiB - ddp.baseMiB : undefined),
    fmt(ts?.activationsMiB),
    fmt(py?.activationsMiB),
    fmt(ts?.tokensPerS),
    fmt(py?.tokensPerS),
    ratio(ts?.tokensPerS, py?.tokensPerS),
  ];
});
const first = runs[0];
const pyRun = runs.find((r) => r.side === 'pytorch');
const header =
  `${describeMachine(machineInfo(), { load: true })}; tsddp on torch ${first?.torch}` +
  (pyRun ? `, PyTorch ${pyRun.torch}` : ', no PyTorch side') +
  `; GPT ${opts.layers} layers x ${opts.width} (${fmt((first?.params ?? 0) / 1e6)}M parameters), block ${opts.block}, ` +
  `batch ${opts.batch} per rank, world ${world}, AdamW, ${steps} steps (1 warm-up), 1 thread per rank; ` +
  'MiB of resident memory per rank (the largest rank), MALLOC_MMAP_THRESHOLD_=65536, TSDDP_MALLOC_TUNING=0';
const markdown = `${header}\n\n${markdownTable(
  [
    'strategy',
    'tsddp peak',
    'PyTorch peak',
    'ratio',
    'tsddp peak - base',
    'PyTorch peak - base',
    'vs tsddp ddp',
    'tsddp activations',
    'PyTorch activations',
    'tsddp tok/s',
    'PyTorch tok/s',
    'tok/s ratio',
  ],
  rows,
  ['left'],
)}`;
console.log(markdown);
const out = resolve(opts.out);
ensureSafeDir(out, 'the benchmark folder');
const md = join(out, 'memory.md');
const json = join(out, 'memory.json');
writeFileAtomicSync(md, `${markdown}\n`);
const result = { date: new Date().toISOString(), machine: machineInfo(), options: opts, runs };
writeFileAtomicSync(json, `${JSON.stringify(result, null, 2)}\n`);
log(`wrote ${md}, ${json} (${fmt((performance.now() - t0) / 1000)} s)`);
