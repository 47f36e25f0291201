// print(module) as PyTorch prints it, for the layers whose extra_repr holds floats
// (eps=1e-05, not 0.00001) and the bias flag: test/fixtures/nn/reprs.py made the strings.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as t from '../src/index.ts';
import { pyFloat } from '../src/nn/module.ts';
import { fixtureJson } from './helpers/live-fixture.ts';

const { nn } = t;
const BUILD: Record<string, () => t.nn.Module> = {
  'LayerNorm(4)': () => new nn.LayerNorm(4),
  'LayerNorm([2, 3], eps=1e-6, bias=False)': () => new nn.LayerNorm([2, 3], { eps: 1e-6, bias: false }),
  'LayerNorm(4, elementwise_affine=False)': () => new nn.LayerNorm(4, { elementwiseAffine: false }),
  'BatchNorm2d(3)': () => new nn.BatchNorm2d(3),
  'BatchNorm1d(3, momentum=None, affine=False)': () =>
    new nn.BatchNorm1d(3, { momentum: null, affine: false }),
  'BatchNorm2d(3, eps=0.001, momentum=0.01, bias=False)': () =>
    new nn.BatchNorm2d(3, { eps: 0.001, momentum: 0.01, bias: false }),
  'InstanceNorm2d(3)': () => new nn.InstanceNorm2d(3),
  'GroupNorm(2, 4)': () => new nn.GroupNorm(2, 4),
  'GroupNorm(2, 4, affine=False)': () => new nn.GroupNorm(2, 4, { affine: false }),
  'SyncBatchNorm(3)': () => new nn.SyncBatchNorm(3),
  'RMSNorm(4)': () => new nn.RMSNorm(4),
  'RMSNorm([2, 4], eps=1e-5)': () => new nn.RMSNorm([2, 4], { eps: 1e-5 }),
  'LocalResponseNorm(2)': () => new nn.LocalResponseNorm(2),
  'ELU()': () => new nn.ELU(),
  'CELU()': () => new nn.CELU(),
  'Hardtanh()': () => new nn.Hardtanh(),
  'Softplus()': () => new nn.Softplus(),
  'Dropout(0.0)': () => new nn.Dropout(0.0),
  'Dropout()': () => new nn.Dropout(),
};

test('normalisation, activation and dropout layers print as PyTorch prints them', () => {
  const { data } = fixtureJson<Record<string, string>>('nn/reprs.py', 'nn/reprs.json');
  assert.deepEqual(Object.keys(BUILD), Object.keys(data));
  for (const [name, build] of Object.entries(BUILD)) assert.equal(String(build()), data[name], name);
});

test("pyFloat writes a number as Python's repr writes a float", () => {
  // repr(float(x)) in Python 3 for each x.
  const cases: [number, string][] = [
    [1e-5, '1e-05'],
    [0.1, '0.1'],
    [1, '1.0'],
    [0, '0.0'],
    [1e-4, '0.0001'],
    [1.5e-7, '1.5e-07'],
    [1e16, '1e+16'],
    [123456.5, '123456.5'],
    [-3e-6, '-3e-06'],
    [Number.POSITIVE_INFINITY, 'inf'],
    [Number.NaN, 'nan'],
  ];
  for (const [x, want] of cases) assert.equal(pyFloat(x), want, String(x));
});
