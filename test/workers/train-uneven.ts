// One rank of test/train-uneven.test.ts: `tsddp train`'s recipe with --uneven join on 31
// Shapes images (rank 0 gets 16, 4 batches of 4; rank 1 gets 15, 3 batches) for 2 epochs;
// writes the result, the sum and a checksum of every parameter and buffer, and the
// optimizer's momentum total (under zero1, of this rank's shard), so the test can check
// that the ranks end in one state.
import { basename } from 'node:path';
import * as t from '../../src/index.ts';
import { Trainer } from '../../src/train/trainer.ts';
import { TINY_TRAIN } from '../helpers/tiny-train.ts';
import { workerConfig, writeResult } from './common.ts';

const { config } = workerConfig<{ config: Record<string, unknown> }>();
const trainer = await Trainer.create({ ...TINY_TRAIN, ...config });
const model = trainer.model;
const optimizer = trainer.optimizer;
const result = await trainer.fit();
const sum = (xs: t.Tensor[]) =>
  t.noGrad(() => xs.reduce((a, x) => a + Number(x.to('float64').abs().sum().item()), 0));
// zero1: each rank's own shard of the momentum (the local optimizer's state).
const local = optimizer instanceof t.distributed.optim.ZeroRedundancyOptimizer ? optimizer.optim : optimizer;
const momentum = Object.values(local.stateDict().state).map(
  (s) => (s as { momentum_buffer: t.Tensor }).momentum_buffer,
);
writeResult({
  steps: result.steps,
  checkpoints: result.checkpoints.map((c) => basename(c)),
  lr: result.lr,
  params: sum(model.parameters()),
  buffers: sum(model.buffers().filter((b) => b.dtype !== 'int64')),
  momentum: sum(momentum),
});
