// tsrun test worker (docs/reliability.md R2): a tiny linear model trained with all-reduced
// gradients, checkpointed by rank 0 after every step and resumed from the checkpoint on a
// restart. With `--kill-at k`, rank 1 SIGKILLs itself at step k of attempt 0.
//   args: --dir <folder> --steps <n> [--kill-at <k>]
import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import * as t from '../../src/index.ts';

const d = t.distributed;
const { values: args } = parseArgs({
  options: { dir: { type: 'string' }, steps: { type: 'string' }, 'kill-at': { type: 'string' } },
});
const dir = args.dir!;
const steps = Number(args.steps);
const killAt = args['kill-at'] === undefined ? -1 : Number(args['kill-at']);
const attempt = Number(process.env.TORCHELASTIC_RESTART_COUNT);
const ckpt = join(dir, 'ckpt.json');

const pg = d.initProcessGroup({ backend: 'gloo', timeoutMs: 20_000 });
const rank = pg.rank;

// Resume: every rank reads rank 0's last checkpoint (complete, thanks to the rename).
let start = 0;
let w = t.zeros([4, 1]).keep();
if (existsSync(ckpt)) {
  const c = JSON.parse(readFileSync(ckpt, 'utf8')) as { step: number; w: string };
  w.dispose();
  w = t.fromBytes(Buffer.from(c.w, 'base64'), [4, 1], 'float32').keep();
  start = c.step;
}
console.log(JSON.stringify({ rank, attempt, resumedFrom: start }));

// Each rank's batch for step s: a fixed function of (rank, s).
function batch(s: number): [t.Tensor, t.Tensor] {
  const x = new Float32Array(8 * 4);
  const y = new Float32Array(8);
  for (let i = 0; i < 8; i++) {
    let acc = 0;
    for (let j = 0; j < 4; j++) {
      const v = Math.sin(1.3 * (i + 1) + 0.7 * (j + 1) + 0.31 * s + 2.1 * rank);
      x[i * 4 + j] = v;
      acc += v * (j - 1.5);
    }
    y[i] = acc + 0.1 * Math.cos(i + s);
  }
  return [t.tensor(x, { shape: [8, 4] }), t.tensor(y, { shape: [8, 1] })];
}

for (let s = start; s < steps; s++) {
  if (attempt === 0 && s === killAt && rank === 1) process.kill(process.pid, 'SIGKILL');
  using _ = t.scope();
  const param = w.detach().requiresGrad_();
  const [x, y] = batch(s);
  x.matmul(param).sub(y).pow(2).mean().backward();
  const g = param.grad!;
  await d.allReduce(g, 'sum');
  const next = t.noGrad(() => w.sub(g.div(pg.size).mul(0.1))).keep();
  w.dispose();
  w = next;
  if (rank === 0) {
    const tmp = `${ckpt}.tmp`;
    writeFileSync(tmp, JSON.stringify({ step: s + 1, w: Buffer.from(w.toBytes()).toString('base64') }));
    renameSync(tmp, ckpt);
  }
}

if (rank === 0) {
  writeFileSync(
    join(dir, 'final.json'),
    JSON.stringify({ w: Buffer.from(w.toBytes()).toString('hex'), attempt }),
  );
}
d.destroyProcessGroup();
