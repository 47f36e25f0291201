// The pre-built data worker (src/data/worker-bundle.ts): built once, reused while its
// sources are unchanged, rebuilt when one changes; workers start from it without tsx's
// preload and still import a user's TypeScript modules (here: the collate).
import assert from 'node:assert/strict';
import { existsSync, statSync, utimesSync } from 'node:fs';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import type * as t from '../src/core/index.ts';
import { DataLoader, Shapes } from '../src/data/index.ts';
import { dataWorkerBundle } from '../src/data/worker-bundle.ts';
import { withoutTsx } from '../src/data/worker-pool.ts';

test('the bundle is built under node_modules/.cache/tsddp, reused, and rebuilt when a source changes', () => {
  const first = dataWorkerBundle();
  assert.ok(first !== null, 'the data worker could not be pre-built');
  const path = fileURLToPath(first.url);
  assert.ok(existsSync(path));
  assert.match(path, /node_modules\/\.cache\/tsddp\/data-worker-[0-9a-f]{16}\.mjs$/);
  assert.deepEqual(dataWorkerBundle(), { url: first.url, built: false });

  // A newer mtime on one of its inputs (same content: the same file name comes out).
  const source = fileURLToPath(new URL('../src/data/rng.ts', import.meta.url));
  const { atime, mtimeMs } = statSync(source);
  utimesSync(source, atime, new Date(Math.max(Date.now(), mtimeMs + 1000)));
  assert.deepEqual(dataWorkerBundle(), { url: first.url, built: true });
  assert.deepEqual(dataWorkerBundle(), { url: first.url, built: false });
});

test("workers start without the parent's tsx preload, and import TypeScript modules on demand", async () => {
  const collate = {
    module: new URL('./fixtures/data/datasets.ts', import.meta.url).href,
    export: 'tsxFlagCollate',
  };
  const ds = new Shapes({ size: 6, imageSize: 8, seed: 0 });
  const flags: number[] = [];
  for await (using b of new DataLoader(ds, { batchSize: 3, numWorkers: 2, collate })) {
    const batch = b as unknown as Record<'n' | 'tsxPreloaded', t.Tensor>;
    assert.equal(batch.n.item(), 3);
    flags.push(batch.tsxPreloaded.item());
  }
  assert.deepEqual(flags, [0, 0]);
});

test('withoutTsx drops only the tsx preloads from Node flags', () => {
  const tsxDist = '/x/node_modules/tsx/dist/loader.mjs';
  assert.deepEqual(
    withoutTsx([
      '--import',
      'tsx',
      '--max-old-space-size=100',
      '--import=tsx/esm',
      '--import',
      './mine.mjs',
      '--require',
      tsxDist,
      `--loader=file://${tsxDist}`,
      '--enable-source-maps',
    ]),
    ['--max-old-space-size=100', '--import', './mine.mjs', '--enable-source-maps'],
  );
});
