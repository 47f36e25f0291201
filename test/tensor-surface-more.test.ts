// More of tsddp's PyTorch tensor surface, against test/fixtures/tensor-surface-more/gen.py
// (run live when .venv has torch, else its committed cases.json;
// test/helpers/live-fixture.ts): the in-place forms and aliases of the math ops, linear
// algebra, scatters into views, the torch-level nn functions, the *_copy ops, dtype
// promotion and the introspection helpers. Every name the fixture lists is called, on
// both sides; an in-place op must return the tensor it changed.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as t from '../src/index.ts';
import { assertFixtureValues } from './helpers/fixtures.ts';
import { fixtureJson } from './helpers/live-fixture.ts';

type Num = number | 'nan' | 'inf' | '-inf';
interface Enc {
  dtype: t.DType;
  shape: number[];
  data: Num[];
}
interface Call {
  kind: 'method' | 'getter' | 'fn';
  name: string;
  inputs: Record<string, Enc>;
  prep?: [string, unknown[]][];
  args: unknown[];
  opts: Record<string, unknown>;
  seed?: number;
  result: Enc | Enc[] | { value: unknown } | { dtype: t.DType };
  self?: string;
  after?: Record<string, Enc>;
}
interface Fixture {
  names: { torch: string[]; 'torch.Tensor': string[] };
  calls: Record<string, Call>;
  special: {
    rng: {
      seed: number;
      initialSeed: number;
      state: Enc;
      draw: Enc;
      redraw: Enc;
      seedIsInitialSeed: boolean;
    };
    retainsGrad: boolean[];
    meta: { isMeta: boolean; isCpu: boolean; nbytes: number; itemsize: number; shape: number[] };
  };
}

const { data: fx, live } = fixtureJson<Fixture>(
  'tensor-surface-more/gen.py',
  'tensor-surface-more/cases.json',
);

// As in test/tensor-surface.test.ts: float32 within 1e-6 relative, other floating-point
// formats PyTorch's bits when it ran live on this CPU, else within these ulps (no CPU
// tried moved one); integers and booleans exact.
const STORED_ULPS = 0;

/** PyTorch's snake_case name as tsddp spells it (the in-place `_` stays). */
const camel = (s: string) => s.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase());

const num = (v: Num): number =>
  v === 'nan' ? Number.NaN : v === 'inf' ? Infinity : v === '-inf' ? -Infinity : v;

function build(e: Enc): t.Tensor {
  return t.tensor(e.data.map(num), { shape: e.shape, dtype: e.dtype });
}

function check(actual: unknown, expected: Enc, what: string): void {
  assert.ok(actual instanceof t.Tensor, `${what}: expected a Tensor, got ${String(actual)}`);
  assert.equal(actual.dtype, expected.dtype, `${what}: dtype`);
  assert.deepEqual(actual.shape, expected.shape, `${what}: shape`);
  const got = Array.from(actual.toTypedArray() as ArrayLike<number | bigint>, Number);
  const want = expected.data.map(num);
  // infinities must match exactly (a relative tolerance of infinity says nothing)
  for (const [i, w] of want.entries()) {
    if (Number.isFinite(w) || Number.isNaN(w)) continue;
    assert.equal(got[i], w, `${what}[${i}]`);
    got[i] = want[i] = 0;
  }
  assertFixtureValues(got, want, expected.dtype, live ? 0 : STORED_ULPS, what);
}

function decode(v: unknown, inputs: Record<string, t.Tensor>): unknown {
  if (v !== null && typeof v === 'object' && !Array.isArray(v)) {
    const o = v as Record<string, unknown>;
    if ('t' in o) return inputs[o.t as string];
    if ('ts' in o) return (o.ts as string[]).map((n) => inputs[n]);
    if ('dtype' in o) return o.dtype;
    return Object.fromEntries(Object.entries(o).map(([k, x]) => [k, decode(x, inputs)]));
  }
  return v;
}

type Fn = (...a: unknown[]) => unknown;
const member = (x: t.Tensor, name: string) => (x as unknown as Record<string, unknown>)[name];

for (const [key, c] of Object.entries(fx.calls)) {
  const opts = Object.keys(c.opts).length ? [c.opts] : [];
  const shown = JSON.stringify([...c.args, ...opts]).slice(1, -1);
  const what =
    c.kind === 'getter' ? `x.${camel(c.name)}` : `${c.kind === 'fn' ? 't.' : 'x.'}${camel(c.name)}(${shown})`;
  test(`${key}: ${what}`, () => {
    t.tidy(() => {
      const inputs = Object.fromEntries(Object.entries(c.inputs).map(([k, e]) => [k, build(e)]));
      for (const [m, a] of c.prep ?? [])
        inputs.x = (member(inputs.x, m) as Fn).apply(inputs.x, a) as t.Tensor;
      const args = [...c.args, ...opts].map((a) => decode(a, inputs));
      const name = camel(c.name);
      if (c.seed !== undefined) t.manualSeed(c.seed);
      let r: unknown;
      if (c.kind === 'getter') r = member(inputs.x, name);
      else if (c.kind === 'method') {
        const m = member(inputs.x, name);
        assert.equal(typeof m, 'function', `Tensor.${name} exists`);
        r = (m as Fn).apply(inputs.x, args);
      } else {
        const f = (t as unknown as Record<string, unknown>)[name];
        assert.equal(typeof f, 'function', `t.${name} exists`);
        r = (f as Fn)(...args);
      }
      if (c.self !== undefined) assert.equal(r, inputs[c.self], `returns ${c.self} itself`);
      if ('value' in c.result) {
        // a 64-bit count or seed may come back as a bigint
        assert.deepEqual(typeof r === 'bigint' ? Number(r) : r, c.result.value);
      } else if ('dtype' in c.result && !('data' in c.result)) assert.equal(r, c.result.dtype);
      else if (Array.isArray(c.result)) {
        assert.ok(Array.isArray(r), 'a list of tensors');
        assert.equal(r.length, c.result.length);
        for (const [i, e] of c.result.entries()) check(r[i], e, `result[${i}]`);
      } else check(r, c.result as Enc, 'result');
      // what the call changed, and nothing else
      for (const [k, e] of Object.entries(c.inputs)) {
        const changed = c.after?.[k];
        if (changed) check(inputs[k], changed, `${k} afterwards`);
        else if (k !== 'x' || !c.prep) check(inputs[k], e, `${k} unchanged`);
      }
    });
  });
}

test('every name the fixture lists is one tsddp has and the fixture calls', () => {
  const called = { fn: new Set<string>(), method: new Set<string>() };
  for (const c of Object.values(fx.calls)) called[c.kind === 'fn' ? 'fn' : 'method'].add(c.name);
  // the ones the tests below call
  for (const n of ['seed', 'initial_seed', 'get_rng_state', 'set_rng_state']) called.fn.add(n);
  called.method.add('retains_grad');
  const proto = t.Tensor.prototype as unknown as Record<string, unknown>;
  for (const n of fx.names.torch) {
    assert.ok(called.fn.has(n), `torch.${n} is called`);
    assert.ok(camel(n) in t, `t.${camel(n)} exists`);
  }
  for (const n of fx.names['torch.Tensor']) {
    assert.ok(called.method.has(n), `Tensor.${n} is called`);
    assert.ok(camel(n) in proto, `Tensor.${camel(n)} exists`);
  }
});

test("the default generator's seed and state: initialSeed, getRngState, setRngState, seed", () => {
  const r = fx.special.rng;
  t.tidy(() => {
    t.manualSeed(r.seed);
    assert.equal(t.initialSeed(), BigInt(r.initialSeed));
    const state = t.getRngState();
    check(state, r.state, 'getRngState()');
    check(t.rand([4]), r.draw, 'rand after manualSeed');
    t.manualSeed(99);
    t.setRngState(state);
    check(t.rand([4]), r.redraw, 'rand after setRngState');
    assert.ok(r.seedIsInitialSeed, "PyTorch's seed() is a 64-bit number that becomes initial_seed()");
    const s = t.seed();
    assert.equal(typeof s, 'bigint');
    assert.ok(s >= 0n && s < 2n ** 64n, `seed() ${s} is a 64-bit number`);
    assert.equal(t.initialSeed(), s);
    const a = t.rand([3]).tolist();
    t.manualSeed(s);
    assert.deepEqual(t.rand([3]).tolist(), a, 'seed() seeded the default generator');
  });
});

test('retainsGrad: false on a leaf and a non-leaf, true after retainGrad()', () => {
  t.tidy(() => {
    const leaf = t.tensor([1.5, -2], { requiresGrad: true });
    const mid = leaf.mul(2);
    const before = [leaf.retainsGrad, mid.retainsGrad];
    mid.retainGrad();
    assert.deepEqual([...before, mid.retainsGrad], fx.special.retainsGrad);
  });
});

test('a meta tensor: isMeta, isCpu, nbytes, itemsize', () => {
  t.tidy(() => {
    const m = fx.special.meta;
    const x = t.empty(m.shape, { device: 'meta' });
    assert.deepEqual(
      { isMeta: x.isMeta, isCpu: x.isCpu, nbytes: x.nbytes, itemsize: x.itemsize, shape: x.shape },
      m,
    );
  });
});
