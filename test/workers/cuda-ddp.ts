// A rank of test/cuda/ddp.test.ts: a small conv net on CUDA under DDP, SGD with momentum,
// each rank on its half of a fixed batch; reports the final parameters. The reference
// (fullBatchReference) runs the same steps on the whole batch without DDP.
import * as t from '../../src/index.ts';
import { rank, workerConfig, worldSize, writeResult } from './common.ts';

export interface CudaDdpConfig {
  backend: 'gloo' | 'nccl';
  steps: number;
  worldSize: number;
}
export interface CudaDdpResult {
  params: number[];
  stats: { backwardCommMs: number };
}

const BATCH = 8;

function build(): t.nn.Module {
  t.manualSeed(7);
  const net = new t.nn.Sequential(
    new t.nn.Conv2d(3, 8, 3, { padding: 1 }),
    new t.nn.ReLU(),
    new t.nn.AdaptiveAvgPool2d(1),
    new t.nn.Flatten(),
    new t.nn.Linear(8, 4),
  );
  return net.cuda();
}

function batch(step: number): { x: t.Tensor; y: t.Tensor } {
  const g = new t.Generator().manualSeed(100 + step);
  const x = t.randn([BATCH, 3, 16, 16], { generator: g });
  const y = t.randint(0, 4, [BATCH], { generator: g });
  return { x: x.cuda(), y: y.cuda() };
}

const flat = (m: t.nn.Module) =>
  m.parameters().flatMap((p) => Array.from(p.detach().cpu().toTypedArray() as Float32Array));

/** The same steps on the whole batch in one process, without DDP. */
export function fullBatchReference(cfg: CudaDdpConfig): number[] {
  const model = build();
  const opt = new t.optim.SGD(model.parameters(), { lr: 0.1, momentum: 0.9 });
  for (let s = 0; s < cfg.steps; s++) {
    const { x, y } = batch(s);
    opt.zeroGrad();
    t.crossEntropy(model.forward(x), y).backward();
    opt.step();
  }
  return flat(model);
}

/** This rank's DDP steps on its share of each batch; the process group is already up. */
export function trainRank(cfg: CudaDdpConfig, r: number): CudaDdpResult {
  const model = build();
  const ddp = new t.DistributedDataParallel(model, { deviceIds: [0] });
  const opt = new t.optim.SGD(model.parameters(), { lr: 0.1, momentum: 0.9 });
  const per = BATCH / cfg.worldSize;
  for (let s = 0; s < cfg.steps; s++) {
    const { x, y } = batch(s);
    opt.zeroGrad();
    const lo = r * per;
    t.crossEntropy(ddp.forward(x.narrow(0, lo, per)), y.narrow(0, lo, per)).backward();
    opt.step();
  }
  t.cuda.synchronize();
  return { params: flat(model), stats: { backwardCommMs: ddp.stats().backwardCommMs } };
}

if (process.env.RANK !== undefined && import.meta.url === `file://${process.argv[1]}`) {
  const cfg = workerConfig<CudaDdpConfig>();
  // One GPU per rank with NCCL; with Gloo both ranks may share GPU 0.
  t.cuda.setDevice(cfg.backend === 'nccl' ? rank : 0);
  t.distributed.initProcessGroup({ backend: cfg.backend, timeoutMs: 60_000 });
  writeResult(trainRank({ ...cfg, worldSize }, rank));
  t.distributed.destroyProcessGroup();
}
