// Tensor samples on a GPU (run by scripts/gpu-check.sh; test/data-tensor-samples.test.ts
// covers the CPU): CUDA tensors are stacked on their device, as PyTorch's default_collate
// does; samples on different devices are refused naming the field; pinMemory pins a
// batch stacked from CPU tensors and leaves CUDA ones as they are.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DataLoader, DataLoaderWorkerError } from '../../src/data/index.ts';
import * as t from '../../src/index.ts';

test('CUDA Tensor samples stack on the GPU; mixed devices are refused naming the field', async () => {
  assert.equal(t.cuda.isAvailable(), true, 'no CUDA device: run this on a GPU machine');
  using _scope = t.scope();
  const onGpu = {
    length: 4,
    get: (i: number) => [t.full([3], i, { device: 'cuda' }), i] as [t.Tensor, number],
  };
  for await (using batch of new DataLoader(onGpu, { batchSize: 4, pinMemory: true })) {
    const [x, y] = batch;
    assert.equal(x.device, 'cuda:0');
    assert.deepEqual(x.shape, [4, 3]);
    assert.deepEqual(
      x.cpu().toArray(),
      [0, 1, 2, 3].map((i) => [i, i, i]),
    );
    assert.equal(y.device, 'cpu');
  }
  const mixed = {
    length: 2,
    get: (i: number) => ({ x: t.zeros([2], { device: i === 0 ? 'cpu' : 'cuda' }) }),
  };
  await assert.rejects(
    async () => {
      for await (const _ of new DataLoader(mixed, { batchSize: 2 }));
    },
    (e: unknown) =>
      e instanceof DataLoaderWorkerError &&
      /field 'x' is on cuda:0 in sample 1 but on cpu in sample 0/.test(e.message),
  );
});

test('pinMemory pins a field stacked from CPU tensors', async () => {
  using _scope = t.scope();
  const onCpu = { length: 2, get: (i: number) => ({ x: t.full([2], i) }) };
  for await (using batch of new DataLoader(onCpu, { batchSize: 2, pinMemory: true })) {
    assert.equal(batch.x.device, 'cpu');
    assert.equal(batch.x.isPinned(), true);
  }
});
