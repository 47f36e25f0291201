// Forward and backward parity with PyTorch for core NN ops, case by case from
// test/fixtures/ops.json (made by test/fixtures/ops.py). Each case: rebuild the inputs,
// run the op, backprop (output * upstream).sum(), compare output and every gradient.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as t from '../src/index.ts';
import {
  assertClose,
  type FixtureCase,
  fixtureTensor,
  isFixtureTensor,
  loadFixture,
  toTensor,
  values,
} from './helpers/fixtures.ts';

const RTOL = 1e-5;
const ATOL = 1e-6;

const cases = loadFixture('ops.json');

type Inputs = Record<string, t.Tensor>;
interface Ctx {
  inputs: Inputs;
  c: FixtureCase;
  /** Extra checks after forward/backward (running stats). */
  after?: () => void;
}

function num(c: FixtureCase, key: string): number {
  const v = c[key];
  assert.equal(typeof v, 'number', `fixture param '${key}' should be a number`);
  return v as number;
}
function str(c: FixtureCase, key: string): string {
  const v = c[key];
  assert.equal(typeof v, 'string', `fixture param '${key}' should be a string`);
  return v as string;
}
function intList(c: FixtureCase, key: string): number | number[] {
  const v = c[key];
  assert.ok(typeof v === 'number' || Array.isArray(v), `fixture param '${key}' should be int or int list`);
  return v as number | number[];
}
function reduction(c: FixtureCase): t.Reduction {
  const r = str(c, 'reduction');
  assert.ok(r === 'none' || r === 'mean' || r === 'sum', `bad reduction ${r}`);
  return r;
}

/** Runs the op of a case (chosen by its name) on the rebuilt inputs. */
function runOp(name: string, ctx: Ctx): t.Tensor {
  const { inputs: x, c } = ctx;
  if (name.startsWith('conv2d_')) {
    return t.conv2d(
      x.input,
      x.weight,
      x.bias,
      intList(c, 'stride'),
      intList(c, 'padding'),
      intList(c, 'dilation'),
      num(c, 'groups'),
    );
  }
  if (name.startsWith('batch_norm_')) {
    const training = c.training;
    assert.equal(typeof training, 'boolean');
    const runningMean = toTensor(fixtureTensor(c, 'running_mean'));
    const runningVar = toTensor(fixtureTensor(c, 'running_var'));
    const before = { mean: values(runningMean), var: values(runningVar) };
    const out = t.batchNorm(
      x.input,
      x.weight,
      x.bias,
      runningMean,
      runningVar,
      training as boolean,
      num(c, 'momentum'),
      num(c, 'eps'),
      false,
    );
    ctx.after = () => {
      if (training) {
        // Updated in place: mean with the batch mean, var with the unbiased batch variance.
        assertClose(
          values(runningMean),
          fixtureTensor(c, 'running_mean_after').data,
          RTOL,
          ATOL,
          'running_mean',
        );
        assertClose(
          values(runningVar),
          fixtureTensor(c, 'running_var_after').data,
          RTOL,
          ATOL,
          'running_var',
        );
        assert.notDeepEqual(values(runningMean), before.mean, 'running_mean was not updated in place');
      } else {
        assert.deepEqual(values(runningMean), before.mean, 'eval mode must not touch running_mean');
        assert.deepEqual(values(runningVar), before.var, 'eval mode must not touch running_var');
      }
    };
    return out;
  }
  if (name === 'linear') return t.linear(x.input, x.weight, x.bias);
  if (name === 'relu') return t.relu(x.input);
  if (name.startsWith('max_pool2d_')) {
    return t.maxPool2d(x.input, intList(c, 'kernel_size'), intList(c, 'stride'), intList(c, 'padding'));
  }
  if (name.startsWith('adaptive_avg_pool2d_')) return t.adaptiveAvgPool2d(x.input, intList(c, 'output_size'));
  if (name.startsWith('cross_entropy_')) {
    return t.crossEntropy(x.input, x.target, {
      reduction: reduction(c),
      labelSmoothing: num(c, 'label_smoothing'),
    });
  }
  if (name === 'nll_loss_log_softmax') {
    return t.nll(t.logSoftmax(x.input, 1), x.target, { reduction: reduction(c) });
  }
  if (name.startsWith('log_softmax_')) return t.logSoftmax(x.input, num(c, 'dim'));
  if (name.startsWith('softmax_')) return t.softmax(x.input, num(c, 'dim'));
  throw new Error(`parity-ops: no runner for fixture case '${name}'`);
}

/** Input names of a case: the tensor entries that are not outputs, upstream or extras. */
function inputNames(c: FixtureCase): string[] {
  const skip = new Set(['upstream', 'output', 'running_mean', 'running_var']);
  return Object.keys(c).filter(
    (k) => isFixtureTensor(c[k]) && !skip.has(k) && !k.startsWith('grad_') && !k.endsWith('_after'),
  );
}

test('ops.json has the expected cases', () => {
  assert.ok(Object.keys(cases).length >= 21, `only ${Object.keys(cases).length} cases`);
});

for (const [name, c] of Object.entries(cases)) {
  test(`parity: ${name}`, () => {
    t.tidy(() => {
      const inputs: Inputs = {};
      for (const k of inputNames(c)) {
        const ft = fixtureTensor(c, k);
        inputs[k] = toTensor(ft, { requiresGrad: `grad_${k}` in c });
      }
      const ctx: Ctx = { inputs, c };
      const output = runOp(name, ctx);
      const expectedOut = fixtureTensor(c, 'output');
      assert.deepEqual(output.shape, expectedOut.shape, 'output shape');
      assert.equal(output.dtype, 'float32', 'output dtype');
      assertClose(values(output), expectedOut.data, RTOL, ATOL, 'output');

      const upstream = toTensor(fixtureTensor(c, 'upstream'));
      output.mul(upstream).sum().backward();

      const gradKeys = Object.keys(c).filter((k) => k.startsWith('grad_'));
      assert.ok(gradKeys.length > 0, 'case has no gradients to check');
      for (const gk of gradKeys) {
        const leaf = inputs[gk.slice('grad_'.length)];
        assert.ok(leaf, `${gk} has no matching input`);
        const g = leaf.grad;
        assert.ok(g !== null, `${gk}: no gradient was accumulated`);
        const expected = fixtureTensor(c, gk);
        assert.deepEqual(g.shape, expected.shape, `${gk} shape`);
        assertClose(values(g), expected.data, RTOL, ATOL, gk);
      }
      // Integer inputs (targets) never get a gradient.
      for (const [k, v] of Object.entries(inputs)) {
        if (!(`grad_${k}` in c)) assert.equal(v.grad, null, `${k} should have no gradient`);
      }
      ctx.after?.();
    });
  });
}
