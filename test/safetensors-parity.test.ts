// safetensors against PyTorch's own behaviour, from
// test/fixtures/checkpoint/safetensors_cases.json and other_dtypes.safetensors, made by
// make_safetensors_cases.py: U16, U32, U64, F8_E4M3, F8_E5M2 and C64 tensors load as
// tensors; those of dtypes tsddp's Tensor has none for (F8_E4M3FNUZ, F8_E5M2FNUZ) are read,
// not a reason to refuse the file; tensors sharing
// memory are refused where save_file refuses them; headers with -0 are refused where
// PyTorch's parser refuses them.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { FORMAT_DTYPES } from '../src/checkpoint/dtypes.ts';
import { SafetensorsError, safetensors } from '../src/checkpoint/index.ts';
import { DTYPES, ITEM_SIZE } from '../src/core/dtype.ts';
import * as t from '../src/index.ts';

interface DtypeCase {
  safetensorsDtype: string;
  torchDtype: string;
  shape: number[];
  hex: string;
}
const FIXTURES = new URL('./fixtures/checkpoint/', import.meta.url).pathname;
const cases = JSON.parse(readFileSync(join(FIXTURES, 'safetensors_cases.json'), 'utf8')) as {
  otherDtypes: Record<string, DtypeCase>;
  unsupportedDtypes: Record<string, DtypeCase>;
  sharedMemory: {
    tensors: Record<string, string>;
    refused: boolean;
    groups: string[][];
    message: string | null;
  }[];
  headers: {
    name: string;
    header: string;
    dataLength: number;
    accepted: boolean;
    error: string | null;
    keys: string[] | null;
  }[];
};
const OTHER_FILE = join(FIXTURES, 'other_dtypes.safetensors');
const UNSUPPORTED_FILE = join(FIXTURES, 'unsupported_dtypes.safetensors');
const unsupportedBytes = () => new Uint8Array(readFileSync(UNSUPPORTED_FILE));
const unsupported = cases.unsupportedDtypes;
const unsupportedNames = Object.entries(unsupported)
  .filter(([, e]) => !(DTYPES as readonly string[]).includes(e.torchDtype))
  .map(([k]) => k);

describe('dtypes beyond the first ten: U16, U32, U64, F8_E4M3, F8_E5M2 and C64 load as tensors', () => {
  test('the fixture has U16, U32, U64, F8_E4M3, F8_E5M2 and C64 tensors beside an F32 one', () => {
    const codes = new Set(Object.values(cases.otherDtypes).map((e) => e.safetensorsDtype));
    for (const c of ['U16', 'U32', 'U64', 'F8_E4M3', 'F8_E5M2', 'C64', 'F32']) assert.ok(codes.has(c), c);
  });

  test("readHeader gives each its tsddp dtype; loading gives PyTorch's bytes", async () => {
    const h = await safetensors.readHeader(OTHER_FILE);
    assert.deepEqual(h.entries.map((e) => e.name).sort(), Object.keys(cases.otherDtypes).sort());
    const tensors = await safetensors.loadFile(OTHER_FILE);
    for (const e of h.entries) {
      const want = cases.otherDtypes[e.name];
      assert.equal(e.safetensorsDtype, want.safetensorsDtype, e.name);
      assert.deepEqual(e.shape, want.shape, e.name);
      assert.equal(e.dtype, want.torchDtype);
      assert.equal(Buffer.from(tensors[e.name].toBytes()).toString('hex'), want.hex, e.name);
    }
  });
});

describe('dtypes PyTorch writes that tsddp has no Tensor dtype for (F8_E4M3FNUZ, F8_E5M2FNUZ)', () => {
  test('readHeader lists every tensor with its code, and null for a dtype tsddp lacks', async () => {
    assert.deepEqual(unsupportedNames.sort(), ['f8_e4m3fnuz', 'f8_e5m2fnuz']);
    const h = await safetensors.readHeader(UNSUPPORTED_FILE);
    assert.deepEqual(h.entries.map((e) => e.name).sort(), Object.keys(unsupported).sort());
    for (const e of h.entries) {
      const want = unsupported[e.name];
      assert.equal(e.safetensorsDtype, want.safetensorsDtype, e.name);
      assert.deepEqual(e.shape, want.shape, e.name);
      assert.equal(e.dtype, (DTYPES as readonly string[]).includes(want.torchDtype) ? want.torchDtype : null);
    }
  });

  test('by default loading refuses before reading data, naming each tensor and its dtype', async () => {
    for (const attempt of [
      () => safetensors.loadFile(UNSUPPORTED_FILE),
      async () => safetensors.load(unsupportedBytes()),
    ]) {
      await assert.rejects(attempt, (e: unknown) => {
        assert.ok(e instanceof SafetensorsError);
        assert.equal(e.code, 'UNSUPPORTED_DTYPE');
        for (const name of unsupportedNames) {
          const o = unsupported[name];
          assert.ok(
            e.message.includes(`'${name}' (${o.safetensorsDtype}, torch.${o.torchDtype})`),
            e.message,
          );
        }
        assert.match(e.message, /otherDtypes: 'raw'/);
        return true;
      });
    }
  });

  test("otherDtypes: 'raw' gives their bytes exactly as PyTorch holds them, and the rest as tensors", async () => {
    for (const c of [
      await safetensors.readSafetensors(UNSUPPORTED_FILE, { otherDtypes: 'raw' }),
      safetensors.deserialize(unsupportedBytes(), { otherDtypes: 'raw' }),
    ]) {
      assert.deepEqual(Object.keys(c.raw).sort(), [...unsupportedNames].sort());
      for (const name of unsupportedNames) {
        const want = unsupported[name];
        const r = c.raw[name];
        assert.equal(r.safetensorsDtype, want.safetensorsDtype);
        assert.equal(r.torchDtype, want.torchDtype);
        assert.deepEqual(r.shape, want.shape);
        assert.equal(Buffer.from(r.bytes).toString('hex'), want.hex, name);
      }
      assert.deepEqual(Object.keys(c.tensors), ['f32']);
      assert.equal(Buffer.from(c.tensors.f32.toBytes()).toString('hex'), unsupported.f32.hex);
    }
  });

  test("otherDtypes: 'skip' loads the other tensors", async () => {
    const tensors = await safetensors.loadFile(UNSUPPORTED_FILE, { otherDtypes: 'skip' });
    assert.deepEqual(Object.keys(tensors), ['f32']);
    assert.deepEqual(tensors.f32.toArray(), [1.5, -2]);
    assert.throws(
      () => safetensors.load(unsupportedBytes(), { otherDtypes: 'maybe' as 'skip' }),
      /otherDtypes must be 'error', 'raw' or 'skip'/,
    );
  });

  test('the format table agrees with core: item sizes, and every tsddp dtype but complex128 has a code', () => {
    for (const f of FORMAT_DTYPES.values())
      if (f.dtype !== null) assert.equal(f.bytes, ITEM_SIZE[f.dtype], f.code);
    // the format has no C128 (safetensors.torch refuses torch.complex128 too)
    for (const d of DTYPES.filter((x) => x !== 'complex128'))
      assert.ok(
        [...FORMAT_DTYPES.values()].some((f) => f.dtype === d),
        d,
      );
  });
});

// The views a case names, built as make_safetensors_cases.py builds them.
function views(): Record<string, () => t.Tensor> {
  const w = t.arange(12, { dtype: 'float32' }).view([3, 4]);
  const v = t.arange(4, { dtype: 'float32' });
  const e = t.zeros([0]);
  return {
    w: () => w,
    'w.clone': () => w.clone(),
    'w.flat': () => w.view([-1]),
    'w.row0': () => w.select(0, 0),
    'w.row1': () => w.select(0, 1),
    'w.row2': () => w.select(0, 2),
    'w.rows01': () => w.narrow(0, 0, 2),
    'w.rows12': () => w.narrow(0, 1, 2),
    'w.empty1': () => w.narrow(0, 1, 0),
    v: () => v,
    e: () => e,
  };
}

describe('tensors that share memory (safetensors.torch.save_file refuses them)', () => {
  for (const c of cases.sharedMemory) {
    const label = Object.entries(c.tensors)
      .map(([k, v]) => `${k}=${v}`)
      .join(', ');
    test(`${c.refused ? 'refused' : 'written'}: ${label}`, () => {
      t.tidy(() => {
        const make = views();
        const tensors = Object.fromEntries(Object.entries(c.tensors).map(([k, v]) => [k, make[v]()]));
        if (!c.refused) {
          const back = safetensors.load(safetensors.save(tensors));
          for (const [k, x] of Object.entries(tensors)) assert.ok(back[k].equal(x), k);
          return;
        }
        assert.match(c.message ?? '', /Some tensors share memory/);
        assert.throws(
          () => safetensors.save(tensors),
          (e: unknown) => {
            assert.ok(e instanceof SafetensorsError);
            assert.equal(e.code, 'SHARED_MEMORY');
            // PyTorch's groups, each named.
            const groups = c.groups.map((g) => `[${g.map((n) => `'${n}'`).join(', ')}]`).join(', ');
            assert.ok(e.message.includes(`some tensors share memory: ${groups};`), e.message);
            return true;
          },
        );
      });
    });
  }

  test('saveFile refuses them before creating the file', async () => {
    const { mkdtempSync, existsSync, rmSync } = await import('node:fs');
    const { tmpdir } = await import('node:os');
    const dir = mkdtempSync(join(tmpdir(), 'tsddp-shared-'));
    try {
      const w = t.ones([4]);
      const path = join(dir, 'tied.safetensors');
      await assert.rejects(safetensors.saveFile({ 'fc.weight': w, 'emb.weight': w }, path), {
        code: 'SHARED_MEMORY',
      });
      assert.equal(existsSync(path), false);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("headers: accepted and refused as PyTorch's parser does", () => {
  const enc = new TextEncoder();
  const craft = (header: string, dataLength: number) => {
    const h = enc.encode(header);
    const out = new Uint8Array(8 + h.length + dataLength);
    new DataView(out.buffer).setBigUint64(0, BigInt(h.length), true);
    out.set(h, 8);
    for (let i = 0; i < dataLength; i++) out[8 + h.length + i] = i;
    return out;
  };
  // tsddp refuses a repeated tensor name where PyTorch keeps one: deliberate and
  // documented (an ambiguous file is not loaded), so that case is checked the other way.
  const STRICTER = new Set(['duplicate tensor name']);

  for (const c of cases.headers) {
    test(`${c.name}: PyTorch ${c.accepted ? 'accepts' : 'refuses'}`, () => {
      const bytes = craft(c.header, c.dataLength);
      if (STRICTER.has(c.name)) {
        assert.equal(c.accepted, true);
        assert.throws(() => safetensors.load(bytes), { code: 'DUPLICATE_KEY' });
        return;
      }
      if (c.accepted) {
        t.tidy(() => assert.deepEqual(Object.keys(safetensors.load(bytes)).sort(), c.keys));
        return;
      }
      assert.throws(
        () => safetensors.load(bytes),
        (e: unknown) => {
          assert.ok(e instanceof SafetensorsError, String(e));
          assert.equal(e.code, 'INVALID_ENTRY', e.message);
          if (c.header.includes('-0')) {
            // Names the tensor and says what is wrong with the value.
            const key = /-0 in the second tensor/.test(c.name) ? 'b' : 'a';
            assert.match(e.message, new RegExp(`tensor '${key}' has .*the number -0 \\(negative zero\\)`));
          }
          return true;
        },
      );
    });
  }
});
