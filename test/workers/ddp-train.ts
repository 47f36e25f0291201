// One rank of test/ddp.test.ts's training job: runs the configured DDP scenarios one
// after another in one process group and reports parameters, buffers, gradients and
// stats for the test to compare with single-process references.
import * as t from '../../src/index.ts';
import { errorInfo, finish, rank, workerConfig, worldSize, writeResult } from './common.ts';
import {
  Branchy,
  convBn,
  floats,
  IN,
  inputs,
  LayerDrop,
  mlp,
  mse,
  sgd,
  stateValues,
  targets,
  usesExtra,
} from './models.ts';

const { DistributedDataParallel } = t.distributed;
type DDPOptions = t.distributed.DDPOptions;

export interface Variant {
  name: string;
  bucketCapMb?: number;
  gradientAsBucketView?: boolean;
  staticGraph?: boolean;
}

export interface Config {
  /** Rows of each rank's batch. */
  rows: number;
  steps: number;
  equivalence?: Variant[];
  bn?: boolean;
  noSync?: boolean;
  unused?: boolean;
  hooks?: ('fp16' | 'bf16')[];
  stats?: boolean;
}

const cfg = workerConfig<Config>();
const rows = cfg.rows;
const optsOf = (v: Variant): DDPOptions => ({
  bucketCapMb: v.bucketCapMb,
  gradientAsBucketView: v.gradientAsBucketView,
  staticGraph: v.staticGraph,
});

t.distributed.initProcessGroup({ backend: 'gloo', timeoutMs: 30_000 });
const result: Record<string, unknown> = { rank, worldSize };

// 1. Plain data parallelism: each rank trains on its slice of every batch.
function trainVariant(v: Variant): unknown {
  // A different init per rank: DDP must start everyone from rank 0's parameters.
  const model = mlp(100 + rank);
  const before = stateValues(model);
  const ddp = new DistributedDataParallel(model, optsOf(v));
  try {
    const init = stateValues(model);
    const opt = sgd(model);
    const bucketCounts: number[] = [];
    for (let step = 0; step < cfg.steps; step++) {
      using _ = t.scope();
      const y = ddp.forward(inputs(step, rank * rows, rows)) as t.Tensor;
      mse(y, targets(step, rank * rows, rows)).backward();
      opt.step();
      opt.zeroGrad();
      bucketCounts.push(ddp.stats().bucketCount);
    }
    const s = ddp.stats();
    return {
      before,
      init,
      final: stateValues(model),
      bucketCounts,
      bucketSizes: s.bucketSizes,
      rebuilt: s.raw.ints.has_rebuilt_buckets,
      staticGraph: s.raw.ints.static_graph ?? null,
      gradientAsBucketView: s.raw.ints.gradient_as_bucket_view,
    };
  } finally {
    ddp.close();
  }
}

// A variant that throws is reported (the test fails with its message) and the others
// still run; static-graph variants run last, after every other scenario, so that a
// failure there cannot disturb the rest.
const equivalence: Record<string, unknown> = {};
function runVariants(static_: boolean): void {
  for (const v of cfg.equivalence ?? []) {
    if (Boolean(v.staticGraph) !== static_) continue;
    try {
      equivalence[v.name] = trainVariant(v);
    } catch (e) {
      equivalence[v.name] = { error: errorInfo(e) };
    }
  }
}
runVariants(false);
result.equivalence = equivalence;

// 2. BatchNorm buffers: broadcast from rank 0 before every forward (or not).
if (cfg.bn) {
  const out: Record<string, unknown> = {};
  for (const broadcastBuffers of [true, false]) {
    const model = convBn(100 + rank);
    const ddp = new DistributedDataParallel(model, { broadcastBuffers, bucketCapMb: 1e-4 });
    const opt = sgd(model);
    for (let step = 0; step < cfg.steps; step++) {
      using _ = t.scope();
      const y = ddp.forward(inputs(step, rank * rows, rows, [1, 4, 4])) as t.Tensor;
      mse(y, targets(step, rank * rows, rows)).backward();
      opt.step();
      opt.zeroGrad();
    }
    const trained = stateValues(model, true);
    // An evaluation forward: buffers are synced first (when broadcasting), then left alone.
    model.eval();
    t.noGrad(() => t.tidy(() => ddp.forward(inputs(99, 0, 2, [1, 4, 4]))));
    out[broadcastBuffers ? 'broadcast' : 'local'] = {
      params: stateValues(model),
      trained,
      afterEval: stateValues(model, true),
    };
    ddp.close();
  }
  result.bn = out;
}

// 3. Gradient accumulation: 4 micro-batches per step, the first 3 under noSync.
if (cfg.noSync) {
  const model = mlp(100 + rank);
  const ddp = new DistributedDataParallel(model, { bucketCapMb: 1e-4 });
  const opt = sgd(model);
  const micro = 4;
  const localGrads: number[][] = [];
  for (let step = 0; step < cfg.steps; step++) {
    for (let m = 0; m < micro; m++) {
      using _ = t.scope();
      const offset = (rank * micro + m) * rows;
      const pass = () => {
        const y = ddp.forward(inputs(step, offset, rows)) as t.Tensor;
        mse(y, targets(step, offset, rows))
          .div(micro)
          .backward();
      };
      if (m < micro - 1) ddp.noSync(pass);
      else pass();
      if (m === micro - 2) localGrads.push(floats(model.parameters()[0].grad as t.Tensor));
    }
    opt.step();
    opt.zeroGrad();
  }
  result.noSync = { final: stateValues(model), localGrads };
  ddp.close();
}

// 4. A branch that is unused on some steps, on all ranks or only some: Branchy's extra
// head, and a transformer's dropped layer (LayerDrop).
function trainUnused(model: Branchy | LayerDrop) {
  const ddp = new DistributedDataParallel(model, { findUnusedParameters: true, bucketCapMb: 1e-4 });
  const opt = sgd(model);
  const extraGradDefined: boolean[] = [];
  for (let step = 0; step < cfg.steps; step++) {
    using _ = t.scope();
    const y = ddp.forward(inputs(step, rank * rows, rows), usesExtra(step, rank)) as t.Tensor;
    mse(y, targets(step, rank * rows, rows)).backward();
    extraGradDefined.push(model.extra.parameters().every((p) => p.grad !== null));
    opt.step();
    opt.zeroGrad();
  }
  const s = ddp.stats();
  ddp.close();
  return { final: stateValues(model), extraGradDefined, findUnused: s.raw.ints.find_unused_parameters };
}
if (cfg.unused) {
  result.unused = trainUnused(new Branchy(100 + rank));
  result.unusedLayerDrop = trainUnused(new LayerDrop(100 + rank));
}

// 5. Gradient compression hooks against the fp32 all-reduce of the same gradients.
if (cfg.hooks) {
  const grads = (hook?: 'fp16' | 'bf16') => {
    const model = mlp(100);
    const ddp = new DistributedDataParallel(model, { bucketCapMb: 1e-4, commHook: hook });
    // Two passes over the same batch: the second runs with the rebuilt (several) buckets.
    let g: Record<string, number[]> = {};
    for (let pass = 0; pass < 2; pass++) {
      using _ = t.scope();
      model.zeroGrad();
      const y = ddp.forward(inputs(0, rank * rows, rows)) as t.Tensor;
      mse(y, targets(0, rank * rows, rows)).backward();
      g = Object.fromEntries(model.namedParameters().map(([n, p]) => [n, floats(p.grad as t.Tensor)]));
    }
    const s = ddp.stats();
    ddp.close();
    return { grads: g, commHook: s.raw.strs.comm_hook ?? null, bucketCount: s.bucketCount };
  };
  // This rank's own gradient, without communication (bounds the rounding error).
  const local = t.tidy(() => {
    const model = mlp(100);
    mse(model.forward(inputs(0, rank * rows, rows)), targets(0, rank * rows, rows)).backward();
    return Object.fromEntries(model.namedParameters().map(([n, p]) => [n, floats(p.grad as t.Tensor)]));
  });
  const out: Record<string, unknown> = { fp32: grads(), local };
  for (const h of cfg.hooks) out[h] = grads(h);
  result.hooks = out;
}

// 6. Logger stats and a flat live-tensor count.
if (cfg.stats) {
  const model = mlp(100 + rank, 16);
  const ddp = new DistributedDataParallel(model, { bucketCapMb: 1e-4 });
  const opt = sgd(model);
  const liveTensors: number[] = [];
  for (let step = 0; step < 8; step++) {
    {
      using _ = t.scope();
      const y = ddp.forward(inputs(step, rank * rows, rows)) as t.Tensor;
      mse(y, targets(step, rank * rows, rows)).backward();
      opt.step();
      opt.zeroGrad();
    }
    liveTensors.push(t.memory().tensors);
  }
  const s = ddp.stats();
  const paramBytes = model.parameters().reduce((a, p) => a + p.numel() * 4, 0);
  result.stats = { ...s, liveTensors, paramBytes, inFeatures: IN };
  ddp.close();
}

runVariants(true);

await t.distributed.barrier();
t.distributed.destroyProcessGroup();
writeResult(result);
finish(0);
