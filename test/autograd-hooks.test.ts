// Tensor.registerHook against PyTorch's register_hook (test/fixtures/autograd-hooks):
// hooks on leaves and intermediates, replacing or only observing the gradient, order,
// remove(), errors thrown in a hook, and no hook function kept once its tensor is gone.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { keptHooks } from '../src/core/hooks.ts';
import * as t from '../src/index.ts';

const { cases } = JSON.parse(
  readFileSync(new URL('./fixtures/autograd-hooks/cases.json', import.meta.url), 'utf8'),
) as { cases: Record<string, number[] | string> };

const values = (x: t.Tensor | null) => Array.from(x?.toTypedArray() ?? [], Number);

test('registerHook: replace, observe, order and remove as PyTorch', () => {
  let x = t.tensor([1, 2, 3], { requiresGrad: true });
  x.registerHook((g) => g.mul(2));
  x.mul(x).sum().backward();
  assert.deepEqual(values(x.grad), cases.leaf_double);

  x = t.tensor([1, -2, 3], { requiresGrad: true });
  const z = x.mul(3);
  const seen: number[][] = [];
  z.registerHook((g) => {
    seen.push(values(g));
  });
  z.mul(z).sum().backward();
  assert.deepEqual(seen, [cases.observe_seen]);
  assert.deepEqual(values(x.grad), cases.observe_leaf);

  x = t.tensor([0.5, 1.5], { requiresGrad: true });
  x.registerHook((g) => g.add(1));
  x.registerHook((g) => g.mul(10));
  x.mul(4).sum().backward();
  assert.deepEqual(values(x.grad), cases.ordered);

  x = t.tensor([1, 1], { requiresGrad: true });
  const handle = x.registerHook((g) => g.mul(100));
  handle.remove();
  handle.remove(); // twice is harmless, as in PyTorch
  x.mul(2).sum().backward();
  assert.deepEqual(values(x.grad), cases.removed);

  x = t.tensor([2, 3], { requiresGrad: true });
  const y = x.mul(x);
  y.registerHook((g) => t.onesLike(g).mul(7));
  y.sum().backward();
  assert.deepEqual(values(x.grad), cases.replace_intermediate);
});

test('registerHook: bad use is an error naming the problem; an error in a hook fails backward with it', () => {
  assert.throws(() => t.tensor([1]).registerHook((g) => g), {
    message: new RegExp(String(cases.no_grad_error).replaceAll("'", '.')),
  });
  assert.throws(() => t.tensor([1], { requiresGrad: true }).registerHook(42 as never), /expected a function/);
  const x = t.tensor([1, 2], { requiresGrad: true });
  const boom = new Error('the hook failed');
  x.registerHook(() => {
    throw boom;
  });
  assert.throws(
    () => x.mul(2).sum().backward(),
    (e) => e === boom,
  );
  const w = t.tensor([1], { requiresGrad: true });
  w.registerHook(() => 'nope' as never);
  assert.throws(() => w.mul(2).sum().backward(), /must return a Tensor or nothing, got string/);
});

test('registerHook: a hook per step keeps no memory once its tensors are gone', () => {
  const w = t.tensor([1, 2, 3], { requiresGrad: true });
  const before = t.memory().tensors;
  const hooksBefore = keptHooks();
  let calls = 0;
  for (let i = 0; i < 50; i++) {
    using _ = t.scope();
    const h = w.mul(2);
    h.registerHook((g) => {
      calls++;
      return g.mul(0.5);
    });
    h.sum().backward();
  }
  assert.equal(calls, 50);
  const kept = keptHooks() - hooksBefore;
  assert.ok(kept <= 1, `${kept} more hook functions kept after their tensors were freed`);
  assert.equal(t.memory().tensors, before, 'no tensor left behind by the hooks');
  // Each step's gradient was halved: 50 x 2 x 0.5.
  assert.deepEqual(values(w.grad), [50, 50, 50]);
});
