// tsddp vs PyTorch eager on one CUDA GPU (run by scripts/gpu-check.sh; docs/gpu-check.md):
//  1. ResNet-50 224x224 train step, batch 256, channels-last, AMP bf16 and fp16
//     (bench/gpu-step.ts and bench/reference/gpu_step.py: the same recipe);
//  2. NCCL DDP at world 1 against no DDP (bf16), both libraries;
//  3. 2 processes on the one GPU under Gloo DDP (CUDA tensors), batch 64 each, both libraries.
// Each measurement is a fresh process; the sides alternate (tsddp, PyTorch, tsddp, ...),
// --rounds times for 1. A step is timed with CUDA events; img/s = batch / median step.
//   node --import tsx bench/gpu.ts [--rounds 2] [--steps 30] [--out DIR] [--python python3]
import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { freePort, spawnRanks } from '../src/host/gang.ts';

const { values: a } = parseArgs({
  options: {
    rounds: { type: 'string', default: '2' },
    steps: { type: 'string', default: '30' },
    out: { type: 'string', default: process.env.OUT ?? 'runs/gpu-bench' },
    python: { type: 'string', default: 'python3' },
  },
});
const ROOT = new URL('..', import.meta.url).pathname;
type Side = 'tsddp' | 'pytorch';
interface Result {
  imgPerS: number;
  stepMs: number[];
  maxMemoryGb: number;
  torch?: string;
  gpu?: string;
}
interface Row {
  case: string;
  side: Side;
  round: number;
  imgPerS: number;
  medianStepMs: number;
  maxMemoryGb: number;
}

const command = (side: Side, args: string[]): [string, string[]] =>
  side === 'tsddp'
    ? [process.execPath, ['--import', 'tsx', join(ROOT, 'bench', 'gpu-step.ts'), ...args]]
    : [a.python, [join(ROOT, 'bench', 'reference', 'gpu_step.py'), ...args]];

const lastJson = (out: string): Result =>
  JSON.parse(
    out
      .trim()
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .pop()!,
  );

/** One measurement: `world` processes of one side (env:// on loopback); rank 0's result. */
async function measure(side: Side, args: string[], world = 1): Promise<Result> {
  const [cmd, argv] = command(side, args);
  if (world === 1 && !args.includes('--ddp')) {
    const r = spawnSync(cmd, argv, { cwd: ROOT, encoding: 'utf8', timeout: 300_000 });
    if (r.status !== 0) throw new Error(`${side} ${args.join(' ')} failed:\n${r.stderr}`);
    return lastJson(r.stdout);
  }
  const port = await freePort();
  const procs = spawnRanks({ command: cmd, args: argv, world, port, env: process.env, cwd: ROOT });
  const outs = await Promise.all(
    procs.map(
      (p) =>
        new Promise<string>((resolve, reject) => {
          let out = '';
          let err = '';
          p.stdout.on('data', (d) => (out += d));
          p.stderr.on('data', (d) => (err += d));
          p.on('exit', (code) =>
            code === 0 ? resolve(out) : reject(new Error(`${side} ${args.join(' ')}: ${err}`)),
          );
        }),
    ),
  );
  return lastJson(outs[0]);
}

const median = (xs: number[]) => [...xs].sort((p, q) => p - q)[Math.floor(xs.length / 2)];
const rows: Row[] = [];
let env: { torch?: string; gpu?: string } = {};

async function run(name: string, args: string[], round: number, world = 1) {
  for (const side of ['tsddp', 'pytorch'] as const) {
    const r = await measure(side, args, world);
    if (side === 'pytorch') env = { torch: r.torch, gpu: r.gpu };
    const row = {
      case: name,
      side,
      round,
      imgPerS: r.imgPerS * world,
      medianStepMs: median(r.stepMs),
      maxMemoryGb: r.maxMemoryGb,
    };
    rows.push(row);
    console.log(
      `${name} ${side} round ${round}: ${row.imgPerS.toFixed(0)} img/s (${row.medianStepMs.toFixed(1)} ms/step)`,
    );
  }
}

const steps = ['--steps', a.steps, '--warmup', '10'];
for (let round = 1; round <= Number(a.rounds); round++)
  for (const amp of ['bf16', 'fp16'])
    await run(`resnet50 224 b256 ${amp} cl`, ['--amp', amp, '--batch', '256', ...steps], round);
await run(
  'resnet50 224 b256 bf16 cl, DDP nccl world 1',
  ['--amp', 'bf16', '--batch', '256', '--ddp', 'nccl', ...steps],
  1,
);
await run(
  'resnet50 224 b64 bf16 cl, DDP gloo 2 procs on 1 GPU',
  ['--amp', 'bf16', '--batch', '64', '--ddp', 'gloo', '--steps', '15', '--warmup', '5'],
  1,
  2,
);

// Summary: per case, the median img/s of each side and the ratio.
const cases = [...new Set(rows.map((r) => r.case))];
const lines = [
  `GPU: ${env.gpu ?? '?'}; PyTorch ${env.torch ?? '?'}; img/s = batch x processes / median step (CUDA events)`,
  '',
  '| case | tsddp img/s | PyTorch img/s | tsddp / PyTorch | tsddp max GiB | PyTorch max GiB |',
  '|---|---|---|---|---|---|',
];
const summary = cases.map((c) => {
  const side = (s: Side) => rows.filter((r) => r.case === c && r.side === s);
  const ts = median(side('tsddp').map((r) => r.imgPerS));
  const py = median(side('pytorch').map((r) => r.imgPerS));
  lines.push(
    `| ${c} | ${ts.toFixed(0)} | ${py.toFixed(0)} | ${(ts / py).toFixed(3)}x | ${side('tsddp')[0].maxMemoryGb.toFixed(1)} | ${side('pytorch')[0].maxMemoryGb.toFixed(1)} |`,
  );
  return { case: c, tsddpImgPerS: ts, pytorchImgPerS: py, ratio: ts / py };
});
const noDdp = summary.find((s) => s.case === 'resnet50 224 b256 bf16 cl');
const ddp = summary.find((s) => s.case.includes('nccl world 1'));
if (noDdp && ddp)
  lines.push(
    '',
    `tsddp NCCL DDP world 1 vs no DDP (bf16): ${((ddp.tsddpImgPerS / noDdp.tsddpImgPerS) * 100).toFixed(1)}%; PyTorch: ${((ddp.pytorchImgPerS / noDdp.pytorchImgPerS) * 100).toFixed(1)}%`,
  );
console.log(`\n${lines.join('\n')}`);
mkdirSync(a.out, { recursive: true });
writeFileSync(join(a.out, 'gpu-bench.json'), `${JSON.stringify({ env, rows, summary }, null, 2)}\n`);
writeFileSync(join(a.out, 'gpu-bench.md'), `${lines.join('\n')}\n`);
