// One rank of the GLOO_SOCKET_IFNAME test in test/collectives.test.ts: joins the group with
// the environment the test gives and all-reduces its rank + 1, or reports the error.
import * as t from '../../src/index.ts';
import { errorInfo, finish, rank, values, writeResult } from './common.ts';

try {
  t.distributed.initProcessGroup({ backend: 'gloo', timeoutMs: 10_000 });
  const x = t.tensor([rank + 1]);
  await t.distributed.allReduce(x, 'sum');
  writeResult({ sum: values(x) });
  t.distributed.destroyProcessGroup();
} catch (e) {
  writeResult({ error: errorInfo(e) });
}
finish();
