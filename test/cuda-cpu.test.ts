// The CUDA surface on a machine without CUDA (CI, this project's machines): the queries
// answer as torch.cuda's do there, the actions throw a typed error naming the call, NCCL
// is refused with the reason, and the build finds CUDA's headers where CUDA torch keeps
// them. The same calls on a GPU are test/cuda/*.test.ts, run by scripts/gpu-check.sh.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { cudaFlags, cudaIncludeDirs, torchHasCuda } from '../scripts/lib/cuda.mjs';
import * as t from '../src/index.ts';

const noCuda = !t.cuda.isAvailable();

test('without CUDA: queries answer like torch.cuda (false, 0 devices, 0 bytes)', { skip: !noCuda }, () => {
  assert.equal(t.cuda.isAvailable(), false);
  assert.equal(t.cuda.deviceCount(), 0);
  assert.equal(t.cuda.memoryAllocated(), 0);
  assert.equal(t.cuda.maxMemoryAllocated(0), 0);
  assert.equal(t.cuda.memoryReserved('cuda:0'), 0);
  assert.equal(t.cuda.maxMemoryReserved(), 0);
  t.cuda.emptyCache(); // a no-op, as in PyTorch
  assert.equal(t.buildInfo().cudaBuilt, false);
});

test('without CUDA: actions throw a CudaError naming the call', { skip: !noCuda }, () => {
  const calls: [string, () => unknown][] = [
    ['cuda.setDevice', () => t.cuda.setDevice(0)],
    ['cuda.currentDevice', () => t.cuda.currentDevice()],
    ['cuda.synchronize', () => t.cuda.synchronize()],
    ['cuda.resetPeakMemoryStats', () => t.cuda.resetPeakMemoryStats()],
    ['cuda.Event', () => new t.cuda.Event({ enableTiming: true })],
  ];
  for (const [name, call] of calls) {
    assert.throws(call, (e: unknown) => {
      assert.ok(e instanceof t.CudaError, `${name}: ${e}`);
      assert.match(
        e.message,
        new RegExp(`^${name.replace('.', '\\.')}: this libtorch is not compiled with CUDA`),
      );
      return true;
    });
  }
  assert.throws(() => t.cuda.setDevice('cpu'), /expected a CUDA device/);
  assert.throws(() => t.cuda.memoryAllocated('cpu'), /cuda\.memoryAllocated: expected a CUDA device/);
});

test('backends.cudnn.benchmark is libtorch global switch', () => {
  const before = t.backends.cudnn.benchmark;
  assert.equal(before, false); // PyTorch's default
  t.backends.cudnn.benchmark = true;
  assert.equal(t.backends.cudnn.benchmark, true);
  t.backends.cudnn.benchmark = false;
  assert.equal(t.backends.cudnn.benchmark, false);
  assert.throws(() => {
    (t.backends.cudnn as { benchmark: unknown }).benchmark = 'yes';
  }, TypeError);
});

test('without CUDA: pinMemory() is libtorch error, isPinned() is false', { skip: !noCuda }, () => {
  const x = t.tensor([1, 2, 3]);
  assert.equal(x.isPinned(), false);
  assert.throws(
    () => x.pinMemory(),
    (e: unknown) => e instanceof t.TorchError && /accelerator/.test(e.message),
  );
});

test('without CUDA: DataLoader pinMemory warns once and yields unpinned batches', {
  skip: !noCuda,
}, async () => {
  const warnings: string[] = [];
  const onWarning = (w: Error) => warnings.push(w.message);
  process.on('warning', onWarning);
  try {
    const ds = { length: 4, get: (i: number) => ({ x: new Float32Array([i, i]) }) };
    const loader = new t.data.DataLoader(ds, { batchSize: 2, pinMemory: true });
    new t.data.DataLoader(ds, { batchSize: 2, pinMemory: true });
    const batches = [];
    for await (const b of loader) batches.push((b as { x: t.Tensor }).x.isPinned());
    await new Promise((r) => setImmediate(r)); // warnings are emitted on the next tick
    assert.deepEqual(batches, [false, false]);
    assert.equal(warnings.filter((m) => m.includes("'pinMemory' is set but no CUDA device")).length, 1);
  } finally {
    process.off('warning', onWarning);
  }
});

test("without CUDA: backend 'nccl' is refused with the reason; 'auto' is Gloo", { skip: !noCuda }, () => {
  assert.throws(
    () =>
      t.distributed.initProcessGroup({
        backend: 'nccl',
        rank: 0,
        worldSize: 1,
        initMethod: 'tcp://127.0.0.1:1',
      }),
    (e: unknown) =>
      e instanceof t.distributed.DistributedError &&
      /backend 'nccl' needs CUDA: no CUDA device is available; use 'gloo'/.test(e.message),
  );
  const dir = mkdtempSync(join(tmpdir(), 'tsddp-auto-'));
  const pg = t.distributed.initProcessGroup({
    rank: 0,
    worldSize: 1,
    initMethod: `file://${join(dir, 'store')}`,
  });
  try {
    assert.equal(pg.backend, 'gloo');
  } finally {
    t.distributed.destroyProcessGroup();
  }
});

test("the build finds CUDA torch's headers: nvidia-* wheels beside torch, then a CUDA toolkit", () => {
  const site = mkdtempSync(join(tmpdir(), 'tsddp-site-'));
  const torch = join(site, 'torch');
  mkdirSync(join(torch, 'lib'), { recursive: true });
  for (const lib of ['nccl', 'cublas', 'cuda_runtime', 'cufft'])
    mkdirSync(join(site, 'nvidia', lib, 'include'), { recursive: true });
  mkdirSync(join(site, 'nvidia', 'cudnn', 'lib'), { recursive: true }); // no include: not listed
  const toolkit = join(site, 'cuda-home');
  mkdirSync(join(toolkit, 'include'), { recursive: true });
  writeFileSync(join(toolkit, 'include', 'cuda_runtime_api.h'), '');
  assert.equal(torchHasCuda(torch), false);
  const dirs = cudaIncludeDirs(torch, { CUDA_HOME: toolkit });
  assert.deepEqual(dirs, [
    ...['cublas', 'cuda_runtime', 'cufft', 'nccl'].map((l) => join(site, 'nvidia', l, 'include')),
    join(toolkit, 'include'),
  ]);
  // A CPU torch: the CUDA part is off; a CUDA torch with the headers: on, with the folders.
  const quiet = () => {};
  assert.deepEqual(cudaFlags(torch, quiet), ['--CDTSDDP_CUDA=OFF', '--CDTSDDP_CUDA_INCLUDE=']);
  writeFileSync(join(torch, 'lib', 'libtorch_cuda.so'), '');
  assert.equal(torchHasCuda(torch), true);
  const logged: string[] = [];
  assert.deepEqual(
    cudaFlags(torch, (m: string) => logged.push(m)),
    ['--CDTSDDP_CUDA=OFF', '--CDTSDDP_CUDA_INCLUDE='],
  );
  assert.match(logged[0], /no NCCL headers: building without the CUDA part/);
  writeFileSync(join(site, 'nvidia', 'nccl', 'include', 'nccl.h'), '');
  writeFileSync(join(site, 'nvidia', 'cuda_runtime', 'include', 'cuda_runtime_api.h'), '');
  const flags = cudaFlags(torch, quiet);
  assert.equal(flags[0], '--CDTSDDP_CUDA=ON');
  assert.ok(
    flags[1].startsWith('--CDTSDDP_CUDA_INCLUDE=') &&
      flags[1].includes(join(site, 'nvidia', 'nccl', 'include')),
  );
});
