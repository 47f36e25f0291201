// One tsddp rank of a world that mixes PyTorch and tsddp ranks (test/interop-torch.test.ts;
// the PyTorch side is interop_rank.py and does exactly the same). env:// rendezvous, Gloo.
// Prints one JSON line: each collective's result and the parameters after 3 DDP SGD steps.
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

t.manualSeed(0);
const { nn } = t;
const model = new nn.Sequential(new nn.Linear(4, 8), new nn.ReLU(), new nn.Linear(8, 3));
const ddp = new d.DistributedDataParallel(model, { bucketCapMb: 0.0001 });
const opt = new t.optim.SGD(model.parameters(), { lr: 0.1, momentum: 0.9 });
const data = t
  .arange(32, { dtype: 'float32' })
  .reshape([8, 4])
  .mul(0.01 * (r + 1));
const target = t.arange(8).remainder(3);
for (let i = 0; i < 3; i++) {
  opt.zeroGrad();
  t.crossEntropy(ddp.forward(data), target).backward();
  opt.step();
}
out.params = model.parameters().map((p) => list(p.detach().flatten()));
console.log(JSON.stringify({ rank: r, side: 'tsddp', ...out }));
ddp.destroy();
d.destroyProcessGroup();
