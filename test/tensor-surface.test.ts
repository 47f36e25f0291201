// tsddp's PyTorch tensor surface, against test/fixtures/tensor-surface/gen.py
// (run live when .venv has torch, else its committed cases.json;
// test/helpers/live-fixture.ts): dtype names and aliases, torch.tensor's integer range
// check, the Tensor methods and torch functions added, and printing.
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
  args: unknown[];
  opts: Record<string, unknown>;
  result: Enc | Enc[] | { value: unknown };
}
interface Fixture {
  aliases: Record<string, t.DType>;
  ranges: { value: Num; dtype: t.DType; error?: string; stored?: Num }[];
  calls: Record<string, Call>;
  reprs: Record<string, Enc & { requiresGrad: boolean; mul?: number; arangeDiv?: number; repr: string }>;
}

const { data: fx, live } = fixtureJson<Fixture>('tensor-surface/gen.py', 'tensor-surface/cases.json');

// float32 results may differ from PyTorch's in the last bit (the relative tolerance
// below). Other floating-point results (float64 float_power, casts) are PyTorch's bits
// when PyTorch ran live on this CPU; against the committed fixture, the ulps allowed for
// every case: no CPU tried moved one (an AMD EPYC with ATen's AVX-512 and AVX2 kernels,
// and the Intel Xeon of the Adam report). Integers and booleans are exact.
const STORED_ULPS = 0;

const num = (v: Num): number =>
  v === 'nan' ? Number.NaN : v === 'inf' ? Infinity : v === '-inf' ? -Infinity : v;

function build(e: Enc, requiresGrad = false): t.Tensor {
  return t.tensor(e.data.map(num), { shape: e.shape, dtype: e.dtype, requiresGrad });
}

function check(actual: unknown, expected: Enc, what: string): void {
  assert.ok(actual instanceof t.Tensor, `${what}: expected a Tensor, got ${String(actual)}`);
  assert.equal(actual.dtype, expected.dtype, `${what}: dtype`);
  assert.deepEqual(actual.shape, expected.shape, `${what}: shape`);
  const got = Array.from(actual.toTypedArray() as ArrayLike<number | bigint>, Number);
  const want = expected.data.map(num);
  assertFixtureValues(got, want, expected.dtype, live ? 0 : STORED_ULPS, what);
}

test('every dtype name and alias means what PyTorch means by it', () => {
  for (const [name, dtype] of Object.entries(fx.aliases)) {
    const x = t.ones([2]);
    assert.equal(x.to(name).dtype, dtype, `to('${name}')`);
    assert.equal(x.to({ dtype: name as t.DTypeName }).dtype, dtype, `to({dtype: '${name}'})`);
    assert.equal(t.zeros([1], { dtype: name as t.DTypeName }).dtype, dtype, `zeros({dtype: '${name}'})`);
    assert.equal(t.tensor([1], { dtype: name as t.DTypeName }).dtype, dtype, `tensor({dtype: '${name}'})`);
    assert.equal(x.type(name).dtype, dtype, `type('${name}')`);
  }
  // a string that names no dtype is a device
  assert.throws(() => t.ones([1]).to('chr'), /chr/);
  assert.throws(() => t.ones([1]).to({ dtype: 'chr' as t.DTypeName }), /to\(\): unknown dtype 'chr'/);
});

test("tensor(): integers out of the dtype's range raise PyTorch's overflow error", () => {
  for (const r of fx.ranges) {
    const v = num(r.value);
    const what = `tensor([${v}], {dtype: '${r.dtype}'})`;
    if (r.error !== undefined) {
      assert.throws(
        () => t.tensor([v], { dtype: r.dtype }),
        (e: Error) => {
          assert.ok(e instanceof RangeError, `${what}: a RangeError`);
          // "Overflow when unpacking long long" is Python's own int conversion: tsddp
          // says the same thing as for any other overflow
          const expected = r.error!.startsWith('value cannot')
            ? r.error!
            : `value cannot be converted to type ${r.dtype} without overflow`;
          assert.ok(e.message.includes(expected), `${what}: '${e.message}' says '${expected}'`);
          return true;
        },
        what,
      );
    } else {
      const got = Number(t.tensor([v], { dtype: r.dtype }).toTypedArray()[0]);
      const want = num(r.stored!);
      if (Number.isNaN(want)) assert.ok(Number.isNaN(got), `${what}: NaN`);
      else assert.equal(got, want, `${what}: stores ${want}`);
    }
  }
});

function decode(v: unknown, live: Record<string, t.Tensor>): unknown {
  if (v !== null && typeof v === 'object' && !Array.isArray(v)) {
    const o = v as Record<string, unknown>;
    if ('t' in o) return live[o.t as string];
    if ('ts' in o) return (o.ts as string[]).map((n) => live[n]);
    return Object.fromEntries(Object.entries(o).map(([k, x]) => [k, decode(x, live)]));
  }
  return v;
}

for (const [key, c] of Object.entries(fx.calls)) {
  const opts = Object.keys(c.opts).length ? [c.opts] : [];
  test(`${key}: ${c.kind === 'fn' ? 't.' : 'x.'}${c.name}${c.kind === 'getter' ? '' : `(${JSON.stringify([...c.args, ...opts]).slice(1, -1)})`}`, () => {
    t.tidy(() => {
      const live = Object.fromEntries(Object.entries(c.inputs).map(([k, e]) => [k, build(e)]));
      const args = [...c.args, ...opts].map((a) => decode(a, live));
      let r: unknown;
      if (c.kind === 'getter') r = (live.x as unknown as Record<string, unknown>)[c.name];
      else if (c.kind === 'method') {
        const m = (live.x as unknown as Record<string, (...a: unknown[]) => unknown>)[c.name];
        assert.equal(typeof m, 'function', `Tensor.${c.name} exists`);
        r = m.apply(live.x, args);
      } else {
        const f = (t as unknown as Record<string, (...a: unknown[]) => unknown>)[c.name];
        assert.equal(typeof f, 'function', `t.${c.name} exists`);
        r = f(...args);
      }
      if ('value' in c.result) assert.deepEqual(r, c.result.value);
      else if (Array.isArray(c.result)) {
        assert.ok(Array.isArray(r), 'a list of tensors');
        assert.equal(r.length, c.result.length);
        for (const [i, e] of c.result.entries()) check(r[i], e, `result[${i}]`);
      } else check(r, c.result, 'result');
    });
  });
}

test("printing is PyTorch's repr: 80 columns, summarized past 1000 elements, suffixes", () => {
  for (const [key, r] of Object.entries(fx.reprs)) {
    t.tidy(() => {
      // big tensors are written as a recipe: arange(numel) / arangeDiv, reshaped
      let x =
        r.arangeDiv === undefined
          ? build(r, r.requiresGrad)
          : (r.arangeDiv === 1
              ? t.arange(
                  r.shape.reduce((a, b) => a * b, 1),
                  { dtype: r.dtype },
                )
              : t
                  .arange(
                    r.shape.reduce((a, b) => a * b, 1),
                    { dtype: r.dtype },
                  )
                  .div(r.arangeDiv)
            ).reshape(r.shape);
      // Python's `x * 2` wraps the number into a tensor (mul.Tensor: MulBackward0);
      // x.mul(2) here is mul.Scalar (MulBackward1), so the factor goes in as a tensor
      if (r.mul !== undefined) x = x.mul(t.tensor(r.mul));
      assert.equal(String(x), r.repr, key);
    });
  }
});
