// One rank of test/powersgd.test.ts: DDP training with the 'powerSGD' comm hook from the
// fixture's initial weights and batches (test/fixtures/powersgd/gen.py), reporting the
// losses, final parameters and ddp.stats().powerSGD for the test to compare with
// PyTorch's powerSGD_hook. With `compare`, the same steps also run with plain all-reduce.
import { readFileSync } from 'node:fs';
import * as t from '../../src/index.ts';
import { type ErrorInfo, errorInfo, finish, rank, values, workerConfig, writeResult } from './common.ts';

const { nn } = t;

export interface Config {
  fixture: string;
  /** A fixture configuration to replay, or 'convergence': a longer run on a learnable task. */
  config: string;
}

export interface Fixture {
  init: Record<string, { shape: number[]; data: number[] }>;
  data: { x: number[]; y: number[] }[][];
  steps: number;
  rows: number;
  configs: Record<
    string,
    {
      world: number;
      bucketCapMb: number;
      findUnusedParameters: boolean;
      state: Record<string, number | boolean>;
      losses: number[];
      final: Record<string, number[]>;
      compression: { numelBefore: number; numelAfter: number; iter: number };
      bucketSizes: number[];
    }
  >;
}

export interface Run {
  losses: number[];
  final: Record<string, number[]>;
  stats: t.distributed.DDPStats['powerSGD'];
  bucketSizes: number[];
}

export interface Result {
  powerSGD: Run;
  /** 'convergence': the same run with plain all-reduce. */
  allreduce?: Run;
  /** Bad options, refused by the constructor before any collective. */
  errors: ErrorInfo[];
}

const cfg = workerConfig<Config>();
const fx = JSON.parse(readFileSync(cfg.fixture, 'utf8')) as Fixture;
const convergence = cfg.config === 'convergence';
// The convergence run: PowerSGD as a user would start it (error feedback, warm start,
// rank 4) on 120 steps of 16 rows per rank, the targets a fixed linear map of the inputs.
const c = convergence
  ? {
      world: 2,
      bucketCapMb: 0.004, // several buckets, which PyTorch's hook cannot run over Gloo
      findUnusedParameters: false,
      state: { matrix_approximation_rank: 4, start_powerSGD_iter: 10, random_seed: 0 },
    }
  : fx.configs[cfg.config];
const STEPS = convergence ? 120 : fx.steps;
const ROWS = convergence ? 16 : fx.rows;

function batch(step: number): [t.Tensor, t.Tensor] {
  if (!convergence) {
    const b = fx.data[rank][step];
    return [t.tensor(b.x).reshape([ROWS, 8]), t.tensor(b.y).reshape([ROWS, 4])];
  }
  const g = new t.Generator().manualSeed(1000 + 2 * step + rank);
  const x = t.randn([ROWS, 8], { generator: g });
  const w = t.randn([8, 4], { generator: new t.Generator().manualSeed(42) });
  return [x, x.matmul(w)];
}

function model(): t.nn.Module {
  const m = new nn.Sequential(
    new nn.Linear(8, 32),
    new nn.ReLU(),
    new nn.Linear(32, 32),
    new nn.ReLU(),
    new nn.Linear(32, 32),
    new nn.ReLU(),
    new nn.Linear(32, 4),
  );
  t.tidy(() => {
    const sd = new Map(Object.entries(fx.init).map(([k, v]) => [k, t.tensor(v.data).reshape(v.shape)]));
    m.loadStateDict(sd);
  });
  return m;
}

// PyTorch's PowerSGDState arguments, as tsddp's PowerSGDOptions.
const camel = (k: string) => k.replace(/_([a-z])/g, (_, ch: string) => ch.toUpperCase());
const rename: Record<string, string> = { startPowersgdIter: 'startPowerSGDIter' };
const powerSGD = Object.fromEntries(
  Object.entries(c.state).map(([k, v]) => [rename[camel(k)] ?? camel(k), v]),
) as t.distributed.PowerSGDOptions;

function train(commHook: t.distributed.CommHook): Run {
  const m = model();
  const ddp = new t.distributed.DistributedDataParallel(m, {
    bucketCapMb: c.bucketCapMb,
    findUnusedParameters: c.findUnusedParameters,
    commHook,
    ...(commHook === 'powerSGD' ? { powerSGD } : {}),
  });
  const opt = new t.optim.SGD(m.parameters(), { lr: convergence ? 0.02 : 0.1, momentum: 0.9 });
  const losses: number[] = [];
  for (let step = 0; step < STEPS; step++) {
    using _ = t.scope();
    opt.zeroGrad();
    const [x, y] = batch(step);
    const loss = t.nn.functional.mseLoss(ddp.forward(x) as t.Tensor, y);
    loss.backward();
    opt.step();
    losses.push(loss.item());
  }
  const s = ddp.stats();
  const final = Object.fromEntries(m.namedParameters().map(([k, p]) => [k, values(p)]));
  return { losses, final, stats: s.powerSGD, bucketSizes: s.bucketSizes };
}

function refused(opts: t.distributed.DDPOptions): ErrorInfo {
  try {
    new t.distributed.DistributedDataParallel(model(), opts);
  } catch (e) {
    return errorInfo(e);
  }
  return { name: 'none', message: 'accepted' };
}

t.setNumThreads(1);
t.distributed.initProcessGroup({ backend: 'gloo', timeoutMs: 30_000 });
const errors = [
  refused({ commHook: 'powerSGD', powerSGD: { startPowerSGDIter: 1 } }),
  refused({ powerSGD: { matrixApproximationRank: 2 } }),
  refused({ commHook: 'powerSGD', powerSGD: { matrixApproximationRank: 0 } }),
  refused({ commHook: 'powerSGD', powerSGD: { rank: 2 } as t.distributed.PowerSGDOptions }),
];
const result: Result = { powerSGD: train('powerSGD'), errors };
if (convergence) result.allreduce = train('allreduce');
writeResult(result);
t.distributed.destroyProcessGroup();
finish();
