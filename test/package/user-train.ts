// A user's training script, as it would sit in their own project: it imports the installed
// package by name. test/package.test.ts type-checks it with `tsc --strict` and runs it under
// `npx tsrun --nproc-per-node 2`, once as TypeScript (tsx) and once copied to .mjs (plain
// node, compiled JavaScript): so it holds no type annotations, and the types it relies on
// (ddp.forward returning the model's Tensor, scaler.scale(loss) a Tensor) are inferred.
import { writeFileSync } from 'node:fs';
import * as t from 'tsddp';

t.distributed.initProcessGroup({ backend: 'gloo' });
const rank = t.distributed.getRank();
t.manualSeed(0);

const train = new t.data.Shapes({ split: 'train', size: 64, imageSize: 32 });
const sampler = new t.data.DistributedSampler(train, { shuffle: true, seed: 0 });
// One worker thread: the data worker of the installed package, not the main thread.
const loader = new t.data.DataLoader(train, { batchSize: 8, sampler, numWorkers: 1, dropLast: true });
const model = t.models.resnet18({ numClasses: 10, stem: 'cifar', widthMultiplier: 0.125 });
const ddp = new t.distributed.DistributedDataParallel(model, { bucketCapMb: 1 });
const optimizer = new t.optim.SGD(model.parameters(), { lr: 0.05, momentum: 0.9 });
const scaler = new t.GradScaler({ device: 'cpu', enabled: false });

// Rank 0 logs each loss for TensorBoard, as torch.utils.tensorboard would.
const board = rank === 0 ? new t.utils.tensorboard.SummaryWriter(`${process.env.RESULT_PREFIX}.tb`) : null;
const losses = [];
for (let epoch = 0; epoch < 2; epoch++) {
  sampler.setEpoch(epoch);
  // No `using` here: plain Node 20 runs the .mjs copy, and it has no `using` syntax.
  for await (const batch of loader) {
    const value = t.tidy(() => {
      const image = t.data.toTensorBatch(batch.image);
      const x = t.data.normalizeBatch(image, t.data.SHAPES_MEAN, t.data.SHAPES_STD);
      const loss = t.crossEntropy(ddp.forward(x), batch.label);
      scaler.scale(loss).backward();
      scaler.step(optimizer);
      scaler.update();
      optimizer.zeroGrad();
      return loss.item();
    });
    batch[Symbol.dispose]();
    board?.addScalar('train/loss', value, losses.length);
    losses.push(value);
  }
}
// DDP keeps the replicas identical: each rank reports a checksum of its parameters.
const checksum = t.noGrad(() => model.parameters().reduce((s, p) => s + p.double().abs().sum().item(), 0));
writeFileSync(`${process.env.RESULT_PREFIX}.rank${rank}.json`, JSON.stringify({ losses, checksum }));
board?.close();
if (rank === 0) {
  // The other doors from the installed package: ONNX out, and a Hugging Face GPT-2 folder
  // out and back in.
  t.onnx.export(model, t.randn([1, 3, 32, 32]), `${process.env.RESULT_PREFIX}.onnx`, {
    dynamicAxes: { input: { 0: 'batch' } },
  });
  const gpt = t.models.gpt({ nLayer: 1, nHead: 2, nEmbd: 8, vocabSize: 16, blockSize: 8 });
  await gpt.savePretrained(`${process.env.RESULT_PREFIX}.gpt2`);
  const back = await t.models.GPT.fromPretrained(`${process.env.RESULT_PREFIX}.gpt2`);
  writeFileSync(`${process.env.RESULT_PREFIX}.gpt2.json`, JSON.stringify(back.config));
}
t.distributed.destroyProcessGroup();
