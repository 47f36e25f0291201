// DistributedDataParallel between real processes (Gloo on loopback, 2 and 3 ranks),
// checked against single-process references computed here with the same models and data
// (test/workers/models.ts), with PyTorch's own DDP test tolerances (docs/reliability.md R1).
import assert from 'node:assert/strict';
import { before, describe, test } from 'node:test';
import * as t from '../src/index.ts';
import { okResults, runJob } from './helpers/multiproc.ts';
import type { Config, Variant } from './workers/ddp-train.ts';
import {
  ATOL,
  Branchy,
  convBn,
  inputs,
  LayerDrop,
  mlp,
  mse,
  RTOL,
  sgd,
  stateValues,
  targets,
  usesExtra,
} from './workers/models.ts';

type State = Record<string, number[]>;
const ROWS = 3;
const STEPS = 3;
const TINY = 1e-4; // MiB: ~100 bytes, so every parameter gets a bucket of its own

interface EquivalenceResult {
  /** Set when the variant threw in the worker. */
  error?: { name: string; message: string };
  before: State;
  init: State;
  final: State;
  bucketCounts: number[];
  bucketSizes: number[];
  rebuilt: number;
  staticGraph: number | null;
  gradientAsBucketView: number;
}
interface HookResult {
  grads: State;
  commHook: string | null;
  bucketCount: number;
}
interface UnusedResult {
  final: State;
  extraGradDefined: boolean[];
  findUnused: number;
}
interface TrainResult {
  rank: number;
  worldSize: number;
  equivalence: Record<string, EquivalenceResult>;
  bn: Record<'broadcast' | 'local', { params: State; trained: State; afterEval: State }>;
  noSync: { final: State; localGrads: number[][] };
  unused: UnusedResult;
  unusedLayerDrop: UnusedResult;
  hooks: { fp32: HookResult; local: State; fp16?: HookResult; bf16?: HookResult };
  stats: t.distributed.DDPStats & { liveTensors: number[]; paramBytes: number };
}

interface ErrorInfo {
  name: string;
  message: string;
  op?: string;
  rank?: number;
  isTorchError: boolean;
  isDistributedError: boolean;
}
interface ErrorsResult {
  unused: { step: number; phase: string; error: ErrorInfo; elapsedMs: number } | null;
  shapeMismatch: ErrorInfo | null;
  countMismatch: ErrorInfo | null;
  badOptions: Record<'bucketCapMb' | 'noParameters' | 'commHook', ErrorInfo | null>;
  allReduceAfter: number;
}

const VARIANTS: Variant[] = [
  { name: 'tiny buckets', bucketCapMb: TINY },
  { name: 'tiny buckets, gradientAsBucketView', bucketCapMb: TINY, gradientAsBucketView: true },
  { name: '25 MiB buckets', bucketCapMb: 25 },
  { name: '25 MiB buckets, gradientAsBucketView', bucketCapMb: 25, gradientAsBucketView: true },
  { name: 'staticGraph', staticGraph: true },
  {
    name: 'staticGraph, tiny buckets, gradientAsBucketView',
    staticGraph: true,
    bucketCapMb: TINY,
    gradientAsBucketView: true,
  },
];

const CONFIG2: Config = {
  rows: ROWS,
  steps: STEPS,
  equivalence: VARIANTS,
  bn: true,
  noSync: true,
  unused: true,
  hooks: ['fp16', 'bf16'],
  stats: true,
};
const CONFIG3: Config = {
  rows: ROWS,
  steps: STEPS,
  equivalence: [VARIANTS[0], VARIANTS[3], VARIANTS[4]],
  bn: true,
  unused: true,
  hooks: ['fp16'],
};

const jobs: {
  two?: Promise<TrainResult[]>;
  three?: Promise<TrainResult[]>;
  errors?: Promise<ErrorsResult[]>;
} = {};
before(() => {
  jobs.two = runJob<TrainResult>('ddp-train', { worldSize: 2, config: CONFIG2, timeoutMs: 90_000 }).then(
    okResults,
  );
  jobs.three = runJob<TrainResult>('ddp-train', { worldSize: 3, config: CONFIG3, timeoutMs: 90_000 }).then(
    okResults,
  );
  jobs.errors = runJob<ErrorsResult>('ddp-errors', { worldSize: 2, timeoutMs: 90_000 }).then(okResults);
  for (const p of Object.values(jobs)) p?.catch(() => {});
});

/** The variant's result on one rank; a variant that threw in the worker fails the test with its error. */
function variantOf(res: TrainResult, name: string): EquivalenceResult {
  const e = res.equivalence[name];
  assert.ok(e, `rank ${res.rank}: no result for '${name}'`);
  if (e.error) assert.fail(`rank ${res.rank}, '${name}' threw ${e.error.name}: ${e.error.message}`);
  return e;
}

// --- comparisons ------------------------------------------------------------------------

/** |actual - expected| <= atol + rtol |expected| everywhere (torch.testing's rule). */
function assertClose(actual: State, expected: State, what: string, rtol = RTOL, atol = ATOL): void {
  assert.deepEqual(Object.keys(actual), Object.keys(expected), `${what}: parameter names`);
  for (const [name, want] of Object.entries(expected)) {
    const got = actual[name];
    assert.equal(got.length, want.length, `${what}: ${name} size`);
    let worst = -1;
    let worstExcess = 0;
    for (let i = 0; i < want.length; i++) {
      const excess = Math.abs(got[i] - want[i]) - (atol + rtol * Math.abs(want[i]));
      if (!(excess <= 0) && (worst < 0 || excess > worstExcess || Number.isNaN(excess))) {
        worst = i;
        worstExcess = excess;
      }
    }
    assert.ok(
      worst < 0,
      `${what}: ${name}[${worst}] = ${got[worst]}, expected ${want[worst]} (rtol ${rtol}, atol ${atol})`,
    );
  }
}

function differs(a: State, b: State): boolean {
  return Object.keys(a).some((k) => a[k].some((v, i) => v !== b[k][i]));
}

// --- single-process references -------------------------------------------------------------

/** The MLP trained on the concatenated batch of all ranks. */
function referenceMlp(world: number): { init: State; final: State } {
  const model = mlp(100);
  const init = stateValues(model);
  const opt = sgd(model);
  for (let step = 0; step < STEPS; step++) {
    using _ = t.scope();
    const n = world * ROWS;
    mse(model.forward(inputs(step, 0, n)), targets(step, 0, n)).backward();
    opt.step();
    opt.zeroGrad();
  }
  return { init, final: stateValues(model) };
}

/** One step per outer step on the combined batch of 4 micro-batches of every rank. */
function referenceNoSync(world: number): State {
  const model = mlp(100);
  const opt = sgd(model);
  for (let step = 0; step < STEPS; step++) {
    using _ = t.scope();
    const n = world * 4 * ROWS;
    mse(model.forward(inputs(step, 0, n)), targets(step, 0, n)).backward();
    opt.step();
    opt.zeroGrad();
  }
  return stateValues(model);
}

/** Branchy with each rank's slice run through the branches that rank uses; mean of the rank losses. */
function referenceUnused(
  world: number,
  make: (seed: number) => Branchy | LayerDrop = (seed) => new Branchy(seed),
): { final: State; extraGradDefined: boolean[] } {
  const model = make(100);
  const opt = sgd(model);
  const extraGradDefined: boolean[] = [];
  for (let step = 0; step < STEPS; step++) {
    using _ = t.scope();
    let loss = t.zeros([]);
    for (let r = 0; r < world; r++) {
      const y = model.forward(inputs(step, r * ROWS, ROWS), usesExtra(step, r));
      loss = loss.add(mse(y, targets(step, r * ROWS, ROWS)));
    }
    loss.div(world).backward();
    extraGradDefined.push(model.extra.parameters().every((p) => p.grad !== null));
    opt.step();
    opt.zeroGrad();
  }
  return { final: stateValues(model), extraGradDefined };
}

/**
 * The conv+BatchNorm net as DDP runs it: before each forward every rank takes rank 0's
 * buffers (broadcastBuffers), normalises with its own batch statistics and updates its
 * own running statistics; gradients are averaged. Returns the parameters and each rank's
 * buffers after training.
 */
function referenceBn(world: number): { params: State; buffers: State[] } {
  const model = convBn(100);
  const opt = sgd(model);
  const bufs = model.buffers();
  let rank0 = bufs.map((b) => b.clone().keep());
  let perRank: t.Tensor[][] = [];
  for (let step = 0; step < STEPS; step++) {
    using _ = t.scope();
    for (const set of perRank) for (const b of set) b.dispose();
    perRank = [];
    for (let r = 0; r < world; r++) {
      t.noGrad(() => {
        for (const [i, b] of bufs.entries()) b.copy_(rank0[i]);
      });
      const y = model.forward(inputs(step, r * ROWS, ROWS, [1, 4, 4]));
      mse(y, targets(step, r * ROWS, ROWS))
        .div(world)
        .backward();
      perRank.push(bufs.map((b) => b.clone().keep()));
    }
    for (const b of rank0) b.dispose();
    rank0 = perRank[0].map((b) => b.clone().keep());
    opt.step();
    opt.zeroGrad();
  }
  const names = model.namedBuffers().map(([n]) => n);
  const buffers = perRank.map((set) => Object.fromEntries(set.map((b, i) => [names[i], floatsOf(b)])));
  return { params: stateValues(model), buffers };
}

function floatsOf(x: t.Tensor): number[] {
  return t.tidy(() => Array.from(x.to('float64').toTypedArray() as Float64Array));
}

// --- tests ------------------------------------------------------------------------------------

for (const world of [2, 3]) {
  describe(`DistributedDataParallel on ${world} ranks`, () => {
    const results = () => (world === 2 ? jobs.two : jobs.three) as Promise<TrainResult[]>;
    const variants = (world === 2 ? CONFIG2 : CONFIG3).equivalence ?? [];

    test('starts every rank from rank 0 parameters', async () => {
      const rs = await results();
      const ref = referenceMlp(world);
      const name = VARIANTS[0].name;
      for (const res of rs) assert.deepEqual(variantOf(res, name).init, ref.init, `rank ${res.rank}`);
      for (const res of rs.slice(1)) {
        assert.ok(
          differs(variantOf(res, name).before, variantOf(rs[0], name).before),
          'ranks start from different inits, so the broadcast is what makes them equal',
        );
      }
    });

    for (const v of variants) {
      test(`${STEPS} SGD steps equal single-process training on the whole batch: ${v.name}`, async () => {
        const rs = await results();
        const ref = referenceMlp(world);
        for (const res of rs) {
          const e = variantOf(res, v.name);
          assert.deepEqual(e.init, ref.init, `${v.name}: rank ${res.rank} starts from rank 0's parameters`);
          assertClose(e.final, ref.final, `${v.name}, rank ${res.rank}`);
          assert.deepEqual(
            e.final,
            variantOf(rs[0], v.name).final,
            `${v.name}: rank ${res.rank} == rank 0 exactly`,
          );
          assert.equal(e.gradientAsBucketView, v.gradientAsBucketView ? 1 : 0);
          if (v.staticGraph) assert.equal(e.staticGraph, 1, 'the Logger records the static graph');
          // One bucket in the first iteration, then buckets rebuilt in gradient-ready order:
          // the order is recorded in the first iteration, or in the second with a static
          // graph (the first one only counts the gradient hooks), as in libtorch's Reducer.
          const rebuildAt = v.staticGraph ? 2 : 1;
          if (!v.staticGraph) assert.equal(e.rebuilt, 1, 'the Logger records the rebuild');
          assert.equal(
            e.bucketSizes.reduce((a, b) => a + b, 0),
            Object.values(ref.final).reduce((a, p) => a + 4 * p.length, 0),
          );
          if (v.bucketCapMb === TINY) {
            const counts = e.bucketCounts;
            assert.deepEqual(counts.slice(0, rebuildAt), Array(rebuildAt).fill(1), `bucket counts ${counts}`);
            assert.ok(
              counts.slice(rebuildAt).every((c) => c > 1),
              `tiny buckets: ${counts} buckets per iteration`,
            );
          } else {
            assert.deepEqual(e.bucketCounts, Array(STEPS).fill(1), 'a tiny model fits one 25 MiB bucket');
          }
        }
        assert.ok(differs(ref.final, ref.init), 'training changed the parameters');
      });
    }

    test('BatchNorm: parameters identical on all ranks; buffers follow rank 0 (broadcastBuffers)', async () => {
      const rs = await results();
      const ref = referenceBn(world);
      for (const res of rs) {
        const bn = res.bn.broadcast;
        assert.deepEqual(bn.params, rs[0].bn.broadcast.params, `rank ${res.rank} params == rank 0's`);
        assertClose(bn.params, ref.params, `rank ${res.rank} params`);
        // After training each rank holds rank 0's buffers updated with its own batch...
        assertClose(bn.trained, ref.buffers[res.rank], `rank ${res.rank} buffers`);
        // ...and the next forward starts from rank 0's.
        assert.deepEqual(
          bn.afterEval,
          rs[0].bn.broadcast.trained,
          `rank ${res.rank} buffers after eval forward`,
        );
        assert.deepEqual(bn.afterEval['1.num_batches_tracked'], [STEPS]);
      }
      assert.ok(differs(rs[1].bn.broadcast.trained, rs[0].bn.broadcast.trained), 'local statistics differ');
    });

    test('BatchNorm with broadcastBuffers: false keeps each rank its own buffers', async () => {
      const rs = await results();
      for (const res of rs) {
        assert.deepEqual(res.bn.local.params, rs[0].bn.local.params);
        assert.deepEqual(
          res.bn.local.afterEval,
          res.bn.local.trained,
          `rank ${res.rank}: no sync in forward`,
        );
      }
      assert.ok(differs(rs[1].bn.local.afterEval, rs[0].bn.local.afterEval));
    });

    test('findUnusedParameters: a branch unused on some steps (all ranks, or one) trains like the reference', async () => {
      const rs = await results();
      const ref = referenceUnused(world);
      for (const res of rs) {
        assert.equal(res.unused.findUnused, 1);
        assertClose(res.unused.final, ref.final, `rank ${res.rank}`);
        assert.deepEqual(res.unused.final, rs[0].unused.final);
        // Unused everywhere at step 1: no gradient at all, as in the reference.
        assert.deepEqual(res.unused.extraGradDefined, ref.extraGradDefined);
      }
      assert.deepEqual(ref.extraGradDefined, [true, false, true]);
    });

    test('findUnusedParameters: a transformer layer dropped on some steps (LayerDrop) trains like the reference', async () => {
      const rs = await results();
      const ref = referenceUnused(world, (seed) => new LayerDrop(seed));
      for (const res of rs) {
        assert.equal(res.unusedLayerDrop.findUnused, 1);
        assertClose(res.unusedLayerDrop.final, ref.final, `rank ${res.rank}`);
        assert.deepEqual(res.unusedLayerDrop.final, rs[0].unusedLayerDrop.final);
        assert.deepEqual(res.unusedLayerDrop.extraGradDefined, ref.extraGradDefined);
      }
    });

    test('comm hooks: fp16/bf16 compressed all-reduce is within the format precision of fp32', async () => {
      const rs = await results();
      // Rounding to 16 bits, dividing by the world size, then (world - 1) 16-bit additions:
      // at most (world + 1) unit roundoffs of the rank gradients' magnitudes, plus fp16's
      // subnormal spacing.
      const formats = { fp16: { u: 2 ** -11, tiny: 2 ** -24 }, bf16: { u: 2 ** -8, tiny: 0 } };
      const hooks = world === 2 ? (['fp16', 'bf16'] as const) : (['fp16'] as const);
      for (const res of rs) assert.deepEqual(res.hooks.fp32.grads, rs[0].hooks.fp32.grads);
      for (const hook of hooks) {
        const { u, tiny } = formats[hook];
        for (const res of rs) {
          const h = res.hooks[hook] as HookResult;
          assert.equal(h.commHook, hook, 'the Logger records the hook');
          assert.ok(h.bucketCount > 1, 'the hook ran on several buckets');
          assert.deepEqual(h.grads, rs[0].hooks[hook]?.grads, `${hook}: rank ${res.rank} == rank 0`);
          const fp32 = res.hooks.fp32.grads;
          for (const [name, want] of Object.entries(fp32)) {
            for (let i = 0; i < want.length; i++) {
              const magnitude = rs.reduce((a, x) => a + Math.abs(x.hooks.local[name][i]), 0) / world;
              const bound = (world + 1) * u * magnitude + world * tiny + 1e-7 * Math.abs(want[i]);
              const err = Math.abs(h.grads[name][i] - want[i]);
              assert.ok(
                err <= bound,
                `${hook}: ${name}[${i}] = ${h.grads[name][i]}, fp32 ${want[i]}, bound ${bound}`,
              );
            }
          }
          assert.ok(differs(h.grads, fp32), `${hook}: compression must change some gradient`);
        }
      }
      // The local gradients differ between ranks: the comparison above is not trivial.
      assert.ok(differs(rs[0].hooks.local, rs[1].hooks.local));
    });
  });
}

describe('DistributedDataParallel on 2 ranks: accumulation and stats', () => {
  test('noSync: 4 micro-batches (3 without sync) equal one step on the combined batch', async () => {
    const rs = (await jobs.two) as TrainResult[];
    const ref = referenceNoSync(2);
    for (const res of rs) {
      assertClose(res.noSync.final, ref, `rank ${res.rank}`);
      assert.deepEqual(res.noSync.final, rs[0].noSync.final);
    }
    // Under noSync the gradients stayed local: they differ between ranks.
    for (let s = 0; s < STEPS; s++) {
      assert.notDeepEqual(rs[0].noSync.localGrads[s], rs[1].noSync.localGrads[s], `step ${s}`);
    }
  });

  test('stats(): Logger timings, bucket sizes summing to the parameter bytes, flat live tensors', async () => {
    const rs = (await jobs.two) as TrainResult[];
    for (const res of rs) {
      const s = res.stats;
      assert.ok(s.forwardComputeMs > 0, `forwardComputeMs ${s.forwardComputeMs}`);
      assert.ok(s.backwardComputeMs > 0, `backwardComputeMs ${s.backwardComputeMs}`);
      assert.ok(s.backwardCommMs > 0, `backwardCommMs ${s.backwardCommMs}`);
      assert.ok(s.backwardCommOverlapMs >= 0);
      assert.ok(s.bucketCount > 1);
      assert.equal(s.bucketSizes.length, s.bucketCount);
      assert.equal(
        s.bucketSizes.reduce((a, b) => a + b, 0),
        s.paramBytes,
      );
      assert.equal(s.raw.ints.total_parameter_size_bytes, s.paramBytes);
      assert.equal(s.raw.ints.world_size, 2);
      assert.equal(s.raw.ints.rank, res.rank);
      assert.equal(s.raw.strs.backend_name, 'gloo');
      // Steady state: the same number of live tensors after every iteration.
      const steady = s.liveTensors.slice(2);
      assert.deepEqual(steady, Array(steady.length).fill(steady[0]), `live tensors ${s.liveTensors}`);
    }
  });
});

describe('DistributedDataParallel errors (2 ranks)', () => {
  test('without findUnusedParameters, an unused branch is a thrown TorchError, not a hang', async () => {
    const rs = (await jobs.errors) as ErrorsResult[];
    for (const [r, res] of rs.entries()) {
      assert.ok(res.unused, `rank ${r}: training with an unused branch must fail`);
      // The branch is unused at step 1; the Reducer refuses the next iteration.
      assert.equal(res.unused.step, 2);
      assert.equal(res.unused.phase, 'forward');
      assert.equal(res.unused.error.name, 'TorchError');
      assert.equal(res.unused.error.isTorchError, true);
      assert.match(res.unused.error.message, /Expected to have finished reduction in the prior iteration/);
      assert.match(res.unused.error.message, /findUnusedParameters: true/);
      assert.match(res.unused.error.message, new RegExp(`did not receive grad for rank ${r}: 4 5`));
      assert.ok(res.unused.elapsedMs < 10_000);
    }
  });

  test('a model that differs between ranks is refused on every rank with a DistributedError naming it', async () => {
    const rs = (await jobs.errors) as ErrorsResult[];
    for (const [r, res] of rs.entries()) {
      for (const e of [res.shapeMismatch, res.countMismatch]) {
        assert.ok(e, `rank ${r}: construction must fail`);
        assert.equal(e.name, 'DistributedError');
        assert.equal(e.isDistributedError, true);
        assert.equal(e.op, 'DistributedDataParallel');
        assert.equal(e.rank, r);
        assert.match(e.message, /the model differs between ranks/);
      }
      assert.match(
        res.shapeMismatch?.message ?? '',
        /rank 1: .*params\[0\] .*sizes \[9, 4\].*not to match.*process 0/,
      );
      assert.match(
        res.countMismatch?.message ?? '',
        /Rank 1 has 6 params, while rank 0 has inconsistent 4 params/,
      );
    }
  });

  test('bad options are refused before any communication; the group still works', async () => {
    const rs = (await jobs.errors) as ErrorsResult[];
    for (const res of rs) {
      assert.equal(res.badOptions.bucketCapMb?.name, 'RangeError');
      assert.match(res.badOptions.bucketCapMb?.message ?? '', /bucketCapMb must be > 0, got 0/);
      assert.equal(res.badOptions.noParameters?.name, 'TypeError');
      assert.match(res.badOptions.noParameters?.message ?? '', /no parameter that requires a gradient/);
      assert.equal(res.badOptions.commHook?.name, 'TypeError');
      assert.match(
        res.badOptions.commHook?.message ?? '',
        /commHook must be 'allreduce', 'fp16', 'bf16' or 'powerSGD', got 'fp8'/,
      );
      assert.equal(res.allReduceAfter, 3);
    }
  });
});
