// The pickles of torch.distributed's object collectives (src/checkpoint/pt/object-pickle.ts):
// tsddp reads what PyTorch's pickle.dumps wrote (test/fixtures/distributed/objects.py:
// protocol 4, tensors as torch.storage._load_from_bytes of the legacy torch.save format),
// reads back what it writes, and refuses what is not data before writing a byte. That
// PyTorch reads tsddp's pickles is checked live in test/collectives-torch.test.ts.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { pickleObject, unpickleObject } from '../src/checkpoint/pt/object-pickle.ts';
import * as t from '../src/index.ts';

interface Case {
  pickle: string;
  value?: unknown;
}
const fixture = JSON.parse(
  readFileSync(new URL('./fixtures/distributed/objects.json', import.meta.url), 'utf8'),
) as { cases: Record<string, Case> };

/** A loaded value in the fixture's JSON form. */
function show(v: unknown): unknown {
  if (v instanceof t.Tensor)
    return {
      tensor: Array.from(v.to('float64').contiguous().toTypedArray() as Float64Array),
      dtype: v.dtype,
      shape: v.shape,
    };
  if (Array.isArray(v)) return Object.isFrozen(v) ? { tuple: v.map(show) } : v.map(show);
  if (v !== null && typeof v === 'object')
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, show(x)]));
  return v;
}

for (const [name, c] of Object.entries(fixture.cases)) {
  if (c.value === undefined) continue;
  test(`reads PyTorch's pickle of ${name}`, () => {
    assert.deepEqual(show(unpickleObject(Buffer.from(c.pickle, 'hex'))), c.value);
  });
}

test('refuses a pickle that names a global outside the data (os.system), naming it', () => {
  assert.throws(
    () => unpickleObject(Buffer.from(fixture.cases['os.system'].pickle, 'hex')),
    (e: Error) => e.name === 'SerializationError' && /the global (posix|os)\.system/.test(e.message),
  );
});

test('what it writes reads back: nested values, tuples, big ints, tensors that share nothing', () => {
  const x = t.arange(6, { dtype: 'float32' }).reshape([2, 3]);
  const value = {
    n: 3,
    f: 0.25,
    s: 'é',
    b: [true, false, null],
    big: 2n ** 70n,
    tup: Object.freeze([1, 'two']),
    t: x,
    col: x.select(1, 1),
    i: t.tensor([1, 2], { dtype: 'int64' }),
  };
  assert.deepEqual(show(unpickleObject(pickleObject(value))), show(value));
});

test('refuses a value that is not data (a function, a class instance, undefined) before writing', () => {
  class Point {
    x = 1;
  }
  for (const bad of [{ f: () => 1 }, [new Point()], { u: undefined }]) {
    assert.throws(
      () => pickleObject(bad),
      (e: Error) => e.name === 'SerializationError',
    );
  }
});

test('a truncated pickle, or bytes after its end, is a SerializationError', () => {
  const good = pickleObject({ a: [1, 2, 3] });
  assert.throws(() => unpickleObject(good.subarray(0, good.length - 3)), { name: 'SerializationError' });
  assert.throws(() => unpickleObject(Buffer.concat([good, Buffer.from([0])])), {
    name: 'SerializationError',
  });
});
