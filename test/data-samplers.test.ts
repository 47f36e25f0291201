// Samplers: index orders equal PyTorch's (test/fixtures/data/samplers.json, made by
// samplers.py), DistributedSampler's properties (docs/reliability.md R13, R14), and the Rng
// against the reference xoshiro128** (xoshiro128ss.c).
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { mock, test } from 'node:test';
import {
  BatchSampler,
  DataLoader,
  DistributedEvalSampler,
  DistributedSampler,
  drawSeed,
  RandomSampler,
  Rng,
  SequentialSampler,
} from '../src/data/index.ts';
import * as t from '../src/index.ts';

const fixture = (name: string): unknown =>
  JSON.parse(readFileSync(new URL(`fixtures/data/${name}`, import.meta.url), 'utf8'));

interface DistCase {
  n: number;
  replicas: number;
  rank: number;
  epoch: number;
  shuffle: boolean;
  seed: number;
  dropLast: boolean;
  length: number;
  indices: number[];
}
interface RandomCase {
  n: number;
  manualSeed: number;
  generatorSeed: number | null;
  replacement: boolean;
  numSamples: number | null;
  epochs: number[][];
}
interface LoaderCase {
  n: number;
  batchSize: number;
  seed: number;
  dropLast: boolean;
  epochs: { baseSeed: string; batches: number[][] }[];
}
const F = fixture('samplers.json') as {
  distributed: DistCase[];
  random: RandomCase[];
  dataloader: LoaderCase[];
};
const sized = (n: number) => ({ length: n });

test('DistributedSampler equals PyTorch for every fixture case', () => {
  assert.ok(F.distributed.length >= 100);
  for (const c of F.distributed) {
    const s = new DistributedSampler(sized(c.n), {
      numReplicas: c.replicas,
      rank: c.rank,
      shuffle: c.shuffle,
      seed: c.seed,
      dropLast: c.dropLast,
    });
    s.setEpoch(c.epoch);
    const name = `n=${c.n} R=${c.replicas} rank=${c.rank} epoch=${c.epoch} dropLast=${c.dropLast} shuffle=${c.shuffle}`;
    assert.equal(s.length, c.length, name);
    assert.deepEqual([...s], c.indices, name);
  }
});

test('RandomSampler equals PyTorch (default generator and explicit generator)', () => {
  for (const c of F.random) {
    t.manualSeed(c.manualSeed);
    const generator = c.generatorSeed === null ? undefined : new t.Generator().manualSeed(c.generatorSeed);
    const s = new RandomSampler(sized(c.n), {
      replacement: c.replacement,
      numSamples: c.numSamples ?? undefined,
      generator,
    });
    const name = JSON.stringify({ ...c, epochs: undefined });
    assert.equal(s.length, c.numSamples ?? c.n, name);
    assert.deepEqual([...s], c.epochs[0], `${name} epoch 0`);
    assert.deepEqual([...s], c.epochs[1], `${name} epoch 1`);
  }
});

test("drawSeed + RandomSampler reproduce DataLoader(shuffle, generator)'s base seeds and batches", () => {
  for (const c of F.dataloader) {
    const g = new t.Generator().manualSeed(c.seed);
    const batches = new BatchSampler(
      new RandomSampler(sized(c.n), { generator: g }),
      c.batchSize,
      c.dropLast,
    );
    for (const e of c.epochs) {
      assert.equal(drawSeed(g), BigInt(e.baseSeed));
      assert.deepEqual([...batches], e.batches);
    }
  }
});

test('SequentialSampler and BatchSampler (lengths and contents, dropLast)', () => {
  assert.deepEqual([...new SequentialSampler(sized(4))], [0, 1, 2, 3]);
  const seq = new SequentialSampler(sized(10));
  assert.deepEqual([...new BatchSampler(seq, 3, false)], [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9]]);
  assert.deepEqual(
    [...new BatchSampler(seq, 3, true)],
    [
      [0, 1, 2],
      [3, 4, 5],
      [6, 7, 8],
    ],
  );
  assert.equal(new BatchSampler(seq, 3, false).length, 4);
  assert.equal(new BatchSampler(seq, 3, true).length, 3);
  assert.throws(() => new BatchSampler(seq, 0, false), /batchSize should be a positive integer/);
});

test('DistributedSampler properties: coverage, counts, epoch-only order changes (docs/reliability.md R13, R14)', () => {
  for (const n of [1, 2, 7, 10, 31, 64, 100]) {
    for (const R of [1, 2, 3, 4, 8]) {
      for (const dropLast of [false, true]) {
        const samplers = Array.from(
          { length: R },
          (_, rank) => new DistributedSampler(sized(n), { numReplicas: R, rank, seed: 3, dropLast }),
        );
        const expectedCount =
          Math.max(0, dropLast && n % R !== 0 ? Math.ceil((n - R) / R) : Math.ceil(n / R)) + 0;
        const all: number[] = [];
        for (const s of samplers) {
          const idx = [...s];
          // Every rank gets the same count (no rank waits in a collective: docs/reliability.md R14).
          assert.equal(idx.length, expectedCount, `n=${n} R=${R} dropLast=${dropLast}`);
          assert.equal(s.length, expectedCount);
          // Batch counts are equal across ranks too.
          assert.equal(new BatchSampler(s, 4, false).length, Math.ceil(expectedCount / 4));
          all.push(...idx);
        }
        const distinct = new Set(all);
        if (!dropLast) {
          // Together the ranks cover every sample; padding repeats only total - n of them.
          assert.equal(distinct.size, n, `coverage n=${n} R=${R}`);
          assert.equal(all.length, Math.ceil(n / R) * R);
        } else {
          // dropLast: no repeats, and only n mod R samples (at most) are left out.
          assert.equal(distinct.size, all.length);
          assert.equal(all.length, Math.floor(n / R) * R);
        }
        for (const i of all) assert.ok(Number.isInteger(i) && i >= 0 && i < n);
      }
    }
  }
  // Same seed and epoch: the same order on every rank's sampler object; only setEpoch changes it.
  const a = new DistributedSampler(sized(50), { numReplicas: 2, rank: 0, seed: 1 });
  const b = new DistributedSampler(sized(50), { numReplicas: 2, rank: 0, seed: 1 });
  const e0 = a.indices();
  assert.deepEqual(b.indices(), e0);
  assert.deepEqual(a.indices(), e0, 'order changed without setEpoch');
  a.setEpoch(1);
  assert.notDeepEqual(a.indices(), e0, 'setEpoch(1) did not change the order');
  a.setEpoch(0);
  assert.deepEqual(a.indices(), e0, 'setEpoch(0) did not restore the order');
  const other = new DistributedSampler(sized(50), { numReplicas: 2, rank: 0, seed: 2 });
  assert.notDeepEqual(other.indices(), e0, 'seed has no effect');
});

test('DistributedSampler warns once when a shuffled epoch is iterated again without setEpoch', () => {
  const warn = mock.method(console, 'warn', () => {});
  try {
    const s = new DistributedSampler(sized(20), { numReplicas: 2, rank: 1 });
    [...s];
    assert.equal(warn.mock.callCount(), 0);
    [...s];
    assert.equal(warn.mock.callCount(), 1);
    assert.match(String(warn.mock.calls[0].arguments[0]), /setEpoch/);
    [...s];
    assert.equal(warn.mock.callCount(), 1, 'the warning is shown once');
    s.setEpoch(1);
    [...s];
    const plain = new DistributedSampler(sized(20), { numReplicas: 2, rank: 1, shuffle: false });
    [...plain];
    [...plain];
    assert.equal(warn.mock.callCount(), 1, 'no warning after setEpoch or without shuffle');
  } finally {
    warn.mock.restore();
  }
});

test('DistributedSampler: peeking at the first batch before the epoch loop is not a second pass (no warning)', async () => {
  // The DDP tutorial (multigpu_torchrun.py) reads one batch for its size, then calls
  // setEpoch in every epoch: that is right, and must not be warned about.
  const warn = mock.method(console, 'warn', () => {});
  try {
    const ds = { length: 16, get: (i: number) => ({ x: new Float32Array([i]) }) };
    const sampler = new DistributedSampler(sized(16), { numReplicas: 2, rank: 0 });
    const loader = new DataLoader(ds, { batchSize: 2, sampler });
    for await (const b of loader) {
      b[Symbol.dispose]?.();
      break; // the peek
    }
    for (let epoch = 0; epoch < 2; epoch++) {
      sampler.setEpoch(epoch);
      for await (const b of loader) b[Symbol.dispose]?.();
    }
    assert.equal(warn.mock.callCount(), 0, String(warn.mock.calls[0]?.arguments[0]));
    // A second full pass without setEpoch still warns.
    for await (const b of loader) b[Symbol.dispose]?.();
    assert.equal(warn.mock.callCount(), 1);
  } finally {
    warn.mock.restore();
  }
});

test('DistributedSampler validates rank and reads WORLD_SIZE/RANK', () => {
  assert.throws(
    () => new DistributedSampler(sized(4), { numReplicas: 2, rank: 2 }),
    /invalid rank 2, rank should be in the interval \[0, 1\]/,
  );
  const saved = { ws: process.env.WORLD_SIZE, r: process.env.RANK };
  try {
    process.env.WORLD_SIZE = '3';
    process.env.RANK = '2';
    const s = new DistributedSampler(sized(9));
    assert.equal(s.numReplicas, 3);
    assert.equal(s.rank, 2);
    delete process.env.WORLD_SIZE;
    assert.throws(() => new DistributedSampler(sized(9)), /pass numReplicas \(or set WORLD_SIZE/);
  } finally {
    if (saved.ws === undefined) delete process.env.WORLD_SIZE;
    else process.env.WORLD_SIZE = saved.ws;
    if (saved.r === undefined) delete process.env.RANK;
    else process.env.RANK = saved.r;
  }
});

test('DistributedEvalSampler counts every sample exactly once across ranks', () => {
  for (const n of [0, 1, 5, 10, 33]) {
    for (const R of [1, 2, 3, 4]) {
      const seen = new Array<number>(n).fill(0);
      for (let rank = 0; rank < R; rank++) {
        const s = new DistributedEvalSampler(sized(n), { numReplicas: R, rank });
        const idx = [...s];
        assert.equal(idx.length, s.length);
        for (const i of idx) seen[i]++;
      }
      assert.ok(
        seen.every((c) => c === 1),
        `n=${n} R=${R}`,
      );
    }
  }
});

test('Rng: xoshiro128** matches the reference C implementation', () => {
  const ref = fixture('xoshiro128ss.json') as { state: [number, number, number, number]; outputs: number[] };
  const r = Rng.fromState(ref.state);
  assert.deepEqual(
    ref.outputs.map(() => r.uint32()),
    ref.outputs,
  );
});

test('Rng: streams are reproducible, distinct per seed words, and in range', () => {
  const draw = (...s: (number | bigint)[]) => {
    const r = new Rng(...s);
    return Array.from({ length: 8 }, () => r.uint32());
  };
  assert.deepEqual(draw(1, 2), draw(1, 2));
  assert.notDeepEqual(draw(1, 2), draw(1, 3));
  assert.notDeepEqual(draw(1, 2), draw(2, 1));
  assert.notDeepEqual(draw(1n << 40n), draw(1));
  assert.deepEqual(draw(5n), draw(5));
  const r = new Rng(42);
  let sum = 0;
  const counts = new Array<number>(6).fill(0);
  for (let i = 0; i < 6000; i++) {
    const u = r.random();
    assert.ok(u >= 0 && u < 1);
    sum += u;
    counts[r.int(0, 6)]++;
  }
  assert.ok(Math.abs(sum / 6000 - 0.5) < 0.02, `mean ${sum / 6000}`);
  for (const c of counts) assert.ok(c > 850 && c < 1150, `int() counts ${counts}`);
  assert.throws(() => r.int(3, 3), RangeError);
});
