// safetensors reader/writer: interop with PyTorch's safetensors library both ways
// (test/fixtures/checkpoint, made by make_fixture.py and make_tsddp_files.ts), and the
// strict reader refusing hostile files (docs/reliability.md R10, R11) without over-reading or
// allocating what a header claims.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { SafetensorsError, safetensors } from '../src/checkpoint/index.ts';
import * as t from '../src/index.ts';
import { readSpec, specNumber, specTensor, writeTsddpFile } from './fixtures/checkpoint/make_tsddp_files.ts';

const FIXTURES = new URL('./fixtures/checkpoint/', import.meta.url).pathname;
const fixture = (name: string) => new Uint8Array(readFileSync(join(FIXTURES, name)));
const tmp = mkdtempSync(join(tmpdir(), 'tsddp-st-'));
after(() => rmSync(tmp, { recursive: true, force: true }));

const spec = readSpec();

/** Asserts a tensor read back has the spec's dtype, shape and exact values (NaN, -0.0 included). */
function assertMatchesSpec(name: string, x: t.Tensor): void {
  const e = spec.tensors[name];
  assert.equal(x.dtype, e.dtype, `${name}: dtype`);
  assert.deepEqual(x.shape, e.shape, `${name}: shape`);
  const got = x.toTypedArray();
  assert.equal(got.length, e.values.length, `${name}: numel`);
  for (let i = 0; i < got.length; i++) {
    if (e.dtype === 'int64') assert.equal(got[i], BigInt(e.values[i] as string), `${name}[${i}]`);
    else
      assert.ok(
        Object.is(Number(got[i]), specNumber(e.values[i])),
        `${name}[${i}]: ${got[i]} vs ${e.values[i]}`,
      );
  }
}

describe('interop with PyTorch safetensors', () => {
  test('reads a file written by safetensors.torch.save_file: every dtype, 0-d, empty, metadata', async () => {
    const { tensors, metadata } = await safetensors.readSafetensors(
      join(FIXTURES, 'from_pytorch.safetensors'),
    );
    assert.deepEqual(Object.keys(tensors).sort(), Object.keys(spec.tensors).sort());
    for (const [name, x] of Object.entries(tensors)) assertMatchesSpec(name, x);
    assert.deepEqual(metadata, spec.metadata);
    assert.deepEqual(
      new Set(Object.values(tensors).map((x) => x.dtype)),
      new Set([
        'float32',
        'float64',
        'float16',
        'bfloat16',
        'int64',
        'int32',
        'int16',
        'int8',
        'uint8',
        'bool',
      ]),
    );
  });

  test("tsddp's writer produces PyTorch's bytes exactly, and the committed tsddp file is current", () => {
    const tensors = Object.fromEntries(Object.entries(spec.tensors).map(([k, e]) => [k, specTensor(e)]));
    const bytes = safetensors.save(tensors, { metadata: spec.metadata });
    assert.deepEqual(Buffer.from(bytes), Buffer.from(fixture('from_pytorch.safetensors')));
    assert.deepEqual(Buffer.from(bytes), Buffer.from(fixture('written_by_tsddp.safetensors')));
  });

  // Runs whenever a Python with torch and safetensors is at hand (this machine's .venv
  // after `pip install safetensors`); CI machines without it still have the byte
  // identity with PyTorch's writer above and the committed files as the guarantee.
  const python = join(process.cwd(), '.venv/bin/python');
  const hasPython =
    existsSync(python) &&
    spawnSync(python, ['-c', 'import torch, safetensors'], { stdio: 'ignore' }).status === 0;
  test('files tsddp writes now load in PyTorch (safetensors.torch.load_file, load_state_dict)', {
    skip: hasPython ? false : 'needs .venv/bin/python with torch and safetensors',
  }, async () => {
    const { writeTsddpCheckpoint } = await import('./fixtures/checkpoint/make_tsddp_files.ts');
    const file = join(tmp, 'fresh.safetensors');
    await writeTsddpFile(file);
    const ckpt = await writeTsddpCheckpoint(join(tmp, 'fresh-ckpt'));
    const r = spawnSync(
      python,
      [join(FIXTURES, 'make_fixture.py'), '--no-write', '--file', file, '--checkpoint', ckpt],
      { encoding: 'utf8' },
    );
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, /ok: .*fresh\.safetensors loads in PyTorch/);
    assert.match(
      r.stdout,
      /ok: .*ckpt-000007: digests match, model loads with load_state_dict\(strict=True\)/,
    );
  });
});

describe('writer', () => {
  test('round-trips every dtype bit for bit, in memory and through a file', async () => {
    const tensors = Object.fromEntries(Object.entries(spec.tensors).map(([k, e]) => [k, specTensor(e)]));
    const path = join(tmp, 'rt.safetensors');
    await safetensors.saveFile(tensors, path);
    for (const back of [safetensors.load(safetensors.save(tensors)), await safetensors.loadFile(path)]) {
      for (const [name, x] of Object.entries(tensors)) {
        assertMatchesSpec(name, back[name]);
        assert.deepEqual(back[name].toBytes(), x.toBytes(), `${name}: bytes`);
      }
    }
    assert.deepEqual(
      readdirSync(tmp).filter((f) => f.includes('.tmp-')),
      [],
      'no temp files left',
    );
  });

  test('pads the header to 8 bytes and aligns every tensor to its element size', async () => {
    const bytes = safetensors.save({
      b: t.tensor([1, 0, 1], { dtype: 'uint8' }),
      a: t.tensor([1.5, 2.5], { dtype: 'float64' }),
      c: t.tensor([7, 8, 9], { dtype: 'int16' }),
      d: t.tensor([1, 2], { dtype: 'float32' }),
    });
    const n = Number(new DataView(bytes.buffer).getBigUint64(0, true));
    assert.equal((8 + n) % 8, 0);
    const h = await safetensors.readHeader(memorySource(bytes).src);
    assert.equal(h.dataStart, 8 + n);
    const size = { float64: 8, float32: 4, int16: 2, uint8: 1 } as Record<string, number>;
    for (const e of h.entries) assert.equal((h.dataStart + e.begin) % size[e.dtype ?? ''], 0, e.name);
    assert.deepEqual(
      h.entries.map((e) => e.name),
      ['a', 'd', 'c', 'b'],
    );
  });

  test('writes non-contiguous tensors in logical (row-major) order', () => {
    const x = t
      .tensor([
        [1, 2, 3],
        [4, 5, 6],
      ])
      .transpose(0, 1);
    assert.equal(x.isContiguous(), false);
    const back = safetensors.load(safetensors.save({ x }));
    assert.deepEqual(back.x.shape, [3, 2]);
    assert.deepEqual(back.x.toArray(), [
      [1, 4],
      [2, 5],
      [3, 6],
    ]);
  });

  test('a tensor named __proto__ stays a key on both sides', () => {
    const sd: Record<string, t.Tensor> = {};
    Object.defineProperty(sd, '__proto__', { value: t.tensor([1, 2]), enumerable: true });
    const back = safetensors.load(safetensors.save(sd));
    assert.deepEqual(Object.keys(back), ['__proto__']);
    assert.equal(Object.getPrototypeOf(back), Object.prototype);
    assert.deepEqual(Object.getOwnPropertyDescriptor(back, '__proto__')?.value.toArray(), [1, 2]);
  });

  test('refuses what it cannot store', () => {
    const x = t.tensor([1]);
    assert.throws(() => safetensors.save({ __metadata__: x }), {
      name: 'SafetensorsError',
      code: 'INVALID_ARGUMENT',
    });
    assert.throws(() => safetensors.save({ x }, { metadata: { n: 1 as unknown as string } }), {
      code: 'INVALID_ARGUMENT',
    });
    const gone = t.tensor([1]);
    gone.dispose();
    assert.throws(() => safetensors.save({ gone }), {
      code: 'INVALID_ARGUMENT',
      message: /'gone' is not a live Tensor/,
    });
    assert.throws(() => safetensors.save({ s: 'x' as unknown as t.Tensor }), { code: 'INVALID_ARGUMENT' });
  });

  test('saveFile replaces an existing file atomically', async () => {
    const path = join(tmp, 'replace.safetensors');
    await safetensors.saveFile({ a: t.tensor([1]) }, path);
    await safetensors.saveFile({ b: t.tensor([2, 3]) }, path);
    const back = await safetensors.loadFile(path);
    assert.deepEqual(Object.keys(back), ['b']);
    assert.deepEqual(
      readdirSync(tmp).filter((f) => f.includes('replace') && f !== 'replace.safetensors'),
      [],
    );
  });
});

// --- hostile files ---------------------------------------------------------------------

/** A byte source over `bytes` that records every read. */
function memorySource(bytes: Uint8Array) {
  const reads: [number, number][] = [];
  const src: safetensors.ByteSource = {
    name: 'crafted.safetensors',
    size: bytes.length,
    read: async (offset, length) => {
      reads.push([offset, length]);
      return bytes.slice(offset, offset + length);
    },
  };
  return { src, reads };
}

const enc = new TextEncoder();

/** 8-byte length (the real one unless `claimed`), header bytes, data. */
function craft(header: string | Uint8Array, data: Uint8Array | number = 0, claimed?: bigint): Uint8Array {
  const h = typeof header === 'string' ? enc.encode(header) : header;
  const d = typeof data === 'number' ? new Uint8Array(data) : data;
  const out = new Uint8Array(8 + h.length + d.length);
  new DataView(out.buffer).setBigUint64(0, claimed ?? BigInt(h.length), true);
  out.set(h, 8);
  out.set(d, 8 + h.length);
  return out;
}

const entry = (dtype: string, shape: unknown[], offsets: unknown[]) =>
  `{"dtype":"${dtype}","shape":${JSON.stringify(shape)},"data_offsets":${JSON.stringify(offsets)}}`;
const A = entry('F32', [2], [0, 8]);
const B = entry('F32', [1], [8, 12]);

interface Hostile {
  name: string;
  bytes: Uint8Array;
  code: string;
  message: RegExp;
}

const hostile: Hostile[] = [
  // header length
  {
    name: 'header length over 100 MB',
    bytes: craft('{}', 16, 100_000_001n),
    code: 'HEADER_LENGTH',
    message: /exceeds the 100000000-byte limit/,
  },
  {
    name: 'header length 2^64 - 1',
    bytes: craft('{}', 16, (1n << 64n) - 1n),
    code: 'HEADER_LENGTH',
    message: /exceeds/,
  },
  {
    name: 'header length past the end of the file',
    bytes: craft('{}', 40, 1000n),
    code: 'HEADER_LENGTH',
    message: /runs past the end of the file \(50 bytes\)/,
  },
  {
    name: 'file shorter than 8 bytes',
    bytes: new Uint8Array([2, 0, 0, 0, 0]),
    code: 'HEADER_LENGTH',
    message: /shorter than the 8-byte header length/,
  },
  { name: 'empty file', bytes: new Uint8Array(0), code: 'HEADER_LENGTH', message: /file is 0 bytes/ },
  // encoding and JSON
  {
    name: 'non-UTF-8 header',
    bytes: craft(Uint8Array.of(...enc.encode('{"a'), 0xff, ...enc.encode(`":${A}}`)), 8),
    code: 'HEADER_ENCODING',
    message: /not valid UTF-8/,
  },
  {
    name: 'overlong UTF-8 sequence',
    bytes: craft(Uint8Array.of(...enc.encode('{"'), 0xc0, 0xaf, ...enc.encode(`":${A}}`)), 8),
    code: 'HEADER_ENCODING',
    message: /UTF-8/,
  },
  { name: 'truncated JSON', bytes: craft(`{"a":${A}`, 8), code: 'HEADER_JSON', message: /not valid JSON/ },
  { name: 'not JSON at all', bytes: craft('{hello}', 0), code: 'HEADER_JSON', message: /not valid JSON/ },
  {
    name: 'header is an array',
    bytes: craft('[]', 0),
    code: 'HEADER_JSON',
    message: /does not start with '\{'/,
  },
  {
    name: 'byte-order mark before the header',
    bytes: craft(`\ufeff{"a":${A}}`, 8),
    code: 'HEADER_JSON',
    message: /does not start/,
  },
  {
    name: 'NUL padding instead of spaces',
    bytes: craft(`{"a":${A}}\0\0\0`, 8),
    code: 'HEADER_JSON',
    message: /not valid JSON/,
  },
  {
    name: 'trailing JSON after the object',
    bytes: craft(`{"a":${A}}{}`, 8),
    code: 'HEADER_JSON',
    message: /after the JSON value/,
  },
  {
    name: 'lone surrogate escape in a name',
    bytes: craft(`{"\\ud800":${A}}`, 8),
    code: 'HEADER_JSON',
    message: /lone surrogate/,
  },
  {
    name: '100 000 nested arrays',
    bytes: craft(`{"a":${'['.repeat(100_000)}`, 0),
    code: 'HEADER_JSON',
    message: /nesting deeper/,
  },
  // duplicate keys
  {
    name: 'duplicate tensor name',
    bytes: craft(`{"a":${A},"a":${B}}`, 12),
    code: 'DUPLICATE_KEY',
    message: /duplicate key "a"/,
  },
  {
    name: 'duplicate name spelled with an escape',
    bytes: craft(`{"a":${A},"\\u0061":${B}}`, 12),
    code: 'DUPLICATE_KEY',
    message: /duplicate key "a"/,
  },
  {
    name: 'duplicate field in an entry',
    bytes: craft(`{"a":{"dtype":"F32","dtype":"F64","shape":[2],"data_offsets":[0,8]}}`, 8),
    code: 'DUPLICATE_KEY',
    message: /"dtype"/,
  },
  {
    name: 'duplicate __metadata__',
    bytes: craft(`{"__metadata__":{},"__metadata__":{},"a":${A}}`, 8),
    code: 'DUPLICATE_KEY',
    message: /__metadata__/,
  },
  {
    name: 'duplicate metadata key',
    bytes: craft(`{"__metadata__":{"k":"1","k":"2"},"a":${A}}`, 8),
    code: 'DUPLICATE_KEY',
    message: /"k"/,
  },
  // dtype
  {
    name: 'unknown dtype',
    bytes: craft(`{"a":${entry('F8_E4M4', [8], [0, 8])}}`, 8),
    code: 'UNKNOWN_DTYPE',
    message: /tensor 'a' has dtype "F8_E4M4"; the format's dtypes are BOOL, U8, I8, F8_E5M2, F8_E4M3/,
  },
  {
    name: 'a format dtype without a tsddp dtype, by default',
    bytes: craft(`{"a":${A},"z":${entry('F8_E4M3FNUZ', [4], [8, 12])}}`, 12),
    code: 'UNSUPPORTED_DTYPE',
    message:
      /no dtype for tensor 'z' \(F8_E4M3FNUZ, torch\.float8_e4m3fnuz\); read with \{ otherDtypes: 'raw' \}/,
  },
  {
    name: 'lowercase dtype',
    bytes: craft(`{"a":${entry('f32', [2], [0, 8])}}`, 8),
    code: 'UNKNOWN_DTYPE',
    message: /"f32"/,
  },
  {
    name: 'dtype naming an Object property',
    bytes: craft(`{"a":${entry('toString', [2], [0, 8])}}`, 8),
    code: 'UNKNOWN_DTYPE',
    message: /"toString"/,
  },
  // offsets
  {
    name: 'gap between tensors',
    bytes: craft(`{"a":${A},"b":${entry('F32', [1], [12, 16])}}`, 16),
    code: 'INVALID_OFFSETS',
    message: /a gap of 4 bytes before tensor 'b'/,
  },
  {
    name: 'data not starting at offset 0',
    bytes: craft(`{"a":${entry('F32', [2], [4, 12])}}`, 12),
    code: 'INVALID_OFFSETS',
    message: /gap of 4 bytes before tensor 'a'/,
  },
  {
    name: 'overlapping tensors',
    bytes: craft(`{"a":${A},"b":${entry('F32', [2], [4, 12])}}`, 12),
    code: 'INVALID_OFFSETS',
    message: /overlapping data at tensor 'b'/,
  },
  {
    name: 'two tensors sharing the same bytes',
    bytes: craft(`{"a":${A},"b":${A}}`, 8),
    code: 'INVALID_OFFSETS',
    message: /overlapping/,
  },
  {
    name: 'offsets far past the end (claims 1 TiB)',
    bytes: craft(`{"a":${entry('U8', [2 ** 40], [0, 2 ** 40])}}`, 8),
    code: 'INVALID_OFFSETS',
    message: /outside the 8-byte data buffer/,
  },
  {
    name: 'end before begin',
    bytes: craft(`{"a":${entry('F32', [0], [8, 0])}}`, 8),
    code: 'INVALID_OFFSETS',
    message: /\[8, 0\]/,
  },
  {
    name: 'three offsets',
    bytes: craft(`{"a":${entry('F32', [2], [0, 8, 8])}}`, 8),
    code: 'INVALID_ENTRY',
    message: /data_offsets/,
  },
  {
    name: 'negative offset',
    bytes: craft(`{"a":${entry('F32', [2], [-8, 0])}}`, 8),
    code: 'INVALID_OFFSETS',
    message: /\[-8, 0\]/,
  },
  // sizes
  {
    name: 'size not shape × dtype',
    bytes: craft(`{"a":${entry('F32', [3], [0, 8])}}`, 8),
    code: 'SIZE_MISMATCH',
    message: /spans 8 bytes but shape \[3\] of F32 needs 12/,
  },
  {
    name: 'F16 sized as F32',
    bytes: craft(`{"a":${entry('F16', [2], [0, 8])}}`, 8),
    code: 'SIZE_MISMATCH',
    message: /needs 4/,
  },
  {
    name: 'overflowing shape product',
    bytes: craft(`{"a":${entry('F32', [2 ** 32, 2 ** 32, 2 ** 32], [0, 8])}}`, 8),
    code: 'OVERFLOW',
    message: /overflows 64 bits/,
  },
  {
    name: 'product overflowing only with the dtype size',
    bytes: craft(`{"a":${entry('F64', [2 ** 31, 2 ** 31, 2 ** 2], [0, 8])}}`, 8),
    code: 'OVERFLOW',
    message: /overflows/,
  },
  {
    name: 'overflow before a zero dimension',
    bytes: craft(`{"a":${entry('U8', [2 ** 40, 2 ** 40, 0], [0, 0])}}`, 0),
    code: 'OVERFLOW',
    message: /overflows/,
  },
  {
    name: 'dimension beyond 2^53',
    bytes: craft('{"a":{"dtype":"U8","shape":[0,18446744073709551615],"data_offsets":[0,0]}}', 0),
    code: 'OVERFLOW',
    message: /too large/,
  },
  // entries
  {
    name: 'negative dimension',
    bytes: craft(`{"a":${entry('F32', [-2], [0, 8])}}`, 8),
    code: 'INVALID_ENTRY',
    message: /shape entry the number -2/,
  },
  {
    name: 'fractional dimension',
    bytes: craft(`{"a":${entry('F32', [2.5], [0, 8])}}`, 8),
    code: 'INVALID_ENTRY',
    message: /2\.5/,
  },
  {
    name: 'dimension written with an exponent',
    bytes: craft('{"a":{"dtype":"F32","shape":[2e0],"data_offsets":[0,8]}}', 8),
    code: 'INVALID_ENTRY',
    message: /not a non-negative integer/,
  },
  {
    name: 'dimension as a string',
    bytes: craft(`{"a":${entry('F32', ['2'], [0, 8])}}`, 8),
    code: 'INVALID_ENTRY',
    message: /the string "2"/,
  },
  {
    name: 'missing data_offsets',
    bytes: craft('{"a":{"dtype":"F32","shape":[2]}}', 8),
    code: 'INVALID_ENTRY',
    message: /no 'data_offsets'/,
  },
  {
    name: 'missing shape',
    bytes: craft('{"a":{"dtype":"F32","data_offsets":[0,8]}}', 8),
    code: 'INVALID_ENTRY',
    message: /no 'shape'/,
  },
  {
    name: 'unknown field',
    bytes: craft('{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8],"offsets":[0,8]}}', 8),
    code: 'INVALID_ENTRY',
    message: /unknown field 'offsets'/,
  },
  {
    name: 'entry that is not an object',
    bytes: craft('{"a":[0,8]}', 8),
    code: 'INVALID_ENTRY',
    message: /is an array, not an object/,
  },
  // trailing bytes
  {
    name: 'trailing bytes',
    bytes: craft(`{"a":${A}}`, 9),
    code: 'TRAILING_BYTES',
    message: /1 bytes after the last tensor/,
  },
  {
    name: 'polyglot: no tensors, data appended',
    bytes: craft('{}', 64),
    code: 'TRAILING_BYTES',
    message: /64 bytes after/,
  },
  // metadata
  {
    name: '__metadata__ with a number value',
    bytes: craft(`{"__metadata__":{"epoch":3},"a":${A}}`, 8),
    code: 'METADATA',
    message: /__metadata__\["epoch"\] is the number 3, not a string/,
  },
  {
    name: '__metadata__ with a nested object',
    bytes: craft(`{"__metadata__":{"k":{"x":"y"}},"a":${A}}`, 8),
    code: 'METADATA',
    message: /an object, not a string/,
  },
  {
    name: '__metadata__ that is an array',
    bytes: craft(`{"__metadata__":["a"],"a":${A}}`, 8),
    code: 'METADATA',
    message: /not an object of strings/,
  },
  {
    name: '__metadata__ that is a string',
    bytes: craft(`{"__metadata__":"x","a":${A}}`, 8),
    code: 'METADATA',
    message: /not an object of strings/,
  },
  // pickles (docs/reliability.md R11)
  {
    name: 'torch.save zip file',
    bytes: fixture('torch_save.pt'),
    code: 'PICKLE',
    message: /tsddp never unpickles.*save_file/,
  },
  {
    name: 'torch.save legacy pickle',
    bytes: fixture('torch_save_legacy.pt'),
    code: 'PICKLE',
    message: /tsddp never unpickles/,
  },
];

describe('strict reader refuses hostile files (docs/reliability.md R10)', () => {
  for (const h of hostile) {
    test(h.name, async () => {
      const before = t.memory().tensors;
      // Through a byte source: every read recorded.
      const { src, reads } = memorySource(h.bytes);
      await assert.rejects(safetensors.readSafetensors(src), (e: unknown) => {
        assert.ok(e instanceof SafetensorsError, `not a SafetensorsError: ${e}`);
        assert.equal(e.code, h.code, e.message);
        assert.match(e.message, h.message);
        assert.match(e.message, /^crafted\.safetensors: /);
        return true;
      });
      // Never past the end, never a data read, never more than the file holds: only the
      // 8-byte prefix and (when its length was valid) the header itself were read.
      assert.ok(reads.length <= 2, `reads: ${JSON.stringify(reads)}`);
      for (const [offset, length] of reads)
        assert.ok(offset + length <= h.bytes.length, `over-read ${offset}+${length}`);
      if (reads.length === 2) {
        assert.equal(reads[1][0], 8);
        assert.equal(reads[1][1], Number(new DataView(h.bytes.buffer).getBigUint64(0, true)));
      }
      // The in-memory reader agrees, and no tensor was created by either.
      assert.throws(() => safetensors.deserialize(h.bytes), { name: 'SafetensorsError', code: h.code });
      assert.equal(t.memory().tensors, before, 'tensors created');
    });
  }

  test('the same refusals come from real files, with the path in the message', async () => {
    for (const h of hostile.filter((x) =>
      ['HEADER_LENGTH', 'DUPLICATE_KEY', 'TRAILING_BYTES'].includes(x.code),
    )) {
      const path = join(tmp, 'hostile.safetensors');
      writeFileSync(path, h.bytes);
      await assert.rejects(safetensors.loadFile(path), (e: unknown) => {
        assert.ok(e instanceof SafetensorsError);
        assert.equal(e.code, h.code, `${h.name}: ${e.message}`);
        assert.equal(e.file, path);
        return true;
      });
    }
  });

  test('a claimed 99 MB header in a small file allocates nothing of that size', async () => {
    const path = join(tmp, 'claims.safetensors');
    writeFileSync(path, craft('{}', 100, 99_000_000n));
    const before = process.memoryUsage().arrayBuffers;
    await assert.rejects(safetensors.loadFile(path), { code: 'HEADER_LENGTH' });
    assert.ok(process.memoryUsage().arrayBuffers - before < 10_000_000);
  });

  test('a .pt path is refused before the file is opened (docs/reliability.md R11)', async () => {
    await assert.rejects(safetensors.loadFile(join(tmp, 'does-not-exist.pt')), {
      name: 'SafetensorsError',
      code: 'PICKLE',
      message: /never unpickles/,
    });
  });

  test('a file that shrinks while being read gives TRUNCATED', async () => {
    const good = safetensors.save({ a: t.tensor([1, 2, 3, 4]) });
    const { src } = memorySource(good);
    const lying: safetensors.ByteSource = {
      ...src,
      read: async (o, l) =>
        o === 0 ? src.read(o, l) : (await src.read(o, l)).subarray(0, Math.max(0, l - 3)),
    };
    await assert.rejects(safetensors.readSafetensors(lying), {
      code: 'TRUNCATED',
      message: /file ended after/,
    });
  });

  test('readHeader reads only the prefix and header; loading reads each tensor once', async () => {
    const big = safetensors.save({ w: t.zeros([256, 256]), b: t.ones([256]) });
    const { src, reads } = memorySource(big);
    const h = await safetensors.readHeader(src);
    assert.deepEqual(
      h.entries.map((e) => [e.name, e.shape]),
      [
        ['b', [256]],
        ['w', [256, 256]],
      ],
    );
    assert.deepEqual(reads, [
      [0, 8],
      [8, h.dataStart - 8],
    ]);
    reads.length = 0;
    const { tensors } = await safetensors.readSafetensors(src);
    assert.equal(reads.length, 4);
    assert.equal(
      reads.slice(2).reduce((s, [, l]) => s + l, 0),
      big.length - h.dataStart,
    );
    assert.equal(tensors.w.sum().item(), 0);
    assert.equal(tensors.b.sum().item(), 256);
  });

  test('accepts the valid edge cases the spec allows', () => {
    // No tensors at all; null metadata; whitespace padding; empty and 0-d tensors.
    assert.deepEqual(Object.keys(safetensors.load(craft('{}'))), []);
    assert.deepEqual(safetensors.deserialize(craft('{"__metadata__":null}  \n\t ')).metadata, null);
    const back = safetensors.load(
      craft(
        `{"e":${entry('F32', [0, 5], [0, 0])},"s":${entry('I32', [], [0, 4])}}`,
        Uint8Array.of(7, 0, 0, 0),
      ),
    );
    assert.deepEqual(back.e.shape, [0, 5]);
    assert.equal(back.s.item(), 7);
  });
});
