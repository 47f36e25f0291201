// One rank of test/join.test.ts: DDP + Join with uneven inputs, as
// test/fixtures/distributed/join.py does in PyTorch (this rank's batches and the initial
// state come from the fixture); writes each case's losses and final state dict.
import { readFileSync } from 'node:fs';
import * as t from '../../src/index.ts';
import { type FixtureTensor, toTensor, values } from '../helpers/fixtures.ts';
import { rank, workerConfig, writeResult } from './common.ts';

const d = t.distributed;
interface RankFixture {
  inputs: [FixtureTensor, FixtureTensor][];
  divide_true: { init: Record<string, FixtureTensor> };
}
const fx = JSON.parse(
  readFileSync(new URL('../fixtures/distributed/join.json', import.meta.url), 'utf8'),
) as {
  ranks: RankFixture[];
};
const { mode } = workerConfig<{ mode: 'join' | 'ddp.join' | 'throw' | 'disabled' }>();
const mine = fx.ranks[rank];

function model(): t.nn.Sequential {
  const m = new t.nn.Sequential(
    new t.nn.Linear(4, 3),
    new t.nn.BatchNorm1d(3),
    new t.nn.ReLU(),
    new t.nn.Linear(3, 2),
  );
  m.loadStateDict(
    Object.fromEntries(Object.entries(mine.divide_true.init).map(([k, v]) => [k, toTensor(v)])),
  );
  return m;
}

function train(divideByInitialWorldSize: boolean) {
  const m = model();
  const ddp = new d.DistributedDataParallel(m, { bucketCapMb: 1 / 1024 });
  const opt = new t.optim.SGD(ddp.parameters(), { lr: 0.1, momentum: 0.9 });
  const losses: number[] = [];
  const loop = () => {
    for (const [x, y] of mine.inputs) {
      opt.zeroGrad();
      const loss = t.nn.functional.mseLoss(ddp.forward(toTensor(x)), toTensor(y));
      loss.backward();
      opt.step();
      losses.push(loss.item());
    }
  };
  const opts = { divideByInitialWorldSize };
  if (mode === 'ddp.join') ddp.join(opts).run(loop);
  else
    new d.algorithms.Join([ddp], {
      ...opts,
      throwOnEarlyTermination: mode === 'throw',
      enable: mode !== 'disabled',
    }).run(loop);
  return { losses, after: Object.fromEntries(Object.entries(m.stateDict()).map(([k, v]) => [k, values(v)])) };
}

d.initProcessGroup({ backend: 'gloo', timeoutMs: mode === 'disabled' ? 5_000 : 60_000 });
try {
  const out: Record<string, unknown> = {};
  for (const divide of [true, false]) out[`divide_${divide}`] = train(divide);
  writeResult(out);
} catch (e) {
  writeResult({ error: { name: (e as Error).name, message: (e as Error).message } });
}
d.destroyProcessGroup();
