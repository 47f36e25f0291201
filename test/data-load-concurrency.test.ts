// loadBatch with a dataset that allows concurrent get() calls (ImageFolder does): the
// batch equals the one-at-a-time batch whatever order the samples finish in, no more
// calls run at once than declared, and the first failing sample in batch order is named.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { type BatchTask, loadBatch } from '../src/data/load.ts';
import type { SampleContext } from '../src/data/types.ts';

function dataset(concurrentGets: number | undefined, failAt: number[] = []) {
  let running = 0;
  const ds = {
    length: 64,
    maxRunning: 0,
    concurrentGets,
    async get(i: number, ctx: SampleContext) {
      running++;
      ds.maxRunning = Math.max(ds.maxRunning, running);
      const draw = ctx.rng.uint32();
      await sleep((i * 7) % 5); // later samples often finish first
      running--;
      if (failAt.includes(i)) throw new Error(`sample ${i} is bad`);
      return { x: Float32Array.of(i, draw), label: i };
    },
  };
  return ds;
}

const task: BatchTask = {
  id: 0,
  indices: [9, 3, 40, 17, 2, 33, 8, 21, 5, 60],
  position: 12,
  baseSeed: 4n,
  epoch: 1,
};

test('concurrent get() calls give the one-at-a-time batch, within the declared limit', async () => {
  const one = dataset(undefined);
  const four = dataset(4);
  const a = await loadBatch(one, task, 0, 0);
  const b = await loadBatch(four, task, 0, 0);
  assert.ok(a.ok && b.ok);
  assert.deepEqual(b.batch, a.batch);
  assert.equal(one.maxRunning, 1);
  assert.equal(four.maxRunning, 4);
});

test('the first failing sample in batch order is reported, not the first to fail in time', async () => {
  // 17 (batch position 3) sleeps 4 ms; 33 (position 5, in flight meanwhile) sleeps 1 ms
  // and so fails first in time.
  const r = await loadBatch(dataset(4, [17, 33]), task, 0, 0);
  assert.ok(!r.ok);
  assert.equal(r.failure.index, 17);
  assert.match(r.failure.message, /sample 17 is bad/);
});
