// tsrun test worker: reports the environment the launcher gave it, its arguments, and the
// result of an all-reduce over the whole job, as JSON lines on stdout.
import * as t from '../../src/index.ts';

const d = t.distributed;
const KEYS = [
  'RANK',
  'LOCAL_RANK',
  'WORLD_SIZE',
  'LOCAL_WORLD_SIZE',
  'GROUP_RANK',
  'GROUP_WORLD_SIZE',
  'ROLE_RANK',
  'MASTER_ADDR',
  'MASTER_PORT',
  'TORCHELASTIC_RESTART_COUNT',
  'TORCHELASTIC_MAX_RESTARTS',
  'TORCHELASTIC_RUN_ID',
  'TSDDP_USE_AGENT_STORE',
  'OMP_NUM_THREADS',
  'TSDDP_LAUNCHER_PID',
];
const env: Record<string, string | undefined> = {};
for (const k of KEYS) env[k] = process.env[k];

const pg = d.initProcessGroup({ backend: 'gloo', timeoutMs: 20_000 });
const x = t.tensor([pg.rank + 1], { dtype: 'float64' });
await d.allReduce(x);
console.log(JSON.stringify({ env, argv: process.argv.slice(2), ppid: process.ppid, sum: x.item() }));
console.error(`rank ${pg.rank} done`);
d.destroyProcessGroup();
