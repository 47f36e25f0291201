// One rank of test/zero.test.ts: ZeroRedundancyOptimizer under DDP, as
// test/fixtures/distributed/zero.py does in PyTorch (the initial state and this rank's
// batches come from the fixture); writes each case's losses, parameters, partition and
// (rank 0) consolidated state dict.
import { readFileSync } from 'node:fs';
import * as t from '../../src/index.ts';
import { type FixtureTensor, toTensor, values } from '../helpers/fixtures.ts';
import { rank, workerConfig, worldSize, writeResult } from './common.ts';

const d = t.distributed;
type Case = 'sgd' | 'adamw' | 'groups' | 'bucket' | 'join';
interface WorldFixture {
  init: Record<string, FixtureTensor>;
  inputs: [FixtureTensor, FixtureTensor][][];
}
const fx = JSON.parse(
  readFileSync(new URL('../fixtures/distributed/zero.json', import.meta.url), 'utf8'),
) as {
  worlds: Record<string, WorldFixture>;
};
const { cases } = workerConfig<{ cases: Case[] }>();
const world = fx.worlds[String(worldSize)];
const JOIN_BATCHES = [4, 2];

function model(): t.nn.Sequential {
  const m = new t.nn.Sequential(
    new t.nn.Linear(5, 7),
    new t.nn.ReLU(),
    new t.nn.Linear(7, 3),
    new t.nn.ReLU(),
    new t.nn.Linear(3, 2),
  );
  m.loadStateDict(Object.fromEntries(Object.entries(world.init).map(([k, v]) => [k, toTensor(v)])));
  return m;
}

function optimizer(c: Case, m: t.nn.Module, extra = {}): t.distributed.optim.ZeroRedundancyOptimizer {
  const params = m.parameters();
  const Zero = d.optim.ZeroRedundancyOptimizer;
  const sgd = { optimizerClass: t.optim.SGD, lr: 0.1, momentum: 0.9, weightDecay: 0.01, ...extra };
  if (c === 'sgd' || c === 'join') return new Zero(params, sgd);
  if (c === 'bucket') return new Zero(params, { ...sgd, parametersAsBucketView: true });
  if (c === 'adamw') return new Zero(params, { optimizerClass: t.optim.AdamW, lr: 0.01, weightDecay: 0.1 });
  const named = m.namedParameters();
  const groups = [
    { params: named.filter(([n]) => n.endsWith('weight')).map(([, p]) => p) },
    { params: named.filter(([n]) => n.endsWith('bias')).map(([, p]) => p), lr: 0.02, weightDecay: 0 },
  ];
  return new Zero(groups, { optimizerClass: t.optim.AdamW, lr: 0.01, weightDecay: 0.1 });
}

function stateJson(sd: t.optim.OptimizerStateDict) {
  const state = Object.fromEntries(
    Object.entries(sd.state).map(([i, s]) => [
      i,
      Object.fromEntries(Object.entries(s).map(([k, v]) => [k, v instanceof t.Tensor ? values(v) : v])),
    ]),
  );
  return { state, paramGroups: sd.paramGroups };
}

function run(c: Case) {
  const m = model();
  const ddp = new d.DistributedDataParallel(m);
  const zero = optimizer(c, m);
  const losses: number[] = [];
  const batches = world.inputs[rank].slice(0, c === 'join' ? JOIN_BATCHES[rank] : undefined);
  const train = () => {
    for (const [x, y] of batches) {
      zero.zeroGrad();
      const loss = t.nn.functional.mseLoss(ddp.forward(toTensor(x)), toTensor(y));
      loss.backward();
      zero.step();
      losses.push(loss.item());
    }
  };
  if (c === 'join') new d.algorithms.Join([ddp, zero]).run(train);
  else train();
  const params = m.parameters();
  const out: Record<string, unknown> = {
    losses,
    after: Object.fromEntries(Object.entries(m.stateDict()).map(([k, v]) => [k, values(v)])),
    paramToRank: params.map((p) => zero.paramToRank(p)),
    localStates: zero.optim.state.size,
  };
  if (c === 'sgd')
    try {
      optimizer(c, model(), { overlapWithDdp: true });
    } catch (e) {
      out.overlapRefused = (e as Error).message;
    }
  zero.consolidateStateDict(0);
  if (rank === 0) out.stateDict = stateJson(zero.stateDict());
  else
    out.notConsolidated = (() => {
      try {
        zero.stateDict();
        return null;
      } catch (e) {
        return (e as Error).message;
      }
    })();
  return out;
}

d.initProcessGroup({ backend: 'gloo', timeoutMs: 60_000 });
writeResult(Object.fromEntries(cases.map((c) => [c, run(c)])));
d.destroyProcessGroup();
