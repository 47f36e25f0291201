// The benchmark's report: a markdown page with one table per scenario (what docs/benchmarks.md's
// results section quotes) and the JSON with every measured number.
import { loadavg } from 'node:os';
import { describeMachine, type MachineInfo } from '../host/machine.ts';
import { type BenchCase, caseKey, modelLabel, type ScenarioPlan, type ScenarioRow } from './cases.ts';
import { cpuPeakFlops, type PeakFlops, trainFlopsPerImage } from './flops.ts';
import type { CaseResult, RunOptions, RunResult } from './runner.ts';
import { fmt, markdownTable, medianInterval } from './stats.ts';

export interface ReportRow extends ScenarioRow {
  key: string;
}
export interface ReportScenario extends Omit<ScenarioPlan, 'rows'> {
  rows: ReportRow[];
}

export interface BenchReport {
  benchmark: 'ddp';
  date: string;
  machine: MachineInfo;
  /** 1-minute load average when the run ended. */
  loadAvgEnd: number;
  settings: { warmup: number; steps: number; repeats: number; cores: number };
  /** Settings in the environment that change the numbers (both sides inherit them). */
  env: Record<string, string>;
  sides: RunResult['sides'];
  scenarios: ReportScenario[];
  cases: Record<string, CaseResult>;
  /** Training FLOPs per image by modelLabel (null: not counted), and the CPU's peak. */
  flops: { perImage: Record<string, number | null>; peak: PeakFlops | null };
}

const ENV_KEYS = [
  'GLIBC_TUNABLES',
  'MALLOC_MMAP_THRESHOLD_',
  'MALLOC_TRIM_THRESHOLD_',
  'LD_PRELOAD',
  'TSDDP_MALLOC_TUNING',
];

export function buildReport(
  plans: ScenarioPlan[],
  run: RunResult,
  o: Pick<RunOptions, 'warmup' | 'steps' | 'repeats'> & { cores: number },
  machine: MachineInfo,
): BenchReport {
  const env: Record<string, string> = {};
  for (const k of ENV_KEYS) if (process.env[k] !== undefined) env[k] = process.env[k] as string;
  return {
    benchmark: 'ddp',
    date: new Date().toISOString(),
    machine,
    loadAvgEnd: loadavg()[0],
    settings: { warmup: o.warmup, steps: o.steps, repeats: o.repeats, cores: o.cores },
    env,
    sides: run.sides,
    scenarios: plans.map((p) => ({ ...p, rows: p.rows.map((r) => ({ ...r, key: caseKey(r.case) })) })),
    cases: run.cases,
    flops: {
      perImage: Object.fromEntries(
        [...new Map(plans.flatMap((p) => p.rows.map((r) => [modelLabel(r.case), r.case] as const)))].map(
          ([label, c]) => [label, trainFlopsPerImage(c)],
        ),
      ),
      peak: cpuPeakFlops(),
    },
  };
}

/** Achieved model FLOP/s against the peak of the cores a case used, per side. */
function flopsSection(r: BenchReport): string[] {
  const peak = r.flops?.peak;
  const seen = new Set<string>();
  const rows: string[][] = [];
  for (const plan of r.scenarios) {
    for (const row of plan.rows) {
      const perImage = r.flops?.perImage[modelLabel(row.case)];
      if (seen.has(row.key) || !perImage) continue;
      seen.add(row.key);
      const res = r.cases[row.key];
      const cores = row.case.world * row.case.threads;
      const g = (imgPerS: number | undefined) =>
        imgPerS === undefined ? '—' : fmt((imgPerS * perImage) / 1e9);
      const share = (imgPerS: number | undefined) =>
        imgPerS === undefined || !peak
          ? '—'
          : `${((100 * imgPerS * perImage) / (peak.perCore * cores)).toFixed(1)}%`;
      rows.push([
        modelLabel(row.case),
        `${row.label}${plan.name === 'scaling' ? '' : ` (${plan.name})`}`,
        String(cores),
        g(res.tsddp.imgPerS),
        share(res.tsddp.imgPerS),
        g(res.pytorch?.imgPerS),
        share(res.pytorch?.imgPerS),
      ]);
    }
  }
  if (rows.length === 0) return [];
  const per = Object.entries(r.flops.perImage)
    .filter(([, f]) => f)
    .map(([m, f]) => `${m}: ${fmt((f as number) / 1e9)} GFLOP`)
    .join('; ');
  return [
    '## Model FLOP/s and the share of the CPU’s peak',
    '',
    `- Training FLOPs per image (6 x the multiply-accumulates of the convolutions and linear layers in one forward; backward = 2 x forward): ${per}`,
    `- Peak (fp32; bf16 cases are set against it too): ${peak ? `${peak.basis}, times the cores a case uses (world x threads)` : 'unknown on this platform'}`,
    '',
    markdownTable(
      ['model', 'setting', 'cores', 'tsddp GFLOP/s', 'of peak', 'PyTorch GFLOP/s', 'of peak'],
      rows,
    ),
    '',
  ];
}

/** Throughput at world N / (N x world 1 with the same threads per process), per side. */
export function scalingEfficiency(
  r: BenchReport,
  c: BenchCase,
): { tsddp: number | null; pytorch: number | null } {
  const one = r.cases[caseKey({ ...c, world: 1 })];
  const n = r.cases[caseKey(c)];
  if (!one || !n || c.world === 1) return { tsddp: null, pytorch: null };
  return {
    tsddp: n.tsddp.imgPerS / (c.world * one.tsddp.imgPerS),
    pytorch: n.pytorch && one.pytorch ? n.pytorch.imgPerS / (c.world * one.pytorch.imgPerS) : null,
  };
}

const pct = (x: number | null) => (x === null ? '—' : `${Math.round(100 * x)}%`);
const overlapPct = (s: { commMs: number | null; overlapMs: number | null } | null) =>
  s && s.commMs !== null && s.overlapMs !== null && s.commMs > 0 ? pct(s.overlapMs / s.commMs) : '—';

const faults = (x: number | undefined) => (x === undefined ? '—' : String(Math.round(x)));

function scenarioTable(r: BenchReport, plan: ReportScenario): string {
  const ref = r.sides.pytorch !== null;
  const scaling = plan.name === 'scaling';
  const headers = ['setting', 'tsddp img/s'];
  if (ref) headers.push('PyTorch img/s', 'ratio', 'ratio 95% CI');
  if (scaling) headers.push(ref ? 'scaling eff. (tsddp / PyTorch)' : 'scaling eff.');
  headers.push(ref ? 'comm ms/batch (tsddp / PyTorch)' : 'comm ms/batch');
  headers.push(ref ? 'overlap (tsddp / PyTorch)' : 'overlap');
  headers.push(ref ? 'exposed ms (tsddp / PyTorch)' : 'exposed ms');
  headers.push(ref ? 'page faults/step (tsddp / PyTorch)' : 'page faults/step');
  const both = (a: string, b: string) => (ref ? `${a} / ${b}` : a);
  const rows = plan.rows.map((row) => {
    const res = r.cases[row.key];
    const out = [row.label, fmt(res.tsddp.imgPerS)];
    if (ref) {
      const ci = medianInterval(res.perRepeatRatio);
      out.push(
        fmt(res.pytorch?.imgPerS),
        res.ratio === null ? '—' : `${res.ratio.toFixed(2)}x`,
        ci === null ? '—' : `${ci[0].toFixed(2)}–${ci[1].toFixed(2)}`,
      );
    }
    if (scaling) {
      const eff = scalingEfficiency(r, row.case);
      out.push(row.case.world === 1 ? '—' : both(pct(eff.tsddp), pct(eff.pytorch)));
    }
    out.push(both(fmt(res.tsddp.commMs), fmt(res.pytorch?.commMs)));
    out.push(both(overlapPct(res.tsddp), overlapPct(res.pytorch)));
    out.push(both(fmt(res.tsddp.exposedMs), fmt(res.pytorch?.exposedMs)));
    out.push(both(faults(res.tsddp.faults), faults(res.pytorch?.faults)));
    return out;
  });
  return markdownTable(headers, rows);
}

export function reportMarkdown(r: BenchReport): string {
  const py = r.sides.pytorch;
  const s = r.settings;
  const envLine = Object.entries(r.env)
    .map(([k, v]) => `${k}=${v}`)
    .join(' ');
  const lines = [
    '# tsddp DDP benchmark',
    '',
    `- Machine: ${describeMachine(r.machine)}; load average ${r.machine.loadAvg1.toFixed(2)} at the start, ` +
      `${r.loadAvgEnd.toFixed(2)} at the end`,
    `- tsddp: libtorch ${r.sides.tsddp.torch}, ${r.sides.tsddp.runtime}` +
      (py ? ` · PyTorch: torch ${py.torch}, ${py.runtime} (${py.interpreter})` : ' · PyTorch: not run'),
    `- Threads per process: max(1, floor(${s.cores} cores / world size)), as OMP_NUM_THREADS and ` +
      'set_num_threads on both sides; Gloo over loopback, one process per rank',
    `- Method: ${s.repeats} rounds; each round visits every case once: ${py ? 'both sides build' : 'tsddp builds'} ` +
      `the model, run ${s.warmup} untimed warm-up step(s) (incl. the bucket rebuild), then time ${s.steps} ` +
      `steps${py ? ' in ABBA order (half of tsddp’s, PyTorch’s, PyTorch’s other half, tsddp’s)' : ''}; img/s = world x batch x micro-batches x steps / ` +
      'the slowest rank’s time, median over rounds' +
      (py
        ? '; ratio = tsddp / PyTorch img/s, median of the per-round ratios (> 1: tsddp faster); its 95% CI ' +
          'is the distribution-free interval for a median (order statistics; from 6 rounds): one that ' +
          'holds 1.00 is a tie within the machine’s round-to-round spread'
        : ''),
    '- Step: fixed synthetic batch per rank (no data loader), cross-entropy, backward, SGD (lr 0.01, ' +
      'momentum 0.9, weight decay 5e-4); batch is per process (weak scaling)',
    '- comm ms/batch: DDP Logger’s backward_comm_time (first bucket’s all-reduce start to the last one’s end), ' +
      'median over timed iterations and ranks (a span: it includes the backward compute it overlaps); ' +
      'overlap: the share of that span overlapped with backward compute; exposed: the rest, the ' +
      'communication backward waited for; page faults/step: rank 0’s median minor page faults in a ' +
      'step (memory taken from the kernel: near 0 in a steady state, thousands when something reclaims ' +
      'the process’s memory between steps, which slows that side)',
    ...(envLine ? [`- Environment (both sides): ${envLine}`] : []),
    '- Charts: scaling-*.png (img/s against world size), bucket-*.png (comm ms/batch against bucketCapMb), ' +
      'ratios.png (every setting; wN/tM = world size N with M threads per process)',
    `- Date: ${r.date}`,
    '',
  ];
  for (const plan of r.scenarios) {
    lines.push(`## ${plan.title} — ${modelLabel(plan.rows[0].case)}`, '', scenarioTable(r, plan), '');
  }
  lines.push(...flopsSection(r));
  if (py) {
    const ratios = Object.values(r.cases).map((c) => c.ratio as number);
    lines.push(
      `Ratio range over all ${ratios.length} measured cases: ${Math.min(...ratios).toFixed(2)}x – ` +
        `${Math.max(...ratios).toFixed(2)}x.`,
      '',
    );
  }
  return lines.join('\n');
}
