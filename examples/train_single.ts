// Train a small ResNet-18 on Shapes in one process — the single-process counterpart of
// the classic PyTorch CIFAR recipe. Shapes is a procedurally generated, learnable
// 10-class image set (circle, square, triangle, ...), so nothing is downloaded.
//
//   npm run demo          (or: node --import tsx examples/train_single.ts [epochs])
import { availableParallelism } from 'node:os';
import * as t from '../src/index.ts';

const EPOCHS = Number(process.argv[2] ?? 2);
const BATCH = 64;
const MAX_LR = 0.2;
const LOG_EVERY = 25; // steps

t.manualSeed(0);

// Data: uint8 [B, 32, 32, 3] batches. Worker threads render them while the model trains
// when there are cores to spare; on 2 cores a worker would only compete with libtorch's
// threads, so the main thread renders (about 0.4 ms per image).
const numWorkers = availableParallelism() > 2 ? 2 : 0;
const train = new t.data.Shapes({ split: 'train', size: 8000, imageSize: 32 });
const val = new t.data.Shapes({ split: 'val', size: 1000, imageSize: 32 });
const trainLoader = new t.data.DataLoader(train, {
  batchSize: BATCH,
  shuffle: true,
  dropLast: true,
  numWorkers,
  persistentWorkers: numWorkers > 0,
  seed: 0,
});
const valLoader = new t.data.DataLoader(val, { batchSize: 250, numWorkers });

/** uint8 [B, H, W, C] -> normalized float32 [B, C, H, W]. */
function toInput(image: t.Tensor): t.Tensor {
  const x = t.data.toTensorBatch(image);
  return t.data.normalizeBatch(x, t.data.SHAPES_MEAN, t.data.SHAPES_STD);
}

// Model and optimizer: ResNet-18 with the CIFAR stem at a quarter of the width (base 16).
const model = t.models.resnet18({ numClasses: 10, stem: 'cifar', widthMultiplier: 0.25 });
const optimizer = new t.optim.SGD(model.parameters(), {
  lr: MAX_LR,
  momentum: 0.9,
  weightDecay: 5e-4,
  nesterov: true,
});
const stepsPerEpoch = trainLoader.length;
const scheduler = new t.optim.lrScheduler.OneCycleLR(optimizer, MAX_LR, {
  epochs: EPOCHS,
  stepsPerEpoch,
});

async function evaluate(): Promise<number> {
  model.eval();
  let correct = 0;
  let seen = 0;
  await t.noGradAsync(async () => {
    for await (using batch of valLoader) {
      using _ = t.scope();
      const logits = model.call(toInput(batch.image));
      correct += logits.argmax(1).eq(batch.label).sum().item();
      seen += batch.label.shape[0];
    }
  });
  model.train();
  return correct / seen;
}

console.log(
  `resnet18 (cifar stem, width 0.25): ${model.parameters().reduce((n, p) => n + p.numel(), 0)} parameters; ` +
    `Shapes 32x32: ${train.length} train / ${val.length} val images; ${EPOCHS} epochs of ${stepsPerEpoch} steps; ` +
    `${t.getNumThreads()} threads, ${numWorkers} loader workers`,
);
const start = performance.now();
let step = 0;
for (let epoch = 1; epoch <= EPOCHS; epoch++) {
  let lossSum = 0;
  let correct = 0;
  let seen = 0;
  let windowStart = performance.now();
  for await (using batch of trainLoader) {
    using _ = t.scope();
    const logits = model.call(toInput(batch.image));
    const loss = t.crossEntropy(logits, batch.label);
    optimizer.zeroGrad();
    loss.backward();
    optimizer.step();
    scheduler.step();
    step++;

    lossSum += loss.item();
    correct += logits.argmax(1).eq(batch.label).sum().item();
    seen += BATCH;
    if (step % LOG_EVERY === 0) {
      const imgPerS = (LOG_EVERY * BATCH) / ((performance.now() - windowStart) / 1000);
      console.log(
        `epoch ${epoch} step ${String(step).padStart(4)}  loss ${(lossSum / (seen / BATCH)).toFixed(3)}  ` +
          `acc ${((100 * correct) / seen).toFixed(1)}%  lr ${scheduler.getLastLr()[0].toFixed(3)}  ` +
          `${imgPerS.toFixed(0)} img/s`,
      );
      lossSum = 0;
      correct = 0;
      seen = 0;
      windowStart = performance.now();
    }
  }
  const acc = await evaluate();
  console.log(`epoch ${epoch}: validation accuracy ${(100 * acc).toFixed(1)}% (chance 10%)`);
}
await trainLoader.close();
const secs = (performance.now() - start) / 1000;
console.log(
  `done in ${secs.toFixed(0)} s (${((step * BATCH) / secs).toFixed(0)} img/s); live tensors: ${t.memory().tensors}`,
);
