// The code of docs/guide/porting.md, run: the Dataset and the optimizer it shows must work
// as the page says (a guide whose example does not compile or run is worse than none).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as t from '../src/index.ts';

class Squares extends t.data.Dataset<{ x: Float32Array; y: number }> {
  get length() {
    return 100;
  }
  get(i: number) {
    return { x: Float32Array.of(i), y: i * i };
  }
}

/** SGD with a per-parameter step count: the smallest optimizer with state. */
class CountingSGD extends t.optim.Optimizer {
  constructor(params: t.optim.ParamsInput<{ lr?: number }>, opts: { lr?: number } = {}) {
    super(params, { lr: opts.lr ?? 0.01 });
  }
  protected override validateGroup(g: t.optim.ParamGroup): void {
    if (!(g.lr >= 0)) throw new RangeError(`Invalid learning rate: ${g.lr}`);
  }
  protected stepGroup(group: t.optim.ParamGroup): void {
    for (const p of group.params) {
      if (p.grad === null) continue;
      const s = this.stateOf(p);
      s.step ??= t.zeros([]).keep();
      (s.step as t.Tensor).add_(1);
      p.add_(p.grad, { alpha: -group.lr });
    }
  }
}

test('the guide’s Dataset: fields stacked per batch, integers as int64', async () => {
  const loader = new t.data.DataLoader(new Squares(), { batchSize: 10, shuffle: true, seed: 0 });
  let batches = 0;
  for await (using batch of loader) {
    assert.deepEqual([batch.x.shape, batch.x.dtype], [[10, 1], 'float32']);
    assert.deepEqual([batch.y.shape, batch.y.dtype], [[10], 'int64']);
    const xs = batch.x.flatten().toArray() as number[];
    assert.deepEqual(
      batch.y.toArray(),
      xs.map((v) => v * v),
    );
    batches++;
  }
  assert.equal(batches, 10);
});

test('the guide’s optimizer: SGD’s update, a step count in its state, a state dict as PyTorch’s', () => {
  const w = t.tensor([1, 2, 3]).requiresGrad_();
  const opt = new CountingSGD([w], { lr: 0.5 });
  for (let i = 0; i < 2; i++) {
    opt.zeroGrad();
    w.mul(w).sum().backward(); // grad 2w
    opt.step();
  }
  // w -> w - 0.5 * 2w = 0 after the first step; stays 0.
  assert.deepEqual(w.toArray(), [0, 0, 0]);
  const sd = opt.stateDict();
  assert.equal((sd.state[0].step as t.Tensor).item(), 2);
  assert.throws(() => new CountingSGD([w], { lr: -1 }), /Invalid learning rate: -1/);
  const loss = opt.step(() => {
    opt.zeroGrad();
    const l = w.add(1).pow(2).sum();
    l.backward();
    return l;
  });
  assert.equal((loss as t.Tensor).item(), 3, 'step(closure) returns the closure’s loss');
});
