// One verb for resource holders (docs/guide/library.md, "Closing resources"): DDP, the
// process group, its store, data loaders, writers and the dashboard each have close(),
// which may be called twice, and `using` / `await using` closes them at the end of a block.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { DashboardServer } from '../src/dashboard/server.ts';
import * as t from '../src/index.ts';
import { MetricsWriter } from '../src/metrics/index.ts';

const tmp = mkdtempSync(join(tmpdir(), 'tsddp-dispose-'));
after(() => rmSync(tmp, { recursive: true, force: true }));

test('a world-1 process group, its store and DDP: close() twice is fine, and `using` closes them', async () => {
  const d = t.distributed;
  {
    using pg = d.initProcessGroup({
      backend: 'gloo',
      initMethod: `file://${join(tmp, 'store')}`,
      rank: 0,
      worldSize: 1,
    });
    assert.ok(d.isInitialized());
    const model = new t.nn.Linear(4, 2);
    {
      using ddp = new d.DistributedDataParallel(model, { processGroup: pg });
      t.tidy(() =>
        ddp
          .forward(t.ones([3, 4]))
          .sum()
          .backward(),
      );
      ddp.close(); // an early close, then the block's: no double free
    }
    assert.equal(model.weight.grad?.shape.join(','), '2,4', 'the module outlives its DDP');
  }
  assert.equal(d.isInitialized(), false, 'leaving the block destroyed the default group');
  // destroyProcessGroup after close: nothing left to do, no crash.
  const pg = d.initProcessGroup({
    backend: 'gloo',
    initMethod: `file://${join(tmp, 'store2')}`,
    rank: 0,
    worldSize: 1,
  });
  pg.close();
  pg.close();
  pg.store.close();
});

test('DataLoader, MetricsWriter and the dashboard server close through `using` too', async () => {
  const ds = new t.data.Shapes({ split: 'val', size: 8, imageSize: 16 });
  {
    await using loader = new t.data.DataLoader(ds, { batchSize: 4, numWorkers: 1 });
    for await (using b of loader) assert.equal(b.label.shape[0], 4);
  }
  const file = join(tmp, 'm.jsonl');
  {
    using w = new MetricsWriter(file, 0, true);
    w.write({
      type: 'summary',
      rank: 0,
      step: 0,
      worldSize: 1,
      steps: 0,
      wallSec: 0,
      imagesPerSec: 0,
      time: 0,
    });
  }
  {
    await using server = await DashboardServer.start({ port: 0 });
    assert.ok(server.port > 0);
  }
});
