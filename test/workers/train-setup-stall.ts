// tsrun test worker: `tsddp train`'s recipe where rank 1 is stuck in its setup (building
// its model blocks for 30 s, as a hung file system or a stuck download would), so the
// launcher's --watchdog must find it before any step was made.
import { models } from '../../src/index.ts';
import { train } from '../../src/train/index.ts';

const stuck = process.env.RANK === '1';
await train(
  {
    model: 'resnet18',
    widthMultiplier: 0.125,
    imageSize: 16,
    trainSize: 32,
    valSize: 8,
    batchSize: 4,
    epochs: 1,
    maxSteps: 2,
    workers: 0,
    evalEvery: 0,
    timeout: 600,
  },
  {
    progress: false,
    model: (numClasses) => {
      if (stuck) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 30_000);
      return models.resnet18({ numClasses, stem: 'cifar', widthMultiplier: 0.125 });
    },
  },
);
