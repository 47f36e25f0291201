// t.profiler: libtorch's profiler records the ops of a region, as torch.profiler does.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as t from '../src/index.ts';

test('profile() records the aten ops and autograd nodes of a region', () => {
  const w = t.randn([64, 32], { requiresGrad: true });
  const x = t.randn([16, 64]);
  const prof = t.profiler.profile(
    () => {
      const y = t.matmul(x, w).relu().sum();
      y.backward();
    },
    { recordShapes: true },
  );
  const names = new Set(prof.events.map((e) => e.name));
  for (const op of ['aten::matmul', 'aten::mm', 'aten::relu', 'aten::sum'])
    assert.ok(names.has(op), `${op} recorded`);
  assert.ok(
    [...names].some((n) => n.includes('MmBackward0')),
    'the backward pass is recorded too',
  );
  const mm = prof.events.find((e) => e.name === 'aten::mm' && e.shapes === '[16,64][64,32]');
  assert.ok(mm, 'input shapes are recorded');
  assert.ok(mm.durationUs >= 0 && mm.startUs > 0);
  const avg = prof.keyAverages();
  const matmul = avg.find((a) => a.name === 'aten::matmul');
  assert.equal(matmul?.count, 1);
  for (let i = 1; i < avg.length; i++)
    assert.ok(avg[i - 1].totalUs >= avg[i].totalUs, 'sorted by total time');
  assert.match(prof.table(5), /^name\s+calls\s+total ms\s+mean us\n/);
  assert.equal(prof.table(5).split('\n').length, 6);
});

test('only what runs inside the region is recorded; regions do not nest', async () => {
  const a = t.ones([4]);
  const prof = t.profiler.profile(() => {
    a.mul(2);
  });
  assert.ok(prof.events.some((e) => e.name === 'aten::mul'));
  assert.ok(!prof.events.some((e) => e.name === 'aten::ones'));
  assert.throws(() => t.profiler.profile(() => t.profiler.profile(() => {})), /a profile is already running/);
  // The failed inner call left the outer region stopped: a new one starts.
  const again = await t.profiler.profileAsync(async () => {
    await Promise.resolve();
    a.add(1);
  });
  assert.ok(again.events.some((e) => e.name === 'aten::add'));
});
