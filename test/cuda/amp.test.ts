// Autocast (fp16, bf16) and GradScaler on CUDA, and a ResNet's train step on the GPU
// against the same step on the CPU (run by scripts/gpu-check.sh).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as t from '../../src/index.ts';

for (const dtype of ['float16', 'bfloat16'] as const) {
  test(`autocast ${dtype} on CUDA: matmul in ${dtype}, sum kept in float32`, () => {
    const x = t.randn([32, 64], { device: 'cuda' });
    const w = t.randn([64, 16], { device: 'cuda' });
    const [y, s] = t.autocast({ deviceType: 'cuda', dtype }, () => {
      const y = t.matmul(x, w);
      return [y, y.float().sum()] as const;
    });
    assert.equal(y.dtype, dtype);
    assert.equal(s.dtype, 'float32');
  });
}

test('GradScaler on CUDA: scales, unscales, skips a step with inf gradients', () => {
  t.manualSeed(0);
  const model = new t.nn.Linear(8, 4).cuda();
  const opt = new t.optim.SGD(model.parameters(), { lr: 0.1 });
  const scaler = new t.GradScaler({ device: 'cuda', initScale: 1024 });
  const x = t.randn([16, 8], { device: 'cuda' });
  const loss = t.autocast({ deviceType: 'cuda', dtype: 'float16' }, () =>
    model.forward(x).float().pow(2).mean(),
  );
  const before = model.weight.cpu().toTypedArray() as Float32Array;
  scaler.scale(loss).backward();
  assert.notEqual(scaler.step(opt), null);
  scaler.update();
  assert.notDeepEqual(
    model.weight.cpu().toTypedArray() as Float32Array,
    before,
    'a finite step updates the weights',
  );
  assert.equal(scaler.getScale(), 1024);
  opt.zeroGrad();
  const weights = model.weight.cpu().toTypedArray() as Float32Array;
  const bad = model.forward(x).sum().mul(Number.POSITIVE_INFINITY);
  scaler.scale(bad).backward();
  assert.equal(scaler.step(opt), undefined, 'an inf gradient skips the step');
  scaler.update();
  assert.deepEqual(model.weight.cpu().toTypedArray() as Float32Array, weights);
  assert.equal(scaler.getScale(), 512, 'and halves the scale');
});

test('resnet18 train step on CUDA matches the CPU (fp32, channels-last)', () => {
  t.manualSeed(0);
  const cpu = t.models.resnet18({ numClasses: 10 });
  const gpu = t.models.resnet18({ numClasses: 10 });
  gpu.loadStateDict(cpu.stateDict());
  gpu.to({ device: 'cuda', memoryFormat: 'channelsLast' });
  const x = t.randn([4, 3, 64, 64]);
  const y = t.tensor([1, 2, 3, 4], { dtype: 'int64' });
  const lossCpu = t.crossEntropy(cpu.forward(x), y);
  lossCpu.backward();
  const xg = x.to({ device: 'cuda', memoryFormat: 'channelsLast' });
  const lossGpu = t.crossEntropy(gpu.forward(xg), y.cuda());
  lossGpu.backward();
  assert.ok(Math.abs(lossGpu.item() - lossCpu.item()) < 1e-3, `${lossGpu.item()} vs ${lossCpu.item()}`);
  const gc = cpu.fc.weight.grad!.toTypedArray() as Float32Array;
  const gg = gpu.fc.weight.grad!.cpu().toTypedArray() as Float32Array;
  let worst = 0;
  for (let i = 0; i < gc.length; i++) worst = Math.max(worst, Math.abs(gc[i] - gg[i]));
  assert.ok(worst < 1e-3, `fc.weight grad differs by ${worst}`);
});
