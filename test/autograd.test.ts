// Autograd: backward, gradient accumulation, retainGraph, autograd.grad (higher order,
// allowUnused), grad-mode scopes, and gradcheck on the core NN ops.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as t from '../src/index.ts';
import { assertClose, values } from './helpers/fixtures.ts';

const f64 = (data: number[], shape: number[] = [data.length]): t.Tensor =>
  t.tensor(Float64Array.from(data), { shape, requiresGrad: true });

/** Seeded float64 leaf for gradcheck. */
function leaf64(shape: number[], seed: number, scale = 1): t.Tensor {
  t.manualSeed(seed);
  return t.randn(shape, { dtype: 'float64' }).mul(scale).detach().requiresGrad_(true);
}

// --- backward ---------------------------------------------------------------------------

test('backward on a small graph gives the expected gradient', () => {
  t.tidy(() => {
    const x = t.tensor([1, 2, 3], { requiresGrad: true });
    const w = t.tensor([0.5, -1, 2], { requiresGrad: true });
    assert.equal(x.grad, null);
    // y = sum(x*x*w + 3x) -> dy/dx = 2xw + 3, dy/dw = x^2
    const y = x.mul(x).mul(w).add(x.mul(3)).sum();
    assert.ok(y.requiresGrad);
    assert.equal(y.isLeaf, false);
    assert.ok(y.gradFn !== null);
    y.backward();
    assertClose(values(x.grad!), [4, -1, 15], 1e-6, 1e-6, 'dy/dx');
    assertClose(values(w.grad!), [1, 4, 9], 1e-6, 1e-6, 'dy/dw');
  });
});

test('grad accumulates across two backward calls', () => {
  t.tidy(() => {
    const x = t.tensor([1, -2], { requiresGrad: true });
    x.mul(x).sum().backward(); // 2x
    assertClose(values(x.grad!), [2, -4], 0, 1e-6, 'after first backward');
    x.mul(x).sum().backward(); // + 2x
    assertClose(values(x.grad!), [4, -8], 0, 1e-6, 'after second backward');
    x.grad = null;
    x.mul(5).sum().backward();
    assertClose(values(x.grad!), [5, 5], 0, 1e-6, 'after resetting grad');
  });
});

test('a second backward through the same graph needs retainGraph', () => {
  t.tidy(() => {
    const x = t.tensor([0.5, 1.5], { requiresGrad: true });
    const y = x.exp().mul(x).sum(); // saves tensors for backward
    y.backward();
    assert.throws(
      () => y.backward(),
      (e: unknown) => e instanceof t.TorchError && /second time|retain_graph/i.test(e.message),
    );

    const x2 = t.tensor([0.5, 1.5], { requiresGrad: true });
    const y2 = x2.exp().mul(x2).sum(); // d/dx (x e^x) = e^x (x + 1)
    y2.backward(undefined, { retainGraph: true });
    y2.backward();
    const once = [0.5, 1.5].map((v) => Math.exp(v) * (v + 1));
    assertClose(
      values(x2.grad!),
      once.map((v) => 2 * v),
      1e-6,
      1e-6,
      'two retained backwards',
    );
  });
});

// --- autograd.grad ----------------------------------------------------------------------

test('autograd.grad with createGraph gives the second derivative (x^3 -> 6x)', () => {
  t.tidy(() => {
    const x = f64([-1, 0.5, 2]);
    const y = x.pow(3).sum();
    const [g] = t.autograd.grad(y, x, { createGraph: true });
    assert.ok(g !== null);
    assertClose(values(g), [3, 0.75, 12], 1e-12, 1e-12, 'dy/dx = 3x^2');
    assert.ok(g.requiresGrad, 'createGraph result must be differentiable');
    const [g2] = t.autograd.grad(g.sum(), x);
    assert.ok(g2 !== null);
    assertClose(values(g2), [-6, 3, 12], 1e-12, 1e-12, 'd2y/dx2 = 6x');
    // autograd.grad does not touch .grad
    assert.equal(x.grad, null);
  });
});

test('autograd.grad: allowUnused returns null for an unused input, otherwise throws', () => {
  t.tidy(() => {
    const x = f64([1, 2]);
    const z = f64([3, 4]);
    const y = x.mul(x).sum();
    assert.throws(
      () => t.autograd.grad(y, [x, z], { retainGraph: true }),
      (e: unknown) => e instanceof t.TorchError && /not have been used|allow_unused/i.test(e.message),
    );
    const [gx, gz] = t.autograd.grad(y, [x, z], { allowUnused: true });
    assert.ok(gx !== null);
    assertClose(values(gx), [2, 4], 0, 1e-12, 'dy/dx');
    assert.equal(gz, null);
  });
});

// --- grad mode --------------------------------------------------------------------------

test('noGrad: results do not require grad, and the mode is restored even if fn throws', () => {
  t.tidy(() => {
    const x = t.tensor([1, 2], { requiresGrad: true });
    assert.equal(t.isGradEnabled(), true);
    const y = t.noGrad(() => {
      assert.equal(t.isGradEnabled(), false);
      return x.mul(2);
    });
    assert.equal(y.requiresGrad, false);
    assert.equal(y.gradFn, null);
    assert.equal(t.isGradEnabled(), true);

    assert.throws(
      () =>
        t.noGrad(() => {
          throw new Error('boom');
        }),
      /boom/,
    );
    assert.equal(t.isGradEnabled(), true, 'grad mode not restored after a throw');
    assert.ok(x.mul(2).requiresGrad);

    // Nested: the inner scope restores the outer mode, not "enabled".
    t.noGrad(() => {
      t.noGrad(() => assert.equal(t.isGradEnabled(), false));
      assert.equal(t.isGradEnabled(), false);
    });
    assert.equal(t.isGradEnabled(), true);
  });
});

test('enableGrad inside noGrad records again', () => {
  t.tidy(() => {
    const x = t.tensor([1, 2], { requiresGrad: true });
    const inner = t.noGrad(() => {
      const r = t.enableGrad(() => {
        assert.equal(t.isGradEnabled(), true);
        return x.mul(3).sum();
      });
      assert.equal(r.requiresGrad, true);
      assert.equal(t.isGradEnabled(), false, 'enableGrad did not restore noGrad');
      assert.equal(x.mul(3).requiresGrad, false);
      return r;
    });
    inner.backward();
    assertClose(values(x.grad!), [3, 3], 0, 1e-6, 'grad through enableGrad');
  });
});

test('noGradAsync restores the mode after await, on success and on rejection', async () => {
  const x = t.tensor([1, 2], { requiresGrad: true });
  const y = await t.noGradAsync(async () => {
    assert.equal(t.isGradEnabled(), false);
    await new Promise((r) => setTimeout(r, 5));
    assert.equal(t.isGradEnabled(), false, 'grad mode lost across await');
    return x.mul(2);
  });
  assert.equal(y.requiresGrad, false);
  assert.equal(t.isGradEnabled(), true);

  await assert.rejects(
    t.noGradAsync(async () => {
      await new Promise((r) => setTimeout(r, 1));
      throw new Error('async boom');
    }),
    /async boom/,
  );
  assert.equal(t.isGradEnabled(), true, 'grad mode not restored after a rejection');
  y.dispose();
  x.dispose();
});

// --- gradcheck --------------------------------------------------------------------------

test('gradcheck: conv2d (stride, padding, groups)', () => {
  t.tidy(() => {
    const x = leaf64([1, 2, 4, 4], 1);
    const w = leaf64([2, 1, 3, 3], 2, 0.5);
    const b = leaf64([2], 3);
    assert.ok(t.autograd.gradcheck((x, w, b) => t.conv2d(x, w, b, [2, 1], [1, 1], [1, 1], 2), [x, w, b]));
  });
});

test('gradcheck: batchNorm in training mode', () => {
  t.tidy(() => {
    const x = leaf64([3, 2, 2, 2], 4);
    const w = leaf64([2], 5);
    const b = leaf64([2], 6);
    const rm = t.zeros([2], { dtype: 'float64' });
    const rv = t.ones([2], { dtype: 'float64' });
    assert.ok(
      t.autograd.gradcheck((x, w, b) => t.batchNorm(x, w, b, rm, rv, true, 0.1, 1e-5, false), [x, w, b]),
    );
  });
});

test('gradcheck: linear', () => {
  t.tidy(() => {
    const x = leaf64([2, 3], 7);
    const w = leaf64([4, 3], 8);
    const b = leaf64([4], 9);
    assert.ok(t.autograd.gradcheck((x, w, b) => t.linear(x, w, b), [x, w, b]));
  });
});

test('gradcheck: maxPool2d', () => {
  t.tidy(() => {
    // Distinct, well separated values, so +-eps never changes which element is the max.
    const data = [3, 11, 7, 14, 0, 9, 12, 5, 15, 2, 8, 1, 6, 13, 4, 10].map((v) => v * 0.1);
    const x = f64(data, [1, 1, 4, 4]);
    assert.ok(t.autograd.gradcheck((x) => t.maxPool2d(x, 2, 2), [x]));
    assert.ok(t.autograd.gradcheck((x) => t.maxPool2d(x, 3, 2, 1), [x]));
  });
});

test('gradcheck: adaptiveAvgPool2d', () => {
  t.tidy(() => {
    const x = leaf64([1, 1, 5, 5], 10); // 5 -> 2: overlapping windows
    assert.ok(t.autograd.gradcheck((x) => t.adaptiveAvgPool2d(x, [2, 2]), [x]));
  });
});

test('gradcheck: logSoftmax', () => {
  t.tidy(() => {
    const x = leaf64([3, 4], 11);
    assert.ok(t.autograd.gradcheck((x) => t.logSoftmax(x, 1), [x]));
  });
});

test('gradcheck: crossEntropy with label smoothing', () => {
  t.tidy(() => {
    const x = leaf64([3, 4], 12);
    const target = t.tensor([2, 0, 3], { dtype: 'int64' });
    assert.ok(
      t.autograd.gradcheck((x) => t.crossEntropy(x, target, { labelSmoothing: 0.2, reduction: 'mean' }), [x]),
    );
  });
});

test('gradcheck throws when the autograd gradient is wrong (detach hides a path)', () => {
  t.tidy(() => {
    const x = leaf64([4], 13);
    // f(x) = x * x but the second factor is detached: autograd says x, finite differences 2x.
    assert.throws(() => t.autograd.gradcheck((x) => x.mul(x.detach()), [x]), /Jacobian mismatch/);
    // The same function without the detach passes.
    assert.ok(t.autograd.gradcheck((x) => x.mul(x), [x]));
  });
});

test('gradcheck rejects float32 inputs', () => {
  t.tidy(() => {
    const x = t.tensor([1, 2], { requiresGrad: true });
    assert.throws(() => t.autograd.gradcheck((x) => x.mul(2), [x]), TypeError);
  });
});
