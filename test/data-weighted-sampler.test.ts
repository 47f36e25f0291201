// WeightedRandomSampler draws PyTorch's indices for the same generator seed
// (test/fixtures/data/weighted_sampler.json, made by weighted_sampler.py), and refuses
// the arguments PyTorch refuses, naming the argument.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { BatchSampler, WeightedRandomSampler } from '../src/data/index.ts';
import * as t from '../src/index.ts';

interface DrawCase {
  weights: number[];
  numSamples: number;
  replacement: boolean;
  generatorSeed: number | null;
  manualSeed: number | null;
  length: number;
  epochs: number[][];
}
interface ErrorCase {
  label: string;
  weights: (number | string | number[])[];
  numSamples: number;
  replacement: boolean;
  when: 'construction' | 'iteration';
  type: string;
  message: string;
}
const F = JSON.parse(
  readFileSync(new URL('fixtures/data/weighted_sampler.json', import.meta.url), 'utf8'),
) as { cases: DrawCase[]; errors: ErrorCase[] };

const label = (c: DrawCase) =>
  `weights [${c.weights.join(', ')}], numSamples ${c.numSamples}, replacement ${c.replacement}, ` +
  (c.generatorSeed === null ? `manualSeed ${c.manualSeed}` : `generator seed ${c.generatorSeed}`);

test('weighted_sampler.json covers both replacement modes, generators and the default generator', () => {
  assert.ok(F.cases.some((c) => c.replacement));
  assert.ok(F.cases.some((c) => !c.replacement));
  assert.ok(F.cases.some((c) => c.generatorSeed === null));
  assert.ok(new Set(F.cases.map((c) => c.generatorSeed)).size >= 4);
});

for (const c of F.cases) {
  test(`WeightedRandomSampler equals PyTorch: ${label(c)}`, () => {
    if (c.manualSeed !== null) t.manualSeed(c.manualSeed);
    const generator = c.generatorSeed === null ? undefined : new t.Generator().manualSeed(c.generatorSeed);
    const s = new WeightedRandomSampler(c.weights, c.numSamples, { replacement: c.replacement, generator });
    assert.equal(s.length, c.length);
    // Two epochs from one sampler: the generator advances between them, as in PyTorch.
    assert.deepEqual([...s], c.epochs[0], 'epoch 0');
    assert.deepEqual([...s], c.epochs[1], 'epoch 1');
  });
}

test('weights given as a tensor (any dtype) draw the same as the array', () => {
  const c = F.cases.find((x) => x.generatorSeed !== null && x.weights.every(Number.isInteger));
  assert.ok(c, 'a case with integer weights');
  const w = t.tensor(c.weights, { dtype: 'int64' });
  const s = new WeightedRandomSampler(w, c.numSamples, {
    replacement: c.replacement,
    generator: new t.Generator().manualSeed(c.generatorSeed as number),
  });
  assert.deepEqual([...s], c.epochs[0]);
  assert.ok(s.weights instanceof Float64Array);
});

test('replacement defaults to true, as in PyTorch', () => {
  const c = F.cases.find((x) => x.replacement && x.generatorSeed !== null);
  assert.ok(c);
  const s = new WeightedRandomSampler(c.weights, c.numSamples, {
    generator: new t.Generator().manualSeed(c.generatorSeed as number),
  });
  assert.equal(s.replacement, true);
  assert.deepEqual([...s], c.epochs[0]);
});

test('works under a BatchSampler', () => {
  const c = F.cases.find((x) => x.numSamples >= 20 && x.generatorSeed !== null);
  assert.ok(c);
  const s = new WeightedRandomSampler(c.weights, c.numSamples, {
    replacement: c.replacement,
    generator: new t.Generator().manualSeed(c.generatorSeed as number),
  });
  const batches = [...new BatchSampler(s, 8, false)];
  assert.deepEqual(batches.flat(), c.epochs[0]);
  assert.equal(batches.length, Math.ceil(c.numSamples / 8));
});

// What each bad argument is called in tsddp's message: PyTorch's error (recorded in the
// fixture) is about the same argument; tsddp refuses at construction (fail fast).
const ARGUMENT: Record<string, RegExp> = {
  'negative weight': /weights\[1\] is -0\.5/,
  'all zero': /weights are all zero/,
  'all zero, without replacement': /weights are all zero/,
  'nan weight': /weights\[1\] is NaN/,
  'inf weight': /weights\[1\] is Infinity/,
  '2-d weights': /weights should be 1-D/,
  'empty weights': /weights is empty/,
  'num_samples 0': /numSamples should be a positive integer, got 0/,
  'num_samples -1': /numSamples should be a positive integer, got -1/,
  'num_samples 2.5': /numSamples should be a positive integer, got 2\.5/,
  'more samples than weights without replacement': /numSamples \(7\) is more than the 6 weights/,
};

const decode = (w: number | string | number[]): number | number[] =>
  typeof w === 'string' ? Number(w.replace('inf', 'Infinity')) : w;

for (const e of F.errors) {
  test(`refuses what PyTorch refuses: ${e.label} (PyTorch: ${e.type} at ${e.when})`, () => {
    const re = ARGUMENT[e.label];
    assert.ok(re, `no expected message for '${e.label}'`);
    const weights = e.weights.map(decode) as number[];
    assert.throws(
      () => new WeightedRandomSampler(weights, e.numSamples, { replacement: e.replacement }),
      (err: Error) =>
        (err instanceof RangeError || err instanceof TypeError) &&
        err.message.startsWith('WeightedRandomSampler: ') &&
        re.test(err.message),
    );
  });
}

test('a 2-D weights tensor and a non-boolean replacement are refused, naming the argument', () => {
  assert.throws(
    () => new WeightedRandomSampler(t.ones([2, 2]), 2),
    /WeightedRandomSampler: weights should be 1-D, got shape \[2, 2\]/,
  );
  assert.throws(
    () => new WeightedRandomSampler([1, 2], 2, { replacement: 1 as unknown as boolean }),
    /WeightedRandomSampler: replacement should be a boolean/,
  );
});
