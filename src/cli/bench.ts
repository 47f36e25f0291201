// `tsddp bench`: the DDP scenario suite on one model — scaling over world sizes, the
// bucketCapMb sweep, AMP, gradient accumulation, comm hooks, channels-last — with, given
// --reference, PyTorch measured alternately in the same run. Writes results.md,
// results.json and PNG charts to --out. On a machine with GPUs both sides run one process
// per GPU over NCCL (src/benchmark/worker.ts, bench/reference/ddp.py).
import type { Command } from 'commander';
import { DEFAULTS, parseBenchOptions, type RawBenchOptions } from '../benchmark/options.ts';
import { debugEnabled } from '../env/index.ts';

export function registerBenchCommand(program: Command): void {
  program
    .command('bench')
    .description(
      'DDP throughput scenarios (optionally side by side with PyTorch): markdown table + PNG charts',
    )
    .option('--model <name>', 'resnet18|34|50|101|152, or e.g. resnet18-cifar', DEFAULTS.model)
    .option('--stem <stem>', 'imagenet (1000 classes) or cifar (10 classes, 3x3 stem)')
    .option('--width-multiplier <x>', 'scales the ResNet width (e.g. 0.25)', '1')
    .option('--image-size <n>', 'square synthetic images', DEFAULTS.imageSize)
    .option('--batch-size <n>', 'images per process per micro-batch', DEFAULTS.batchSize)
    .option('--scenarios <list>', 'some of scaling,bucket,amp,accum,hooks,channels-last (default all)')
    .option(
      '--max-world <n>',
      `largest world size; scaling runs 1..n, the others at n (default: one process per GPU, else ${DEFAULTS.maxWorld})`,
    )
    .option('--cores <n>', 'cores shared by the processes: threads = cores / world (default: all)')
    .option('--bucket-caps <list>', 'bucketCapMb values of the bucket scenario', DEFAULTS.bucketCaps)
    .option(
      '--warmup <n>',
      'untimed steps per case and round (>= 1: the first rebuilds the buckets)',
      DEFAULTS.warmup,
    )
    .option('--steps <n>', 'timed steps per case and round', DEFAULTS.steps)
    .option('--repeats <n>', 'rounds; each measures every case once (tsddp, then PyTorch)', DEFAULTS.repeats)
    .option('--reference', 'also run PyTorch (bench/reference/ddp.py) and report ratios')
    .option('--python <path>', 'the Python with torch for --reference (default .venv/bin/python, python3)')
    .option('--out <dir>', 'where results.md, results.json and the charts go', DEFAULTS.out)
    .action(async (raw: RawBenchOptions) => {
      process.exitCode = await benchCommand(raw);
    });
}

export async function benchCommand(raw: RawBenchOptions): Promise<number> {
  const [{ BenchOptionError, findTorchPython, planScenarios, runSuite }, { cuda }] = await Promise.all([
    import('../benchmark/index.ts'),
    import('../core/runtime.ts'),
  ]);
  let reference = null;
  let o: ReturnType<typeof parseBenchOptions>;
  try {
    o = parseBenchOptions(raw, cuda.isAvailable() ? cuda.deviceCount() : 0);
    if (o.reference) reference = findTorchPython(o.python);
  } catch (e) {
    if (!(e instanceof BenchOptionError)) throw e;
    process.stderr.write(`tsddp bench: error: ${e.message}\n`);
    return 2;
  }
  const plans = planScenarios(o.model, o.scenarios, o);
  const log = (line: string) => process.stderr.write(`${line}\n`);
  log(
    `tsddp bench: ${o.scenarios.join(', ')} on ${o.model.model}, ${o.cores} cores${reference ? `, PyTorch ${reference.torchVersion}` : ''}`,
  );
  try {
    const r = await runSuite({ ...o, plans, reference, log });
    process.stdout.write(`${r.markdown}\n\nwrote ${r.files.join(', ')}\n`);
    return 0;
  } catch (e) {
    const err = e as Error;
    process.stderr.write(`tsddp bench: ${err.name}: ${err.message}\n`);
    if (debugEnabled()) process.stderr.write(`${err.stack}\n`);
    return 1;
  }
}
