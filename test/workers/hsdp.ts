// One rank of test/fsdp.test.ts's hybrid sharding case: 4 ranks as a 2 x 2 DeviceMesh
// (replicate x shard), fullyShard over it on nanoGPT's blocks and then the whole model,
// AdamW, 5 steps, as test/fixtures/distributed/hsdp.py does with PyTorch (the initial
// state and this rank's batches come from the fixture); writes the losses, this rank's
// shard rows and mesh coordinate, and the full parameters after.
import { readFileSync } from 'node:fs';
import * as t from '../../src/index.ts';
import { fixtureGpt } from '../helpers/fixture-gpt.ts';
import { type FixtureTensor, toTensor, values } from '../helpers/fixtures.ts';
import { rank, writeResult } from './common.ts';

const d = t.distributed;
const fx = JSON.parse(
  readFileSync(new URL('../fixtures/distributed/hsdp.json', import.meta.url), 'utf8'),
) as { init: Record<string, FixtureTensor>; ranks: { batches: [FixtureTensor, FixtureTensor][] }[] };

d.initProcessGroup({ backend: 'gloo', timeoutMs: 60_000 });
const mesh = d.deviceMesh.initDeviceMesh('cpu', [2, 2], { meshDimNames: ['replicate', 'shard'] });
const gpt = fixtureGpt(fx.init);
for (const block of gpt.transformer.h) d.fsdp.fullyShard(block, { mesh });
const model = d.fsdp.fullyShard(gpt, { mesh });
const opt = new t.optim.AdamW(model.parameters(), { lr: 1e-2, weightDecay: 0.1 });
const losses: number[] = [];
for (const [x, y] of fx.ranks[rank].batches)
  t.tidy(() => {
    const { loss } = model.forward(toTensor(x), toTensor(y));
    (loss as t.Tensor).backward();
    losses.push((loss as t.Tensor).item());
    opt.step();
    opt.zeroGrad();
  });
const full = d.fsdp.getModelStateDict(model, { fullStateDict: true });
writeResult({
  losses,
  shardRows: model.parameters()[0].shape[0],
  coordinate: mesh.getCoordinate(),
  groups: [mesh.getGroup('replicate'), mesh.getGroup('shard')].map((g) => d.getProcessGroupRanks(g)),
  after: Object.fromEntries(gpt.namedParameters().map(([n]) => [n, values(full[n])])),
});
d.destroyProcessGroup();
