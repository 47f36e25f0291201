// t.save against PyTorch (tsddp -> PyTorch): what tsddp writes, torch.load(weights_only=True)
// reads (test/fixtures/pt/check.py: also memory-mapped, with PyTorch's own offset checks,
// and imagenet/main.py's checkpoint applied to a model, SGD and StepLR). With .venv's
// torch the check runs now; without, the test compares its writes with
// from_tsddp.json (what PyTorch read when make_from_tsddp.ts ran, and each record's
// digest). Also: round trips both ways, storages written once, the zip layout, and values
// refused before anything is written.
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { unzipSync } from 'fflate';
import { CheckpointError } from '../src/checkpoint/index.ts';
import { native } from '../src/core/native.ts';
import * as t from '../src/index.ts';
import { fixtureSource } from './helpers/live-fixture.ts';
import { asJavaScriptSees, describe as describeValue } from './helpers/pt-describe.ts';
import { PT_FIXTURES, runPython, tensorsIn } from './helpers/pt-fixtures.ts';
import { dataOffsets, recordDigests } from './helpers/pt-records.ts';
import { tsddpCheckpoint, tsddpValues } from './helpers/pt-values.ts';

const tmp = mkdtempSync(join(tmpdir(), 'tsddp-pt-save-'));
after(() => rmSync(tmp, { recursive: true, force: true }));
type Obj = Record<string, unknown>;
const committed = JSON.parse(readFileSync(join(PT_FIXTURES, 'from_tsddp.json'), 'utf8')) as Record<
  string,
  Obj
>;
const disposeValue = (v: unknown) => {
  for (const x of tensorsIn(v)) if (x instanceof t.Tensor && !x.isDisposed) x.dispose();
};

/** What PyTorch reads of `file`: check.py's report, now (live) or as committed. */
function pytorchReads(file: string, name: string): Obj {
  if (!fixtureSource().live) {
    assert.deepEqual(
      recordDigests(readFileSync(file)),
      committed[name].records,
      `${name}: tsddp writes what PyTorch read`,
    );
    return committed[name];
  }
  const out = join(tmp, `${name}.json`);
  runPython('check.py', [file, out]);
  return JSON.parse(readFileSync(out, 'utf8'));
}

describe('PyTorch reads what t.save writes', () => {
  console.log(
    `tsddp -> PyTorch: ${fixtureSource().live ? 'checked now by check.py' : `from_tsddp.json (${fixtureSource().why})`}`,
  );

  test("imagenet/main.py's checkpoint: PyTorch's model, SGD and StepLR take it (strict)", async () => {
    const ckpt = tsddpCheckpoint();
    const file = join(tmp, 'checkpoint.pt');
    await t.save(ckpt, file);
    const report = pytorchReads(file, 'checkpoint');
    assert.deepEqual(report.value, describeValue(ckpt));
    assert.equal(report.mmap_same, true);
    assert.deepEqual(report.applied, {
      model: true,
      optimizer: 0.9,
      momentum_buffers: 62,
      scheduler_last_epoch: 3,
      logits_finite: true,
    });
    disposeValue(ckpt);
  });

  test('every kind of value: dtypes, views, tied weights, ints, floats, tuples, Maps, OrderedDicts', async () => {
    const values = tsddpValues();
    const file = join(tmp, 'values.pt');
    await t.save(values, file);
    const report = pytorchReads(file, 'values');
    assert.deepEqual(report.value, describeValue(values));
    assert.equal(report.mmap_same, true);
    disposeValue(values);
  });

  test('round trip PyTorch -> tsddp -> PyTorch: the same values, OrderedDicts, attributes and key types', async () => {
    const expected = JSON.parse(readFileSync(join(PT_FIXTURES, 'expected.json'), 'utf8')) as Obj;
    for (const name of ['values', 'imagenet_checkpoint']) {
      const v = await t.load(join(PT_FIXTURES, `${name}.pt`));
      const file = join(tmp, `again_${name}.pt`);
      await t.save(v, file);
      const again = await t.load(file);
      assert.deepEqual(describeValue(again), asJavaScriptSees(expected[name]), name);
      if (fixtureSource().live) {
        runPython('check.py', [file, join(tmp, 'again.json')]);
        const report = JSON.parse(readFileSync(join(tmp, 'again.json'), 'utf8'));
        assert.deepEqual(
          asJavaScriptSees(report.value),
          asJavaScriptSees(expected[name]),
          `${name} in PyTorch`,
        );
      }
      disposeValue(v);
      disposeValue(again);
    }
  });
});

/** The records of a .pt held in memory, by name under its folder. */
const recordsOf = (bytes: Uint8Array) =>
  Object.fromEntries(Object.entries(unzipSync(bytes)).map(([k, v]) => [k.slice(k.indexOf('/') + 1), v]));

describe("the file: torch.save's records and layout", () => {
  test("torch.save's records in its order, uncompressed, each record's data aligned to 64 bytes", async () => {
    const file = join(tmp, 'layout.pt');
    const a = t.ones([3]);
    await t.save({ a, b: t.zeros([2], { dtype: 'int64' }) }, file);
    const bytes = readFileSync(file);
    const offsets = dataOffsets(bytes);
    assert.deepEqual(Object.keys(offsets), [
      'data.pkl',
      '.format_version',
      '.storage_alignment',
      'byteorder',
      'data/0',
      'data/1',
      'version',
      '.data/serialization_id',
    ]);
    for (const [name, at] of Object.entries(offsets)) assert.equal(at % 64, 0, name);
    const r = recordsOf(bytes);
    assert.deepEqual(
      ['.format_version', '.storage_alignment', 'byteorder', 'version'].map((n) =>
        Buffer.from(r[n]).toString(),
      ),
      ['1', '64', 'little', '3\n'],
    );
    assert.match(Buffer.from(r['.data/serialization_id']).toString(), /^\d{40}$/);
    assert.ok(Buffer.from(bytes.subarray(0, 4)).equals(Buffer.from('PK\x03\x04', 'latin1')));
    assert.ok(unzipSync(bytes)['layout/data.pkl'], "the archive's folder is the file's name");
  });

  test('tensors sharing a storage are written once, from the first to the last element they reach', () => {
    const big = t.arange(1000, { dtype: 'float32' });
    const grid = big.narrow(0, 100, 12).view([3, 4]);
    const value = { big, grid, col: grid.select(1, 2), alone: t.arange(50).narrow(0, 40, 5) };
    const r = recordsOf(t.serialization.dumps(value));
    assert.deepEqual(
      Object.keys(r)
        .filter((n) => n.startsWith('data/'))
        .map((n) => [n, r[n].length]),
      [
        ['data/0', 4000],
        ['data/1', 5 * 8],
      ],
    );
    const back = t.serialization.loads<Record<string, t.Tensor>>(t.serialization.dumps(value));
    assert.ok(native.sameStorage(back.big.h, back.col.h));
    assert.deepEqual(back.col.toArray(), [102, 106, 110]);
    assert.deepEqual(back.alone.toArray(), [40, 41, 42, 43, 44]);
    disposeValue(back);
  });

  test('a value that is written twice is one value when loaded (lists, dicts, tensors)', () => {
    const shared = [1, 2];
    const x = t.ones([2]);
    const back = t.serialization.loads<Obj>(t.serialization.dumps({ a: shared, b: shared, c: [x, x] }));
    assert.equal(back.a, back.b);
    assert.equal((back.c as unknown[])[0], (back.c as unknown[])[1]);
    disposeValue(back);
  });

  test('saving over a file replaces it whole; a write that fails leaves nothing behind', async () => {
    const file = join(tmp, 'over.pt');
    writeFileSync(file, 'old');
    await t.save({ x: 1 }, file);
    assert.deepEqual(await t.load(file), { x: 1 });
    const missing = join(tmp, 'no-such-folder', 'x.pt');
    await assert.rejects(
      t.save({ x: 1 }, missing),
      (e: unknown) => e instanceof CheckpointError && e.code === 'WRITE',
    );
    assert.deepEqual(
      readdirSync(tmp).filter((n) => n.includes('.tmp-')),
      [],
    );
  });
});

describe('values with no .pt form are refused, naming them, before anything is written', () => {
  const cyclic: unknown[] = [];
  cyclic.push(cyclic);
  let deep: unknown = [];
  for (let i = 0; i < t.serialization.MAX_DEPTH + 1; i++) deep = [deep];
  const nonLeaf = t.ones([2], { requiresGrad: true }).mul(2);
  const disposed = t.ones([1]);
  disposed.dispose();
  const cases: [string, unknown, string, RegExp][] = [
    ['undefined', { a: { b: undefined } }, 'UNSUPPORTED_VALUE', /the value\.a\.b: undefined/],
    ['a function', [() => 1], 'UNSUPPORTED_VALUE', /the value\[0\]: a function/],
    ['a class instance', { d: new Date(0) }, 'UNSUPPORTED_VALUE', /the value\.d: an instance of Date/],
    ['a typed array', { f: new Float32Array(2) }, 'UNSUPPORTED_VALUE', /an instance of Float32Array/],
    ['a symbol', { s: Symbol('x') }, 'UNSUPPORTED_VALUE', /a symbol/],
    [
      'a Map key of another kind',
      new Map([[{}, 1]]),
      'UNSUPPORTED_VALUE',
      /a Map key is an instance of Object/,
    ],
    ['a lone surrogate', { s: '\ud800' }, 'UNSUPPORTED_VALUE', /lone surrogate/],
    ['an int past LONG1', { n: 2n ** 2100n }, 'UNSUPPORTED_VALUE', /2039 bits/],
    ['a disposed tensor', { x: disposed }, 'UNSUPPORTED_VALUE', /disposed/],
    ['a non-leaf tensor requiring grad', { x: nonLeaf }, 'UNSUPPORTED_VALUE', /non-leaf.*detach/],
    ['a list that holds itself', cyclic, 'NESTING', /contains itself/],
    ['nesting past MAX_DEPTH', deep, 'NESTING', /deeper than 1000/],
    [
      'one storage viewed as two dtypes',
      (() => {
        const b = t.ones([4], { dtype: 'int32' });
        return [b, b.view('float32')];
      })(),
      'UNSUPPORTED_VALUE',
      /two dtypes/,
    ],
  ];
  for (const [name, value, code, message] of cases)
    test(name, async () => {
      const file = join(tmp, `refused-${cases.findIndex((c) => c[0] === name)}.pt`);
      await assert.rejects(t.save(value, file), (e: unknown) => {
        assert.ok(e instanceof t.SerializationError, String(e));
        assert.equal(e.code, code, e.message);
        assert.match(e.message, message);
        return true;
      });
      assert.equal(existsSync(file), false);
      assert.deepEqual(
        readdirSync(tmp).filter((n) => n.includes('.tmp-')),
        [],
      );
    });
});
