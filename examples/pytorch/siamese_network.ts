// pytorch/examples' siamese_network (main.py), ported line by line: a ResNet-18 feature
// extractor (its first convolution replaced for one-channel MNIST images, its last layer
// removed) applied to two images, their features concatenated and scored by two linear
// layers and a sigmoid: 1 for two images of the same digit, 0 otherwise. Pairs are drawn
// as APP_MATCHER draws them (even indices: the same class; odd: another one), from the
// sample's own random stream instead of Python's global `random`. Trained with Adadelta
// and BCELoss, the learning rate decayed by StepLR.
//
//   node --import tsx examples/pytorch/siamese_network.ts [--data ../data] [--batch-size 64] [--test-batch-size 1000] [--epochs 14] [--lr 1.0] [--gamma 0.7] [--dry-run] [--seed 1] [--log-interval 10] [--save-model]
import { parseArgs } from 'node:util';
import * as t from '../../src/index.ts';

const { nn } = t;

class SiameseNetwork extends nn.Module {
  resnet: t.nn.Sequential;
  fcInFeatures: number;
  fc: t.nn.Sequential;
  sigmoid = new nn.Sigmoid();

  constructor() {
    super();
    // get resnet model
    const resnet = t.models.resnet18();
    this.fcInFeatures = resnet.fc.inFeatures;
    // over-write the first conv layer to read MNIST's one gray-scale channel (ResNet-18
    // reads three), and remove the last layer (the linear layer after avgpool)
    const conv1 = new nn.Conv2d(1, 64, [7, 7], { stride: [2, 2], padding: [3, 3], bias: false });
    const [, ...rest] = resnet.children().slice(0, -1);
    this.resnet = new nn.Sequential(conv1, ...rest);
    // add linear layers to compare between the features of the two images
    this.fc = new nn.Sequential(
      new nn.Linear(this.fcInFeatures * 2, 256),
      new nn.ReLU(true),
      new nn.Linear(256, 1),
    );
    // initialize the weights
    this.resnet.apply((m) => this.initWeights(m));
    this.fc.apply((m) => this.initWeights(m));
  }

  initWeights(m: t.nn.Module): void {
    if (m instanceof nn.Linear) {
      nn.init.xavierUniform_(m.weight);
      t.noGrad(() => (m.bias as t.Tensor).fill_(0.01));
    }
  }

  forwardOnce(x: t.Tensor): t.Tensor {
    const output = this.resnet.forward(x);
    return output.view(output.size(0), -1);
  }

  override forward(input1: t.Tensor, input2: t.Tensor): t.Tensor {
    // get two images' features, concatenated, through the linear layers and the sigmoid
    const output = t.cat([this.forwardOnce(input1), this.forwardOnce(input2)], 1);
    return this.sigmoid.forward(this.fc.forward(output));
  }
}

type Pair = [t.data.NdArray<Float32Array>, t.data.NdArray<Float32Array>, number];

/** MNIST as pairs of images: the same class at even indices, different classes at odd ones. */
class APP_MATCHER extends t.data.Dataset<Pair> {
  private readonly groupedExamples: number[][];

  private constructor(private readonly dataset: t.data.MNIST) {
    super();
    // group examples based on class, to pick images of a class
    this.groupedExamples = Array.from({ length: 10 }, () => []);
    dataset.targets.forEach((label, i) => {
      this.groupedExamples[label].push(i);
    });
  }

  static async create(root: string, train: boolean, download = false): Promise<APP_MATCHER> {
    return new APP_MATCHER(await t.data.MNIST.create({ root, train, download }));
  }

  get length(): number {
    return this.dataset.length;
  }

  /** The image as float [1, 28, 28] (0..255, as `data[i].clone().float()` is). */
  private image(i: number): t.data.NdArray<Float32Array> {
    const { data } = this.dataset.get(i).image;
    return t.data.nd(Float32Array.from(data as Uint8Array), [1, 28, 28]);
  }

  get(index: number, ctx: t.data.SampleContext): Pair {
    const randint = (low: number, high: number) => ctx.rng.int(low, high + 1); // Python's inclusive randint
    // pick some random class, and a random image of it, for the first image
    const selectedClass = randint(0, 9);
    const group = this.groupedExamples[selectedClass];
    const randomIndex1 = randint(0, group.length - 1);
    const image1 = this.image(group[randomIndex1]);
    if (index % 2 === 0) {
      // same class: another image of it (not the same one)
      let randomIndex2 = randint(0, group.length - 1);
      while (randomIndex2 === randomIndex1) randomIndex2 = randint(0, group.length - 1);
      return [image1, this.image(group[randomIndex2]), 1];
    }
    // different class
    let otherSelectedClass = randint(0, 9);
    while (otherSelectedClass === selectedClass) otherSelectedClass = randint(0, 9);
    const other = this.groupedExamples[otherSelectedClass];
    return [image1, this.image(other[randint(0, other.length - 1)]), 0];
  }
}

type Args = { dryRun: boolean; logInterval: number };

async function train(
  args: Args,
  model: SiameseNetwork,
  device: string,
  trainLoader: t.data.DataLoader<Pair>,
  optimizer: t.optim.Optimizer,
  epoch: number,
): Promise<void> {
  model.train();
  // BCELoss is enough on MNIST: no TripletLoss
  const criterion = new nn.BCELoss();
  let batchIdx = 0;
  for await (using batch of trainLoader) {
    const stop = t.tidy(() => {
      const [images1, images2, targets] = batch.map((x) => x.to(device)) as [t.Tensor, t.Tensor, t.Tensor];
      optimizer.zeroGrad();
      const outputs = model.forward(images1, images2).squeeze();
      const loss = criterion.forward(outputs, targets.float());
      loss.backward();
      optimizer.step();
      if (batchIdx % args.logInterval === 0) {
        console.log(
          `Train Epoch: ${epoch} [${batchIdx * images1.size(0)}/${trainLoader.dataset.length} ` +
            `(${((100 * batchIdx) / trainLoader.length).toFixed(0)}%)]\tLoss: ${loss.item().toFixed(6)}`,
        );
        return args.dryRun;
      }
      return false;
    });
    batchIdx++;
    if (stop) break;
  }
}

async function test(
  model: SiameseNetwork,
  device: string,
  testLoader: t.data.DataLoader<Pair>,
): Promise<void> {
  model.eval();
  let testLoss = 0;
  let correct = 0;
  const criterion = new nn.BCELoss();
  await t.noGradAsync(async () => {
    for await (using batch of testLoader) {
      t.tidy(() => {
        const [images1, images2, targets] = batch.map((x) => x.to(device)) as [t.Tensor, t.Tensor, t.Tensor];
        const outputs = model.forward(images1, images2).squeeze();
        testLoss += criterion.forward(outputs, targets.float()).sum().item(); // sum up batch loss
        const pred = t.where(outputs.gt(0.5), 1, 0); // the predicted label
        correct += pred.eq(targets.viewAs(pred)).sum().item();
      });
    }
  });
  const n = testLoader.dataset.length as number;
  testLoss /= n;
  console.log(
    `\nTest set: Average loss: ${testLoss.toFixed(4)}, Accuracy: ${correct}/${n} (${((100 * correct) / n).toFixed(0)}%)\n`,
  );
}

async function main(): Promise<void> {
  // Training settings
  const { values: a } = parseArgs({
    options: {
      data: { type: 'string', default: '../data' },
      'batch-size': { type: 'string', default: '64' },
      'test-batch-size': { type: 'string', default: '1000' },
      epochs: { type: 'string', default: '14' },
      lr: { type: 'string', default: '1.0' },
      gamma: { type: 'string', default: '0.7' },
      'dry-run': { type: 'boolean', default: false },
      seed: { type: 'string', default: '1' },
      'log-interval': { type: 'string', default: '10' },
      'save-model': { type: 'boolean', default: false },
    },
  });
  const args = { dryRun: a['dry-run'] as boolean, logInterval: Number(a['log-interval']) };
  t.manualSeed(Number(a.seed));
  const device = t.accelerator.isAvailable() ? 'cuda' : 'cpu';
  const seed = Number(a.seed);
  const trainDataset = await APP_MATCHER.create(a.data as string, true, true);
  const testDataset = await APP_MATCHER.create(a.data as string, false);
  const trainLoader = new t.data.DataLoader(trainDataset, { batchSize: Number(a['batch-size']), seed });
  const testLoader = new t.data.DataLoader(testDataset, { batchSize: Number(a['test-batch-size']), seed });

  const model = new SiameseNetwork().to(device);
  const optimizer = new t.optim.Adadelta(model.parameters(), { lr: Number(a.lr) });
  const scheduler = new t.optim.lrScheduler.StepLR(optimizer, { stepSize: 1, gamma: Number(a.gamma) });
  for (let epoch = 1; epoch <= Number(a.epochs); epoch++) {
    await train(args, model, device, trainLoader, optimizer, epoch);
    await test(model, device, testLoader);
    scheduler.step();
  }
  if (a['save-model']) await t.save(model.stateDict(), 'siamese_network.pt');
}

await main();
