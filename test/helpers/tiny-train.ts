// The smallest `tsddp train` run the recipe tests share: a ResNet-18 at 1/8 width on 32
// Shapes images of 16 px, batches of 8, one epoch, no loader threads, no evaluation (a
// step takes a few milliseconds on one core). Tests spread it and add what they test.
import type { TrainConfigInput } from '../../src/train/index.ts';

export const TINY_TRAIN: TrainConfigInput = {
  model: 'resnet18',
  widthMultiplier: 0.125,
  imageSize: 16,
  trainSize: 32,
  valSize: 8,
  batchSize: 8,
  epochs: 1,
  workers: 0,
  evalEvery: 0,
};
