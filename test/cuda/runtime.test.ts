// torch.cuda's calls on a GPU (run by scripts/gpu-check.sh; CI has no GPU and runs
// test/cuda-cpu.test.ts instead): device, synchronize, allocator statistics, events,
// pinned memory and the non-blocking copy, cuDNN's autotuner, torch.accelerator over them.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as t from '../../src/index.ts';

test('CUDA is available and the addon has its CUDA part', () => {
  assert.equal(t.cuda.isAvailable(), true, 'no CUDA device: run this on a GPU machine');
  assert.equal(t.cuda.isBuilt(), true, 'the addon was built without TSDDP_CUDA');
  assert.ok(t.cuda.deviceCount() >= 1);
  t.cuda.setDevice(0);
  assert.equal(t.cuda.currentDevice(), 0);
  assert.throws(() => t.cuda.setDevice(t.cuda.deviceCount()), RangeError);
});

test('torch.accelerator is CUDA, through torch.cuda', () => {
  assert.equal(t.accelerator.isAvailable(), true);
  assert.equal(t.accelerator.currentAccelerator(), 'cuda');
  assert.equal(t.accelerator.currentAccelerator(true), 'cuda');
  assert.equal(t.accelerator.deviceCount(), t.cuda.deviceCount());
  t.accelerator.setDeviceIndex(0);
  assert.equal(t.accelerator.currentDeviceIndex(), 0);
  t.accelerator.setDeviceIndex('cuda:0');
  assert.equal(t.cuda.currentDevice(), 0);
  t.accelerator.synchronize();
  t.accelerator.synchronize('cuda:0');
  assert.throws(() => t.accelerator.setDeviceIndex(t.cuda.deviceCount()), RangeError);
  assert.throws(() => t.accelerator.setDeviceIndex('cpu'), /cpu doesn't match the current accelerator cuda/);
});

test('ops run on the GPU and agree with the CPU', () => {
  t.manualSeed(0);
  const a = t.randn([64, 128]);
  const b = t.randn([128, 32]);
  const gpu = t.matmul(a.cuda(), b.cuda());
  assert.equal(gpu.device, 'cuda:0');
  const back = gpu.cpu().toTypedArray() as Float32Array;
  const ref = t.matmul(a, b).toTypedArray() as Float32Array;
  // TF32 is off by default for matmul, as in PyTorch: fp32 results within rounding.
  for (let i = 0; i < ref.length; i++) assert.ok(Math.abs(back[i] - ref[i]) < 1e-3, `element ${i}`);
});

test('the caching allocator counts what tensors hold', () => {
  t.cuda.synchronize();
  t.cuda.resetPeakMemoryStats();
  const before = t.cuda.memoryAllocated();
  const x = t.zeros([1024, 1024], { device: 'cuda' }); // 4 MiB
  assert.equal(t.cuda.memoryAllocated() - before, 4 * 1024 * 1024);
  assert.ok(t.cuda.maxMemoryAllocated() >= before + 4 * 1024 * 1024);
  assert.ok(t.cuda.memoryReserved() >= t.cuda.memoryAllocated());
  x.dispose();
  assert.equal(t.cuda.memoryAllocated(), before);
  assert.ok(t.cuda.maxMemoryAllocated() >= before + 4 * 1024 * 1024, 'the peak stays until reset');
  t.cuda.emptyCache();
});

test('events time GPU work and report completion', () => {
  const start = new t.cuda.Event({ enableTiming: true });
  const end = new t.cuda.Event({ enableTiming: true });
  const x = t.randn([2048, 2048], { device: 'cuda' });
  start.record();
  for (let i = 0; i < 10; i++) t.matmul(x, x).dispose();
  end.record();
  end.synchronize();
  assert.equal(end.query(), true);
  const ms = start.elapsedTime(end);
  assert.ok(ms > 0 && ms < 10_000, `elapsed ${ms} ms`);
  const untimed = new t.cuda.Event();
  untimed.record();
  assert.throws(() => untimed.elapsedTime(end), t.CudaError);
});

test('pinned host memory and the non-blocking copy', () => {
  const host = t.arange(0, 1 << 20, { dtype: 'float32' });
  assert.equal(host.isPinned(), false);
  const pinned = host.pinMemory();
  assert.equal(pinned.isPinned(), true);
  const dev = pinned.to({ device: 'cuda:0', nonBlocking: true });
  t.cuda.synchronize();
  assert.deepEqual(dev.sum().item(), host.sum().item());
});

test('DataLoader pinMemory pins the batches', async () => {
  const ds = { length: 4, get: (i: number) => ({ x: new Float32Array([i, i, i]) }) };
  const loader = new t.data.DataLoader(ds, { batchSize: 2, pinMemory: true });
  for await (const b of loader) assert.equal((b as { x: t.Tensor }).x.isPinned(), true);
});

test('cudnn.benchmark: convolutions autotuned, same results', () => {
  t.manualSeed(1);
  const conv = new t.nn.Conv2d(3, 16, 3, { padding: 1 }).cuda();
  const x = t.randn([8, 3, 32, 32], { device: 'cuda' });
  t.backends.cudnn.benchmark = false;
  const plain = conv.forward(x).cpu().toTypedArray() as Float32Array;
  t.backends.cudnn.benchmark = true;
  const tuned = conv.forward(x).cpu().toTypedArray() as Float32Array;
  t.backends.cudnn.benchmark = false;
  for (let i = 0; i < plain.length; i += 97) assert.ok(Math.abs(plain[i] - tuned[i]) < 1e-3);
});
