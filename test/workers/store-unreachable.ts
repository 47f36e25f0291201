// A worker whose rendezvous store never answers: libtorch logs each failed connection
// with its C++ stack (test/launch-faults.test.ts checks that the launcher hides it).
import { Store } from '../../src/distributed/store.ts';

const port = Number(process.argv[2]);
try {
  Store.tcp({ host: '127.0.0.1', port, isServer: false, worldSize: 2, timeoutMs: 1500 });
} catch (e) {
  console.error(`store: ${(e as Error).message}`);
  process.exit(3);
}
