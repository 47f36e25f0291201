// Per-op overhead: microseconds per call of tiny ops in tsddp and in PyTorch (Python),
// measured alternately in one run (architecture §10). The ops are so small that the time is
// almost all call overhead: argument conversion, dispatch, result wrapping and freeing.
//
//   npm run bench:ops [-- --rounds 5 --target-s 0.4 --threads 1 --out results.json --python PATH]
//
// Cases (the PyTorch side is bench/reference/op_overhead.py):
//   add                1-element float32 `a.add(b)`
//   add_requires_grad  the same with `a` requiring grad, so autograd records a node
//   conv2d_small       conv2d(1x3x8x8, 4x3x3x3, no bias, stride 1, padding 1), no grad
//   fwd_bwd_small      linear(8->16) -> relu -> linear(16->4) -> sum on a 4x8 input, backward;
//                      grads cleared each iteration (`p.grad = null`, PyTorch: `p.grad = None`)
// Every tsddp iteration frees its results inside the timed loop: by one t.tidy() per
// iteration, or by dispose() / one tidy per 1000 adds for the two add variants.
//
// Both processes run with OMP_NUM_THREADS=N and set_num_threads(N) (N = --threads, 1 by
// default) and TORCH_CPP_LOG_LEVEL=ERROR: on CPUs without NNPACK support PyTorch's
// conv2d otherwise writes a warning line to stderr on every call, which would time the
// terminal rather than the op.
import { writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { probeTorchPython, referenceScript, runPythonJson } from '../src/benchmark/reference.ts';
import {
  calibrate,
  fmt,
  markdownTable,
  now,
  type Summary,
  summarize,
  type TimedLoop,
  usPerIter,
} from '../src/benchmark/stats.ts';
import { describeMachine, machineInfo } from '../src/host/machine.ts';
import { type AbabSide, pairedRatios, runAbab } from './lib/abab.ts';

const { values: opts } = parseArgs({
  options: {
    rounds: { type: 'string', default: '5' },
    'target-s': { type: 'string', default: '0.4' },
    threads: { type: 'string', default: '1' },
    out: { type: 'string' },
    python: { type: 'string' },
    help: { type: 'boolean', short: 'h', default: false },
  },
});
if (opts.help) {
  console.log(
    'usage: node --import tsx bench/op_overhead.ts [--rounds 5] [--target-s 0.4] [--threads 1] [--out FILE.json] [--python PATH]',
  );
  process.exit(0);
}
const rounds = Number(opts.rounds);
const targetS = Number(opts['target-s']);
const threads = Number(opts.threads);
if (!(Number.isInteger(rounds) && rounds >= 1)) throw new TypeError(`--rounds: expected a positive integer`);
if (!(targetS > 0)) throw new TypeError(`--target-s: expected a positive number of seconds`);
if (!(Number.isInteger(threads) && threads >= 1))
  throw new TypeError(`--threads: expected a positive integer`);

// Before libtorch (and its OpenMP runtime) loads: process.env writes reach the real
// environment, so the addon loaded below and the Python children see the same settings.
process.env.OMP_NUM_THREADS = String(threads);
process.env.TORCH_CPP_LOG_LEVEL ??= 'ERROR';
const t = await import('../src/index.ts');
t.setNumThreads(threads);

// --- tsddp cases ------------------------------------------------------------------------

interface TsCase {
  name: string;
  /** The PyTorch case it is compared with. */
  pytorch: string;
  /** How the results are freed, for the legend. */
  freeing: string;
  loop: TimedLoop;
}

function tsCases(): TsCase[] {
  const a = t.tensor([1]);
  const b = t.tensor([1]);
  const ag = t.tensor([1], { requiresGrad: true });
  const x = t.randn([1, 3, 8, 8]);
  const w = t.randn([4, 3, 3, 3]);
  const xs = t.randn([4, 8]);
  const w1 = t.randn([16, 8], { requiresGrad: true });
  const b1 = t.randn([16], { requiresGrad: true });
  const w2 = t.randn([4, 16], { requiresGrad: true });
  const b2 = t.randn([4], { requiresGrad: true });
  const params = [w1, b1, w2, b2];
  return [
    {
      name: 'add',
      pytorch: 'add',
      freeing: 'one `t.tidy()` per call',
      loop: (n) => {
        const t0 = now();
        for (let i = 0; i < n; i++)
          t.tidy(() => {
            a.add(b);
          });
        return now() - t0;
      },
    },
    {
      name: 'add (dispose)',
      pytorch: 'add',
      freeing: '`a.add(b).dispose()`',
      loop: (n) => {
        const t0 = now();
        for (let i = 0; i < n; i++) a.add(b).dispose();
        return now() - t0;
      },
    },
    {
      name: 'add (tidy per 1000)',
      pytorch: 'add',
      freeing: 'one `t.tidy()` per 1000 calls (amortized, as in a training step)',
      loop: (n) => {
        const t0 = now();
        for (let done = 0; done < n; ) {
          const k = Math.min(1000, n - done);
          t.tidy(() => {
            for (let j = 0; j < k; j++) a.add(b);
          });
          done += k;
        }
        return now() - t0;
      },
    },
    {
      name: 'add_requires_grad',
      pytorch: 'add_requires_grad',
      freeing: 'one `t.tidy()` per call',
      loop: (n) => {
        const t0 = now();
        for (let i = 0; i < n; i++)
          t.tidy(() => {
            ag.add(b);
          });
        return now() - t0;
      },
    },
    {
      name: 'conv2d_small',
      pytorch: 'conv2d_small',
      freeing: 'one `t.tidy()` per call',
      loop: (n) => {
        const t0 = now();
        for (let i = 0; i < n; i++)
          t.tidy(() => {
            t.conv2d(x, w, null, 1, 1);
          });
        return now() - t0;
      },
    },
    {
      name: 'fwd_bwd_small',
      pytorch: 'fwd_bwd_small',
      freeing: '`p.grad = null` for each parameter, then forward + backward in one `t.tidy()`',
      loop: (n) => {
        const t0 = now();
        for (let i = 0; i < n; i++) {
          for (const p of params) p.grad = null;
          t.tidy(() => {
            t.linear(t.relu(t.linear(xs, w1, b1)), w2, b2)
              .sum()
              .backward();
          });
        }
        return now() - t0;
      },
    },
  ];
}

const cases = tsCases();
const pyCaseNames = [...new Set(cases.map((c) => c.pytorch))];

// --- PyTorch side -----------------------------------------------------------------------

interface PyOutput {
  torch: string;
  python: string;
  threads: number;
  cases: Record<string, { us: number; iters: number; seconds: number }>;
}

const pyScript = referenceScript('op_overhead.py');
const torchPy = probeTorchPython(opts.python);
const log = (line: string): void => {
  process.stderr.write(`${line}\n`);
};

// --- calibration (also the warm-up of both sides) -----------------------------------------

const machine = machineInfo();
log(`op_overhead: ${rounds} rounds, ~${targetS} s per measurement, ${threads} thread(s)`);
const tsIters: Record<string, number> = {};
for (const c of cases) {
  const live = t.memory().tensors;
  tsIters[c.name] = calibrate(c.loop, targetS);
  const leaked = t.memory().tensors - live;
  if (leaked !== 0) throw new Error(`${c.name}: ${leaked} tensors left alive by the loop`);
}
let pyIters: Record<string, number> | null = null;
let pyInfo: PyOutput | null = null;
if (torchPy) {
  log(`PyTorch side: ${torchPy.python} (torch ${torchPy.torchVersion}), calibrating`);
  pyInfo = runPythonJson<PyOutput>(
    torchPy.python,
    pyScript,
    ['--threads', String(threads), '--cases', pyCaseNames.join(','), '--target-s', String(targetS)],
    process.env,
  );
  pyIters = Object.fromEntries(Object.entries(pyInfo.cases).map(([k, v]) => [k, v.iters]));
} else {
  const tried = opts.python ?? '.venv/bin/python or python3';
  log(`PyTorch (Python) is not importable from ${tried}: reporting tsddp only.`);
}

// --- alternating rounds -----------------------------------------------------------------

const sides: AbabSide[] = [
  {
    name: 'tsddp',
    run: () => Object.fromEntries(cases.map((c) => [c.name, usPerIter(c.loop, tsIters[c.name])])),
  },
];
if (torchPy && pyIters) {
  const iterArg = Object.entries(pyIters)
    .map(([k, v]) => `${k}=${v}`)
    .join(',');
  sides.push({
    name: 'pytorch',
    run: () => {
      const out = runPythonJson<PyOutput>(
        torchPy.python,
        pyScript,
        ['--threads', String(threads), '--cases', pyCaseNames.join(','), '--iters', iterArg],
        process.env,
      );
      pyInfo = out;
      return Object.fromEntries(Object.entries(out.cases).map(([k, v]) => [k, v.us]));
    },
  });
}
const values = runAbab(sides, rounds, log);

// --- report -----------------------------------------------------------------------------

interface CaseResult {
  freeing: string;
  pytorchCase: string;
  tsddpIters: number;
  pytorchIters: number | null;
  tsddpUs: Summary;
  pytorchUs: Summary | null;
  /** Per-round tsddp / PyTorch, paired by round. */
  ratio: Summary | null;
}

const results: Record<string, CaseResult> = {};
for (const c of cases) {
  const ts = values.tsddp[c.name];
  const py = values.pytorch?.[c.pytorch];
  results[c.name] = {
    freeing: c.freeing,
    pytorchCase: c.pytorch,
    tsddpIters: tsIters[c.name],
    pytorchIters: pyIters?.[c.pytorch] ?? null,
    tsddpUs: summarize(ts),
    pytorchUs: py ? summarize(py) : null,
    ratio: py ? summarize(pairedRatios(ts, py)) : null,
  };
}

const build = t.buildInfo();
const tsThreads = t.getNumThreads();
const header = [
  `Machine: ${describeMachine(machine, { load: true })}`,
  `tsddp: libtorch ${build.torchVersion}, ${tsThreads} thread(s)` +
    (pyInfo
      ? ` · PyTorch: torch ${pyInfo.torch} (Python ${pyInfo.python}), ${pyInfo.threads} thread(s)`
      : ' · PyTorch: not available'),
  `OMP_NUM_THREADS=${process.env.OMP_NUM_THREADS}, TORCH_CPP_LOG_LEVEL=${process.env.TORCH_CPP_LOG_LEVEL} · ` +
    `${rounds} alternating rounds (tsddp, then PyTorch), ~${targetS} s per measurement, medians`,
];

const rows = cases.map((c) => {
  const r = results[c.name];
  const pyCell = r.pytorchUs
    ? fmt(r.pytorchUs.median) + (c.pytorch !== c.name ? ` (${c.pytorch})` : '')
    : '—';
  return [
    c.name,
    fmt(r.tsddpUs.median),
    pyCell,
    r.ratio ? `${fmt(r.ratio.median, 2)}x` : '—',
    r.ratio ? `${fmt(r.ratio.min, 2)}–${fmt(r.ratio.max, 2)}` : '—',
  ];
});

console.log(header.join('\n'));
console.log();
console.log(markdownTable(['case', 'tsddp µs', 'PyTorch µs', 'ratio', 'ratio range'], rows));
console.log();
console.log(
  'µs per call, median over rounds; ratio = tsddp / PyTorch, the median of per-round ratios ' +
    '(range: min–max over rounds). Target ≤ 1.0x, goal 0.5x.',
);
console.log('tsddp frees results inside the timed loop:');
for (const c of cases) console.log(`- ${c.name}: ${c.freeing}`);
if (!torchPy) console.log('\nPyTorch (Python) was not importable: tsddp numbers only, no ratios.');

if (opts.out) {
  const json = {
    benchmark: 'op_overhead',
    date: new Date().toISOString(),
    machine,
    tsddp: { libtorch: build.torchVersion, threads: tsThreads },
    pytorch: pyInfo
      ? { torch: pyInfo.torch, python: pyInfo.python, threads: pyInfo.threads, interpreter: torchPy?.python }
      : null,
    env: {
      OMP_NUM_THREADS: process.env.OMP_NUM_THREADS,
      TORCH_CPP_LOG_LEVEL: process.env.TORCH_CPP_LOG_LEVEL,
    },
    rounds,
    targetS,
    unit: 'us per call',
    cases: results,
  };
  writeFileSync(opts.out, `${JSON.stringify(json, null, 2)}\n`);
  log(`wrote ${opts.out}`);
}
