// Arguments a PyTorch program passes that tsddp once dropped or refused: an integer device
// (PyTorch's cuda:N) and varargs sizes of the factories (torch.rand(20), torch.zeros(2, 3)).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as t from '../src/index.ts';

test('an integer device is cuda:N, as in PyTorch: without CUDA, to(0) fails as to("cuda") does', () => {
  const x = t.zeros([2]);
  const net = new t.nn.Linear(2, 2);
  const cases: [string, () => unknown][] = [
    ['x.to(0)', () => x.to(0)],
    ["x.to('cuda')", () => x.to('cuda')],
    ['x.to({ device: 1 })', () => x.to({ device: 1 })],
    ['model.to(0)', () => net.to(0)],
    ['model.to({ device: 0 })', () => net.to({ device: 0 })],
  ];
  if (t.cuda.isAvailable()) {
    assert.equal(x.to(0).device, 'cuda:0');
    assert.equal(net.to(0).weight.device, 'cuda:0');
    return;
  }
  // libtorch's error, named by the op: the same for 0 as for 'cuda' (test/errors.test.ts).
  for (const [what, move] of cases)
    assert.throws(
      move,
      (e: Error) => e instanceof t.TorchError && /aten::to/.test(e.message) && /CUDA/i.test(e.message),
      what,
    );
  assert.equal(x.device, 'cpu', 'the tensor stays where it was');
  assert.equal(net.weight.device, 'cpu');
  assert.throws(() => x.to(-1), /a device index must be an integer >= 0, got -1/);
  assert.throws(() => x.to(0.5), /a device index must be an integer >= 0, got 0\.5/);
});

test('factories take sizes as varargs, as torch.rand(20) and torch.zeros(2, 3), options after them', () => {
  assert.deepEqual(t.rand(20).shape, [20]);
  assert.deepEqual(t.zeros(2, 3).shape, [2, 3]);
  assert.deepEqual(t.ones(4).toArray(), [1, 1, 1, 1]);
  assert.deepEqual(t.empty(1, 2, 3).shape, [1, 2, 3]);
  const a = t.ones(2, 3, { dtype: 'int64' });
  assert.deepEqual([a.shape, a.dtype], [[2, 3], 'int64']);
  // The same draws as the list form, generator included.
  const g = () => new t.Generator().manualSeed(7);
  assert.deepEqual(
    t.randn(2, 3, { generator: g() }).toArray(),
    t.randn([2, 3], { generator: g() }).toArray(),
  );
  assert.deepEqual(t.rand(5, { generator: g() }).toArray(), t.rand([5], { generator: g() }).toArray());
  // A size that is not all integers is refused, not truncated.
  assert.throws(() => t.zeros(2, 1.5), /zeros/);
});
