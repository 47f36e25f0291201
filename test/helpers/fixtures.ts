// Shared helpers for the fixture-driven tests: loading the committed JSON fixtures
// (test/fixtures/*.json), turning their tensors into tsddp tensors, and comparing values.
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
