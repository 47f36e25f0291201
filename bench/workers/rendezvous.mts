// bench/rendezvous.ts's tsddp worker: join the process group, one barrier, leave.
import * as t from '../../src/index.ts';

t.distributed.initProcessGroup({ backend: 'gloo' });
await t.distributed.barrier();
t.distributed.destroyProcessGroup();
