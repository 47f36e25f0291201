// torch.utils.data's toolkit against PyTorch (test/fixtures/data/toolkit.json, made by
// toolkit.py, or live): RandomSampler, SubsetRandomSampler and BatchSampler orders,
// randomSplit's subsets (integer lengths and fractions), ConcatDataset's indexing, and the
// DataLoader over an IterableDataset that shards itself by getWorkerInfo() with 0, 2 and 3
// workers (batches, their interleaving, and the workers' seeds). Then what has no fixture:
// TensorDataset, Subset, StackDataset and ChainDataset through the DataLoader (in workers
// too), defaultConvert without automatic batching, and the loader's properties and errors.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  BatchSampler,
  ChainDataset,
  ConcatDataset,
  DataLoader,
  Dataset,
  defaultCollate,
  defaultConvert,
  getWorkerInfo,
  IterableDataset,
  nd,
  RandomSampler,
  Rng,
  randomSplit,
  type Sample,
  Sampler,
  SequentialSampler,
  StackDataset,
  Subset,
  SubsetRandomSampler,
  TensorDataset,
} from '../src/data/index.ts';
import * as t from '../src/index.ts';
import { Probe } from './fixtures/data/datasets.ts';
import { AsyncShards, Seeds, Shards } from './fixtures/data/toolkit-datasets.ts';
import { fixtureJson } from './helpers/live-fixture.ts';

interface Fixture {
  random: {
    n: number;
    manualSeed: number;
    generatorSeed: number | null;
    replacement: boolean;
    numSamples: number | null;
    length: number;
    epochs: number[][];
  }[];
  subsetRandom: { indices: number[]; manualSeed: number; generatorSeed: number | null; epochs: number[][] }[];
  batch: {
    n: number;
    batchSize: number;
    dropLast: boolean;
    generatorSeed: number | null;
    length: number;
    epochs: number[][][];
  }[];
  randomSplit: {
    n: number;
    lengths: number[];
    generatorSeed: number | null;
    manualSeed: number | null;
    splits: number[][];
  }[];
  randomSplitErrors: { n: number; lengths: number[]; message: string | null }[];
  concat: {
    lengths: number[];
    cumulativeSizes: number[];
    items: { index: number; item: [number, number] }[];
  };
  iterable: {
    n: number;
    numWorkers: number;
    batchSize: number | null;
    dropLast: boolean;
    batches: { value: number[]; worker: number[] }[];
  }[];
  workerSeeds: { generatorSeed: number; numWorkers: number; seeds: { worker: number; seed: string }[] };
}

const { data: F } = fixtureJson<Fixture>('data/toolkit.py', 'data/toolkit.json');
const sized = (n: number) => ({ length: n });
const generatorOf = (seed: number | null) => (seed === null ? undefined : new t.Generator().manualSeed(seed));
const numbers = (x: t.Tensor) => Array.from(x.toTypedArray() as ArrayLike<number | bigint>, Number);

/** A map-style dataset of n samples { i, tag }. */
class Range extends Dataset<{ i: number; tag: string }> {
  constructor(
    readonly length: number,
    readonly tag = 'r',
  ) {
    super();
  }
  get(i: number) {
    return { i, tag: this.tag };
  }
}

test('RandomSampler equals PyTorch: replacement, numSamples, generator or manualSeed, two epochs', () => {
  assert.ok(F.random.some((c) => c.replacement) && F.random.some((c) => c.numSamples !== null));
  for (const c of F.random) {
    t.manualSeed(c.manualSeed);
    const s = new RandomSampler(sized(c.n), {
      replacement: c.replacement,
      numSamples: c.numSamples ?? undefined,
      generator: generatorOf(c.generatorSeed),
    });
    const name = JSON.stringify({ ...c, epochs: undefined });
    assert.equal(s.length, c.length, name);
    assert.deepEqual([...s], c.epochs[0], `${name} epoch 0`);
    assert.deepEqual([...s], c.epochs[1], `${name} epoch 1`);
  }
  assert.throws(
    () => new RandomSampler(sized(3), { replacement: 1 as never }),
    /replacement should be a boolean/,
  );
});

test('SubsetRandomSampler equals PyTorch', () => {
  for (const c of F.subsetRandom) {
    t.manualSeed(c.manualSeed);
    const s = new SubsetRandomSampler(c.indices, generatorOf(c.generatorSeed));
    assert.equal(s.length, c.indices.length);
    assert.deepEqual([...s], c.epochs[0]);
    assert.deepEqual([...s], c.epochs[1]);
  }
});

test('BatchSampler equals PyTorch over SequentialSampler and a seeded RandomSampler (dropLast both ways)', () => {
  for (const c of F.batch) {
    const base =
      c.generatorSeed === null
        ? new SequentialSampler(sized(c.n))
        : new RandomSampler(sized(c.n), { generator: generatorOf(c.generatorSeed) });
    const s = new BatchSampler(base, c.batchSize, c.dropLast);
    const name = JSON.stringify({ ...c, epochs: undefined });
    assert.equal(s.length, c.length, name);
    assert.deepEqual([...s], c.epochs[0], name);
    assert.deepEqual([...s], c.epochs[1], name);
  }
  assert.throws(() => new BatchSampler(sized(3) as never, 2, 'yes' as never), /dropLast should be a boolean/);
  // Any iterable of indices will do; only its length needs one.
  const bare = new BatchSampler([4, 5, 6], 2, false);
  assert.deepEqual([...bare], [[4, 5], [6]]);
  assert.throws(() => new BatchSampler((function* () {})(), 2, false).length, /has no length/);
});

test('randomSplit gives PyTorch subsets for integer lengths and fractions (generator or manualSeed)', () => {
  for (const c of F.randomSplit) {
    if (c.manualSeed !== null) t.manualSeed(c.manualSeed);
    const ds = new Range(c.n);
    const splits = randomSplit(ds, c.lengths, generatorOf(c.generatorSeed));
    const name = `n=${c.n} lengths=${JSON.stringify(c.lengths)}`;
    assert.deepEqual(
      splits.map((s) => [...s.indices]),
      c.splits,
      name,
    );
    for (const [k, s] of splits.entries()) {
      assert.ok(s instanceof Subset && s instanceof Dataset);
      assert.equal(s.length, c.splits[k].length);
      assert.equal(s.dataset, ds);
      if (s.length > 0) assert.deepEqual(s.get(0, {} as never), { i: c.splits[k][0], tag: 'r' });
    }
  }
  for (const c of F.randomSplitErrors) {
    const run = () => randomSplit(new Range(c.n), c.lengths, new t.Generator().manualSeed(0));
    if (c.message === null) run();
    else assert.throws(run, { message: c.message }, JSON.stringify(c.lengths));
  }
  assert.throws(() => randomSplit(new Range(10), [2.5, 7.5]), /non-negative integers/);
  assert.throws(() => randomSplit(new Range(10), [12, -2]), /non-negative integers/);
});

test('randomSplit warns about an empty split, as PyTorch does', async () => {
  const warnings: string[] = [];
  const onWarning = (w: Error) => warnings.push(w.message);
  process.on('warning', onWarning);
  try {
    randomSplit(new Range(10), [0, 1], new t.Generator().manualSeed(2));
    await new Promise((r) => setImmediate(r));
    assert.ok(
      warnings.some((w) => /split at index 0 is 0/.test(w)),
      warnings.join('\n'),
    );
  } finally {
    process.off('warning', onWarning);
  }
});

test('ConcatDataset: cumulativeSizes and every index (negative ones too) as PyTorch', () => {
  const c = F.concat;
  const parts = c.lengths.map((n, d) => new Range(n, `d${d}`));
  const concat = new ConcatDataset(parts);
  assert.deepEqual(concat.cumulativeSizes, c.cumulativeSizes);
  assert.deepEqual(ConcatDataset.cumsum(parts), c.cumulativeSizes);
  assert.equal(concat.length, c.cumulativeSizes.at(-1));
  for (const { index, item } of c.items) {
    assert.deepEqual(concat.locate(index), item, `index ${index}`);
    assert.deepEqual(concat.get(index, {} as never), { i: item[1], tag: `d${item[0]}` });
  }
  assert.throws(() => concat.get(concat.length, {} as never), RangeError);
  assert.throws(() => concat.get(-concat.length - 1, {} as never), /should not exceed dataset length/);
  assert.throws(() => new ConcatDataset([]), /should not be an empty iterable/);
  assert.throws(() => new ConcatDataset([new Shards({ n: 3 }) as never]), /does not support IterableDataset/);
});

test('DataLoader over an IterableDataset: PyTorch batches with 0, 2 and 3 workers, dropLast, batchSize null', async () => {
  assert.equal(getWorkerInfo(), null, 'the main thread is no worker');
  for (const c of F.iterable) {
    const loader = new DataLoader(new Shards({ n: c.n }), {
      batchSize: c.batchSize,
      dropLast: c.dropLast,
      numWorkers: c.numWorkers,
    });
    const got: { value: number[]; worker: number[] }[] = [];
    for await (const b of loader) {
      const batch = b as unknown as Record<string, t.Tensor | number>;
      if (c.batchSize === null) {
        // No automatic batching: defaultConvert leaves numbers as they are.
        got.push({ value: [batch.value as number], worker: [batch.worker as number] });
      } else {
        got.push({ value: numbers(batch.value as t.Tensor), worker: numbers(batch.worker as t.Tensor) });
        (b as Disposable)[Symbol.dispose]();
      }
    }
    assert.deepEqual(got, c.batches, JSON.stringify({ ...c, batches: undefined }));
    assert.equal(
      loader.length,
      c.batchSize === null ? c.n : c.dropLast ? Math.floor(c.n / c.batchSize) : Math.ceil(c.n / c.batchSize),
    );
  }
});

test('an async IterableDataset in workers: the order is fixed however slow a worker is', async () => {
  const c = F.iterable.find((x) => x.numWorkers === 2 && x.batchSize === 3 && !x.dropLast);
  assert.ok(c);
  const loader = new DataLoader(new AsyncShards({ n: c.n, slowWorker0Ms: 15 }), {
    batchSize: 3,
    numWorkers: 2,
    persistentWorkers: true,
  });
  try {
    for (let epoch = 0; epoch < 2; epoch++) {
      const got: number[][] = [];
      for await (using b of loader) got.push(numbers(b.value));
      assert.deepEqual(
        got,
        c.batches.map((x) => x.value),
        `epoch ${epoch}`,
      );
    }
    // A break mid-epoch: the next epoch starts each worker's iteration afresh.
    for await (const _ of loader) break;
    const again: number[][] = [];
    for await (using b of loader) again.push(numbers(b.value));
    assert.deepEqual(
      again,
      c.batches.map((x) => x.value),
    );
    assert.equal(loader.workersStarted, 2, 'persistent workers start once');
  } finally {
    await loader.close();
  }
});

test("getWorkerInfo() in workers: ids, numWorkers, and PyTorch's seeds (base seed + id)", async () => {
  const { generatorSeed, numWorkers, seeds } = F.workerSeeds;
  const loader = new DataLoader(new Seeds(), {
    numWorkers,
    generator: new t.Generator().manualSeed(generatorSeed),
  });
  const got: { worker: number; seed: string }[] = [];
  for await (using b of loader) {
    assert.deepEqual(numbers(b.numWorkers), [numWorkers]);
    got.push({ worker: numbers(b.worker)[0], seed: String((b.seed.toTypedArray() as BigInt64Array)[0]) });
  }
  assert.deepEqual(got, seeds);
});

test('an IterableDataset that throws fails the loader, naming the worker', async () => {
  for (const numWorkers of [0, 1]) {
    const loader = new DataLoader(new Shards({ n: 10, failAt: 4 }), { batchSize: 2, numWorkers });
    const seen: number[][] = [];
    await assert.rejects(
      async () => {
        for await (using b of loader) seen.push(numbers(b.value));
      },
      (e: Error) => {
        assert.equal(e.name, 'DataLoaderWorkerError');
        assert.match(e.message, /failed while iterating the dataset: Error: cannot read record 4/);
        assert.match(e.message, numWorkers === 0 ? /main thread/ : /DataLoader worker 0/);
        return true;
      },
    );
    assert.deepEqual(seen, [
      [0, 1],
      [2, 3],
    ]);
  }
});

test('DataLoader with an IterableDataset refuses what needs indices, and has no sampler', () => {
  const ds = new Shards({ n: 4 });
  assert.throws(() => new DataLoader(ds, { shuffle: true }), /expected unspecified shuffle option/);
  assert.throws(
    () => new DataLoader(ds, { sampler: new SequentialSampler(sized(4)) }),
    /expected unspecified sampler option/,
  );
  assert.throws(
    () => new DataLoader(ds, { batchSampler: new BatchSampler(new SequentialSampler(sized(4)), 2, false) }),
    /expected unspecified batchSampler option/,
  );
  assert.throws(() => new DataLoader(ds, { skipBadSamples: 1 }), /skipBadSamples needs a map-style dataset/);
  assert.throws(() => new DataLoader(new Seeds(), { numWorkers: 0 }).length, /without a length/);
  const loader = new DataLoader(ds, { batchSize: 3 });
  assert.equal(loader.dataset, ds);
  assert.equal(loader.sampler, null);
  assert.equal(loader.batchSampler, null);
  assert.equal(loader.batchSize, 3);
  assert.equal(loader.length, 2);
});

test("DataLoader's dataset, sampler, batchSampler, batchSize and dropLast are PyTorch's", () => {
  const ds = new Range(10);
  const plain = new DataLoader(ds, { batchSize: 4, dropLast: true });
  assert.equal(plain.dataset, ds);
  assert.ok(plain.sampler instanceof SequentialSampler);
  assert.ok(plain.batchSampler instanceof BatchSampler);
  assert.equal(plain.batchSampler.sampler, plain.sampler);
  assert.equal(plain.batchSize, 4);
  assert.equal(plain.dropLast, true);
  assert.equal(plain.length, 2);
  const shuffled = new DataLoader(ds, { shuffle: true, seed: 1 });
  assert.ok(shuffled.sampler instanceof RandomSampler);
  assert.equal(shuffled.batchSize, 1);
  const given = new SubsetRandomSampler([1, 2, 3]);
  assert.equal(new DataLoader(ds, { sampler: given }).sampler, given);
  // A batch sampler given: batchSize is null and dropLast false, as PyTorch sets them.
  const bs = new BatchSampler(new SequentialSampler(ds), 3, false);
  const withBatches = new DataLoader(ds, { batchSampler: bs });
  assert.equal(withBatches.batchSampler, bs);
  assert.equal(withBatches.batchSize, null);
  assert.equal(withBatches.dropLast, false);
  assert.ok(withBatches.sampler instanceof SequentialSampler);
  // batchSize null: no batch sampler; the length counts samples.
  const single = new DataLoader(ds, { batchSize: null });
  assert.equal(single.batchSampler, null);
  assert.equal(single.length, 10);
  assert.throws(
    () => new DataLoader(ds, { batchSize: null, dropLast: true }),
    /mutually exclusive with dropLast/,
  );
  assert.throws(() => new DataLoader(ds, { batchSize: 0 }), /positive integer or null/);
});

test('Dataset and Sampler are classes to extend, and stay interfaces for plain objects', async () => {
  class Evens extends Sampler {
    get length() {
      return 3;
    }
    *[Symbol.iterator]() {
      for (let i = 0; i < 6; i += 2) yield i;
    }
  }
  const seen: number[] = [];
  for await (using b of new DataLoader(new Range(6), { sampler: new Evens(), batchSize: 2 }))
    seen.push(...numbers(b.i));
  assert.deepEqual(seen, [0, 2, 4]);
  const literal: Dataset<{ x: number }> = { length: 1, get: () => ({ x: 1 }) };
  assert.equal(new DataLoader(literal).length, 1);
});

test('TensorDataset: rows of each tensor, batched as PyTorch (dtypes, shapes), in workers too', async () => {
  const x = t.arange(0, 24, 1, { dtype: 'float32' }).reshape([6, 2, 2]);
  const y = t.tensor([3, 1, 4, 1, 5, 9], { dtype: 'int64' });
  const m = t.tensor([true, false, true, true, false, false]);
  const ds = new TensorDataset(x, y, m);
  assert.equal(ds.length, 6);
  const [r, l, b] = ds.get(-1);
  assert.deepEqual([...r.data], [20, 21, 22, 23]);
  assert.deepEqual(r.shape, [2, 2]);
  assert.deepEqual([...l.data], [9n]);
  assert.deepEqual(l.shape, []);
  assert.equal(b.dtype, 'bool');
  assert.throws(() => ds.get(6), RangeError);
  assert.throws(() => new TensorDataset(x, t.zeros([5])), /Size mismatch between tensors/);
  assert.throws(() => new TensorDataset(x.half()), /convert it with \.float\(\) first/);
  assert.throws(() => new TensorDataset(), /at least one tensor/);
  const load = async (numWorkers: number) => {
    const out: unknown[] = [];
    for await (using batch of new DataLoader(ds, { batchSize: 4, numWorkers })) {
      const [bx, by, bm] = batch as unknown as t.Tensor[];
      out.push([bx.dtype, bx.shape, bx.toArray(), by.dtype, by.shape, by.toArray(), bm.dtype, bm.toArray()]);
    }
    return out;
  };
  const inProcess = await load(0);
  assert.deepEqual(inProcess[0], [
    'float32',
    [4, 2, 2],
    x.narrow(0, 0, 4).toArray(),
    'int64',
    [4],
    [3, 1, 4, 1],
    'bool',
    [true, false, true, true],
  ]);
  assert.equal(inProcess.length, 2);
  assert.deepEqual(await load(1), inProcess);
});

test('Subset of a worker-buildable dataset loads the same batches with 0 and 1 workers', async () => {
  const base = new Probe({ n: 20 });
  const subset = new Subset(base, [7, 3, 19, 0, 11]);
  assert.equal(typeof subset.workerSpec, 'function');
  assert.equal(typeof new Subset(new Range(5), [1]).workerSpec, 'undefined', 'no spec without the inner one');
  const ctx = { rng: new Rng(1), workerId: 0, numWorkers: 0, epoch: 0 };
  assert.equal((await subset.get(-1, ctx)).index, 11);
  const load = async (numWorkers: number) => {
    const out: unknown[] = [];
    for await (using b of new DataLoader(subset, { batchSize: 2, seed: 5, numWorkers })) {
      out.push([numbers(b.index), numbers(b.r), b.x.toArray()]);
    }
    return out;
  };
  const ref = await load(0);
  assert.deepEqual(
    ref.map((b) => (b as number[][])[0]),
    [[7, 3], [19, 0], [11]],
  );
  assert.deepEqual(await load(1), ref);
});

test('StackDataset: tuples and records of samples, collated field by field (nested), in workers too', async () => {
  const a = new Probe({ n: 6 });
  const b = new TensorDataset(t.arange(0, 6, 1, { dtype: 'float64' }));
  const tuple = new StackDataset(a, b);
  assert.equal(tuple.length, 6);
  const record = new StackDataset({ probe: a, row: b });
  assert.throws(() => new StackDataset(a, new Range(5)), /Size mismatch between datasets/);
  assert.throws(() => new StackDataset(), /At least one dataset/);
  const collated = defaultCollate([
    { p: { i: 1, v: new Float32Array([1, 2]) }, q: [true, 'x'] },
    { p: { i: 2, v: new Float32Array([3, 4]) }, q: [false, 'y'] },
  ]) as unknown as { p: { i: { shape: number[] }; v: { shape: number[] } }; q: [unknown, string[]] };
  assert.deepEqual(collated.p.i.shape, [2]);
  assert.deepEqual(collated.p.v.shape, [2, 2]);
  assert.deepEqual(collated.q[1], ['x', 'y']);
  for (const numWorkers of [0, 1]) {
    const batches: unknown[] = [];
    for await (using batch of new DataLoader(record, { batchSize: 4, seed: 3, numWorkers })) {
      const { probe, row } = batch as unknown as {
        probe: { index: t.Tensor; x: t.Tensor; name: string[] };
        row: t.Tensor[];
      };
      batches.push([numbers(probe.index), probe.x.shape, probe.name, row[0].dtype, numbers(row[0])]);
    }
    assert.deepEqual(
      batches,
      [
        [[0, 1, 2, 3], [4, 2, 3], ['s0', 's1', 's2', 's3'], 'float64', [0, 1, 2, 3]],
        [[4, 5], [2, 2, 3], ['s4', 's5'], 'float64', [4, 5]],
      ],
      `numWorkers=${numWorkers}`,
    );
    const [first] = (await (async () => {
      for await (using x of new DataLoader(tuple, { batchSize: 2, numWorkers })) {
        const [p, r] = x as unknown as [{ index: t.Tensor }, t.Tensor[]];
        return [[numbers(p.index), numbers(r[0])]];
      }
      return [];
    })()) as [number[][]];
    assert.deepEqual(first, [
      [0, 1],
      [0, 1],
    ]);
  }
});

test('ChainDataset chains iterable datasets (sync and async), with their summed length', async () => {
  const chain = new ChainDataset<{ value: number; worker: number }>([
    new Shards({ n: 3 }),
    new Shards({ n: 2 }),
  ]);
  assert.deepEqual(
    [...chain].map((s) => s.value),
    [0, 1, 2, 0, 1],
  );
  assert.equal(chain.length, 5);
  const mixed = new ChainDataset([new AsyncShards({ n: 2 }), new Shards({ n: 3 })]);
  const values: number[] = [];
  for await (using b of new DataLoader(mixed, { batchSize: 2 })) values.push(...numbers(b.value));
  assert.deepEqual(values, [0, 1, 0, 1, 2]);
  assert.deepEqual(
    [...mixed].map((x) => x.value),
    values,
    'AsyncShards has a sync iterator too',
  );
  class AsyncOnly extends IterableDataset<{ v: number }> {
    override async *[Symbol.asyncIterator]() {
      yield { v: 1 };
    }
  }
  assert.throws(() => [...new ChainDataset([new AsyncOnly()])], /only async iterable/);
  // In workers each worker iterates its own chain: here each Shards shards itself by
  // getWorkerInfo(), so worker 0 yields 0, 1 of the first and 0 of the second, worker 1 the rest.
  const inWorkers: number[][] = [];
  for await (using b of new DataLoader(chain, { batchSize: 5, numWorkers: 2 }))
    inWorkers.push(numbers(b.value));
  assert.deepEqual(inWorkers, [
    [0, 1, 0],
    [2, 1],
  ]);
  assert.throws(() => new ChainDataset([new Range(3) as never]).length, /only supports IterableDataset/);
  class NoLength extends IterableDataset<{ v: number }> {
    override *[Symbol.iterator]() {
      yield { v: 1 };
    }
  }
  assert.throws(() => new ChainDataset([new NoLength()]).length, /has no length/);
});

test('batchSize null: each sample alone through defaultConvert (tensors without a batch dimension)', async () => {
  const ds = new TensorDataset(t.arange(0, 6, 1, { dtype: 'float32' }).reshape([3, 2]), t.tensor([7, 8, 9]));
  for (const numWorkers of [0, 1]) {
    const got: unknown[] = [];
    for await (using s of new DataLoader(ds, { batchSize: null, numWorkers })) {
      const [x, y] = s as unknown as t.Tensor[];
      got.push([x.shape, x.toArray(), y.shape, y.toArray()]);
    }
    assert.deepEqual(
      got,
      [
        [[2], [0, 1], [], 7],
        [[2], [2, 3], [], 8],
        [[2], [4, 5], [], 9],
      ],
      `numWorkers=${numWorkers}`,
    );
  }
  // The dataset's arrays are untouched by the workers' transfers.
  assert.deepEqual([...ds.arrays[0].data], [0, 1, 2, 3, 4, 5]);
  const converted = defaultConvert({
    a: new Int32Array([1, 2]),
    n: 3,
    s: 'x',
    t: [nd(new Uint8Array(4), [2, 2])],
  });
  assert.deepEqual(converted, {
    a: { data: new Int32Array([1, 2]), shape: [2] },
    n: 3,
    s: 'x',
    t: [{ data: new Uint8Array(4), shape: [2, 2] }],
  });
  const samples: Sample[] = [{ n: 1 }, { n: 2.5 }];
  assert.deepEqual((defaultCollate(samples) as unknown as { n: { shape: number[] } }).n.shape, [2]);
});
