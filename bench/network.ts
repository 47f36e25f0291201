// DDP across slow links: tsddp and PyTorch (Python) training on 2 or 4 emulated machines
// whose links are capped by the Linux token-bucket filter, measured alternately in one run
// with the DDP benchmark's runner (src/benchmark/runner.ts). Needs root: it makes network
// namespaces (bench/lib/netns.ts), one per node, joined by a switch, and deletes them at
// the end, also on failure.
//
//   sudo node --import tsx bench/network.ts [--nodes 2,4] [--rates 10gbit,1gbit,100mbit]
//       [--models resnet50,vit_tiny,gpt_small] [--hooks none,fp16,bf16,powerSGD1,powerSGD2,powerSGD4]
//       [--bucket-caps 5,25,50,100] [--sweep-rate 1gbit] [--steps 4] [--warmup 3]
//       [--repeats 2] [--python PATH] [--out runs/bench-network]
//
// Each node runs one process with one thread. For every node count, rate and model: each
// comm hook at PyTorch's 25 MiB buckets (PowerSGD: PyTorch's hook in one bucket, the only
// way it runs over Gloo; tsddp's in 25 MiB buckets), and at --sweep-rate the bucket sizes
// with plain all-reduce. Reported: images/s, the scaling efficiency against one process
// with one thread on this machine (no network), DDP's exposed communication per step (the
// part of the all-reduce backward waited for, from its Logger) and the bytes each node sent
// per step (its eth0 counter). Writes network.md and network.json to --out.
import { availableParallelism } from 'node:os';
import { parseArgs } from 'node:util';
import {
  type BenchCase,
  BenchOptionError,
  caseKey,
  findTorchPython,
  type ModelSpec,
  type TorchPython,
} from '../src/benchmark/index.ts';
import { type CaseResult, runBench } from '../src/benchmark/runner.ts';
import { ensureSafeDir, writeFileAtomicSync } from '../src/files/index.ts';
import { describeMachine, machineInfo } from '../src/host/machine.ts';
import { intFlag } from './lib/flags.ts';
import { Network, netnsUnavailable, parseRate } from './lib/netns.ts';

const { values: o } = parseArgs({
  options: {
    nodes: { type: 'string', default: '2,4' },
    rates: { type: 'string', default: '10gbit,1gbit,100mbit' },
    models: { type: 'string', default: 'resnet50,vit_tiny,gpt_small' },
    hooks: { type: 'string', default: 'none,fp16,bf16,powerSGD1,powerSGD2,powerSGD4' },
    'bucket-caps': { type: 'string', default: '5,25,50,100' },
    'sweep-rate': { type: 'string', default: '1gbit' },
    steps: { type: 'string', default: '4' },
    warmup: { type: 'string', default: '3' },
    repeats: { type: 'string', default: '2' },
    python: { type: 'string' },
    out: { type: 'string', default: 'runs/bench-network' },
    help: { type: 'boolean', short: 'h', default: false },
  },
});
if (o.help) {
  console.log(
    'usage: sudo node --import tsx bench/network.ts [--nodes 2,4] [--rates 10gbit,1gbit,100mbit]\n' +
      '  [--models resnet50,vit_tiny,gpt_small] [--hooks none,fp16,bf16,powerSGD1,powerSGD2,powerSGD4]\n' +
      '  [--bucket-caps 5,25,50,100] [--sweep-rate 1gbit] [--steps 4] [--warmup 3] [--repeats 2]\n' +
      '  [--python PATH] [--out runs/bench-network]',
  );
  process.exit(0);
}
const why = netnsUnavailable();
if (why !== null) {
  console.error(`bench/network.ts: ${why}`);
  process.exit(2);
}

const cores = availableParallelism();
const list = (text: string) =>
  text
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);

const MODELS: Record<string, ModelSpec> = {
  resnet50: { model: 'resnet50', stem: 'imagenet', widthMultiplier: 1, size: 64, batch: 8 },
  vit_tiny: { model: 'vit_tiny', stem: 'cifar', widthMultiplier: 1, size: 32, batch: 32 },
  // nanoGPT's baby GPT at block 256 (src/benchmark/cases.ts GPT_MODELS), 4 sequences per
  // node: a step of about a second with one thread here.
  gpt_small: { model: 'gpt_small', stem: 'cifar', widthMultiplier: 1, size: 256, batch: 4 },
};
const models = list(o.models);
for (const m of models)
  if (!MODELS[m])
    throw new BenchOptionError(`--models: ${m} is not one of ${Object.keys(MODELS).join(', ')}`);
const nodeCounts = list(o.nodes).map((n) => intFlag('nodes', n, 2));
const rates = list(o.rates).map((r) => r.toLowerCase());
const sweepRate = o['sweep-rate'].toLowerCase();
for (const r of [...rates, sweepRate]) parseRate(r);
const hooks = list(o.hooks).map((h) => {
  const m = /^(none|fp16|bf16|powerSGD(\d+))$/.exec(h);
  if (!m) throw new BenchOptionError(`--hooks: ${h} is not none, fp16, bf16 or powerSGD<rank>`);
  return m[2] === undefined
    ? { hook: h as BenchCase['hook'] }
    : { hook: 'powerSGD' as const, powerSGDRank: Number(m[2]) };
});
const caps = list(o['bucket-caps']).map((c) => intFlag('bucket-caps', c, 1));
// PowerSGD compresses from iteration 2 (cases.ts): with 2 warm-up steps every timed step is compressed.
const minWarmup = hooks.some((h) => h.hook === 'powerSGD') ? 2 : 1;
const run = {
  steps: intFlag('steps', o.steps, 1),
  warmup: intFlag('warmup', o.warmup, minWarmup),
  repeats: intFlag('repeats', o.repeats, 1),
};

let reference: TorchPython | null = null;
try {
  reference = findTorchPython(o.python);
} catch (e) {
  console.error(`${(e as Error).message}: tsddp only, no ratios.`);
}
const log = (line: string) => process.stderr.write(`${line}\n`);

function benchCase(m: ModelSpec, world: number, extra: Partial<BenchCase> = {}): BenchCase {
  return {
    ...m,
    world,
    threads: 1,
    bucketCapMb: 25,
    amp: 'off',
    accum: 1,
    hook: 'none',
    channelsLast: false,
    ...extra,
  };
}
function label(c: BenchCase): string {
  if (c.hook === 'powerSGD') return `PowerSGD rank ${c.powerSGDRank}`;
  if (c.hook === 'none') return `all-reduce, ${c.bucketCapMb} MiB`;
  return `${c.hook} compression`;
}

interface Row {
  nodes: number;
  rate: string;
  model: string;
  label: string;
  result: CaseResult;
}

// One process, one thread, no network: the scaling efficiency's base.
log('world 1 (no network) ...');
const base = new Map<string, CaseResult>();
{
  const cases = models.map((m) => benchCase(MODELS[m], 1));
  const r = await runBench(
    [{ name: 'scaling', title: 'world 1', rows: cases.map((c) => ({ label: '1', x: 1, case: c })) }],
    { ...run, reference, log },
  );
  for (const [i, m] of models.entries()) base.set(m, r.cases[caseKey(cases[i])]);
}

const rows: Row[] = [];
for (const nodes of nodeCounts) {
  const net = await Network.create(nodes);
  try {
    for (const rate of rates) {
      await net.setRate(rate);
      const cases: { model: string; c: BenchCase }[] = [];
      for (const m of models) {
        for (const h of hooks) cases.push({ model: m, c: benchCase(MODELS[m], nodes, h) });
        if (rate === sweepRate)
          for (const cap of caps)
            if (cap !== 25 || !hooks.some((h) => h.hook === 'none'))
              cases.push({ model: m, c: benchCase(MODELS[m], nodes, { bucketCapMb: cap }) });
      }
      log(`${nodes} nodes at ${rate}: ${cases.length} cases`);
      const r = await runBench(
        [{ name: 'hooks', title: rate, rows: cases.map(({ c }) => ({ label: label(c), x: 0, case: c })) }],
        {
          ...run,
          reference,
          log,
          placement: {
            wrap: (rank) => net.wrap(rank),
            rankEnv: () => ({ MASTER_ADDR: net.nodes[0].addr, GLOO_SOCKET_IFNAME: 'eth0' }),
          },
          txBytes: () => net.txBytes(),
        },
      );
      for (const { model, c } of cases) {
        const result = r.cases[caseKey(c)];
        if (result) rows.push({ nodes, rate, model, label: label(c), result });
      }
    }
  } finally {
    await net.destroy();
  }
}

// ---- report ----
const f = (x: number | null | undefined, d = 1) =>
  x === null || x === undefined || !Number.isFinite(x) ? '—' : x.toFixed(d);
const eff = (r: Row, side: 'tsddp' | 'pytorch') => {
  const b = base.get(r.model)?.[side]?.imgPerS;
  const x = r.result[side]?.imgPerS;
  return b && x ? (100 * x) / (r.nodes * b) : null;
};
const lines: string[] = [];
const machine = machineInfo();
lines.push(
  `Machine: ${describeMachine(machine, { load: true })}; one process and one thread per node; ` +
    `steps ${run.steps}, warm-up ${run.warmup}, ${run.repeats} rounds (medians). PyTorch: ${reference ? reference.python : 'not measured'}.`,
  '',
);
for (const m of models) {
  const b = base.get(m);
  lines.push(
    `World 1 (${m}, no network): tsddp ${f(b?.tsddp.imgPerS, 2)} img/s, PyTorch ${f(b?.pytorch?.imgPerS, 2)} img/s.`,
  );
}
for (const nodes of nodeCounts)
  for (const rate of rates)
    for (const m of models) {
      const sel = rows.filter((r) => r.nodes === nodes && r.rate === rate && r.model === m);
      if (sel.length === 0) continue;
      lines.push(
        '',
        `**${m}, ${nodes} nodes, ${rate}${nodes > cores ? ` (${nodes} processes on ${cores} cores: oversubscribed)` : ''}**`,
        '',
        '| setting | tsddp img/s | PyTorch img/s | ratio | scaling tsddp / PyTorch | exposed comm ms tsddp / PyTorch | MB sent per node-step tsddp / PyTorch |',
        '| --- | ---: | ---: | ---: | ---: | ---: | ---: |',
      );
      for (const r of sel) {
        const { tsddp: ts, pytorch: py } = r.result;
        lines.push(
          `| ${r.label} | ${f(ts.imgPerS, 2)} | ${f(py?.imgPerS, 2)} | ${r.result.ratio === null ? '—' : `${f(r.result.ratio, 2)}x`} | ` +
            `${f(eff(r, 'tsddp'), 0)}% / ${f(eff(r, 'pytorch'), 0)}% | ${f(ts.exposedMs, 0)} / ${f(py?.exposedMs, 0)} | ` +
            `${f((ts.bytesPerStep ?? Number.NaN) / 1e6)} / ${f((py?.bytesPerStep ?? Number.NaN) / 1e6)} |`,
        );
      }
      const bestTs = sel.reduce((a, b) => (b.result.tsddp.imgPerS > a.result.tsddp.imgPerS ? b : a));
      const withPy = sel.filter((r) => r.result.pytorch !== null);
      if (withPy.length > 0) {
        const bestPy = withPy.reduce((a, b) =>
          (b.result.pytorch?.imgPerS ?? 0) > (a.result.pytorch?.imgPerS ?? 0) ? b : a,
        );
        const ratio = bestTs.result.tsddp.imgPerS / (bestPy.result.pytorch?.imgPerS ?? Number.NaN);
        lines.push(
          '',
          `Best: tsddp ${bestTs.label} ${f(bestTs.result.tsddp.imgPerS, 2)} img/s against PyTorch ${bestPy.label} ${f(bestPy.result.pytorch?.imgPerS, 2)} img/s: **${f(ratio, 2)}x**.`,
        );
      }
    }
const markdown = lines.join('\n');
ensureSafeDir(o.out, 'the benchmark folder');
writeFileAtomicSync(`${o.out}/network.md`, `${markdown}\n`);
writeFileAtomicSync(
  `${o.out}/network.json`,
  `${JSON.stringify({ machine, run, base: Object.fromEntries(base), rows }, null, 2)}\n`,
);
console.log(markdown);
console.error(`wrote ${o.out}/network.md, ${o.out}/network.json`);
