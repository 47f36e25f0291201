// A small single-process training run on libtorch through tsddp: a two-layer conv net
// learns a synthetic 4-class image task (which quadrant of the image is bright).
// Interim demo for `npm run demo`; the DDP ResNet demo replaces it.
import * as t from '../src/index.ts';

const CLASSES = 4;
const SIZE = 16;
const BATCH = 32;
const STEPS = 150;
const LR = 0.05;
const MOMENTUM = 0.9;

t.manualSeed(0);

/** A batch of images whose label is the bright quadrant, plus Gaussian noise. */
function makeBatch(n: number): { x: t.Tensor; y: t.Tensor } {
  const labels = t.randint(CLASSES, [n]);
  const x = t.randn([n, 3, SIZE, SIZE]).mul(0.5);
  const ys = labels.toTypedArray() as BigInt64Array;
  const half = SIZE / 2;
  for (let i = 0; i < n; i++) {
    const q = Number(ys[i]);
    const row = Math.floor(q / 2) * half;
    const col = (q % 2) * half;
    x.select(0, i).narrow(1, row, half).narrow(2, col, half).add_(1.0);
  }
  return { x, y: labels };
}

function kaiming(shape: number[], fanIn: number): t.Tensor {
  return t.randn(shape).mul(Math.sqrt(2 / fanIn)).requiresGrad_().keep();
}

const params = {
  conv1: kaiming([8, 3, 3, 3], 3 * 9),
  conv2: kaiming([16, 8, 3, 3], 8 * 9),
  fc: kaiming([CLASSES, 16], 16),
  fcBias: t.zeros([CLASSES], { requiresGrad: true }).keep(),
};
const velocity = Object.values(params).map((p) => t.zerosLike(p).keep());

function forward(x: t.Tensor): t.Tensor {
  let h = t.conv2d(x, params.conv1, null, 1, 1).relu();
  h = t.maxPool2d(h, [2, 2]);
  h = t.conv2d(h, params.conv2, null, 1, 1).relu();
  h = t.adaptiveAvgPool2d(h, [1, 1]).flatten(1);
  return t.linear(h, params.fc, params.fcBias);
}

const start = performance.now();
for (let step = 1; step <= STEPS; step++) {
  using _ = t.scope();
  const { x, y } = makeBatch(BATCH);
  const logits = forward(x);
  const loss = t.crossEntropy(logits, y);
  loss.backward();
  t.noGrad(() => {
    Object.values(params).forEach((p, i) => {
      const g = p.grad!;
      velocity[i].mul_(MOMENTUM).add_(g); // SGD with momentum, as torch.optim.SGD
      p.sub_(velocity[i].mul(LR));
      p.grad = null;
    });
  });
  if (step % 25 === 0 || step === 1) {
    const acc = logits.argmax(1).eq(y).float().mean().item();
    const secs = (performance.now() - start) / 1000;
    console.log(
      `step ${String(step).padStart(3)}  loss ${loss.item().toFixed(4)}  batch accuracy ${(acc * 100).toFixed(1)}%  ${((step * BATCH) / secs).toFixed(0)} img/s`,
    );
  }
}

const evalAcc = t.tidy(() =>
  t.noGrad(() => {
    const { x, y } = makeBatch(512);
    return forward(x).argmax(1).eq(y).float().mean().item();
  }),
);
console.log(`held-out accuracy on 512 new images: ${(evalAcc * 100).toFixed(1)}% (chance: ${100 / CLASSES}%)`);
console.log(`live tensors at the end: ${t.memory().tensors}`);
