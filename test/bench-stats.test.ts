// The benchmarks' statistics: the median's distribution-free confidence interval.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { median, medianInterval } from '../src/benchmark/stats.ts';

test('medianInterval: the binomial order statistics of the sorted values', () => {
  // n = 20 at 95%: P(X <= 5) = 0.0207 <= 0.025 < P(X <= 6) = 0.0577, so k = 6: x(6) and x(15).
  const xs = Array.from({ length: 20 }, (_, i) => (i * 7) % 20); // 0..19, shuffled
  assert.deepEqual(medianInterval(xs), [5, 14]);
  // n = 10: P(X <= 1) = 0.0107, P(X <= 2) = 0.0547: k = 2, x(2) and x(9).
  assert.deepEqual(medianInterval([9, 1, 8, 2, 7, 3, 6, 4, 5, 0]), [1, 8]);
  // n = 6: only P(X = 0) = 0.0156 is below 0.025: the interval is the whole range.
  assert.deepEqual(medianInterval([3, 1, 2, 6, 5, 4]), [1, 6]);
  // A lower level narrows it: n = 10 at 80%, P(X <= 2) = 0.0547 <= 0.1 < P(X <= 3) = 0.1719.
  assert.deepEqual(medianInterval([9, 1, 8, 2, 7, 3, 6, 4, 5, 0], 0.8), [2, 7]);
});

test('medianInterval: null when there are too few values for the level, and it holds the median', () => {
  assert.equal(medianInterval([]), null);
  assert.equal(medianInterval([1, 2, 3, 4, 5]), null); // P(X = 0) = 1/32 > 0.025
  const xs = [0.9, 0.99, 1.02, 1.01, 0.98, 1.08, 0.94, 0.99, 0.98, 0.98];
  const ci = medianInterval(xs);
  assert.ok(ci !== null && ci[0] <= median(xs) && median(xs) <= ci[1]);
  assert.deepEqual(ci, [0.94, 1.02]);
});

test('medianInterval: a level outside (0, 1) is refused by name', () => {
  for (const level of [0, 1, 1.5, -0.5, Number.NaN]) {
    assert.throws(() => medianInterval([1, 2, 3, 4, 5, 6], level), {
      name: 'RangeError',
      message: /medianInterval: level must be in \(0, 1\)/,
    });
  }
});
