// One tsddp rank of a world that mixes PyTorch and tsddp ranks (test/interop-torch.test.ts;
// the PyTorch side is interop_rank.py and does exactly the same). env:// rendezvous, Gloo.
//
//   interop-rank.mts INIT.safetensors [ddp|zero1|fsdp]   (INIT: interop_rank.py --write-init)
//
// Prints one JSON line: each collective's result, the loss of each of 3 SGD steps (DDP;
// DDP with ZeroRedundancyOptimizer; or fullyShard on each residual block and the model, no DDP) of
// ResNet-18 (base width 16, 10 classes, batch 4 of 32x32 images, 1/4 MiB buckets) started
// from INIT, and the sha256 of every parameter (under fsdp, of this rank's shard) and
// buffer after them.
import { createHash } from 'node:crypto';
import * as t from '../../src/index.ts';

const d = t.distributed;
d.initProcessGroup({ backend: 'gloo' });
const r = d.getRank();
const n = d.getWorldSize();
const list = (x: t.Tensor) => Array.from(x.toTypedArray() as Float32Array);
const out: Record<string, unknown> = {};

const x = t.tensor([r + 1, 10 * (r + 1), -0.5 * r]);
await d.allReduce(x);
out.all_reduce = list(x);
const m = t.tensor([r, 3 - r]);
await d.allReduce(m, 'max');
out.all_reduce_max = list(m);
const b = r === 0 ? t.tensor([1.5, 2.5]) : t.zeros([2]);
await d.broadcast(b, 0);
out.broadcast = list(b);
const gathered = Array.from({ length: n }, () => t.zeros([2]));
await d.allGather(gathered, t.tensor([r, r + 0.25]));
out.all_gather = gathered.map(list);
const rs = t.zeros([2]);
await d.reduceScatter(
  rs,
  Array.from({ length: n }, (_, i) => t.tensor([r + i, 10 * i])),
);
out.reduce_scatter = list(rs);
await d.barrier();

const strategy = process.argv[3] ?? 'ddp';
const model = t.models.resnet18({ numClasses: 10, widthMultiplier: 0.25 });
model.loadStateDict(await t.safetensors.loadFile(process.argv[2]));
const sgd = { lr: 0.05, momentum: 0.9, weightDecay: 1e-4 };
let forward: (x: t.Tensor) => t.Tensor;
let ddp: t.distributed.DistributedDataParallel<typeof model> | null = null;
let opt: t.optim.Optimizer;
if (strategy === 'fsdp') {
  for (const layer of [model.layer1, model.layer2, model.layer3, model.layer4])
    for (const block of layer.children()) d.fsdp.fullyShard(block);
  d.fsdp.fullyShard(model);
  forward = (x) => model.forward(x);
  opt = new t.optim.SGD(model.parameters(), sgd);
} else {
  // DDP broadcasts rank 0's parameters and buffers here, and the buffers (BatchNorm's running
  // statistics) again before every forward (broadcastBuffers, default true).
  const wrapped = new d.DistributedDataParallel(model, { bucketCapMb: 0.25 });
  ddp = wrapped;
  forward = (x) => wrapped.forward(x);
  opt =
    strategy === 'zero1'
      ? new d.optim.ZeroRedundancyOptimizer(model.parameters(), { optimizerClass: t.optim.SGD, ...sgd })
      : new t.optim.SGD(model.parameters(), sgd);
}
const data = t
  .arange(4 * 3 * 32 * 32, { dtype: 'float32' })
  .remainder(251)
  .mul(0.004)
  .sub(0.5)
  .mul(r + 1)
  .reshape([4, 3, 32, 32]);
const target = t.arange(4).mul(3).add(r).remainder(10);
const losses: number[] = [];
for (let i = 0; i < 3; i++) {
  opt.zeroGrad();
  const loss = t.crossEntropy(forward(data), target);
  loss.backward();
  opt.step();
  losses.push(loss.item());
}
out.losses = losses;
const sha = ([k, v]: [string, t.Tensor]) => [
  k,
  createHash('sha256').update(v.contiguous().toBytes()).digest('hex'),
];
out.params = model.namedParameters().map(sha);
out.buffers = model.namedBuffers().map(sha);
console.log(JSON.stringify({ rank: r, side: 'tsddp', ...out }));
ddp?.close();
d.destroyProcessGroup();
