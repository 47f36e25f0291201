// tsddp side of bench/gpu.ts: ResNet-50 train steps on one CUDA GPU, the same recipe as
// bench/reference/gpu_step.py (channels-last, cudnn.benchmark, SGD momentum 0.9 + weight
// decay, autocast bf16, or fp16 with GradScaler; --ddp nccl|gloo: under DDP, env:// world).
// Prints one JSON line: { imgPerS, stepMs, maxMemoryGb }.
//   node --import tsx bench/gpu-step.ts --amp bf16 --batch 256 --size 224 --warmup 10 --steps 30 [--ddp nccl|gloo]
import { parseArgs } from 'node:util';
import * as t from '../src/index.ts';

const { values: a } = parseArgs({
  options: {
    amp: { type: 'string', default: 'bf16' },
    batch: { type: 'string', default: '256' },
    size: { type: 'string', default: '224' },
    warmup: { type: 'string', default: '10' },
    steps: { type: 'string', default: '30' },
    ddp: { type: 'string' }, // 'nccl' | 'gloo': DDP, world from WORLD_SIZE (default 1)
  },
});
const batch = Number(a.batch);
const size = Number(a.size);
const dtype = a.amp === 'bf16' ? 'bfloat16' : a.amp === 'fp16' ? 'float16' : null;

t.cuda.setDevice(0);
t.backends.cudnn.benchmark = true;
t.manualSeed(0);
const model = t.models.resnet50().to({ device: 'cuda', memoryFormat: 'channelsLast' });
let ddp: t.DistributedDataParallel | null = null;
if (a.ddp !== undefined) {
  // Launched by bench/gpu.ts with RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT (env://).
  t.distributed.initProcessGroup({ backend: a.ddp as 'nccl' | 'gloo' });
  ddp = new t.DistributedDataParallel(model, { deviceIds: [0] });
}
const net = ddp ?? model;
const opt = new t.optim.SGD(model.parameters(), { lr: 0.01, momentum: 0.9, weightDecay: 5e-4 });
const scaler = new t.GradScaler({ device: 'cuda', enabled: a.amp === 'fp16' });
const x = t.randn([batch, 3, size, size], { device: 'cuda' }).contiguous('channelsLast');
const y = t.randint(0, 1000, [batch], { device: 'cuda' });

function step(): void {
  using _ = t.scope();
  opt.zeroGrad();
  const forward = () => t.crossEntropy(net.forward(x) as t.Tensor, y);
  const loss = dtype === null ? forward() : t.autocast({ deviceType: 'cuda', dtype }, forward);
  scaler.scale(loss).backward();
  scaler.step(opt);
  scaler.update();
}

for (let i = 0; i < Number(a.warmup); i++) step();
t.cuda.synchronize();
const stepMs: number[] = [];
for (let i = 0; i < Number(a.steps); i++) {
  const start = new t.cuda.Event({ enableTiming: true });
  const end = new t.cuda.Event({ enableTiming: true });
  start.record();
  step();
  end.record();
  end.synchronize();
  stepMs.push(start.elapsedTime(end));
}
const med = [...stepMs].sort((p, q) => p - q)[Math.floor(stepMs.length / 2)];
console.log(
  JSON.stringify({
    imgPerS: batch / (med / 1000),
    stepMs,
    maxMemoryGb: t.cuda.maxMemoryAllocated() / 2 ** 30,
  }),
);
if (ddp) t.distributed.destroyProcessGroup();
