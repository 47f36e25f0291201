// Shared helpers for the fixture-driven tests: loading the committed JSON fixtures
// (test/fixtures/*.json; live-fixture.ts generates them on this machine instead), turning
// their tensors into tsddp tensors, and comparing values: assertClose within rtol/atol,
// assertUlps in last-bit steps of the values' format.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import * as t from '../../src/index.ts';

/** A tensor as the fixture scripts write it: {dtype, shape, data (flat, row-major)}. */
export interface FixtureTensor {
  dtype: 'float32' | 'float64' | 'int64';
  shape: number[];
  data: number[];
}

export type FixtureCase = Record<string, unknown>;

/** Reads test/fixtures/<name> (key order is preserved, as the fixtures rely on). */
export function loadFixture(name: string): Record<string, FixtureCase> {
  const url = new URL(`../fixtures/${name}`, import.meta.url);
  return JSON.parse(readFileSync(url, 'utf8')) as Record<string, FixtureCase>;
}

export function isFixtureTensor(v: unknown): v is FixtureTensor {
  return (
    typeof v === 'object' &&
    v !== null &&
    'dtype' in v &&
    'shape' in v &&
    'data' in v &&
    Array.isArray((v as FixtureTensor).data)
  );
}

/** The fixture entry `key` of case `c`, which must be a tensor. */
export function fixtureTensor(c: FixtureCase, key: string): FixtureTensor {
  const v = c[key];
  if (!isFixtureTensor(v)) throw new Error(`fixture entry '${key}' is not a tensor`);
  return v;
}

/** A tsddp tensor with the fixture's dtype, shape and exact values. */
export function toTensor(ft: FixtureTensor, opts: { requiresGrad?: boolean } = {}): t.Tensor {
  let data: ArrayBufferView;
  if (ft.dtype === 'int64') data = BigInt64Array.from(ft.data, (x) => BigInt(x));
  else if (ft.dtype === 'float64') data = Float64Array.from(ft.data);
  else data = Float32Array.from(ft.data);
  return t.tensor(data, { shape: ft.shape, dtype: ft.dtype, requiresGrad: opts.requiresGrad });
}

/** The values of a tensor as plain JS numbers (int64 included). */
export function values(x: t.Tensor): number[] {
  return Array.from(x.toTypedArray() as ArrayLike<number | bigint>, Number);
}

/**
 * Asserts |actual - expected| <= atol + rtol * |expected| element-wise (torch.allclose),
 * and on failure names the worst element (largest excess over the allowed error).
 */
export function assertClose(
  actual: ArrayLike<number>,
  expected: ArrayLike<number>,
  rtol: number,
  atol: number,
  label: string,
): void {
  assert.equal(actual.length, expected.length, `${label}: length ${actual.length} != ${expected.length}`);
  let worst = -1;
  let worstExcess = 0;
  let bad = 0;
  for (let i = 0; i < expected.length; i++) {
    const a = Number(actual[i]);
    const e = Number(expected[i]);
    const err = Math.abs(a - e);
    const allowed = atol + rtol * Math.abs(e);
    if (!(err <= allowed) && !(Number.isNaN(a) && Number.isNaN(e))) {
      bad++;
      const excess = Number.isNaN(err) ? Number.POSITIVE_INFINITY : err - allowed;
      if (worst < 0 || excess > worstExcess) {
        worst = i;
        worstExcess = excess;
      }
    }
  }
  if (worst >= 0) {
    const a = Number(actual[worst]);
    const e = Number(expected[worst]);
    assert.fail(
      `${label}: ${bad}/${expected.length} elements differ (rtol ${rtol}, atol ${atol}); ` +
        `worst at flat index ${worst}: actual ${a}, expected ${e}, |diff| ${Math.abs(a - e)}`,
    );
  }
}

/** A floating-point format whose last-bit steps (ulps) assertUlps counts. */
export type UlpFormat = 'float64' | 'float32' | 'float16' | 'bfloat16';

const view = new DataView(new ArrayBuffer(8));

/** The float32 bits of x, which must be a float32 value. */
function float32Bits(x: number, format: UlpFormat): number {
  view.setFloat32(0, x);
  if (view.getFloat32(0) !== x && !Number.isNaN(x)) throw new RangeError(`${x} is not a ${format} value`);
  return view.getUint32(0);
}

/** The number of non-negative `format` values below |x| (x's rank among them), for a value of that format. */
function magnitudeRank(x: number, format: UlpFormat): bigint {
  if (format === 'float64') {
    view.setFloat64(0, x);
    return view.getBigUint64(0) & 0x7fff_ffff_ffff_ffffn;
  }
  const bits = float32Bits(x, format) & 0x7fff_ffff;
  if (format === 'float32') return BigInt(bits);
  if (format === 'bfloat16') {
    if (bits & 0xffff) throw new RangeError(`${x} is not a bfloat16 value`);
    return BigInt(bits >>> 16);
  }
  // float16: 5 exponent bits (bias 15), 10 mantissa bits, subnormals below 2^-14.
  const exp = (bits >>> 23) - 127;
  const mantissa = bits & 0x7f_ffff;
  if (exp === 128) return 0x7c00n; // infinity
  if (exp >= -14 && exp <= 15 && (mantissa & 0x1fff) === 0)
    return BigInt(((exp + 15) << 10) | (mantissa >>> 13));
  const subnormal = Math.abs(x) * 2 ** 24;
  if (exp < -14 && Number.isInteger(subnormal)) return BigInt(subnormal);
  throw new RangeError(`${x} is not a float16 value`);
}

/**
 * How many `format` values one steps through from a to b: 0 only for the same bits (any
 * NaN equals any NaN), 1 for neighbours. -0 and +0 count as two neighbouring values, so a
 * sign flip of zero is 1 ulp, not equality. Infinity when exactly one is NaN.
 */
export function ulpDistance(a: number, b: number, format: UlpFormat): number {
  if (Number.isNaN(a) || Number.isNaN(b)) return Number.isNaN(a) && Number.isNaN(b) ? 0 : Infinity;
  // Order the values on one line: -0 at -1, +0 at 0, the rest by magnitude on each side.
  const place = (x: number) => {
    const r = magnitudeRank(x, format);
    return x < 0 || Object.is(x, -0) ? -r - 1n : r;
  };
  const d = place(a) - place(b);
  return Number(d < 0n ? -d : d);
}

const show = (x: number) => (Object.is(x, -0) ? '-0' : String(x));

/**
 * Asserts every element of `actual` is within `maxUlps` of `expected` in `format`
 * (0: bitwise equal), and on failure names the worst element. `expected` is rounded to
 * the format first: fixtures may write a float32 as its shortest decimal.
 */
export function assertUlps(
  actual: ArrayLike<number>,
  expected: ArrayLike<number>,
  maxUlps: number,
  label: string,
  format: UlpFormat = 'float32',
): void {
  assert.ok(Number.isInteger(maxUlps) && maxUlps >= 0, `${label}: maxUlps ${maxUlps} is not a count of ulps`);
  assert.equal(actual.length, expected.length, `${label}: length ${actual.length} != ${expected.length}`);
  const round = format === 'float64' ? (x: number) => x : Math.fround;
  let worst = -1;
  let worstUlps = 0;
  let bad = 0;
  for (let i = 0; i < expected.length; i++) {
    const d = ulpDistance(Number(actual[i]), round(Number(expected[i])), format);
    if (d > maxUlps) {
      bad++;
      if (d > worstUlps) {
        worst = i;
        worstUlps = d;
      }
    }
  }
  if (worst >= 0) {
    assert.fail(
      `${label}: ${bad}/${expected.length} elements differ by more than ${maxUlps} ${format} ulp(s); ` +
        `worst at flat index ${worst}: actual ${show(Number(actual[worst]))}, ` +
        `expected ${show(round(Number(expected[worst])))}, ${worstUlps} ulps apart`,
    );
  }
}

const ULP_FORMATS: Partial<Record<string, UlpFormat>> = {
  float64: 'float64',
  float16: 'float16',
  bfloat16: 'bfloat16',
};

/**
 * A surface test's values against PyTorch's, element by element: float64, float16 and
 * bfloat16 within `maxUlps` (0 when PyTorch ran live on this CPU), float32 within 1e-6
 * relative (a reduction's last bit), integers and booleans exact; NaN equals NaN.
 */
export function assertFixtureValues(
  got: number[],
  want: number[],
  dtype: string,
  maxUlps: number,
  what: string,
): void {
  const format = ULP_FORMATS[dtype];
  for (let i = 0; i < want.length; i++) {
    if (Number.isNaN(want[i]) && Number.isNaN(got[i])) continue;
    if (format) {
      const ulps = ulpDistance(got[i], want[i], format);
      assert.ok(
        ulps <= maxUlps,
        `${what}[${i}]: got ${got[i]}, PyTorch gives ${want[i]} (${ulps} ulps, ${maxUlps} allowed)`,
      );
      continue;
    }
    const tol = dtype === 'float32' ? 1e-6 * Math.max(1, Math.abs(want[i])) : 0;
    assert.ok(Math.abs(got[i] - want[i]) <= tol, `${what}[${i}]: got ${got[i]}, PyTorch gives ${want[i]}`);
  }
}
