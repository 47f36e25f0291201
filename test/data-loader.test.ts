// DataLoader: batches in sampler order and identical with 0, 1 or 2 workers (including
// the per-sample random streams), zero-copy tensors with a flat live-tensor count,
// persistent workers, collate and workerInit in workers, and no leaked threads.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DataLoader, DistributedSampler, liveWorkers, loadDataset } from '../src/data/index.ts';
import * as t from '../src/index.ts';
import { Probe } from './fixtures/data/datasets.ts';

const datasetsModule = new URL('./fixtures/data/datasets.ts', import.meta.url).href;

type AnyBatch = Record<string, t.Tensor | string[]> & Disposable;

/** A batch as plain values, for comparisons. */
function plain(b: object): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(b as AnyBatch)) {
    out[k] = Array.isArray(v) ? v : { dtype: v.dtype, shape: v.shape, values: v.toArray() };
  }
  return out;
}

/** Batches without the fields that name the loading worker. */
const strip = (eps: Record<string, unknown>[][]) =>
  eps.map((bs) => bs.map(({ worker: _w, initWorker: _i, initSeed: _s, ...rest }) => rest));

async function epochs<B extends Disposable>(
  loader: AsyncIterable<B>,
  n: number,
): Promise<Record<string, unknown>[][]> {
  const out: Record<string, unknown>[][] = [];
  for (let e = 0; e < n; e++) {
    const batches: Record<string, unknown>[] = [];
    for await (using b of loader) batches.push(plain(b));
    out.push(batches);
  }
  return out;
}

test('batches are identical with 0, 1 and 2 workers, in sampler order, and change with the epoch', async () => {
  const ds = new Probe({ n: 22, delayMs: 15 });
  const opts = { batchSize: 4, shuffle: true, seed: 7 };
  const ref = await epochs(new DataLoader(ds, opts), 2);
  // The shuffled order is the RandomSampler's; the last batch is short.
  assert.equal(ref[0].length, 6);
  assert.deepEqual((ref[0][5].index as { shape: number[] }).shape, [2]);
  const order = ref[0].flatMap((b) => (b.index as { values: number[] }).values);
  assert.deepEqual(
    [...order].sort((a, b) => a - b),
    Array.from({ length: 22 }, (_, i) => i),
  );
  assert.notDeepEqual(
    order,
    Array.from({ length: 22 }, (_, i) => i),
  );
  // Field types follow default_collate.
  const b0 = ref[0][0];
  assert.deepEqual(
    Object.fromEntries(
      Object.entries(b0).map(([k, v]) => [k, Array.isArray(v) ? 'list' : (v as { dtype: string }).dtype]),
    ),
    {
      index: 'int64',
      r: 'float64',
      worker: 'int64',
      initWorker: 'int64',
      initSeed: 'int64',
      x: 'float32',
      flag: 'bool',
      name: 'list',
    },
  );
  assert.deepEqual((b0.x as { shape: number[] }).shape, [4, 2, 3]);
  // A new epoch draws a new order and new augmentation streams.
  assert.notDeepEqual(ref[1][0].index, ref[0][0].index);

  for (const numWorkers of [1, 2]) {
    const n = numWorkers === 1 ? 1 : 2; // worker threads take a while to start: keep it short
    const got = await epochs(new DataLoader(ds, { ...opts, numWorkers }), n);
    assert.deepEqual(strip(got), strip(ref.slice(0, n)), `numWorkers=${numWorkers}`);
    // Batch k was loaded by worker k mod numWorkers (round robin), yet arrived in order.
    got[0].forEach((b, k) => {
      const workers = new Set((b.worker as { values: number[] }).values);
      assert.deepEqual([...workers], [k % numWorkers]);
    });
  }
  assert.equal(liveWorkers(), 0, 'worker threads left running');
});

test('without a seed the order follows the default generator (t.manualSeed), like PyTorch', async () => {
  const ds = new Probe({ n: 10 });
  const run = async () => {
    t.manualSeed(123);
    return epochs(new DataLoader(ds, { batchSize: 5, shuffle: true }), 1);
  };
  assert.deepEqual(await run(), await run());
});

test('persistent workers are started once and reused; break drops the rest of an epoch', async () => {
  const ds = new Probe({ n: 12 });
  const opts = { batchSize: 3, shuffle: true, seed: 3, numWorkers: 2 };
  // Batches do not depend on the number of workers (first test): the reference loads in-process.
  const expected = await epochs(new DataLoader(ds, { ...opts, numWorkers: 0 }), 3);
  const fresh = new DataLoader(ds, opts);
  assert.deepEqual(strip(await epochs(fresh, 2)), strip(expected.slice(0, 2)));
  assert.equal(fresh.workersStarted, 4, 'non-persistent: new workers every epoch');

  const loader = new DataLoader(ds, { ...opts, persistentWorkers: true });
  const got = await epochs(loader, 3);
  assert.equal(loader.workersStarted, 2, 'persistent: workers started once');
  assert.deepEqual(strip(got), strip(expected));
  assert.equal(liveWorkers(), 2, 'persistent workers stay up between epochs');

  // Stop an epoch early: its queued batches must not leak into the next epoch.
  for await (using _ of loader) break;
  const after = await epochs(loader, 1);
  const ref = await epochs(new DataLoader(ds, { ...opts, numWorkers: 0 }), 5);
  assert.deepEqual(strip(after), strip(ref.slice(4)));
  assert.equal(loader.workersStarted, 2);
  await loader.close();
  assert.equal(liveWorkers(), 0, 'close() stops persistent workers');
});

test('break out of a non-persistent loop stops its workers', async () => {
  const loader = new DataLoader(new Probe({ n: 40 }), { batchSize: 2, numWorkers: 2 });
  let seen = 0;
  for await (using _ of loader) {
    if (++seen === 2) break;
  }
  assert.equal(seen, 2);
  assert.equal(liveWorkers(), 0);
});

test('batch tensors are freed with `using`: the live tensor count stays flat', async () => {
  const loader = new DataLoader(new Probe({ n: 16 }), { batchSize: 4, numWorkers: 1 });
  const before = t.memory().tensors;
  let steps = 0;
  for await (using b of loader) {
    const x = b.x as t.Tensor;
    t.tidy(() => {
      const y = x.mul(2).sum();
      assert.ok(Number.isFinite(y.item()));
    });
    assert.equal(t.memory().tensors, before + 7, 'one tensor per numeric field');
    steps++;
  }
  assert.equal(steps, 4);
  assert.equal(t.memory().tensors, before, 'batch tensors were not freed');
});

test('collate and workerInit run in the workers when given as module references', async () => {
  const ds = new Probe({ n: 8 });
  const collate = { module: datasetsModule, export: 'sumCollate' };
  const sums: number[] = [];
  for await (using b of new DataLoader(ds, { batchSize: 4, numWorkers: 1, collate })) {
    sums.push((b as unknown as { sum: t.Tensor }).sum.item());
  }
  assert.deepEqual(sums, [6, 22]);
  // In-process, a plain function works too; with workers it must be a module reference.
  const { sumCollate } = await import('./fixtures/data/datasets.ts');
  for await (using b of new DataLoader(ds, { batchSize: 8, collate: sumCollate as never })) {
    assert.equal((b as unknown as { sum: t.Tensor }).sum.item(), 28);
  }
  assert.throws(
    () => new DataLoader(ds, { numWorkers: 1, collate: sumCollate as never }),
    /pass it as \{ module: import.meta.url, export: "name" \}/,
  );

  const workerInit = { module: datasetsModule, export: 'recordInit' };
  const loader = new DataLoader(ds, { batchSize: 2, numWorkers: 2, workerInit });
  const inits: number[][] = [];
  const seeds = new Set<number>();
  for await (using b of loader) {
    inits.push((b.initWorker as t.Tensor).toArray() as number[]);
    // PyTorch's worker seed: the epoch's base seed + worker id (distinct per worker).
    for (const s of (b.initSeed as t.Tensor).toTypedArray() as BigInt64Array) seeds.add(Number(s % 1000n));
  }
  assert.equal(seeds.size, 2, 'each worker gets its own seed');
  assert.deepEqual(inits, [
    [0, 0],
    [1, 1],
    [0, 0],
    [1, 1],
  ]);
});

test('datasets built from a spec (class or factory) can go to workers; others get a clear error', async () => {
  const ds = await loadDataset({ module: datasetsModule, export: 'makeProbe', options: { n: 6 } });
  assert.equal(ds.length, 6);
  const idx: number[] = [];
  for await (using b of new DataLoader(ds, { batchSize: 3, numWorkers: 1 })) {
    idx.push(...((b.index as t.Tensor).toArray() as number[]));
  }
  assert.deepEqual(idx, [0, 1, 2, 3, 4, 5]);
  const plainDs = { length: 3, get: (i: number) => ({ i }) };
  assert.throws(
    () => new DataLoader(plainDs, { numWorkers: 1 }),
    /workers can rebuild: give it a workerSpec\(\)/,
  );
  assert.throws(
    () => new DataLoader(plainDs, { shuffle: true, sampler: [0, 1, 2] as never }),
    /sampler option is mutually exclusive with shuffle/,
  );
});

test('DataLoader with DistributedSampler: two ranks split each epoch evenly and cover the dataset', async () => {
  const ds = new Probe({ n: 11 });
  const seen: number[][] = [];
  for (const rank of [0, 1]) {
    const sampler = new DistributedSampler(ds, { numReplicas: 2, rank, seed: 5 });
    sampler.setEpoch(2);
    const loader = new DataLoader(ds, { batchSize: 4, sampler });
    assert.equal(loader.length, 2);
    const idx: number[] = [];
    for await (using b of loader) idx.push(...((b.index as t.Tensor).toArray() as number[]));
    assert.deepEqual(idx, sampler.indices());
    seen.push(idx);
  }
  assert.equal(seen[0].length, seen[1].length);
  assert.equal(new Set(seen.flat()).size, 11);
});

test('skipBadSamples must be a non-negative integer', () => {
  const ds = { length: 4, get: (i: number) => ({ x: new Float32Array([i]) }) };
  for (const bad of [-1, 1.5, Number.NaN])
    assert.throws(
      () => new DataLoader(ds, { skipBadSamples: bad }),
      (e: Error) => {
        assert.ok(e instanceof RangeError);
        assert.match(e.message, /DataLoader: skipBadSamples should be a non-negative integer/);
        return true;
      },
    );
});
