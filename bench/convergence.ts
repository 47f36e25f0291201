// Accuracy under gradient compression: the same `tsddp train` run (2 ranks, same seed and
// data) once per comm hook, reporting each epoch's validation loss and top-1 and the final
// accuracy against plain all-reduce's. The link does not change the numbers, only the time,
// so this runs on loopback; bench/network.ts times the hooks on capped links.
//
//   node --import tsx bench/convergence.ts [--hooks none,fp16,bf16,powerSGD1,powerSGD2,powerSGD4]
//       [--epochs 10] [--powersgd-start-iter 30] [--out runs/bench-convergence] [-- extra train flags]
//
// Defaults: ResNet-18 (CIFAR stem, width 0.5) on Shapes 32x32, 3,000 training and 1,000
// validation images, batch 32 per rank, the recipe's SGD (lr 0.1 per 256 images, scaled
// to the global batch of 64: 0.025) and schedule.
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { ensureSafeDir, writeFileAtomicSync } from '../src/files/index.ts';
import { describeMachine, machineInfo } from '../src/host/machine.ts';

const { values: o, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    hooks: { type: 'string', default: 'none,fp16,bf16,powerSGD1,powerSGD2,powerSGD4' },
    epochs: { type: 'string', default: '10' },
    'powersgd-start-iter': { type: 'string', default: '30' },
    out: { type: 'string', default: 'runs/bench-convergence' },
  },
});
const out = resolve(o.out);
ensureSafeDir(out, 'the benchmark folder');
const TRAIN = [
  ...['--model', 'resnet18', '--width-multiplier', '0.5', '--dataset', 'shapes', '--image-size', '32'],
  ...['--train-size', '3000', '--val-size', '1000', '--batch-size', '32', '--workers', '0'],
  ...['--epochs', o.epochs, '--log-every', '1000'],
];

interface Curve {
  hook: string;
  seconds: number;
  evals: { epoch: number; loss: number; top1: number }[];
}

const curves: Curve[] = [];
for (const hook of o.hooks.split(',')) {
  const p = /^powerSGD(\d+)$/.exec(hook);
  const flags = p
    ? ['--comm-hook', 'powerSGD', '--powersgd-rank', p[1], '--powersgd-start-iter', o['powersgd-start-iter']]
    : ['--comm-hook', hook];
  const metrics = join(out, `${hook}.jsonl`);
  const args = ['bin/tsddp.mjs', 'train', '--nproc-per-node', '2', '--master-port', '0', ...TRAIN, ...flags];
  const t0 = performance.now();
  // --overwrite: a rerun into the same folder replaces this script's own metrics files.
  const r = spawnSync(process.execPath, [...args, '--metrics-file', metrics, '--overwrite', ...positionals], {
    encoding: 'utf8',
    env: { ...process.env, OMP_NUM_THREADS: '1' },
  });
  if (r.status !== 0) throw new Error(`${hook}: tsddp train failed (${r.status}):\n${r.stderr.slice(-3000)}`);
  const seconds = (performance.now() - t0) / 1000;
  const evals = readFileSync(metrics, 'utf8')
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as { type: string; rank: number; epoch: number; loss: number; top1: number })
    .filter((x) => x.type === 'eval' && x.rank === 0)
    .map(({ epoch, loss, top1 }) => ({ epoch, loss, top1: 100 * top1 }));
  if (evals.length === 0) throw new Error(`${hook}: ${metrics} holds no evaluation`);
  curves.push({ hook, seconds, evals });
  const last = evals[evals.length - 1];
  process.stderr.write(
    `${hook}: top-1 ${last?.top1.toFixed(2)}% loss ${last?.loss.toFixed(4)} (${seconds.toFixed(0)} s)\n`,
  );
}

const plain = curves.find((c) => c.hook === 'none');
const final = (c: Curve) => c.evals[c.evals.length - 1];
const lines = [
  `Machine: ${describeMachine(machineInfo())}. \`tsddp train --nproc-per-node 2 ${TRAIN.join(' ')}\`; PowerSGD from step ${o['powersgd-start-iter']}.`,
  '',
  '| comm hook | final top-1 | vs plain | final val loss | val loss by epoch | val top-1 % by epoch |',
  '| --- | ---: | ---: | ---: | --- | --- |',
  ...curves.map((c) => {
    const f = final(c);
    const d = plain ? f.top1 - final(plain).top1 : Number.NaN;
    return (
      `| ${c.hook} | ${f.top1.toFixed(2)}% | ${d >= 0 ? '+' : ''}${d.toFixed(2)} | ${f.loss.toFixed(4)} | ` +
      `${c.evals.map((e) => e.loss.toFixed(3)).join(' / ')} | ${c.evals.map((e) => e.top1.toFixed(1)).join(' / ')} |`
    );
  }),
];
const markdown = lines.join('\n');
writeFileAtomicSync(join(out, 'convergence.md'), `${markdown}\n`);
writeFileAtomicSync(join(out, 'convergence.json'), `${JSON.stringify(curves, null, 2)}\n`);
console.log(markdown);
