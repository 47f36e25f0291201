// pytorch/examples' vae (main.py), ported line by line: a variational autoencoder on MNIST
// (784 -> 400 -> 20 + 20 -> 400 -> 784), the reparameterization trick, and the continuous
// Bernoulli loss (binary cross-entropy, its log normalizing constant, and the KL
// divergence), trained with Adam. torchvision.utils.save_image has no tsddp counterpart:
// the reconstructions and samples the original writes as PNGs are left out.
//
//   node --import tsx examples/pytorch/vae.ts [--data ../data] [--batch-size 128] [--epochs 10] [--seed 1] [--log-interval 10]
import { parseArgs } from 'node:util';
import * as t from '../../src/index.ts';

const { nn } = t;
const F = t.nn.functional;
const { values: a } = parseArgs({
  options: {
    data: { type: 'string', default: '../data' },
    'batch-size': { type: 'string', default: '128' },
    epochs: { type: 'string', default: '10' },
    seed: { type: 'string', default: '1' },
    'log-interval': { type: 'string', default: '10' },
  },
});
const args = {
  batchSize: Number(a['batch-size']),
  epochs: Number(a.epochs),
  seed: Number(a.seed),
  logInterval: Number(a['log-interval']),
};

t.manualSeed(args.seed);
const device = t.accelerator.isAvailable() ? 'cuda' : 'cpu';

const transform = new t.data.ToTensor();
const trainSet = await t.data.MNIST.create({
  root: a.data as string,
  train: true,
  download: true,
  transform,
});
const testSet = await t.data.MNIST.create({ root: a.data as string, train: false, transform });
const trainLoader = new t.data.DataLoader(trainSet, {
  batchSize: args.batchSize,
  shuffle: true,
  seed: args.seed,
});
const testLoader = new t.data.DataLoader(testSet, {
  batchSize: args.batchSize,
  shuffle: true,
  seed: args.seed,
});

class VAE extends nn.Module {
  fc1 = new nn.Linear(784, 400);
  fc21 = new nn.Linear(400, 20);
  fc22 = new nn.Linear(400, 20);
  fc3 = new nn.Linear(20, 400);
  fc4 = new nn.Linear(400, 784);

  encode(x: t.Tensor): [t.Tensor, t.Tensor] {
    const h1 = F.relu(this.fc1.forward(x));
    return [this.fc21.forward(h1), this.fc22.forward(h1)];
  }

  reparameterize(mu: t.Tensor, logvar: t.Tensor): t.Tensor {
    const std = t.exp(logvar.mul(0.5));
    const eps = t.randnLike(std);
    return mu.add(eps.mul(std));
  }

  decode(z: t.Tensor): t.Tensor {
    const h3 = F.relu(this.fc3.forward(z));
    // clamp to avoid numerical issues with the continuous Bernoulli log normalizing constant
    return t.clamp(t.sigmoid(this.fc4.forward(h3)), 1e-4, 1.0 - 1e-4);
  }

  override forward(x: t.Tensor): [t.Tensor, t.Tensor, t.Tensor] {
    const [mu, logvar] = this.encode(x.view(-1, 784));
    const z = this.reparameterize(mu, logvar);
    return [this.decode(z), mu, logvar];
  }
}

const model = new VAE().to(device);
const optimizer = new t.optim.Adam(model.parameters(), { lr: 1e-3 });

/** Inverse hyperbolic tangent, for the log normalizing constant of the continuous Bernoulli. */
function atanh(x: t.Tensor): t.Tensor {
  const oneMinusX = x.neg().add(1.0); // Python's 1.0 - x: the same number as -x + 1.0
  return t.log(x.add(1.0)).sub(t.log(oneMinusX)).mul(0.5);
}

/**
 * The log normalizing constant of a continuous Bernoulli distribution, computed stably:
 * exactly for lam in (0, lLim) U (uLim, 1), a Taylor approximation in [lLim, uLim].
 */
function contBernLogNorm(lam: t.Tensor, lLim = 0.49, uLim = 0.51): t.Tensor {
  const outside = t.maximum(t.le(lam, lLim), t.gt(lam, uLim));
  const cutLam = t.where(outside, lam, t.onesLike(lam).mul(lLim));
  const twoCut = cutLam.mul(2.0).neg().add(1); // 1 - 2 * cutLam
  const logNorm = t.log(t.abs(atanh(twoCut).mul(2.0))).sub(t.log(t.abs(twoCut)));
  const d = lam.sub(0.5);
  const taylor = t
    .log(t.tensor(2.0))
    .add(t.pow(d, 2).mul(4.0 / 3.0))
    .add(t.pow(d, 4).mul(104.0 / 45.0));
  return t.where(outside, logNorm, taylor);
}

/** Reconstruction + KL divergence losses summed over all elements and batch. */
function lossFunction(reconX: t.Tensor, x: t.Tensor, mu: t.Tensor, logvar: t.Tensor): t.Tensor {
  const BCE = F.binaryCrossEntropy(reconX, x.view(-1, 784), { reduction: 'sum' });
  // Corrects for a binary cross-entropy reconstruction term on data that is not binarized:
  // Loaiza-Ganem and Cunningham, The continuous Bernoulli (NeurIPS 2019).
  const NLNC = t.sum(contBernLogNorm(reconX)).neg(); // negative log normalizing constant
  // Appendix B of Kingma and Welling, Auto-Encoding Variational Bayes (ICLR 2014):
  // 0.5 * sum(1 + log(sigma^2) - mu^2 - sigma^2)
  const KLD = t.sum(logvar.add(1).sub(mu.pow(2)).sub(logvar.exp())).mul(-0.5);
  return BCE.add(NLNC).add(KLD);
}

async function train(epoch: number): Promise<void> {
  model.train();
  let trainLoss = 0;
  let batchIdx = 0;
  for await (using batch of trainLoader) {
    t.tidy(() => {
      const data = batch.image.to(device);
      optimizer.zeroGrad();
      const [reconBatch, mu, logvar] = model.forward(data);
      const loss = lossFunction(reconBatch, data, mu, logvar);
      loss.backward();
      trainLoss += loss.item();
      optimizer.step();
      if (batchIdx % args.logInterval === 0) {
        const n = data.size(0);
        console.log(
          `Train Epoch: ${epoch} [${batchIdx * n}/${trainSet.length} ` +
            `(${((100 * batchIdx) / trainLoader.length).toFixed(0)}%)]\tLoss: ${(loss.item() / n).toFixed(6)}`,
        );
      }
    });
    batchIdx++;
  }
  console.log(`====> Epoch: ${epoch} Average loss: ${(trainLoss / trainSet.length).toFixed(4)}`);
}

async function test(): Promise<void> {
  model.eval();
  let testLoss = 0;
  await t.noGradAsync(async () => {
    for await (using batch of testLoader) {
      t.tidy(() => {
        const data = batch.image.to(device);
        const [reconBatch, mu, logvar] = model.forward(data);
        testLoss += lossFunction(reconBatch, data, mu, logvar).item();
      });
    }
  });
  testLoss /= testSet.length;
  console.log(`====> Test set loss: ${testLoss.toFixed(4)}`);
}

for (let epoch = 1; epoch <= args.epochs; epoch++) {
  await train(epoch);
  await test();
  t.noGrad(() => t.tidy(() => model.decode(t.randn(64, 20).to(device)).cpu())); // the original saves these as a PNG
}
