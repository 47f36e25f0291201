// Single-process training throughput (images/s; gpt_small: sequences/s) of tsddp and
// PyTorch (Python), measured alternately in one run (architecture §10).
//
//   node --import tsx bench/train_step.ts [--rounds 3] [--threads 2] [--warmup 2] [--steps 4]
//       [--configs bf16,resnet50/64] [--quick] [--out results.json] [--python PATH]
//
// Configurations (MODEL/SIZE/bBATCH/DTYPE/FORMAT, see bench/lib/train-configs.ts):
// resnet18-cifar at 32x32 (batch 32), resnet50 at 64x64 (batch 8) and 224x224 (batch 4),
// each in fp32 and bf16 autocast, channels-first (cf) and channels-last (cl); vit_tiny
// (tsddp's vitTiny: 32x32, 4 px patches, 6 layers, 3 heads, width 192; batch 32) and
// gpt_small (nanoGPT's baby GPT: 6 layers, 6 heads, width 384, vocab 65, no bias,
// dropout 0; 8 sequences of 256 tokens), each in fp32 and bf16 autocast, cf only.
//
// One step on both sides: zero grads (to None), forward + cross-entropy (inside
// autocast for bf16), backward, optimizer step, on one synthetic random batch. ResNets:
// SGD (lr 0.01, momentum 0.9, weight decay 5e-4); transformers: AdamW (lr 1e-3);
// otherwise each library's defaults. Each measurement
// round builds fresh models on both sides (PyTorch: a long-lived worker,
// bench/reference/train_step.py --serve), runs --warmup steps, then times --steps steps,
// tsddp and PyTorch steps strictly alternating, so a busy period on this shared machine
// hits both sides of a pair. Throughput is batch / median step time; the ratio
// tsddp img/s / PyTorch img/s (> 1: tsddp faster) is the median over pairs of adjacent
// steps.
//
// Both processes run with OMP_NUM_THREADS=N and set_num_threads(N) (N = --threads) and
// the same environment otherwise. Memory allocation matters a lot here: with glibc's
// default malloc, large activations are returned to the kernel and faulted back in every
// step (tens of thousands of minor page faults per step, recorded per step in the JSON),
// which costs up to half the step time on a VM. tsddp's addon raises glibc's mmap and trim
// thresholds when it loads (TSDDP_MALLOC_TUNING=0 turns that off); PyTorch keeps glibc's
// defaults. To give PyTorch the same allocator behaviour, run with
// GLIBC_TUNABLES=glibc.malloc.mmap_threshold=33554432:glibc.malloc.trim_threshold=4294967296
// (both sides inherit it), as PyTorch's CPU tuning guide suggests for a caching allocator.
// tsddp's live tensor count is recorded after every measured step: it must be flat.
import { writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { probeTorchPython, referenceScript } from '../src/benchmark/reference.ts';
import { fmt, markdownTable, median } from '../src/benchmark/stats.ts';
import { JsonLineProcess } from '../src/host/gang.ts';
import { describeMachine, machineInfo } from '../src/host/machine.ts';
import { pairedRatios } from './lib/abab.ts';
import { intFlag } from './lib/flags.ts';
import { allConfigs, selectConfigs, type TrainConfig } from './lib/train-configs.ts';
import type { StepTimes } from './lib/train-step-ts.ts';

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

const quick = opts.quick ?? false;
const rounds = intFlag('rounds', opts.rounds, 1, quick ? 2 : 3);
const threads = intFlag('threads', opts.threads, 1, 2);
const warmup = intFlag('warmup', opts.warmup, 0, quick ? 1 : 2);
const steps = intFlag('steps', opts.steps, 1, quick ? 2 : 4);
let configs = selectConfigs(allConfigs(), opts.configs);
if (quick && opts.configs === undefined) configs = configs.filter((c) => c.size !== 224);

// Before libtorch (and its OpenMP runtime) loads: process.env writes reach the real
// environment, so the addon loaded below and the Python worker see the same settings.
process.env.OMP_NUM_THREADS = String(threads);
process.env.TORCH_CPP_LOG_LEVEL ??= 'ERROR';
const t = await import('../src/index.ts');
const { TsTrainSession } = await import('./lib/train-step-ts.ts');
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

const torchPy = probeTorchPython(opts.python);
let worker: JsonLineProcess<PyReady> | null = null;
if (torchPy) {
  worker = await JsonLineProcess.start<PyReady>(
    torchPy.python,
    [referenceScript('train_step.py'), '--serve', '--threads', String(threads)],
    process.env,
  );
  log(`PyTorch side: ${torchPy.python} (torch ${worker.ready.torch}, ${worker.ready.threads} threads)`);
} else {
  log(`PyTorch (Python) is not importable from ${opts.python ?? '.venv/bin/python or python3'}: tsddp only.`);
}

// --- alternating steps ------------------------------------------------------------------

interface Measured {
  tsddp: StepTimes[];
  pytorch: StepTimes[];
  /** Paired steps per round (for per-round ratios). */
  perRound: number;
  /** tsddp's live tensors after each timed step, per round. */
  liveTensors: number[][];
  loss: { tsddp: number[]; pytorch: number[] };
}

const machine = machineInfo();
log(
  `train_step: ${configs.length} configs x ${rounds} rounds, ${warmup} warm-up + ${steps} timed steps, ` +
    `${threads} thread(s)`,
);
const measured: Record<string, Measured> = {};
const started = performance.now();
try {
  for (const c of configs) {
    const m: Measured = {
      tsddp: [],
      pytorch: [],
      perRound: steps,
      liveTensors: [],
      loss: { tsddp: [], pytorch: [] },
    };
    measured[c.name] = m;
    for (let r = 0; r < rounds; r++) {
      // Fresh models on both sides, then steps strictly alternating: each tsddp step is
      // paired with the PyTorch step right after it, so a burst of other work on this
      // shared machine lands on both sides of a pair, or on few pairs.
      const ts = new TsTrainSession(t, c);
      await worker?.request({ cmd: 'setup', config: c.name });
      const live: number[] = [];
      for (let i = 0; i < warmup + steps; i++) {
        const tsTimes = ts.step();
        const pyTimes = await worker?.request<StepTimes>({ cmd: 'step' });
        if (i < warmup) continue;
        m.tsddp.push(tsTimes);
        live.push(ts.liveTensors());
        if (pyTimes) m.pytorch.push(pyTimes);
      }
      m.liveTensors.push(live);
      m.loss.tsddp.push(ts.dispose());
      const py = await worker?.request<{ loss: number }>({ cmd: 'close' });
      if (py) m.loss.pytorch.push(py.loss);

      const img = (xs: StepTimes[]) => c.batch / median(xs.slice(-steps).map((x) => x.step));
      let line = `${c.name.padEnd(30)} round ${r + 1}/${rounds}  tsddp ${fmt(img(m.tsddp)).padStart(6)} img/s`;
      if (worker) {
        line +=
          `  PyTorch ${fmt(img(m.pytorch)).padStart(6)} img/s` +
          `  ratio ${median(stepRatios(m.tsddp.slice(-steps), m.pytorch.slice(-steps))).toFixed(2)}`;
      }
      log(
        `${line}  live tensors ${live.join(',')}  [${((performance.now() - started) / 1000).toFixed(0)} s]`,
      );
    }
  }
} finally {
  await worker?.close();
}

/** Per pair of adjacent steps: PyTorch step time / tsddp step time = tsddp throughput / PyTorch's. */
function stepRatios(ts: StepTimes[], py: StepTimes[]): number[] {
  return pairedRatios(
    py.map((x) => x.step),
    ts.map((x) => x.step),
  );
}

// --- report -----------------------------------------------------------------------------

interface Phases {
  fwd: number;
  bwd: number;
  opt: number;
  step: number;
}

interface ConfigResult {
  config: TrainConfig;
  /** batch / median step time over all timed steps of all rounds. */
  tsddpImgPerS: number;
  pytorchImgPerS: number | null;
  /** tsddp / PyTorch throughput: the median over all pairs of adjacent steps (> 1: tsddp faster). */
  ratio: number | null;
  /** The same median per round: min and max over rounds. */
  roundRatios: number[];
  /** PyTorch's fastest step / tsddp's fastest step: the ratio least disturbed by other load. */
  bestRatio: number | null;
  /** Median seconds per phase. */
  phases: { tsddp: Phases; pytorch: Phases | null };
  /** tsddp's live tensors after each timed step, per round (beyond those before the model was built). */
  liveTensors: number[][];
  leak: boolean;
  loss: { tsddp: number[]; pytorch: number[] };
  steps: { tsddp: StepTimes[]; pytorch: StepTimes[] };
}

function phases(xs: StepTimes[]): Phases {
  const med = (k: keyof StepTimes) => median(xs.map((x) => x[k]));
  return { fwd: med('fwd'), bwd: med('bwd'), opt: med('opt'), step: med('step') };
}

const results: Record<string, ConfigResult> = {};
for (const c of configs) {
  const m = measured[c.name];
  const hasPy = m.pytorch.length > 0;
  const roundRatios: number[] = [];
  if (hasPy) {
    for (let i = 0; i < m.tsddp.length; i += m.perRound) {
      roundRatios.push(
        median(stepRatios(m.tsddp.slice(i, i + m.perRound), m.pytorch.slice(i, i + m.perRound))),
      );
    }
  }
  results[c.name] = {
    config: c,
    tsddpImgPerS: c.batch / median(m.tsddp.map((x) => x.step)),
    pytorchImgPerS: hasPy ? c.batch / median(m.pytorch.map((x) => x.step)) : null,
    ratio: hasPy ? median(stepRatios(m.tsddp, m.pytorch)) : null,
    roundRatios,
    bestRatio: hasPy
      ? Math.min(...m.pytorch.map((x) => x.step)) / Math.min(...m.tsddp.map((x) => x.step))
      : null,
    phases: { tsddp: phases(m.tsddp), pytorch: hasPy ? phases(m.pytorch) : null },
    liveTensors: m.liveTensors,
    // Flat within each round, and the same count in every round.
    leak: new Set(m.liveTensors.flat()).size > 1,
    loss: m.loss,
    steps: { tsddp: m.tsddp, pytorch: m.pytorch },
  };
}

// Settings that change the numbers, echoed in the header and the JSON.
const ENV_KEYS = [
  'OMP_NUM_THREADS',
  'TORCH_CPP_LOG_LEVEL',
  'GLIBC_TUNABLES',
  'MALLOC_MMAP_THRESHOLD_',
  'MALLOC_TRIM_THRESHOLD_',
  'LD_PRELOAD',
];
const build = t.buildInfo();
const pyLine = worker
  ? `PyTorch: torch ${worker.ready.torch} (Python ${worker.ready.python}), ${worker.ready.threads} thread(s)`
  : 'PyTorch: not available';
const header = [
  `Machine: ${describeMachine(machine, { load: true })} (at the start; ${loadavg()[0].toFixed(2)} at the end)`,
  `tsddp: libtorch ${build.torchVersion}, ${t.getNumThreads()} thread(s) · ${pyLine}`,
  `${ENV_KEYS.filter((k) => process.env[k] !== undefined && k !== 'TORCH_CPP_LOG_LEVEL')
    .map((k) => `${k}=${process.env[k]}`)
    .join(' ')} · per config ${rounds} rounds, each on fresh models: ` +
    `${warmup} warm-up + ${steps} timed steps, tsddp and PyTorch steps alternating, medians`,
];

const ms = (s: number | undefined): string => (s === undefined ? '—' : fmt(s * 1000));
const rows = configs.map((c) => {
  const r = results[c.name];
  const p = r.phases;
  const live = r.liveTensors.flat();
  return [
    c.name,
    fmt(r.tsddpImgPerS),
    r.pytorchImgPerS === null ? '—' : fmt(r.pytorchImgPerS),
    r.ratio === null ? '—' : `${r.ratio.toFixed(2)}x`,
    r.roundRatios.length === 0
      ? '—'
      : `${Math.min(...r.roundRatios).toFixed(2)}–${Math.max(...r.roundRatios).toFixed(2)}`,
    r.bestRatio === null ? '—' : `${r.bestRatio.toFixed(2)}x`,
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
      'best',
      'tsddp ms fwd/bwd/opt',
      'PyTorch ms fwd/bwd/opt',
      'live tensors',
    ],
    rows,
  ),
);
console.log();
console.log(
  'img/s: batch / median step time over all timed steps (gpt_small: sequences/s); ratio = tsddp / PyTorch throughput, the median ' +
    'over pairs of adjacent steps (range: min–max of the per-round medians), > 1 means tsddp is faster, ' +
    'target ≥ 1.0x; best: the ratio of the fastest steps (least disturbed by other work on the machine). ' +
    'ms: median per phase (fwd = zero grads + forward + loss, bwd = backward, opt = optimizer step). ' +
    'live tensors: tsddp tensors alive after each timed step, beyond those before the model was built. ' +
    'The JSON also has per-step minor page faults and peak RSS of both processes.',
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
