// tsrun elastic test worker: all-reduces ones each step (the sum must be the world size),
// rank 0 records the step in a shared progress file (the "checkpoint", written whole by
// rename), and a restarted round resumes from it. It reports its step in the launcher's
// heartbeat file, as tsddp's trainer does, so --watchdog sees a hung rank.
//   args: --dir <folder> --steps <n> [--step-ms <ms>] [--hang-rank <r> --hang-at <step>]
import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import * as t from '../../src/index.ts';
import { Heartbeat } from '../../src/launch/heartbeat.ts';

const d = t.distributed;
const { values: args } = parseArgs({
  options: {
    dir: { type: 'string' },
    steps: { type: 'string' },
    'step-ms': { type: 'string', default: '150' },
    'hang-rank': { type: 'string', default: '-1' },
    'hang-at': { type: 'string', default: '-1' },
  },
});
const dir = args.dir as string;
const progress = join(dir, 'progress.json');
const round = Number(process.env.TORCHELASTIC_RESTART_COUNT);
const pg = d.initProcessGroup({ backend: 'gloo', timeoutMs: 15_000 });
const heartbeat = Heartbeat.fromEnv();
const start = existsSync(progress)
  ? (JSON.parse(readFileSync(progress, 'utf8')) as { step: number }).step
  : 0;
console.log(JSON.stringify({ rank: pg.rank, world: pg.size, round, host: hostname(), resumedFrom: start }));

const x = t.zeros([2]).keep();
for (let s = start; s < Number(args.steps); s++) {
  heartbeat?.beat(s, 'step');
  if (pg.rank === Number(args['hang-rank']) && s === Number(args['hang-at']) && round === 0) {
    // Alive but making no progress (a deadlock in user code): only the watchdog sees it.
    for (;;) await new Promise((r) => setTimeout(r, 1000));
  }
  x.fill_(1);
  heartbeat?.beat(s, 'all-reduce', true);
  await d.allReduce(x);
  const sum = x.toTypedArray()[0];
  if (sum !== pg.size) throw new Error(`step ${s}: all-reduce gave ${sum}, world size ${pg.size}`);
  if (pg.rank === 0) {
    writeFileSync(`${progress}.tmp`, JSON.stringify({ step: s + 1, world: pg.size }));
    renameSync(`${progress}.tmp`, progress);
  }
  await new Promise((r) => setTimeout(r, Number(args['step-ms'])));
}
console.log(JSON.stringify({ rank: pg.rank, world: pg.size, round, done: Number(args.steps) }));
heartbeat?.close();
d.destroyProcessGroup();
