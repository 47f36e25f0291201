// The helpers the fixture-driven tests compare with: ulpDistance/assertUlps count
// last-bit steps per format (0 = the same bits; NaN, signed zeros, subnormals and the
// 16-bit formats included), and fixtureJson reads the committed file under
// TSDDP_FIXTURES=stored, or generates it live and fails loudly when the generator does.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { test } from 'node:test';
import { assertUlps, ulpDistance } from './helpers/fixtures.ts';
import { fixtureSource } from './helpers/live-fixture.ts';

/** The float32 `n` steps above x (x >= 0). */
function f32Up(x: number, n: number): number {
  const v = new DataView(new ArrayBuffer(4));
  v.setFloat32(0, x);
  v.setUint32(0, v.getUint32(0) + n);
  return v.getFloat32(0);
}

test('ulpDistance counts float32 and float64 steps, across zero and to infinity', () => {
  const x = Math.fround(-0.15703827142715454);
  const y = -0.15703825652599335; // the neighbour the Intel report shows
  assert.equal(ulpDistance(y, x, 'float32'), 1);
  assert.equal(ulpDistance(x, x, 'float32'), 0);
  assert.equal(ulpDistance(1, f32Up(1, 7), 'float32'), 7);
  assert.equal(ulpDistance(1, 1 + 2 ** -52, 'float64'), 1);
  assert.equal(ulpDistance(1, 1 + 2 ** -23, 'float64'), 2 ** 29);
  assert.equal(ulpDistance(3.4028234663852886e38, Infinity, 'float32'), 1);
  // -0 and +0 are different bits: neighbours, not equal; the smallest subnormals straddle them.
  assert.equal(ulpDistance(0, -0, 'float32'), 1);
  assert.equal(ulpDistance(2 ** -149, -(2 ** -149), 'float32'), 3);
  assert.equal(ulpDistance(Number.NaN, Number.NaN, 'float64'), 0);
  assert.equal(ulpDistance(Number.NaN, 0, 'float32'), Infinity);
  assert.throws(() => ulpDistance(0.1, 0.1, 'float32'), /not a float32 value/);
});

test('ulpDistance counts float16 and bfloat16 steps, not float32 ones', () => {
  assert.equal(ulpDistance(1, 1 + 2 ** -10, 'float16'), 1);
  assert.equal(ulpDistance(1, 1 - 2 ** -11, 'float16'), 1);
  assert.equal(ulpDistance(2 ** -24, 0, 'float16'), 1); // the smallest subnormal
  assert.equal(ulpDistance(2 ** -14, 2 ** -14 - 2 ** -24, 'float16'), 1); // normal/subnormal boundary
  assert.equal(ulpDistance(65504, Infinity, 'float16'), 1);
  assert.equal(ulpDistance(1, 1 + 2 ** -7, 'bfloat16'), 1);
  assert.equal(ulpDistance(-1, -1 - 2 ** -6, 'bfloat16'), 2);
  assert.throws(() => ulpDistance(1 + 2 ** -12, 1, 'float16'), /not a float16 value/);
  assert.throws(() => ulpDistance(1 + 2 ** -10, 1, 'bfloat16'), /not a bfloat16 value/);
});

test('assertUlps passes at N ulps and fails at N + 1, naming the worst element', () => {
  const expected = [0.5, -2, 3.25, 100];
  for (const n of [0, 1, 3]) {
    const actual = expected.map((x, i) => (i === 2 ? f32Up(x, n) : x));
    assertUlps(actual, expected, n, 'at the limit');
    if (n > 0) {
      assert.throws(
        () => assertUlps(actual, expected, n - 1, 'one short'),
        new RegExp(
          `one short: 1/4 elements differ by more than ${n - 1} float32 ulp\\(s\\); worst at flat index 2: .* ${n} ulps apart`,
        ),
      );
    }
  }
  // 0 ulps is bitwise: a zero's sign counts, NaN equals NaN.
  assert.throws(() => assertUlps([0], [-0], 0, 'zero'), /actual 0, expected -0, 1 ulps apart/);
  assertUlps([-0, Number.NaN], [-0, Number.NaN], 0, 'same bits');
  assert.throws(() => assertUlps([1], [Number.NaN], 5, 'nan'), /Infinity ulps apart/);
  // float32 fixtures may hold a float32's shortest decimal: it is rounded before comparing.
  assertUlps([Math.fround(0.1)], [0.1], 0, 'shortest decimal');
  assertUlps(Float64Array.of(0.1 + 2 ** -56), [0.1], 1, 'float64', 'float64');
  assert.throws(() => assertUlps([0.1], [0.1 + 2 ** -55], 1, 'float64', 'float64'), /2 ulps apart/);
});

/** Runs `code` in a fresh process (the source is decided once per process) and returns its output. */
function node(code: string, env: Record<string, string>): { status: number | null; out: string } {
  const r = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', code], {
    encoding: 'utf8',
    env: { ...process.env, ...env },
    cwd: new URL('..', import.meta.url).pathname,
  });
  return { status: r.status, out: r.stdout + r.stderr };
}

test('TSDDP_FIXTURES=stored reads the committed file; a bad value is refused', () => {
  const read = `
    import { readFileSync } from 'node:fs';
    import { fixtureJson } from './test/helpers/live-fixture.ts';
    const { data, live } = fixtureJson('rng.py', 'rng.json');
    const stored = JSON.parse(readFileSync('test/fixtures/rng.json', 'utf8'));
    console.log(JSON.stringify({ live, same: JSON.stringify(data) === JSON.stringify(stored) }));`;
  const r = node(read, { TSDDP_FIXTURES: 'stored' });
  assert.equal(r.status, 0, r.out);
  assert.match(r.out, /fixture rng\.json: committed fixtures \(TSDDP_FIXTURES=stored\)/);
  assert.match(r.out, /\{"live":false,"same":true\}/);
  const bad = node(read, { TSDDP_FIXTURES: 'yes' });
  assert.notEqual(bad.status, 0);
  assert.match(bad.out, /TSDDP_FIXTURES must be 'live' or 'stored', not 'yes'/);
});

test('a live generator that fails fails the test, with its error', {
  skip: fixtureSource().live
    ? false
    : 'no live fixtures here (.venv without tsddp’s torch, or TSDDP_FIXTURES=stored)',
}, () => {
  // A generator that exits non-zero, named relative to test/fixtures like the real ones.
  const r = node(
    `
    import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
    import { tmpdir } from 'node:os';
    import { join, relative } from 'node:path';
    import { fixtureJson } from './test/helpers/live-fixture.ts';
    const dir = mkdtempSync(join(tmpdir(), 'tsddp-badgen-'));
    writeFileSync(join(dir, 'gen.py'), 'import sys\\nsys.exit("no fixture today")\\n');
    try {
      fixtureJson(relative('test/fixtures', join(dir, 'gen.py')), 'x.json');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }`,
    { TSDDP_FIXTURES: 'live' },
  );
  assert.notEqual(r.status, 0);
  assert.match(r.out, /live fixture: .*gen\.py .* failed \(exit 1\):\nno fixture today/);
});
