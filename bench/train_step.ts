// Single-process training throughput (images/s) of tsddp and PyTorch (Python), measured
// alternately in one run (DESIGN §10).
//
//   node --import tsx bench/train_step.ts [--rounds 3] [--threads 2] [--warmup 2] [--steps 4]
//       [--configs bf16,resnet50/64] [--quick] [--out results.json] [--python PATH]
//
// Configurations (MODEL/SIZE/bBATCH/DTYPE/FORMAT, see bench/lib/train-configs.ts):
// resnet18-cifar at 32x32 (batch 32), resnet50 at 64x64 (batch 8) and 224x224 (batch 4),
// each in fp32 and bf16 autocast, channels-first (cf) and channels-last (cl).
//
// One step on both sides: zero grads (to None), forward + cross-entropy (inside
// autocast for bf16), backward, SGD step (lr 0.01, momentum 0.9, weight decay 5e-4,
// otherwise each library's defaults), on one synthetic random batch. Each measurement
// builds a fresh model, runs --warmup steps, then times --steps steps; throughput is
// batch / median step time. Per round and configuration tsddp runs first, then PyTorch
// (a long-lived worker: bench/reference/train_step.py --serve), so a busy period on this
// shared machine hits both; the ratio is the median of per-round ratios
// tsddp img/s / PyTorch img/s (> 1: tsddp faster).
//
// Both processes run with OMP_NUM_THREADS=N and set_num_threads(N) (N = --threads).
// tsddp's live tensor count is recorded after every measured step: it must be flat.
import { writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { pairedRatios } from './lib/abab.ts';
import { describeMachine, machineInfo } from './lib/machine.ts';
import { PythonWorker } from './lib/py-worker.ts';
import { findTorchPython, repoRoot } from './lib/python.ts';
import { median, type Summary, summarize } from './lib/stats.ts';
import { fmt, markdownTable } from './lib/table.ts';
import { allConfigs, selectConfigs, type TrainConfig } from './lib/train-configs.ts';
import type { StepMeasurement } from './lib/train-step-ts.ts';

const { values: opts } = parseArgs({
  options: {
    rounds: { type: 'string' },
    threads: { type: 'string', default: '2' },
    warmup: { type: 'string' },
    steps: { type: 'string' },
    configs: { type: 'string' },
    quick: { type: 'boolean', default: false },
    out: { type: 'string' },
    python: { type: 'string' },
    help: { type: 'boolean', short: 'h', default: false },
  },
});
if (opts.help) {
  console.log(
    'usage: node --import tsx bench/train_step.ts [--rounds 3] [--threads 2] [--warmup 2] [--steps 4]\n' +
      '         [--configs LIST] [--quick] [--out FILE.json] [--python PATH]\n' +
      '  --configs  comma-separated filters of MODEL/SIZE/bBATCH/fp32|bf16/cf|cl parts, e.g. bf16,resnet50/64/cl\n' +
      '  --quick    skips 224x224 (unless --configs names it) and runs 2 rounds of 1 + 2 steps',
  );
  process.exit(0);
}

function positiveInt(name: string, v: string | undefined, dflt: number, min = 1): number {
  const n = v === undefined ? dflt : Number(v);
  if (!(Number.isInteger(n) && n >= min)) throw new TypeError(`--${name}: expected an integer >= ${min}`);
  return n;
}
const quick = opts.quick ?? false;
const rounds = positiveInt('rounds', opts.rounds, quick ? 2 : 3);
const threads = positiveInt('threads', opts.threads, 2);
const warmup = positiveInt('warmup', opts.warmup, quick ? 1 : 2, 0);
const steps = positiveInt('steps', opts.steps, quick ? 2 : 4);
let configs = selectConfigs(allConfigs(), opts.configs);
if (quick && opts.configs === undefined) configs = configs.filter((c) => c.size !== 224);

// Before libtorch (and its OpenMP runtime) loads: process.env writes reach the real
// environment, so the addon loaded below and the Python worker see the same settings.
process.env.OMP_NUM_THREADS = String(threads);
process.env.TORCH_CPP_LOG_LEVEL ??= 'ERROR';
const t = await import('../src/index.ts');
const { measureTs } = await import('./lib/train-step-ts.ts');
t.setNumThreads(threads);

const log = (line: string): void => {
  process.stderr.write(`${line}\n`);
};

// --- PyTorch worker ---------------------------------------------------------------------

interface PyReady {
  torch: string;
  python: string;
  threads: number;
}

const torchPy = findTorchPython(opts.python);
let worker: PythonWorker<PyReady> | null = null;
if (torchPy) {
  worker = await PythonWorker.start<PyReady>(
    torchPy.python,
    `${repoRoot}bench/reference/train_step.py`,
    ['--serve', '--threads', String(threads)],
    process.env,
  );
  log(`PyTorch side: ${torchPy.python} (torch ${worker.ready.torch}, ${worker.ready.threads} threads)`);
} else {
  log(`PyTorch (Python) is not importable from ${opts.python ?? '.venv/bin/python or python3'}: tsddp only.`);
}

// --- alternating rounds -----------------------------------------------------------------

const machine = machineInfo();
log(
  `train_step: ${configs.length} configs x ${rounds} rounds, ${warmup} warm-up + ${steps} timed steps, ` +
    `${threads} thread(s)`,
);
const tsRuns: Record<string, StepMeasurement[]> = {};
const pyRuns: Record<string, StepMeasurement[]> = {};
for (const c of configs) {
  tsRuns[c.name] = [];
  pyRuns[c.name] = [];
}
const started = performance.now();
try {
  for (let r = 0; r < rounds; r++) {
    for (const c of configs) {
      const ts = measureTs(t, c, warmup, steps);
      tsRuns[c.name].push(ts);
      let line = `round ${r + 1}/${rounds} ${c.name.padEnd(30)} tsddp ${fmt(ts.imgPerS).padStart(6)} img/s`;
      if (worker) {
        const py = await worker.request<StepMeasurement>({ config: c.name, warmup, steps });
        pyRuns[c.name].push(py);
        line += `  PyTorch ${fmt(py.imgPerS).padStart(6)} img/s  ratio ${fmt(ts.imgPerS / py.imgPerS, 2)}`;
      }
      const live = ts.liveTensors;
      line += `  live tensors ${live.join(',')}`;
      log(`${line}  [${((performance.now() - started) / 1000).toFixed(0)} s]`);
    }
  }
} finally {
  await worker?.close();
}

// --- report -----------------------------------------------------------------------------

interface ConfigResult {
  config: TrainConfig;
  tsddpImgPerS: Summary;
  pytorchImgPerS: Summary | null;
  /** Per-round tsddp / PyTorch throughput (> 1: tsddp faster). */
  ratio: Summary | null;
  /** Median seconds per phase over all measured steps of all rounds. */
  phases: { tsddp: Phases; pytorch: Phases | null };
  /** Live tsddp tensors after each measured step, per round (relative to before the model was built). */
  liveTensors: number[][];
  leak: boolean;
  tsddpRuns: StepMeasurement[];
  pytorchRuns: StepMeasurement[];
}

interface Phases {
  fwd: number;
  bwd: number;
  opt: number;
  step: number;
}

function phases(runs: StepMeasurement[]): Phases {
  const all = (k: 'fwdS' | 'bwdS' | 'optS' | 'stepS') => median(runs.flatMap((m) => m[k]));
  return { fwd: all('fwdS'), bwd: all('bwdS'), opt: all('optS'), step: all('stepS') };
}

const results: Record<string, ConfigResult> = {};
for (const c of configs) {
  const ts = tsRuns[c.name];
  const py = pyRuns[c.name];
  const tsImg = ts.map((m) => m.imgPerS);
  const pyImg = py.map((m) => m.imgPerS);
  const live = ts.map((m) => m.liveTensors);
  results[c.name] = {
    config: c,
    tsddpImgPerS: summarize(tsImg),
    pytorchImgPerS: py.length > 0 ? summarize(pyImg) : null,
    ratio: py.length > 0 ? summarize(pairedRatios(tsImg, pyImg)) : null,
    phases: { tsddp: phases(ts), pytorch: py.length > 0 ? phases(py) : null },
    liveTensors: live,
    // Flat within each run, and the same count in every run.
    leak: new Set(live.flat()).size > 1,
    tsddpRuns: ts,
    pytorchRuns: py,
  };
}

const build = t.buildInfo();
const pyLine = worker
  ? `PyTorch: torch ${worker.ready.torch} (Python ${worker.ready.python}), ${worker.ready.threads} thread(s)`
  : 'PyTorch: not available';
const header = [
  `Machine: ${describeMachine(machine)}`,
  `tsddp: libtorch ${build.torchVersion}, ${t.getNumThreads()} thread(s) · ${pyLine}`,
  `OMP_NUM_THREADS=${process.env.OMP_NUM_THREADS} · ${rounds} alternating rounds (tsddp, then PyTorch, per config), ` +
    `${warmup} warm-up + ${steps} timed steps each, medians`,
];

const ms = (s: number | undefined): string => (s === undefined ? '—' : fmt(s * 1000));
const rows = configs.map((c) => {
  const r = results[c.name];
  const p = r.phases;
  const live = r.liveTensors.flat();
  return [
    c.name,
    fmt(r.tsddpImgPerS.median),
    r.pytorchImgPerS ? fmt(r.pytorchImgPerS.median) : '—',
    r.ratio ? `${fmt(r.ratio.median, 2)}x` : '—',
    r.ratio ? `${fmt(r.ratio.min, 2)}–${fmt(r.ratio.max, 2)}` : '—',
    `${ms(p.tsddp.fwd)} / ${ms(p.tsddp.bwd)} / ${ms(p.tsddp.opt)}`,
    p.pytorch ? `${ms(p.pytorch.fwd)} / ${ms(p.pytorch.bwd)} / ${ms(p.pytorch.opt)}` : '—',
    r.leak ? `LEAK ${Math.min(...live)}→${Math.max(...live)}` : `${live[0]} flat`,
  ];
});

console.log(header.join('\n'));
console.log();
console.log(
  markdownTable(
    [
      'config',
      'tsddp img/s',
      'PyTorch img/s',
      'ratio',
      'ratio range',
      'tsddp ms fwd/bwd/opt',
      'PyTorch ms fwd/bwd/opt',
      'live tensors',
    ],
    rows,
    ['left', 'right', 'right', 'right', 'right', 'right', 'right', 'right'],
  ),
);
console.log();
console.log(
  'img/s: batch / median step time, median over rounds; ratio = tsddp / PyTorch throughput, the median of ' +
    'per-round ratios (range: min–max over rounds), > 1 means tsddp is faster. Target ≥ 1.0x. ' +
    'ms: median per phase (fwd = zero grads + forward + loss, bwd = backward, opt = optimizer step). ' +
    'live tensors: tsddp tensors alive after each timed step, beyond those before the model was built.',
);
if (!worker) console.log('\nPyTorch (Python) was not importable: tsddp numbers only, no ratios.');
const leaks = configs.filter((c) => results[c.name].leak);
if (leaks.length > 0)
  console.log(`\nWARNING: live tensor count not flat in ${leaks.map((c) => c.name).join(', ')}`);

if (opts.out) {
  const json = {
    benchmark: 'train_step',
    date: new Date().toISOString(),
    machine,
    tsddp: { libtorch: build.torchVersion, threads: t.getNumThreads() },
    pytorch: worker ? { ...worker.ready, interpreter: torchPy?.python } : null,
    env: {
      OMP_NUM_THREADS: process.env.OMP_NUM_THREADS,
      TORCH_CPP_LOG_LEVEL: process.env.TORCH_CPP_LOG_LEVEL,
    },
    rounds,
    warmup,
    steps,
    unit: 'images per second',
    configs: results,
  };
  writeFileSync(opts.out, `${JSON.stringify(json, null, 2)}\n`);
  log(`wrote ${opts.out}`);
}
if (leaks.length > 0) process.exitCode = 1;
