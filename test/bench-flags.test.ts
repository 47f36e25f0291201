// The bench scripts' numeric flags: a wrong value is refused with the flag's name before
// any benchmark runs (bench/lib/flags.ts), here through the helpers and bench/recipe.ts.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { test } from 'node:test';
import { intFlag, positiveFlag } from '../bench/lib/flags.ts';

test('intFlag: integers >= min pass, the default fills an absent flag, anything else names the flag', () => {
  assert.equal(intFlag('rounds', '3'), 3);
  assert.equal(intFlag('warmup', '0', 0), 0);
  assert.equal(intFlag('steps', undefined, 1, 4), 4);
  assert.throws(() => intFlag('rounds', 'abc'), {
    name: 'TypeError',
    message: '--rounds abc: expected an integer >= 1',
  });
  assert.throws(() => intFlag('rounds', '0'), {
    name: 'TypeError',
    message: '--rounds 0: expected an integer >= 1',
  });
  assert.throws(() => intFlag('epochs', '1.5'), /--epochs 1\.5: expected an integer >= 1/);
  assert.throws(() => intFlag('rounds', undefined), /--rounds undefined: expected an integer/);
});

test('positiveFlag: finite numbers > 0 pass, anything else names the flag', () => {
  assert.equal(positiveFlag('scale', '0.05'), 0.05);
  for (const bad of ['0', '-1', 'x', 'Infinity', undefined])
    assert.throws(() => positiveFlag('scale', bad), {
      name: 'TypeError',
      message: `--scale ${bad}: expected a number > 0`,
    });
});

for (const [flag, value, message] of [
  ['--epochs', '0', /TypeError: --epochs 0: expected an integer >= 1/],
  ['--lr', '0', /TypeError: --lr 0: expected a number > 0/],
] as const)
  test(`bench/recipe.ts refuses a bad ${flag} before it runs anything`, () => {
    const r = spawnSync(process.execPath, ['--import', 'tsx', 'bench/recipe.ts', flag, value], {
      encoding: 'utf8',
      timeout: 60_000,
    });
    assert.notEqual(r.status, 0);
    assert.match(r.stderr, message);
  });
