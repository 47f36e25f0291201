// Data worker faults (docs/reliability.md R15): an exception in a worker is re-raised with the
// worker id, the sample index and the file; a worker that exits gives a clear error,
// not a hang; a stalled worker hits timeoutMs; no thread outlives its loader.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  DataLoader,
  DataLoaderTimeoutError,
  DataLoaderWorkerError,
  DataLoaderWorkerExitError,
  liveWorkers,
} from '../src/data/index.ts';
import { Probe } from './fixtures/data/datasets.ts';

async function drain(loader: AsyncIterable<Disposable>): Promise<number> {
  let n = 0;
  for await (using _ of loader) n++;
  return n;
}

test('an exception in a worker is re-raised with the worker id, sample index and file path', async () => {
  // Sequential batches of 2 over 2 workers: sample 7 is in batch 3, loaded by worker 1.
  const loader = new DataLoader(new Probe({ n: 12, failAt: 7 }), { batchSize: 2, numWorkers: 2 });
  await assert.rejects(drain(loader), (e: unknown) => {
    assert.ok(e instanceof DataLoaderWorkerError);
    assert.equal(e.workerId, 1);
    assert.equal(e.index, 7);
    assert.equal(e.path, '/data/images/7.png');
    assert.match(
      e.message,
      /^DataLoader worker 1 failed on sample 7 \(file \/data\/images\/7\.png\): DataError: cannot decode image 7/,
    );
    assert.match(e.message, /Original traceback:[\s\S]*datasets\.ts/);
    return true;
  });
  assert.equal(liveWorkers(), 0);
});

test('an exception in the main thread (numWorkers = 0) names the sample and file too', async () => {
  const loader = new DataLoader(new Probe({ n: 6, failAt: 4 }), { batchSize: 4 });
  await assert.rejects(drain(loader), (e: unknown) => {
    assert.ok(e instanceof DataLoaderWorkerError);
    assert.equal(e.index, 4);
    assert.match(
      e.message,
      /main thread \(numWorkers = 0\) failed on sample 4 \(file \/data\/images\/4\.png\)/,
    );
    return true;
  });
});

test('a worker that exits gives a clear error instead of a hang', async () => {
  // process.exit() in a worker thread ends that thread only.
  const loader = new DataLoader(new Probe({ n: 8, exitAt: 5 }), {
    batchSize: 2,
    numWorkers: 2,
    persistentWorkers: true,
  });
  const t0 = Date.now();
  await assert.rejects(drain(loader), (e: unknown) => {
    assert.ok(e instanceof DataLoaderWorkerExitError, String(e));
    assert.equal(e.workerId, 0);
    assert.equal(e.exitCode, 3);
    assert.deepEqual(e.indices, [4, 5]);
    assert.match(
      e.message,
      /DataLoader worker 0 exited unexpectedly with code 3 while loading samples \[4, 5\]/,
    );
    return true;
  });
  assert.ok(Date.now() - t0 < 20_000);
  // Even a persistent pool is torn down after a death, and the next epoch starts afresh.
  assert.equal(liveWorkers(), 0);
  const started = loader.workersStarted;
  await assert.rejects(drain(loader), DataLoaderWorkerExitError);
  assert.equal(loader.workersStarted, started + 2);
  assert.equal(liveWorkers(), 0);
});

test('a stalled worker hits timeoutMs', async () => {
  const loader = new DataLoader(new Probe({ n: 8, stallAt: 3 }), {
    batchSize: 2,
    numWorkers: 1,
    timeoutMs: 300,
  });
  const t0 = Date.now();
  let got = 0;
  await assert.rejects(
    (async () => {
      for await (using _ of loader) got++;
    })(),
    (e: unknown) => {
      assert.ok(e instanceof DataLoaderTimeoutError, String(e));
      assert.equal(e.workerId, 0);
      assert.equal(e.batchNumber, 1);
      assert.match(
        e.message,
        /DataLoader timed out after 300 ms waiting for batch 1 \(samples \[2, 3\]\) from worker 0/,
      );
      return true;
    },
  );
  assert.equal(got, 1, 'batch 0 arrived before the stall');
  // The clock starts once the worker is up; the stall itself is cut at ~300 ms.
  assert.ok(Date.now() - t0 < 15_000);
  assert.equal(liveWorkers(), 0, 'the stalled worker was terminated');
});

test('a dataset module that cannot be loaded in the worker is reported, not hung on', async () => {
  const broken = {
    length: 4,
    get: () => ({ x: 1 }),
    workerSpec: () => ({ module: '/nonexistent/dataset.ts', export: 'Nope' }),
  };
  await assert.rejects(
    drain(new DataLoader(broken, { numWorkers: 1 })),
    /could not build the dataset: .*cannot import '\/nonexistent\/dataset\.ts'/,
  );
  assert.equal(liveWorkers(), 0);
});
