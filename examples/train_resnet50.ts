// The classic PyTorch DDP recipe — ResNet-50, one process per device, torchrun — in tsddp.
// Launch it like torchrun:
//
//   npx tsddp run --nproc-per-node 2 examples/train_resnet50.ts                  # Shapes 32x32
//   npx tsddp run --nproc-per-node 8 examples/train_resnet50.ts --data /imagenet  # ImageFolder: train/, val/
//   npx tsddp run --nproc-per-node 2 examples/train_resnet50.ts --width 0.125 --epochs 1 --train-size 512
//
// (`tsddp train` is this recipe as a command, with every option and evaluation.)
import { Command } from 'commander';
import * as t from '../src/index.ts';

const args = new Command('train_resnet50')
  .option('--data <dir>', 'an ImageFolder root with train/ and val/ (default: Shapes 32x32)')
  .option('--epochs <n>', 'epochs', Number, 90)
  .option('--batch-size <n>', 'images per process per micro-batch', Number, 32)
  .option('--accum <n>', 'micro-batches per optimizer step', Number, 1)
  .option('--amp <mode>', 'fp16 | bf16 | off (default: fp16 on CUDA, bf16 on CPU)')
  .option('--width <x>', 'ResNet width multiplier (tiny test runs)', Number, 1)
  .option('--train-size <n>', 'Shapes training samples', Number, 10000)
  .option('--static-graph', 'DDP static graph', false)
  .option('--checkpoint-dir <dir>', 'where rank 0 saves checkpoints', 'checkpoints/resnet50')
  .option('--workers <n>', 'data-loader worker threads per process', Number, 2)
  .parse()
  .opts<{
    data?: string;
    epochs: number;
    batchSize: number;
    accum: number;
    amp?: string;
    width: number;
    trainSize: number;
    staticGraph: boolean;
    checkpointDir: string;
    workers: number;
  }>();
const EPOCHS = args.epochs;
const BATCH = args.batchSize;
const ACCUM = args.accum;
const CKPT = args.checkpointDir;

// 1. Process group from the launcher's environment (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT).
t.distributed.initProcessGroup({ backend: 'auto' }); // NCCL with CUDA, else Gloo
const rank = t.distributed.getRank();
const worldSize = t.distributed.getWorldSize();
const localRank = Number(process.env.LOCAL_RANK ?? rank);
const cuda = t.cuda.isAvailable();
const device = cuda ? `cuda:${localRank}` : 'cpu'; // torch.cuda.set_device(local_rank)
const deviceType = cuda ? 'cuda' : 'cpu';
const amp = args.amp ?? (cuda ? 'fp16' : 'bf16');

// 2. Data: each process reads its shard; workers decode and augment in threads.
const imagenet = args.data !== undefined;
const imageSize = imagenet ? 224 : 32;
const { Compose, RandomResizedCrop, RandomHorizontalFlip, RandomCrop } = t.data;
const train = imagenet
  ? new t.data.ImageFolder({
      root: `${args.data}/train`,
      transform: new Compose([new RandomResizedCrop(224), new RandomHorizontalFlip()]),
    })
  : new t.data.Shapes({
      size: args.trainSize,
      transform: new Compose([new RandomCrop(32, { padding: 4 }), new RandomHorizontalFlip()]),
    });
const mean = imagenet ? [0.485, 0.456, 0.406] : t.data.SHAPES_MEAN;
const std = imagenet ? [0.229, 0.224, 0.225] : t.data.SHAPES_STD;
const numClasses = imagenet ? (train as t.data.ImageFolder).classes.length : 10;
const sampler = new t.data.DistributedSampler(train, { shuffle: true, seed: 0 });
const loader = new t.data.DataLoader(train, {
  batchSize: BATCH,
  sampler,
  numWorkers: args.workers,
  pinMemory: true,
  persistentWorkers: args.workers > 0,
  dropLast: true,
});

// 3. Model, DDP, optimizer (linear scaling rule: lr 0.1 per 256 images), schedule, scaler.
t.manualSeed(0);
const model = t.models.resnet50({
  numClasses,
  stem: imagenet ? 'imagenet' : 'cifar',
  widthMultiplier: args.width,
});
model.to(device);
const ddp = new t.distributed.DistributedDataParallel(model, {
  deviceIds: cuda ? [localRank] : undefined,
  bucketCapMb: 25,
  gradientAsBucketView: true,
  staticGraph: args.staticGraph,
});
const lr = (0.1 * BATCH * ACCUM * worldSize) / 256;
const optimizer = new t.optim.SGD(model.parameters(), { lr, momentum: 0.9, weightDecay: 1e-4 });
const stepsPerEpoch = Math.floor(loader.length / ACCUM);
const scheduler = new t.optim.lrScheduler.CosineAnnealingLR(optimizer, EPOCHS * stepsPerEpoch);
const scaler = new t.GradScaler({ device: deviceType, enabled: amp === 'fp16' });

// 4. Resume from the newest complete checkpoint, if any (a restarted gang lands here too).
let startEpoch = 0;
const latest = await t.latestCheckpoint(CKPT);
if (latest !== null) {
  const ck = await t.loadCheckpoint(latest, { model, optimizer, scheduler, scaler });
  startEpoch = ck.epoch;
  if (rank === 0) console.log(`resumed from ${latest} at epoch ${startEpoch}`);
}

if (rank === 0) {
  console.log(
    `resnet50 x${args.width} on ${worldSize} process(es), ${imagenet ? 'ImageNet folder' : 'Shapes'} ` +
      `${imageSize}x${imageSize}, batch ${BATCH} x ${ACCUM} x ${worldSize}, lr ${lr}, amp ${amp}`,
  );
}
for (let epoch = startEpoch; epoch < EPOCHS; epoch++) {
  sampler.setEpoch(epoch); // a different shuffle every epoch, the same on every rank
  const start = performance.now();
  let i = 0;
  for await (using batch of loader) {
    using _ = t.scope(); // frees this step's tensors
    const images = t.data
      .normalizeBatch(t.data.toTensorBatch(batch.image), mean, std)
      .to({ device, nonBlocking: true });
    const target = batch.label.to({ device, nonBlocking: true });
    const step = () => {
      const loss = t.autocast(
        { deviceType, dtype: amp === 'bf16' ? 'bfloat16' : 'float16', enabled: amp !== 'off' },
        () => t.crossEntropy(ddp.forward(images), target).div(ACCUM),
      );
      scaler.scale(loss).backward();
      return loss.item() * ACCUM;
    };
    // Gradient accumulation: no all-reduce until the last micro-batch of a step.
    const last = (i + 1) % ACCUM === 0;
    const loss = last ? step() : ddp.noSync(step);
    if (last) {
      scaler.step(optimizer);
      scaler.update();
      optimizer.zeroGrad();
      scheduler.step();
    }
    i++;
    if (rank === 0 && i % 20 === 0) {
      const ips = (i * BATCH * worldSize) / ((performance.now() - start) / 1000);
      console.log(
        `epoch ${epoch} batch ${i}/${loader.length} loss ${loss.toFixed(4)} ${ips.toFixed(1)} img/s`,
      );
    }
    if (Math.floor(i / ACCUM) === stepsPerEpoch) break;
  }
  // Rank 0 writes the checkpoint; everyone waits until it is committed.
  if (rank === 0) {
    await t.saveCheckpoint(
      CKPT,
      { model, optimizer, scheduler, scaler, epoch: epoch + 1, step: (epoch + 1) * stepsPerEpoch },
      { keepLast: 3 },
    );
  }
  await t.distributed.barrier();
}
await loader.close();
t.distributed.destroyProcessGroup();
