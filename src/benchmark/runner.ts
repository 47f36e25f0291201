// Measures the cases of a set of scenario plans, tsddp and PyTorch alternating in rounds:
// each round visits every case once; there both sides build the model and warm up
// (untimed: the first iteration runs on one bucket and rebuilds them), then the timed
// steps run in ABBA order — half of tsddp's, PyTorch's, PyTorch's other half, tsddp's —
// so a machine that speeds up or slows down during the measurement favours neither side
// (with plain ABAB, whichever side always goes first gets the same share of any drift).
// A case shared by several scenarios is measured once.
import { fileURLToPath } from 'node:url';
import { isCompiled, siblingModule } from '../core/module-url.ts';
import { Gang, type GangSpec } from '../host/gang.ts';
import { type BenchCase, caseKey, type ScenarioPlan } from './cases.ts';
import type { ReadyInfo, StepSample, StepsAnswer } from './protocol.ts';
import { REFERENCE_SCRIPT, type TorchPython } from './reference.ts';
import { median } from './stats.ts';

export interface RunOptions {
  /** Untimed steps per case, side and round (the first one rebuilds the buckets). */
  warmup: number;
  /** Timed steps per repeat. */
  steps: number;
  /** Rounds: every case is measured once per round. */
  repeats: number;
  /** The PyTorch side; null measures tsddp alone. */
  reference: TorchPython | null;
  log?: (line: string) => void;
  /** Extra environment for both sides' workers. */
  env?: NodeJS.ProcessEnv;
  /** Where each rank runs (default: here, rendezvous on 127.0.0.1): a command prefix and variables per rank. */
  placement?: Pick<GangSpec, 'wrap' | 'rankEnv'>;
  /** Bytes sent so far by all the machines the ranks run on (bench/lib/netns.ts counts its nodes'). */
  txBytes?: () => Promise<number>;
}

/** One side's numbers for one case. */
export interface SideResult {
  /** Median over repeats of (world x batch x accum x steps) / the slowest rank's time. */
  imgPerS: number;
  perRepeat: number[];
  /** Rank 0's median step time and phases, ms. */
  ms: { fwd: number; bwd: number; opt: number; step: number };
  /** Rank 0's median minor page faults per step. */
  faults: number;
  /** Median over the timed iterations of all ranks (Logger), ms; null if none recorded. */
  commMs: number | null;
  overlapMs: number | null;
  /** Median of comm - overlap: the communication backward waited for, ms. */
  exposedMs: number | null;
  /** Median over repeats of the bytes each machine sent per step (with RunOptions.txBytes), else null. */
  bytesPerStep: number | null;
  loss: number;
}

export interface CaseResult {
  key: string;
  case: BenchCase;
  tsddp: SideResult;
  pytorch: SideResult | null;
  /** tsddp / PyTorch throughput: median of the per-repeat ratios (> 1: tsddp faster). */
  ratio: number | null;
  perRepeatRatio: number[];
}

export interface RunResult {
  sides: { tsddp: ReadyInfo; pytorch: (ReadyInfo & { interpreter: string }) | null };
  cases: Record<string, CaseResult>;
}

const WORKER = fileURLToPath(siblingModule('./worker.ts', import.meta.url));
/** Node flags for the worker: the sources need tsx, the compiled package does not. */
const WORKER_LOADER = isCompiled(import.meta.url) ? [] : ['--import', import.meta.resolve('tsx')];

/** Unique cases in a stable order, grouped by world size and threads (one gang pair each). */
export function uniqueCases(plans: ScenarioPlan[]): BenchCase[] {
  const byKey = new Map<string, BenchCase>();
  for (const p of plans) for (const r of p.rows) byKey.set(caseKey(r.case), r.case);
  return [...byKey.values()].sort((a, b) => a.world - b.world || b.threads - a.threads);
}

type Group = { ts: Gang; py: Gang | null };

export async function runBench(plans: ScenarioPlan[], o: RunOptions): Promise<RunResult> {
  const log = o.log ?? (() => {});
  const cases = uniqueCases(plans);
  // Gangs by world size and threads, started when first needed and kept for the run.
  const groups = new Map<string, Group>();
  const timed = new Map<string, { sides: StepsAnswer[][][]; loss: number[] }>();
  const started = performance.now();
  try {
    // Round-robin: every case gets one repeat per round, so a busy period on a shared
    // machine is spread over all cases (and world sizes) instead of skewing one of them.
    for (let round = 0; round < o.repeats; round++) {
      for (const [i, c] of cases.entries()) {
        const gkey = `${c.world}x${c.threads}`;
        let g = groups.get(gkey);
        if (!g) {
          g = await startGroup(c.world, c.threads, o);
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
    for (const g of groups.values()) await closeGroup(g).catch(() => {});
  }
  const first = groups.values().next().value;
  if (!first) throw new Error('runBench: no cases to measure');
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

async function startGroup(world: number, threads: number, o: RunOptions): Promise<Group> {
  // Both sides get the same environment: threads, and whatever allocator settings the
  // caller has (GLIBC_TUNABLES, LD_PRELOAD) are inherited by both.
  const env = {
    ...process.env,
    ...o.env,
    OMP_NUM_THREADS: String(threads),
    TORCH_CPP_LOG_LEVEL: process.env.TORCH_CPP_LOG_LEVEL ?? 'ERROR',
  };
  const ts = await Gang.start({
    name: 'tsddp',
    command: process.execPath,
    args: [...WORKER_LOADER, WORKER],
    world,
    env,
    ...o.placement,
  });
  if (!o.reference) return { ts, py: null };
  try {
    const py = await Gang.start({
      name: 'PyTorch',
      command: o.reference.python,
      args: [REFERENCE_SCRIPT],
      world,
      env,
      ...o.placement,
    });
    return { ts, py };
  } catch (e) {
    ts.kill();
    throw e;
  }
}

async function closeGroup(g: Group): Promise<void> {
  await Promise.all([g.ts.close(), g.py?.close()]);
}

/**
 * One repeat of a case: both sides build it and warm up (untimed, the first step rebuilds
 * the buckets), then time their steps in ABBA order (one side alone: all at once).
 * Answers: [side][rank], each side's halves joined.
 */
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
      const sent = await o.txBytes?.();
      const answers = await gangs[s].request<StepsAnswer>({ cmd: 'steps', n });
      if (sent !== undefined && o.txBytes) answers[0].txBytes = (await o.txBytes()) - sent;
      out[s] = out[s].length === 0 ? answers : out[s].map((a, rank) => joinSteps(a, answers[rank]));
    }
    return out;
  } finally {
    for (const gang of gangs) await gang.request({ cmd: 'close' }).catch(() => {});
  }
}

/** One rank's answers to two `steps` requests, as if it were one. */
function joinSteps(a: StepsAnswer, b: StepsAnswer): StepsAnswer {
  const txBytes = a.txBytes === undefined ? undefined : a.txBytes + (b.txBytes ?? 0);
  return { steps: [...a.steps, ...b.steps], comm: [...a.comm, ...b.comm], loss: b.loss, txBytes };
}

/** Images per second of one repeat: every rank's images over the slowest rank's time. */
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
  // Iterations 1..warmup are the warm-up's (the first one uses a single bucket).
  const comm = reps.flatMap((ranks) => ranks.flatMap((a) => a.comm)).filter((x) => x.iteration > o.warmup);
  return {
    imgPerS: median(perRepeat),
    perRepeat,
    ms: { fwd: ms('fwd'), bwd: ms('bwd'), opt: ms('opt'), step: ms('step') },
    faults: median(rank0.map((x) => x.faults)),
    commMs: comm.length > 0 ? median(comm.map((x) => x.commMs)) : null,
    overlapMs: comm.length > 0 ? median(comm.map((x) => x.overlapMs)) : null,
    exposedMs: comm.length > 0 ? median(comm.map((x) => x.commMs - x.overlapMs)) : null,
    bytesPerStep:
      reps[0][0].txBytes === undefined
        ? null
        : median(reps.map((r) => (r[0].txBytes ?? 0) / (o.steps * c.world))),
    loss,
  };
}
