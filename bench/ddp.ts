// DDP training throughput of tsddp and PyTorch (Python), measured alternately in one run
// (architecture §10), with the scenario runner of `tsddp bench` (src/benchmark/):
//
//   node --import tsx bench/ddp.ts [--repeats 3] [--steps 4] [--warmup 2] [--cores N]
//       [--max-world 2] [--sizes 32,64,224] [--bucket-caps 1,5,25,50,100] [--out DIR] [--python PATH]
//
// Scaling (world 1..max-world, cores / world threads per process, plus world 1 at each
// larger world's thread count for the scaling efficiency) on
//   resnet18-cifar 32x32, batch 32 per process
//   resnet50       64x64, batch 8 per process
//   resnet50     224x224, batch 4 per process   (when --sizes has 224)
//   vit_tiny      32x32, batch 32 per process   (when --sizes has vit32; tsddp's vitTiny,
//                                                10 classes)
// and the bucketCapMb sweep on resnet50 64x64 (--sizes 64) and on ViT-B/16 at 64x64,
// batch 8 per process (--sizes vitb64: torchvision's vit_b_16 architecture, 86.4M
// parameters, 1000 classes, 16 patches + class token instead of 196 + 1 at 224 px, so a
// CPU step takes about a second; only the position embeddings shrink) at the largest
// world size, with the communication time per batch and its overlap with backward from
// DDP's Logger on both sides. The ViTs run on the ResNets' workers (src/benchmark/
// session-ts.ts; bench/reference/ddp.py imports transformer_models.py for them); `tsddp
// bench` offers ResNets only. Writes results.md, results.json and PNG charts to --out
// (default runs/bench-ddp) and prints the markdown. Both sides inherit this process's environment: set
// GLIBC_TUNABLES (see bench/train_step.ts) to give both the same allocator settings.
import { availableParallelism } from 'node:os';
import { parseArgs } from 'node:util';
import {
  BenchOptionError,
  findTorchPython,
  type ModelSpec,
  planScenarios,
  runSuite,
  type ScenarioPlan,
  type TorchPython,
} from '../src/benchmark/index.ts';

const { values: opts } = parseArgs({
  options: {
    repeats: { type: 'string', default: '3' },
    steps: { type: 'string', default: '4' },
    warmup: { type: 'string', default: '2' },
    cores: { type: 'string', default: String(availableParallelism()) },
    'max-world': { type: 'string', default: '2' },
    sizes: { type: 'string', default: '32,64,224' },
    'bucket-caps': { type: 'string', default: '1,5,25,50,100' },
    out: { type: 'string', default: 'runs/bench-ddp' },
    python: { type: 'string' },
    help: { type: 'boolean', short: 'h', default: false },
  },
});
if (opts.help) {
  console.log(
    'usage: node --import tsx bench/ddp.ts [--repeats 3] [--steps 4] [--warmup 2] [--cores N] [--max-world 2]\n' +
      '         [--sizes 32,64,224] [--bucket-caps 1,5,25,50,100] [--out DIR] [--python PATH]\n' +
      '  --sizes  which models run: 32 = resnet18-cifar 32x32 b32, 64 = resnet50 64x64 b8 (and the bucket\n' +
      '           sweep), 224 = resnet50 224x224 b4, vit32 = vit_tiny 32x32 b32, vitb64 = vit_b_16 64x64 b8\n' +
      '           (bucket sweep only)',
  );
  process.exit(0);
}

function int(name: string, raw: string, min: number): number {
  const n = Number(raw);
  if (!(Number.isInteger(n) && n >= min))
    throw new BenchOptionError(`--${name} ${raw}: expected an integer >= ${min}`);
  return n;
}

const MODELS: Record<string, ModelSpec> = {
  32: { model: 'resnet18', stem: 'cifar', widthMultiplier: 1, size: 32, batch: 32 },
  64: { model: 'resnet50', stem: 'imagenet', widthMultiplier: 1, size: 64, batch: 8 },
  224: { model: 'resnet50', stem: 'imagenet', widthMultiplier: 1, size: 224, batch: 4 },
  // ViTs have no stem: the 'cifar' setting means 10 classes.
  vit32: { model: 'vit_tiny', stem: 'cifar', widthMultiplier: 1, size: 32, batch: 32 },
  vitb64: { model: 'vit_b_16', stem: 'imagenet', widthMultiplier: 1, size: 64, batch: 8 },
};
const sizes = opts.sizes.split(',').map((s) => s.trim());
for (const s of sizes) {
  if (!MODELS[s]) throw new BenchOptionError(`--sizes: ${s} is not one of ${Object.keys(MODELS).join(', ')}`);
}
const plan = {
  cores: int('cores', opts.cores, 1),
  maxWorld: int('max-world', opts['max-world'], 1),
  bucketCaps: opts['bucket-caps'].split(',').map((s) => Number(s)),
};
if (plan.bucketCaps.some((c) => !(c > 0))) throw new BenchOptionError('--bucket-caps: expected numbers > 0');
const plans: ScenarioPlan[] = [];
for (const s of sizes) if (s !== 'vitb64') plans.push(...planScenarios(MODELS[s], ['scaling'], plan));
for (const s of ['64', 'vitb64'])
  if (sizes.includes(s)) plans.push(...planScenarios(MODELS[s], ['bucket'], plan));

let reference: TorchPython | null = null;
try {
  reference = findTorchPython(opts.python);
} catch (e) {
  console.error(`${(e as Error).message}: tsddp only, no ratios.`);
}
const suite = {
  plans,
  warmup: int('warmup', opts.warmup, 1),
  steps: int('steps', opts.steps, 1),
  repeats: int('repeats', opts.repeats, 1),
  cores: plan.cores,
  reference,
  out: opts.out,
  log: (line: string) => process.stderr.write(`${line}\n`),
};
const r = await runSuite(suite);
console.log(r.markdown);
console.error(`wrote ${r.files.join(', ')}`);
