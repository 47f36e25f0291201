// The dtypes PyTorch has beyond tsddp's first ten: uint16, uint32, uint64, float8_e4m3fn,
// float8_e5m2, complex64 and complex128, against PyTorch (test/fixtures/dtypes-more/make.py,
// live when .venv has the torch tsddp is built against): the dtype table, values in and out
// (the JS side of each: Uint16Array, Uint32Array, BigUint64Array, float8 bits, interleaved
// complex pairs), torch.tensor's range rules, casts to and from float32 bit for bit, every
// float8 bit pattern, printing, and files both ways: a .pt PyTorch wrote loads exactly (views,
// conj/neg bits and requires_grad included) and PyTorch reads what t.save writes
// (dtypes-more/check.py now, or the committed from_tsddp.json); safetensors.torch's file of
// U16/U32/U64/F8_E4M3/F8_E5M2/C64 loads, and tsddp writes the same tensors byte for byte.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { PyStorageType } from '../src/checkpoint/pt/py.ts';
import { TensorFactory } from '../src/checkpoint/pt/storages.ts';
import { type DType, dtypeFromName, ITEM_SIZE, toDType } from '../src/core/dtype.ts';
import { native } from '../src/core/native.ts';
import * as t from '../src/index.ts';
import { dtypeValues, ptValues, safetensorsValues } from './fixtures/dtypes-more/tsddp-values.ts';
import { fixtureJson, fixtureSource } from './helpers/live-fixture.ts';
import { PYTHON } from './helpers/pt-fixtures.ts';
import { recordDigests } from './helpers/pt-records.ts';

const FIXTURES = fileURLToPath(new URL('./fixtures/', import.meta.url));
const NEW: DType[] = [
  'uint16',
  'uint32',
  'uint64',
  'float8_e4m3fn',
  'float8_e5m2',
  'complex64',
  'complex128',
];

type Num = number | string | Num[];
interface Described {
  dtype: string;
  shape: number[];
  stride: number[];
  offset: number;
  conj: boolean;
  neg: boolean;
  requiresGrad: boolean;
  hex: string;
}
interface Cast {
  input: string;
  to: string;
  back: string;
}
interface Fixture {
  dtypes: Record<string, { itemsize: number; isFloatingPoint: boolean; isComplex: boolean; type: string }>;
  values: Record<string, { shape: number[]; hex: string; tolist: Num; repr: string }>;
  pt: string;
  ptExpect: Record<string, Described>;
  casts: Record<string, Cast>;
  float8: Record<string, string>;
  creation: Record<string, { value: Num; int: boolean; hex?: string; error?: string }[]>;
  reprs: { dtype: DType; hex: string; shape: number[]; repr: string }[];
}
interface Report {
  pt: Record<string, Described>;
  ptShared: string[][];
  safetensors: Record<string, Described>;
  reader: string;
}

const { data: F } = fixtureJson<Fixture>('dtypes-more/make.py', 'dtypes-more/dtypes.json');
const tmp = mkdtempSync(join(tmpdir(), 'tsddp-dtypes-more-'));
after(() => rmSync(tmp, { recursive: true, force: true }));

const hex = (x: t.Tensor) => Buffer.from(x.toBytes()).toString('hex');
const fromHex = (h: string, shape: number[], dtype: DType) =>
  t.fromBytes(Buffer.from(h, 'hex'), shape, dtype);
/** make.py's JSON numbers: 'nan', 'inf', '-inf' spelled out; [re, im] pairs and uint64 strings as they are. */
const decode = (v: Num): Num =>
  Array.isArray(v)
    ? v.map(decode)
    : v === 'nan'
      ? Number.NaN
      : v === 'inf'
        ? Infinity
        : v === '-inf'
          ? -Infinity
          : typeof v === 'string'
            ? Number(BigInt(v))
            : v;
const bits = (x: t.Tensor) => ({
  conj: t.ops.call('aten::is_conj', x) as boolean,
  neg: t.ops.call('aten::is_neg', x) as boolean,
});
/** A tensor as check.py and make.py describe one. */
const describeTensor = (x: t.Tensor): Described => ({
  dtype: x.dtype,
  shape: x.shape,
  stride: x.stride(),
  offset: t.ops.call('aten::storage_offset', x) as number,
  ...bits(x),
  requiresGrad: x.requiresGrad,
  hex: hex(x),
});

describe('the dtype table, as PyTorch has it', () => {
  for (const d of NEW)
    test(`torch.${d}: element size, is_floating_point, is_complex, type()`, () => {
      const want = F.dtypes[d];
      const x = t.zeros([1], { dtype: d });
      assert.equal(x.dtype, d);
      assert.equal(ITEM_SIZE[d], want.itemsize);
      assert.equal(x.elementSize(), want.itemsize);
      assert.equal(x.isFloatingPoint(), want.isFloatingPoint);
      assert.equal(x.isComplex(), want.isComplex);
      assert.equal(x.type(), want.type);
      assert.equal(x.type(want.type).dtype, d);
      assert.equal(dtypeFromName(d), d);
    });

  test('aliases: torch.cfloat is complex64, torch.cdouble complex128', () => {
    assert.equal(toDType('cfloat'), 'complex64');
    assert.equal(toDType('cdouble'), 'complex128');
    assert.equal(t.ones([2]).to('cfloat').dtype, 'complex64');
    assert.equal(t.ones([2]).to({ dtype: 'cdouble' }).dtype, 'complex128');
  });

  test('a TypedArray gives its dtype: Uint16Array, Uint32Array, BigUint64Array', () => {
    assert.equal(t.tensor(new Uint16Array([1, 65535])).dtype, 'uint16');
    assert.equal(t.tensor(new Uint32Array([1, 2 ** 32 - 1])).dtype, 'uint32');
    assert.equal(t.tensor(new BigUint64Array([1n, 2n ** 64n - 1n])).dtype, 'uint64');
    assert.equal(hex(t.tensor(new Uint32Array([2 ** 32 - 1]))), 'ffffffff');
  });

  test('requiresGrad: complex and float8 may, as in PyTorch; unsigned integers may not', () => {
    assert.equal(t.tensor([1, 2], { dtype: 'complex64', requiresGrad: true }).requiresGrad, true);
    assert.equal(t.tensor([1, 2], { dtype: 'float8_e4m3fn', requiresGrad: true }).requiresGrad, true);
    assert.throws(() => t.tensor([1], { dtype: 'uint16', requiresGrad: true }), /floating point and complex/);
  });
});

describe('values out: the JS side of each dtype', () => {
  const ARRAY: Record<string, string> = {
    uint16: 'Uint16Array',
    uint32: 'Uint32Array',
    uint64: 'BigUint64Array',
    float8_e4m3fn: 'Uint8Array',
    float8_e5m2: 'Uint8Array',
    complex64: 'Float32Array',
    complex128: 'Float64Array',
  };
  for (const d of NEW)
    test(`torch.${d}: toTypedArray(), toArray() as tolist(), repr`, () => {
      const want = F.values[d];
      const x = fromHex(want.hex, want.shape, d);
      const a = x.toTypedArray();
      assert.equal(a.constructor.name, ARRAY[d]);
      assert.equal(a.length, x.numel() * (x.isComplex() ? 2 : 1));
      assert.equal(Buffer.from(a.buffer, a.byteOffset, a.byteLength).toString('hex'), want.hex);
      assert.deepEqual(x.toArray(), decode(want.tolist));
      assert.equal(x.toString(), want.repr);
    });

  test('the tensors tsddp makes from JS values are the bytes PyTorch made of the same values', () => {
    for (const [d, x] of Object.entries(dtypeValues())) assert.equal(hex(x), F.values[d].hex, d);
  });

  test('uint64: toTypedArray is exact past 2^53; toArray and item() give numbers', () => {
    const x = t.tensor(new BigUint64Array([2n ** 64n - 1n, 2n ** 53n + 1n]));
    assert.deepEqual([...(x.toTypedArray() as BigUint64Array)], [2n ** 64n - 1n, 2n ** 53n + 1n]);
    assert.deepEqual(x.toArray(), [2 ** 64, 2 ** 53]);
    assert.equal(x.select(0, 0).item(), 2 ** 64);
  });

  test('float8: toTypedArray gives the bits, toArray and item() the values', () => {
    const x = t.tensor([448, -0.5], { dtype: 'float8_e4m3fn' });
    assert.deepEqual([...(x.toTypedArray() as Uint8Array)], [0x7e, 0xb0]);
    assert.deepEqual(x.toArray(), [448, -0.5]);
    assert.equal(x.select(0, 0).item(), 448);
  });

  test('complex: item() is refused (JS has no complex number); toArray() gives [re, im]', () => {
    const x = t.fromBuffer(new Float32Array([1.5, -2]), [], 'complex64');
    assert.deepEqual(x.toArray(), [1.5, -2]);
    assert.throws(
      () => x.item(),
      (e: unknown) => e instanceof TypeError && /complex number.*\[re, im\]/.test(e.message),
    );
  });

  test('complex: fromBuffer aliases interleaved (re, im) pairs; a lazy conj() is applied on the way out', () => {
    const pairs = new Float32Array([1, 2, 3, 4]);
    const x = t.fromBuffer(pairs, [2], 'complex64');
    pairs[3] = -4;
    assert.deepEqual(x.toArray(), [
      [1, 2],
      [3, -4],
    ]);
    const c = x.conj();
    assert.equal(bits(c).conj, true);
    assert.deepEqual([...(c.toTypedArray() as Float32Array)], [1, -2, 3, 4]);
    assert.deepEqual((t.ops.call('aten::imag', c) as t.Tensor).toArray(), [-2, 4]);
  });
});

describe('casts to and from float32, bit for bit with PyTorch', () => {
  for (const [name, c] of Object.entries(F.casts)) {
    if (name === 'complex64_to_complex128') continue;
    test(`float32 -> ${name} -> float32`, () => {
      const x = fromHex(c.input, [c.input.length / 8], 'float32');
      const y = x.to(name as DType);
      assert.equal(hex(y), c.to);
      assert.equal(hex(y.to('float32')), c.back);
    });
  }

  test('complex64 -> complex128, and the real part', () => {
    const c = F.casts.complex64_to_complex128;
    const z = fromHex(c.input, [c.input.length / 16], 'complex64');
    assert.equal(hex(z.to('complex128')), c.to);
    assert.equal(hex(z.real), c.back);
  });

  for (const d of ['float8_e4m3fn', 'float8_e5m2'] as const)
    test(`every ${d} bit pattern as float32`, () => {
      const patterns = t.fromBytes(
        Uint8Array.from({ length: 256 }, (_, i) => i),
        [256],
        d,
      );
      assert.equal(hex(patterns.to('float32')), F.float8[d]);
    });
});

describe("tensor(numbers, { dtype }): torch.tensor's values and range checks", () => {
  for (const [d, rows] of Object.entries(F.creation))
    for (const row of rows) {
      const v = decode(row.value) as number;
      test(`torch.tensor([${String(row.value)}], dtype=torch.${d}): ${row.error ? 'refused' : 'accepted'}`, () => {
        if (row.error !== undefined) assert.throws(() => t.tensor([v], { dtype: d as DType }), RangeError);
        else assert.equal(hex(t.tensor([v], { dtype: d as DType })), row.hex);
      });
    }
});

describe('printing as PyTorch', () => {
  for (const r of F.reprs)
    test(r.repr.replace(/\s+/g, ' ').slice(0, 60), () => {
      assert.equal(fromHex(r.hex, r.shape, r.dtype).toString(), r.repr);
    });
});

describe('t.load reads what torch.save wrote', () => {
  test('every dtype, views of one storage, conj/neg bits and requires_grad, exactly', async () => {
    const file = join(tmp, 'pytorch.pt');
    writeFileSync(file, Buffer.from(F.pt, 'base64'));
    const got = (await t.load(file)) as Record<string, t.Tensor>;
    assert.deepEqual(Object.keys(got), Object.keys(F.ptExpect));
    for (const [name, want] of Object.entries(F.ptExpect))
      assert.deepEqual(describeTensor(got[name]), want, name);
    // views and their base share memory, as they did in PyTorch
    assert.ok(native.sameStorage(got.uint16.h, got.uint16_strided.h));
    assert.ok(native.sameStorage(got.complex64.h, got.complex64_conj.h));
    assert.ok(native.sameStorage(got.float8_e4m3fn.h, got.float8_t.h));
  });
});

test("a big-endian file's complex storage: each float of a pair is swapped, not the pair", () => {
  // The legacy format records the writer's byte order; a complex element is two floats.
  const be = Buffer.alloc(16);
  be.writeFloatBE(1.5, 0);
  be.writeFloatBE(-2, 4);
  be.writeFloatBE(3, 8);
  be.writeFloatBE(0.25, 12);
  const type = new PyStorageType('torch.ComplexFloatStorage', 'complex64', 'complex64', 8);
  const factory = new TensorFactory();
  const record = { key: '0', bytes: 16, type, dtype: 'complex64' as const };
  factory.addBase(record, new Uint8Array(be), true);
  assert.deepEqual(factory.bases.get(record)?.toArray(), [
    [1.5, -2],
    [3, 0.25],
  ]);
  factory.disposeAll();
});

/** What PyTorch reads of tsddp's two files: check.py's report now (live), or the committed one. */
function pytorchReads(ptFile: string, stFile: string): Report {
  const committed = JSON.parse(readFileSync(join(FIXTURES, 'dtypes-more', 'from_tsddp.json'), 'utf8')) as {
    records: Record<string, string>;
    safetensorsSha256: string;
    report: Report;
  };
  if (!fixtureSource().live) {
    assert.deepEqual(
      recordDigests(readFileSync(ptFile)),
      committed.records,
      'tsddp writes the .pt PyTorch read',
    );
    const sha = createHash('sha256').update(readFileSync(stFile)).digest('hex');
    assert.equal(sha, committed.safetensorsSha256, 'tsddp writes the .safetensors PyTorch read');
    return committed.report;
  }
  const out = join(tmp, 'report.json');
  const r = spawnSync(PYTHON, [join(FIXTURES, 'dtypes-more', 'check.py'), ptFile, stFile, out], {
    encoding: 'utf8',
  });
  assert.equal(r.status, 0, r.stderr);
  return JSON.parse(readFileSync(out, 'utf8')) as Report;
}

describe('PyTorch reads what tsddp writes', () => {
  test('t.save and safetensors.saveFile: every value, view, bit and requires_grad', async () => {
    const values = ptValues();
    const ptFile = join(tmp, 'tsddp.pt');
    const stFile = join(tmp, 'tsddp.safetensors');
    await t.save(values, ptFile);
    const tensors = safetensorsValues();
    await t.safetensors.saveFile(tensors, stFile);
    const report = pytorchReads(ptFile, stFile);
    console.log(
      `tsddp -> PyTorch: ${fixtureSource().live ? `checked now (${report.reader})` : fixtureSource().why}`,
    );
    // Offsets may differ: t.save writes a storage from the first element a tensor reaches
    // (imag_neg starts one float in), torch.save the whole storage.
    const noOffset = (d: Record<string, Described>) =>
      Object.fromEntries(Object.entries(d).map(([k, { offset: _, ...rest }]) => [k, rest]));
    assert.deepEqual(
      noOffset(report.pt),
      noOffset(Object.fromEntries(Object.entries(values).map(([k, x]) => [k, describeTensor(x)]))),
    );
    assert.deepEqual(noOffset(report.pt), noOffset(F.ptExpect), 'what PyTorch reads is what it wrote itself');
    assert.deepEqual(report.ptShared, [
      ['complex64', 'complex64_conj'],
      ['float8_e4m3fn', 'float8_t'],
      ['uint16', 'uint16_strided'],
    ]);
    for (const [k, x] of Object.entries(tensors)) {
      const want = { ...describeTensor(x), requiresGrad: false };
      assert.deepEqual(report.safetensors[k], want, k);
    }
  });
});

describe('safetensors: U16, U32, U64, F8_E4M3, F8_E5M2 and C64', () => {
  const REFERENCE = join(FIXTURES, 'checkpoint', 'other_dtypes.safetensors');
  const cases = JSON.parse(readFileSync(join(FIXTURES, 'checkpoint', 'safetensors_cases.json'), 'utf8')) as {
    otherDtypes: Record<string, { torchDtype: string; shape: number[]; hex: string }>;
  };

  test("safetensors.torch.save_file's file loads as tensors with PyTorch's dtypes and bytes", async () => {
    const got = await t.safetensors.loadFile(REFERENCE);
    assert.deepEqual(Object.keys(got).sort(), Object.keys(cases.otherDtypes).sort());
    for (const [name, want] of Object.entries(cases.otherDtypes)) {
      assert.equal(got[name].dtype, want.torchDtype, name);
      assert.deepEqual(got[name].shape, want.shape, name);
      assert.equal(hex(got[name]), want.hex, name);
    }
  });

  test('tsddp writes those tensors byte for byte as safetensors.torch.save_file does', () => {
    const bytes = t.safetensors.save(safetensorsValues());
    assert.ok(Buffer.from(bytes).equals(readFileSync(REFERENCE)));
  });

  test('complex128 has no safetensors code: refused, naming the dtype', () => {
    assert.throws(
      () => t.safetensors.save({ z: t.zeros([2], { dtype: 'complex128' }) }),
      (e: unknown) =>
        e instanceof t.SafetensorsError && e.code === 'INVALID_ARGUMENT' && /complex128/.test(e.message),
    );
  });

  test('a lazily conjugated tensor is written with its values', () => {
    const x = t.fromBuffer(new Float32Array([1, 2]), [1], 'complex64').conj();
    const back = t.safetensors.load(t.safetensors.save({ x }));
    assert.deepEqual(back.x.toArray(), [[1, -2]]);
  });
});
