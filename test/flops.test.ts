// The FLOP counts and the CPU peak behind `tsddp bench`'s achieved FLOP/s (src/benchmark/flops.ts).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { cpuPeakFlops, forwardMacs, trainFlopsPerImage } from '../src/benchmark/flops.ts';
import * as t from '../src/index.ts';

const { nn } = t;

test('forwardMacs counts each convolution and linear layer from its output size', () => {
  const model = new nn.Sequential(
    new nn.Conv2d(3, 4, 3, { padding: 1 }),
    new nn.ReLU(),
    new nn.Conv2d(4, 8, 3, { padding: 1, stride: 2, groups: 2 }),
    new nn.Flatten(),
    new nn.Linear(8 * 4 * 4, 10),
  );
  // 4x8x8 outputs x 3x3x3 inputs; 8x4x4 outputs x (4/2)x3x3; 10 outputs x 128 inputs, per image.
  const expected = 4 * 64 * 27 + 8 * 16 * 18 + 10 * 128;
  assert.equal(
    t.tidy(() => forwardMacs(model, t.zeros([2, 3, 8, 8]))),
    2 * expected,
  );
  // The layers' own forwards are back in place.
  assert.equal(Object.hasOwn(model.modules()[1], 'forward'), false);
});

test("ResNet-50 at 224x224: 4.09 G multiply-accumulates a forward (torchvision's figure), 6x that in FLOPs a training step", () => {
  const flops = trainFlopsPerImage({
    model: 'resnet50',
    stem: 'imagenet',
    widthMultiplier: 1,
    size: 224,
    batch: 1,
  });
  assert.ok(flops !== null);
  const macs = flops / 6;
  assert.ok(macs > 4.08e9 && macs < 4.1e9, `${macs}`);
});

test('cpuPeakFlops: clock x lanes x 2 x FMA units, from /proc/cpuinfo', () => {
  const info = (vendor: string, family: number, flags: string) =>
    `vendor_id\t: ${vendor}\ncpu family\t: ${family}\ncpu MHz\t\t: 2000.000\nflags\t\t: ${flags}\n`;
  assert.equal(
    cpuPeakFlops(info('AuthenticAMD', 26, 'fpu fma avx avx2 avx512f'), null)?.perCore,
    2e9 * 16 * 2 * 2,
  );
  // Zen 4 runs AVX-512 on 256-bit units.
  assert.equal(
    cpuPeakFlops(info('AuthenticAMD', 25, 'fpu fma avx avx2 avx512f'), null)?.perCore,
    2e9 * 8 * 2 * 2,
  );
  assert.equal(cpuPeakFlops(info('GenuineIntel', 6, 'fpu fma avx avx2'), null)?.perCore, 2e9 * 8 * 2 * 2);
  assert.match(
    cpuPeakFlops(info('GenuineIntel', 6, 'fpu fma avx avx2 avx512f'), null)?.basis ?? '',
    /2\.00 GHz \(the clock \/proc\/cpuinfo reports.*\) x 16 fp32 lanes \(AVX-512\) x 2 \(FMA\) x 2 FMA unit\(s\) = 128 GFLOP\/s per core/,
  );
  // cpufreq's maximum clock, where the kernel has it, wins over the reported one.
  assert.equal(cpuPeakFlops(info('GenuineIntel', 6, 'fma avx2'), 3_500_000)?.perCore, 3.5e9 * 8 * 2 * 2);
  assert.equal(cpuPeakFlops('no clock here', null), null);
});
