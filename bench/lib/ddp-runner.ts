// The measurement loop of src/benchmark/runner.ts (runBench) and the suite of
// src/benchmark/index.ts (runSuite) with the two sides' worker scripts as parameters, so
// that bench/ddp.ts can measure models `tsddp bench` does not offer (the ViT cases: tsddp
// side bench/workers/ddp.ts, PyTorch side bench/reference/ddp.py, which builds them from
// bench/reference/transformer_models.py). Same method as runBench: rounds that visit every
// case once; per case both sides build the model and run the warm-up steps, then the
// timed steps in ABBA order; img/s from the slowest rank; comm from DDP's Logger. The
// report (markdown, JSON, charts) is src/benchmark/report.ts's.
//
// If src/benchmark/runner.ts gains a `workers` option (and cases.ts a model registry),
// this file can go: see the notes in docs/benchmarks.md.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type BenchCase, caseKey, type ScenarioPlan } from '../../src/benchmark/cases.ts';
import { writeCharts } from '../../src/benchmark/charts.ts';
import { Gang } from '../../src/benchmark/gang.ts';
import type { SuiteOptions, SuiteResult } from '../../src/benchmark/index.ts';
import { machineInfo } from '../../src/benchmark/machine.ts';
import type { ReadyInfo, StepSample, StepsAnswer } from '../../src/benchmark/protocol.ts';
import { REFERENCE_SCRIPT } from '../../src/benchmark/reference.ts';
import { buildReport, reportMarkdown } from '../../src/benchmark/report.ts';
import type { CaseResult, RunOptions, RunResult, SideResult } from '../../src/benchmark/runner.ts';
import { median } from '../../src/benchmark/stats.ts';

/** The worker scripts of both sides. */
export interface Workers {
  /** Node arguments that start one tsddp rank. */
  tsArgs: string[];
  /** The PyTorch rank script (speaks src/benchmark/protocol.ts). */
  pyScript: string;
}

/** bench/workers/ddp.ts (ResNets and ViTs) and bench/reference/ddp.py. */
export const BENCH_WORKERS: Workers = {
  tsArgs: [
    '--import',
    import.meta.resolve('tsx'),
    fileURLToPath(new URL('../workers/ddp.ts', import.meta.url)),
  ],
  pyScript: REFERENCE_SCRIPT,
};

/** runSuite (src/benchmark/index.ts) with these workers. */
export async function runSuiteWith(o: SuiteOptions, workers: Workers): Promise<SuiteResult> {
  const machine = machineInfo();
  const run = await runBenchWith(o.plans, o, workers);
  const report = buildReport(o.plans, run, o, machine);
  const markdown = reportMarkdown(report);
  const out = resolve(o.out);
  mkdirSync(out, { recursive: true });
  const md = join(out, 'results.md');
  const json = join(out, 'results.json');
  writeFileSync(md, `${markdown}\n`);
  writeFileSync(json, `${JSON.stringify(report, null, 2)}\n`);
  const charts = await writeCharts(report, out);
  return { report, markdown, files: [md, json, ...charts.map((f) => join(out, f))] };
}

function uniqueCases(plans: ScenarioPlan[]): BenchCase[] {
  const byKey = new Map<string, BenchCase>();
  for (const p of plans) for (const r of p.rows) byKey.set(caseKey(r.case), r.case);
  return [...byKey.values()].sort((a, b) => a.world - b.world || b.threads - a.threads);
}

type Group = { ts: Gang; py: Gang | null };

/** runBench (src/benchmark/runner.ts) with these workers. */
export async function runBenchWith(plans: ScenarioPlan[], o: RunOptions, w: Workers): Promise<RunResult> {
  const log = o.log ?? (() => {});
  const cases = uniqueCases(plans);
  const groups = new Map<string, Group>();
  const timed = new Map<string, { sides: StepsAnswer[][][]; loss: number[] }>();
  const started = performance.now();
  try {
    for (let round = 0; round < o.repeats; round++) {
      for (const [i, c] of cases.entries()) {
        const gkey = `${c.world}x${c.threads}`;
        let g = groups.get(gkey);
        if (!g) {
          g = await startGroup(c.world, c.threads, o, w);
          groups.set(gkey, g);
        }
        const once = await measureOnce(c, g, o);
        const key = caseKey(c);
        const t = timed.get(key) ?? { sides: once.map(() => []), loss: [] };
        once.forEach((answers, s) => {
          t.sides[s].push(answers);
          t.loss[s] = answers[0].loss;
        });
        timed.set(key, t);
        const img = once.map((answers) => throughput(c, answers, o).toFixed(2));
        log(
          `round ${round + 1}/${o.repeats} [${i + 1}/${cases.length}] ${key}: tsddp ${img[0]} img/s` +
            (img.length > 1 ? `, PyTorch ${img[1]} img/s` : '') +
            ` [${((performance.now() - started) / 1000).toFixed(0)} s]`,
        );
      }
    }
  } finally {
    for (const g of groups.values()) await Promise.all([g.ts.close(), g.py?.close()]).catch(() => {});
  }
  const first = groups.values().next().value;
  if (!first) throw new Error('runBenchWith: no cases to measure');
  const results: Record<string, CaseResult> = {};
  for (const c of cases) {
    const t = timed.get(caseKey(c));
    if (t) results[caseKey(c)] = caseResult(c, t.sides, t.loss, o);
  }
  return {
    sides: {
      tsddp: first.ts.ready[0] as unknown as ReadyInfo,
      pytorch: first.py
        ? { ...(first.py.ready[0] as unknown as ReadyInfo), interpreter: o.reference?.python ?? '' }
        : null,
    },
    cases: results,
  };
}

async function startGroup(world: number, threads: number, o: RunOptions, w: Workers): Promise<Group> {
  const env = {
    ...process.env,
    ...o.env,
    OMP_NUM_THREADS: String(threads),
    TORCH_CPP_LOG_LEVEL: process.env.TORCH_CPP_LOG_LEVEL ?? 'ERROR',
  };
  const ts = await Gang.start({ name: 'tsddp', command: process.execPath, args: w.tsArgs, world, env });
  if (!o.reference) return { ts, py: null };
  try {
    const py = await Gang.start({
      name: 'PyTorch',
      command: o.reference.python,
      args: [w.pyScript],
      world,
      env,
    });
    return { ts, py };
  } catch (e) {
    ts.kill();
    throw e;
  }
}

async function measureOnce(c: BenchCase, g: Group, o: RunOptions): Promise<StepsAnswer[][]> {
  const gangs = g.py ? [g.ts, g.py] : [g.ts];
  for (const gang of gangs) await gang.request({ cmd: 'setup', case: c });
  try {
    for (const gang of gangs) await gang.request({ cmd: 'steps', n: o.warmup });
    const first = gangs.length > 1 ? Math.ceil(o.steps / 2) : o.steps;
    const plan: [number, number][] = gangs.map((_, s) => [s, first]);
    if (o.steps - first > 0) for (let s = gangs.length - 1; s >= 0; s--) plan.push([s, o.steps - first]);
    const out: StepsAnswer[][] = gangs.map(() => []);
    for (const [s, n] of plan) {
      const answers = await gangs[s].request<StepsAnswer>({ cmd: 'steps', n });
      out[s] = out[s].length === 0 ? answers : out[s].map((a, rank) => joinSteps(a, answers[rank]));
    }
    return out;
  } finally {
    for (const gang of gangs) await gang.request({ cmd: 'close' }).catch(() => {});
  }
}

function joinSteps(a: StepsAnswer, b: StepsAnswer): StepsAnswer {
  return { steps: [...a.steps, ...b.steps], comm: [...a.comm, ...b.comm], loss: b.loss };
}

function throughput(c: BenchCase, ranks: StepsAnswer[], o: RunOptions): number {
  const slowest = Math.max(...ranks.map((a) => a.steps.reduce((s, x) => s + x.step, 0)));
  return (c.world * c.batch * c.accum * o.steps) / slowest;
}

function caseResult(c: BenchCase, sides: StepsAnswer[][][], loss: number[], o: RunOptions): CaseResult {
  const results = sides.map((reps, s) => summarize(c, reps, o, loss[s]));
  const py = results.length > 1 ? results[1] : null;
  const perRepeatRatio = py ? results[0].perRepeat.map((x, r) => x / py.perRepeat[r]) : [];
  return {
    key: caseKey(c),
    case: c,
    tsddp: results[0],
    pytorch: py,
    ratio: py ? median(perRepeatRatio) : null,
    perRepeatRatio,
  };
}

function summarize(c: BenchCase, reps: StepsAnswer[][], o: RunOptions, loss: number): SideResult {
  const perRepeat = reps.map((ranks) => throughput(c, ranks, o));
  const rank0 = reps.flatMap((ranks) => ranks[0].steps);
  const ms = (k: keyof StepSample) => median(rank0.map((x) => x[k])) * 1000;
  const comm = reps.flatMap((ranks) => ranks.flatMap((a) => a.comm)).filter((x) => x.iteration > o.warmup);
  return {
    imgPerS: median(perRepeat),
    perRepeat,
    ms: { fwd: ms('fwd'), bwd: ms('bwd'), opt: ms('opt'), step: ms('step') },
    faults: median(rank0.map((x) => x.faults)),
    commMs: comm.length > 0 ? median(comm.map((x) => x.commMs)) : null,
    overlapMs: comm.length > 0 ? median(comm.map((x) => x.overlapMs)) : null,
    exposedMs: comm.length > 0 ? median(comm.map((x) => x.commMs - x.overlapMs)) : null,
    loss,
  };
}
