// One rank of test/sync-batchnorm.test.ts: nn.SyncBatchNorm on the case of
// test/fixtures/distributed/sync_batchnorm.json named in the config, on this rank's
// slice of the global batch; writes what it computed (values as plain numbers).
import { readFileSync } from 'node:fs';
import * as t from '../../src/index.ts';
import { type FixtureTensor, toTensor, values } from '../helpers/fixtures.ts';
import { rank, workerConfig, writeResult } from './common.ts';

const d = t.distributed;
type Step = Record<string, FixtureTensor[]>;
const fx = JSON.parse(
  readFileSync(new URL('../fixtures/distributed/sync_batchnorm.json', import.meta.url), 'utf8'),
);
const { name } = workerConfig<{ name: 'world2' | 'world3' | 'subgroups' | 'ddp' }>();

function syncBn(group?: t.distributed.ProcessGroup | null): t.nn.SyncBatchNorm {
  const m = new t.nn.SyncBatchNorm(3, { processGroup: group });
  t.noGrad(() => {
    m.weight?.copy_(t.tensor([1.5, 0.5, -1]));
    m.bias?.copy_(t.tensor([0.1, -0.2, 0.3]));
  });
  return m;
}

/** One training step on this rank's images and upstream gradient: what the fixture records. */
function step(m: t.nn.SyncBatchNorm, input: FixtureTensor, upstream: FixtureTensor) {
  const x = toTensor(input, { requiresGrad: true });
  m.zeroGrad();
  const y = m.forward(x);
  y.mul(toTensor(upstream)).sum().backward();
  return {
    output: values(y),
    input_grad: values(x.grad as t.Tensor),
    weight_grad: values(m.weight?.grad as t.Tensor),
    bias_grad: values(m.bias?.grad as t.Tensor),
    running_mean: values(m.runningMean as t.Tensor),
    running_var: values(m.runningVar as t.Tensor),
    num_batches_tracked: values(m.numBatchesTracked as t.Tensor)[0],
  };
}

function evalOutput(m: t.nn.SyncBatchNorm, input: FixtureTensor): number[] {
  m.eval();
  return t.noGrad(() => values(m.forward(toTensor(input))));
}

async function ddp() {
  const c = fx.ddp;
  const model = new t.nn.Sequential(
    new t.nn.Conv2d(2, 3, 3, { padding: 1, bias: false }),
    new t.nn.BatchNorm2d(3),
    new t.nn.ReLU(),
    new t.nn.Flatten(),
    new t.nn.Linear(48, 4),
  );
  model.loadStateDict(
    new Map(Object.entries(c.init as Record<string, FixtureTensor>).map(([k, v]) => [k, toTensor(v)])),
  );
  const converted = t.nn.SyncBatchNorm.convertSyncBatchnorm(model);
  const ddpModel = new d.DistributedDataParallel(converted);
  const opt = new t.optim.SGD(converted.parameters(), { lr: 0.1 });
  for (let i = 0; i < 2; i++) {
    opt.zeroGrad();
    const out = ddpModel.forward(toTensor(c.inputs[rank]));
    t.nn.functional.crossEntropy(out, toTensor(c.targets[rank]), { reduction: 'sum' }).backward();
    opt.step();
  }
  return {
    converted: converted.namedModules().map(([n, m]) => [n, m.constructor.name]),
    after: Object.fromEntries(Object.entries(converted.stateDict()).map(([k, v]) => [k, values(v)])),
  };
}

async function main(): Promise<void> {
  d.initProcessGroup({ backend: 'gloo', timeoutMs: 60_000 });
  if (name === 'ddp') writeResult(await ddp());
  else if (name === 'subgroups') {
    const c = fx.subgroups;
    const [mine] = d.newSubgroupsByEnumeration([[0, 2], [1]]);
    const m = syncBn(mine);
    writeResult({ step: step(m, c.inputs[rank], c.upstream[rank]), eval: evalOutput(m, c.inputs[rank]) });
  } else {
    const c = fx[name] as { steps: Step[] };
    const m = syncBn();
    const steps = c.steps.map((s) => step(m, s.inputs[rank], s.upstream[rank]));
    writeResult({ steps, eval: evalOutput(m, c.steps[0].inputs[rank]) });
  }
  d.destroyProcessGroup();
}

await main();
