// DDP on CUDA (run by scripts/gpu-check.sh): NCCL world 1 in this process, and two
// processes sharing the GPU over Gloo (which also serves CUDA tensors, as in PyTorch) and
// over NCCL where more than one GPU is visible. Each run is checked against the same
// steps on the full batch without DDP.
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import * as t from '../../src/index.ts';
import { okResults, runJob } from '../helpers/multiproc.ts';
import {
  type CudaDdpConfig,
  type CudaDdpResult,
  fullBatchReference,
  trainRank,
} from '../workers/cuda-ddp.ts';

function close(a: number[], b: number[], tol: number, what: string) {
  assert.equal(a.length, b.length);
  let worst = 0;
  for (let i = 0; i < a.length; i++) worst = Math.max(worst, Math.abs(a[i] - b[i]));
  assert.ok(worst < tol, `${what}: differs by ${worst}`);
}

test('NCCL world 1: collectives and a DDP step on CUDA', async () => {
  t.cuda.setDevice(0);
  const dir = mkdtempSync(join(tmpdir(), 'tsddp-nccl-'));
  const pg = t.distributed.initProcessGroup({
    backend: 'nccl',
    rank: 0,
    worldSize: 1,
    initMethod: `file://${join(dir, 's')}`,
  });
  try {
    assert.equal(pg.backend, 'nccl');
    const x = t.tensor([1, 2, 3], { dtype: 'float32', device: 'cuda' });
    await t.distributed.allReduce(x, 'sum');
    assert.deepEqual(Array.from(x.cpu().toTypedArray() as Float32Array), [1, 2, 3]);
    const cfg: CudaDdpConfig = { backend: 'nccl', steps: 3, worldSize: 1 };
    const ref = fullBatchReference(cfg);
    const { params, stats } = trainRank(cfg, 0);
    close(params, ref, 1e-5, 'NCCL world-1 DDP vs no DDP');
    assert.ok(stats.backwardCommMs >= 0);
  } finally {
    t.distributed.destroyProcessGroup();
  }
});

for (const backend of ['gloo', 'nccl'] as const) {
  const twoGpus = t.cuda.deviceCount() >= 2;
  test(`2 processes, ${backend}, CUDA tensors: DDP equals the full-batch step`, {
    skip: backend === 'nccl' && !twoGpus ? 'NCCL needs one GPU per rank' : false,
  }, async () => {
    const cfg: CudaDdpConfig = { backend, steps: 3, worldSize: 2 };
    const results = okResults(
      await runJob<CudaDdpResult>('cuda-ddp', { worldSize: 2, config: cfg, timeoutMs: 120_000 }),
    );
    close(results[0].params, results[1].params, 0, 'ranks agree bit for bit');
    close(results[0].params, fullBatchReference(cfg), 1e-5, 'DDP vs the full batch');
  });
}
