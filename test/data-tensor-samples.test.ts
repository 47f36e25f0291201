// Datasets whose samples hold tsddp Tensors, as PyTorch's __getitem__ usually returns:
// in the main thread (numWorkers 0) a field of Tensors is collated as default_collate
// does it, with torch.stack (the reference here: t.stack over the same samples); a
// worker thread cannot send a Tensor to the main thread, and says so.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  DataLoader,
  DataLoaderWorkerError,
  defaultCollate,
  defaultConvert,
  liveWorkers,
  nd,
  type Sample,
} from '../src/data/index.ts';
import { isTensor } from '../src/data/types.ts';
import * as t from '../src/index.ts';
import { Probe } from './fixtures/data/datasets.ts';
import { TensorSamples, TensorStream, tensorSample } from './fixtures/data/tensor-samples.ts';

/** torch.stack of field `pick` of samples `indices`, as PyTorch's default_collate makes it. */
function reference(kind: 'tuple' | 'record' | 'nested', indices: number[], pick: (s: Sample) => unknown) {
  return t.stack(indices.map((i) => pick(tensorSample(kind, i)) as t.Tensor));
}

function assertSameTensor(got: unknown, want: t.Tensor, what: string): void {
  assert.ok(got instanceof t.Tensor, `${what} is a Tensor`);
  assert.deepEqual(got.shape, want.shape, `${what}: shape`);
  assert.equal(got.dtype, want.dtype, `${what}: dtype`);
  assert.deepEqual(got.toArray(), want.toArray(), `${what}: values`);
}

test('tuple samples [Tensor, number]: `for await (const [x, y] of loader)` gets torch.stack batches', async () => {
  using _scope = t.scope();
  // As `def __getitem__(self, i): return torch.full((3,), i), i % 2` (tensorSample('tuple', i)).
  const dataset = { length: 10, get: (i: number) => [t.full([3], i), i % 2] as [t.Tensor, number] };
  const loader = new DataLoader(dataset, { batchSize: 4 });
  const sizes: number[] = [];
  let first = 0;
  for await (const [x, y] of loader) {
    const indices = Array.from({ length: x.shape[0] }, (_, k) => first + k);
    assertSameTensor(
      x,
      reference('tuple', indices, (s) => (s as unknown[])[0]),
      'x',
    );
    assert.deepEqual(x.shape, [indices.length, 3]);
    assert.equal(x.dtype, 'int64'); // torch.full with an integer fill
    assert.equal(y.dtype, 'int64');
    assert.deepEqual(
      y.toArray(),
      indices.map((i) => i % 2),
    );
    sizes.push(x.shape[0]);
    first += x.shape[0];
  }
  assert.deepEqual(sizes, [4, 4, 2]);
});

test('Tensor fields of records and nested tuples are stacked at every depth, with their dtypes', async () => {
  using _scope = t.scope();
  const records = new DataLoader(new TensorSamples({ n: 5, kind: 'record' }), { batchSize: 3 });
  for await (using batch of records) {
    const b = batch as unknown as { x: t.Tensor; y: t.Tensor; name: string[] };
    const indices = b.name.map((n) => Number(n.slice(1)));
    assertSameTensor(
      b.x,
      reference('record', indices, (s) => (s as { x: t.Tensor }).x),
      'x',
    );
    assert.equal(b.x.dtype, 'float32');
    assert.deepEqual(b.x.shape, [indices.length, 2, 3]);
    // 0-dimensional tensors stack to [B], as torch.stack does.
    assertSameTensor(
      b.y,
      reference('record', indices, (s) => (s as { y: t.Tensor }).y),
      'y',
    );
    assert.deepEqual(b.y.shape, [indices.length]);
  }
  const nested = new DataLoader(new TensorSamples({ n: 4, kind: 'nested' }), { batchSize: 4 });
  for await (const batch of nested) {
    const [v, { m }] = (batch as unknown as { pair: [t.Tensor, { m: t.Tensor }] }).pair;
    const all = [0, 1, 2, 3];
    assertSameTensor(
      v,
      reference('nested', all, (s) => (s as { pair: [t.Tensor] }).pair[0]),
      'pair.0',
    );
    assert.equal(v.dtype, 'float64');
    assertSameTensor(
      m,
      reference('nested', all, (s) => (s as { pair: [0, { m: t.Tensor }] }).pair[1].m),
      'pair.1.m',
    );
    assert.equal(m.dtype, 'bool');
    assert.deepEqual(m.shape, [4, 1]);
  }
});

test('defaultCollate stacks Tensors when called directly, beside arrays and numbers', () => {
  using _scope = t.scope();
  const samples = [0, 1].map((i) => ({
    x: t.full([2], i + 0.5),
    a: nd(new Float32Array([i, i]), [2]),
    n: i,
  }));
  const b = defaultCollate(samples) as unknown as {
    x: t.Tensor;
    a: { shape: number[] };
    n: { shape: number[] };
  };
  assert.ok(b.x instanceof t.Tensor);
  assert.deepEqual(b.x.toArray(), [
    [0.5, 0.5],
    [1.5, 1.5],
  ]);
  assert.equal(b.x.dtype, 'float32');
  assert.deepEqual(b.a.shape, [2, 2]);
  assert.deepEqual(b.n.shape, [2]);
});

test('mismatched Tensor fields are refused, naming the field and the sample', async () => {
  using _scope = t.scope();
  // Sample i of 'ragged' is [zeros([i + 1]), i]: sample 1's tensor has 2 values, sample 0's 1.
  const loader = new DataLoader(new TensorSamples({ n: 4, kind: 'ragged' }), { batchSize: 2 });
  await assert.rejects(
    async () => {
      for await (const _ of loader);
    },
    (e: unknown) => {
      assert.ok(e instanceof DataLoaderWorkerError);
      assert.equal(e.causeName, 'CollateError');
      assert.match(e.message, /field '0' has shape \[2\] in sample 1 but \[1\] in sample 0/);
      return true;
    },
  );
  const dtypes = [{ x: t.zeros([2]) }, { x: t.zeros([2], { dtype: 'float64' }) }];
  assert.throws(
    () => defaultCollate(dtypes),
    /field 'x' has dtype float64 in sample 1 but float32 in sample 0/,
  );
  const mixed = [{ v: { x: t.zeros([2]) } }, { v: { x: new Float32Array(2) } }];
  assert.throws(() => defaultCollate(mixed), /field 'v\.x' of sample 1 is not a Tensor like sample 0's/);
  // A lone Tensor is no sample (as a lone array): it needs a record or tuple around it.
  assert.throws(() => defaultCollate([t.zeros([2]) as never]), /a sample must be a record/);
});

test("without automatic batching (batchSize: null) a Tensor stays a Tensor, and stays the dataset's", async () => {
  using _scope = t.scope();
  const own = t.arange(3);
  const dataset = { length: 2, get: (i: number) => [own, i] as [t.Tensor, number] };
  const loader = new DataLoader(dataset, { batchSize: null });
  for await (using sample of loader) {
    const [x, i] = sample;
    assert.equal(x, own); // defaultConvert leaves tensors as they are, as PyTorch's default_convert
    assert.equal(typeof i, 'number');
  }
  assert.equal(own.isDisposed, false, "disposing the sample does not free the dataset's tensor");
  assert.equal((defaultConvert({ x: own }) as { x: unknown }).x, own);
});

test("disposing a batch frees the tensors stacked for it, not the samples'", async () => {
  using _scope = t.scope();
  const rows = [t.full([2], 1), t.full([2], 2)];
  const loader = new DataLoader({ length: 2, get: (i: number) => ({ x: rows[i] }) }, { batchSize: 2 });
  let stacked: t.Tensor | undefined;
  for await (using batch of loader) stacked = batch.x;
  assert.equal(stacked?.isDisposed, true);
  assert.ok(rows.every((r) => !r.isDisposed));
});

test('a record that merely has shape and dtype fields is no Tensor', () => {
  assert.equal(isTensor({ shape: [2], dtype: 'float32', device: 'cpu' }), false);
  using _scope = t.scope();
  assert.equal(isTensor(t.zeros([1])), true);
  const b = defaultCollate([{ m: { shape: 1, dtype: 'a' } }, { m: { shape: 2, dtype: 'b' } }]) as unknown as {
    m: { shape: { shape: number[] }; dtype: string[] };
  };
  assert.deepEqual(b.m.shape.shape, [2]);
  assert.deepEqual(b.m.dtype, ['a', 'b']);
});

/** The error a worker's Tensor sample must raise: typed, naming the way out, no hang. */
function refusesTensors(field: RegExp, index: number) {
  return (e: unknown): boolean => {
    assert.ok(e instanceof DataLoaderWorkerError, String(e));
    assert.equal(e.causeName, 'DataError');
    assert.equal(e.index, index);
    assert.match(e.message, field);
    assert.match(e.message, /cannot be sent from a DataLoader worker thread/);
    assert.match(e.message, /return typed arrays or NdArrays/);
    assert.match(e.message, /numWorkers: 0/);
    return true;
  };
}

test('a dataset rebuilt in workers that returns Tensors fails clearly (map-style)', async () => {
  const loader = new DataLoader(new TensorSamples({ n: 8, kind: 'tuple' }), {
    batchSize: 2,
    numWorkers: 2,
    timeoutMs: 60_000,
  });
  await assert.rejects(
    async () => {
      for await (const _ of loader);
    },
    refusesTensors(/field '0' is a Tensor/, 0),
  );
  assert.equal(liveWorkers(), 0);
  // Without automatic batching, and with skipBadSamples (a Tensor is no bad file to skip).
  const unbatched = new DataLoader(new TensorSamples({ n: 2, kind: 'record' }), {
    batchSize: null,
    numWorkers: 1,
    skipBadSamples: 5,
  });
  await assert.rejects(
    async () => {
      for await (const _ of unbatched);
    },
    refusesTensors(/field 'x' is a Tensor/, 0),
  );
  assert.equal(unbatched.skippedSamples, 0);
  assert.equal(liveWorkers(), 0);
});

test('an iterable dataset yielding Tensors batches them in the main thread', async () => {
  using _scope = t.scope();
  const sizes: number[][] = [];
  for await (const [x, y] of new DataLoader(new TensorStream({ n: 5 }), { batchSize: 2 })) {
    sizes.push(x.shape);
    assert.equal(y.dtype, 'int64');
  }
  assert.deepEqual(sizes, [
    [2, 3],
    [2, 3],
    [1, 3],
  ]);
});

test('an iterable dataset or a collate function making Tensors in workers fails clearly too', async () => {
  const stream = new DataLoader(new TensorStream({ n: 4 }), { batchSize: 2, numWorkers: 1 });
  await assert.rejects(
    async () => {
      for await (const _ of stream);
    },
    refusesTensors(/field '0' is a Tensor/, -1),
  );
  const collate = {
    module: new URL('./fixtures/data/tensor-samples.ts', import.meta.url).href,
    export: 'tensorCollate',
  };
  const collated = new DataLoader(new Probe({ n: 4 }), { batchSize: 2, numWorkers: 1, collate });
  await assert.rejects(
    async () => {
      for await (const _ of collated);
    },
    refusesTensors(/field 'index' of the collated batch is a Tensor/, 0),
  );
  assert.equal(liveWorkers(), 0);
});
