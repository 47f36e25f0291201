// `npm run demo` (tsddp demo): two DDP workers train on Shapes and reach at least 90%
// validation top-1; the checkpoint, metrics and report it prints exist and are valid.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { verifyCheckpoint } from '../src/checkpoint/index.ts';
import { type EvalRecord, readJsonLines } from '../src/metrics/index.ts';

const out = mkdtempSync(join(tmpdir(), 'tsddp-demo-'));
after(() => rmSync(out, { recursive: true, force: true }));

test('tsddp demo trains 2 DDP workers to >= 90% validation top-1 and prints checkpoint, metrics and report', async () => {
  const run = spawnSync(process.execPath, ['bin/tsddp.mjs', 'demo', '--out', out], {
    encoding: 'utf8',
    timeout: 600_000,
  });
  assert.equal(run.status, 0, `${run.stdout}\n${run.stderr}`);
  const printed = (label: string) => run.stdout.match(new RegExp(`^ {2}${label}: +(.+)$`, 'm'))?.[1];
  const checkpoint = printed('checkpoint');
  const metrics = printed('metrics');
  const report = printed('report');
  assert.ok(checkpoint && metrics && report, run.stdout);
  await verifyCheckpoint(checkpoint);
  assert.ok(existsSync(report), report);
  const evals = readJsonLines(metrics).filter((r): r is EvalRecord => r.type === 'eval');
  assert.equal(evals.at(-1)?.count, 1000, 'every validation image counted once');
  assert.ok((evals.at(-1)?.top1 ?? 0) >= 0.9, `final top-1 ${evals.at(-1)?.top1}`);
  const ranks = new Set(readJsonLines(metrics).map((r) => r.rank));
  assert.deepEqual([...ranks].sort(), [0, 1]);
  assert.match(run.stdout, /\[rank 0\] epoch 3\/3 {2}step 375\/375/);
  assert.match(run.stdout, /validation top-1 \d+\.\d% on 1000 images/);
});
