// tsrun's rendezvous (docs/reliability.md R6, R7, R12): a busy port is a clear error naming address and
// port; standalone jobs pick free ports and do not collide; a node that never comes fails
// the job after the join timeout; garbage sent to the store port does not break the job.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { connect, createServer, type Server } from 'node:net';
import { afterEach, test } from 'node:test';
import { freePort, jsonLines, Launcher, waitGone, worker } from './workers/launch-harness.ts';

const launched: Launcher[] = [];
afterEach(() => {
  for (const l of launched.splice(0)) l.kill();
});

function start(args: string[]): Launcher {
  const l = new Launcher(args);
  launched.push(l);
  return l;
}

const script = worker('launch-env.ts');

test('a busy --master-port is a clear error naming address and port (docs/reliability.md R6)', async () => {
  const busy: Server = createServer();
  await new Promise<void>((r) => busy.listen(0, '127.0.0.1', () => r()));
  const port = (busy.address() as { port: number }).port;
  try {
    const l = start(['--nproc-per-node', '2', '--master-port', String(port), script]);
    const exit = await l.exit(20_000);
    assert.equal(exit.code, 1);
    assert.match(
      l.stderr,
      new RegExp(
        `tsrun: error: cannot serve the rendezvous store on 127\\.0\\.0\\.1:${port}: port ${port} is already in use .*--standalone / --master-port 0`,
      ),
    );
    assert.doesNotMatch(l.stdout, /\[rank/);
    assert.deepEqual(await waitGone(l.marker, 2000), []);
  } finally {
    busy.close();
  }
});

test('two standalone jobs on one host pick different free ports and both succeed (docs/reliability.md R6)', async () => {
  const a = start(['--standalone', script]);
  const b = start(['--master-port', '0', script]);
  const [ea, eb] = await Promise.all([a.exit(60_000), b.exit(60_000)]);
  assert.equal(ea.code, 0, a.output);
  assert.equal(eb.code, 0, b.output);
  const [pa, pb] = await Promise.all([a.port(), b.port()]);
  assert.notEqual(pa, pb);
  for (const [l, port] of [
    [a, pa],
    [b, pb],
  ] as const) {
    const [r] = jsonLines<{ env: Record<string, string>; sum: number }>(l.stdout);
    assert.equal(r.env.MASTER_PORT, String(port));
    assert.equal(r.sum, 1);
  }
});

test('a rendezvous that never completes fails after --rdzv-timeout with a clear message (docs/reliability.md R7)', async () => {
  const [p0, p1] = [String(await freePort()), String(await freePort())];
  // Node 0 alone (node 1 never comes), and node 1 alone (no node 0 to serve the store).
  const only0 = start([
    '--nnodes',
    '2',
    '--node-rank',
    '0',
    '--master-port',
    p0,
    '--rdzv-timeout',
    '2',
    script,
  ]);
  const only1 = start([
    '--nnodes',
    '2',
    '--node-rank',
    '1',
    '--master-port',
    p1,
    '--rdzv-timeout',
    '2',
    script,
  ]);
  const [e0, e1] = await Promise.all([only0.exit(30_000), only1.exit(30_000)]);
  assert.equal(e0.code, 1, only0.output);
  assert.match(
    only0.stderr,
    new RegExp(
      `tsrun: error: rendezvous timed out: 1/2 nodes joined within 2s \\(run id 'none', store 127\\.0\\.0\\.1:${p0}, attempt 0\\)`,
    ),
  );
  assert.equal(e1.code, 1, only1.output);
  assert.match(
    only1.stderr,
    new RegExp(`tsrun: error: could not reach the rendezvous store at 127\\.0\\.0\\.1:${p1} within 2s`),
  );
  for (const e of [e0, e1]) assert.ok(e.ms < 15_000, `took ${e.ms} ms`);
  // No worker was started.
  assert.doesNotMatch(only0.stdout + only1.stdout, /\[rank/);
});

test('an unreachable --master-addr on node rank 1 prints no C++ stack frames: a RendezvousError naming the address', async () => {
  // The launcher's own store client runs in its process, whose stderr no sink filters:
  // libtorch logged each failed try with 16 `frame #` lines.
  const closed = String(await freePort());
  const args = ['--nnodes', '2', '--node-rank', '1', '--master-addr', '127.0.0.1', '--master-port', closed];
  const hidden = start([...args, '--rdzv-timeout', '2', script]);
  assert.equal((await hidden.exit(30_000)).code, 1, hidden.output);
  assert.match(
    hidden.stderr,
    new RegExp(
      `tsrun: error: could not reach the rendezvous store at 127\\.0\\.0\\.1:${closed} within 2s .*: connection refused`,
    ),
  );
  assert.doesNotMatch(hidden.stderr, /frame #\d+:|Exception raised from/);
  // TORCH_SHOW_CPP_STACKTRACES=1 lets libtorch's client try, and shows its stack.
  const shown = new Launcher([...args, '--rdzv-timeout', '1', script], {
    env: { TORCH_SHOW_CPP_STACKTRACES: '1' },
  });
  launched.push(shown);
  assert.equal((await shown.exit(30_000)).code, 1, shown.output);
  assert.match(shown.stderr, /frame #0: /);
  assert.match(shown.stderr, /tsrun: error: could not reach the rendezvous store/);
});

test('two launchers with the same --node-rank: the second is told so', async () => {
  const port = String(await freePort());
  // 8 s: the two late launchers must start (node + tsx) and join before node 0 gives up,
  // also on a loaded machine (3 s failed once beside a training run).
  const common = ['--nnodes', '3', '--master-port', port, '--rdzv-timeout', '8'];
  const node0 = start([...common, '--node-rank', '0', script]);
  await node0.port();
  const dupes = [
    start([...common, '--node-rank', '1', script]),
    start([...common, '--node-rank', '1', script]),
  ];
  const exits = await Promise.all([node0, ...dupes].map((l) => l.exit(30_000)));
  for (const e of exits) assert.equal(e.code, 1);
  const told = dupes.filter((l) =>
    /error: node rank 1 joined attempt 0 twice: two launchers were started with --node-rank 1/.test(l.stderr),
  );
  assert.equal(told.length, 1, dupes.map((l) => l.stderr).join('\n---\n'));
  assert.match(node0.stderr, /rendezvous timed out: 2\/3 nodes joined/);
});

/** Sends `data` on a fresh connection and closes it (errors are expected and ignored). */
function blast(port: number, data: Buffer): Promise<void> {
  return new Promise((resolve) => {
    const s = connect(port, '127.0.0.1', () => s.end(data));
    s.on('error', () => resolve());
    s.on('close', () => resolve());
    s.setTimeout(2000, () => s.destroy());
  });
}

test('garbage and oversized frames sent to the store port leave the job working (docs/reliability.md R12)', async () => {
  const l = start(['--nproc-per-node', '2', '--standalone', script]);
  const port = await l.port();
  let running = true;
  let sent = 0;
  const attacker = (async () => {
    // An oversized frame (a SET whose key length field reads 0x0101010101010101, with 16 MiB
    // behind it), then small hostile frames until the job ends: every command byte with a
    // huge length field, and random bytes.
    await blast(port, Buffer.alloc(16 << 20, 1));
    for (let i = 0; running; i++) {
      let frame: Buffer;
      if (i % 2 === 0) {
        frame = Buffer.alloc(17, 0x41);
        frame.writeBigUInt64LE(1n << BigInt(20 + (i % 44)), 1);
      } else frame = randomBytes(1 + (i % 7) * 300);
      frame[0] = (i >> 1) % 32;
      await blast(port, frame);
      sent++;
      await new Promise((r) => setTimeout(r, 10));
    }
  })();
  const exit = await l.exit(60_000);
  running = false;
  await attacker;
  assert.ok(sent > 5, `only ${sent} frames were sent`);
  assert.equal(exit.code, 0, l.output);
  const sums = jsonLines<{ sum: number }>(l.stdout).map((r) => r.sum);
  assert.deepEqual(sums, [3, 3]);
  assert.deepEqual(await waitGone(l.marker, 5000), []);
});

test('a store served for a loopback address listens on loopback only (the store is unauthenticated)', async () => {
  const { networkInterfaces } = await import('node:os');
  const { Store } = await import('../src/distributed/store.ts');
  const external = Object.values(networkInterfaces())
    .flat()
    .find((a) => a !== undefined && a.family === 'IPv4' && !a.internal)?.address;
  assert.ok(external, 'this test needs one non-loopback IPv4 address');
  const store = Store.tcp({ host: '127.0.0.1', port: 0, isServer: true, worldSize: 1, timeoutMs: 5000 });
  try {
    const reach = (host: string) =>
      new Promise<string>((resolve) => {
        const s = connect(store.port, host);
        s.on('connect', () => {
          s.destroy();
          resolve('connected');
        });
        s.on('error', (e: NodeJS.ErrnoException) => resolve(e.code ?? e.message));
      });
    assert.equal(await reach('127.0.0.1'), 'connected');
    assert.equal(await reach(external), 'ECONNREFUSED');
    assert.throws(
      () => Store.tcp({ host: '127.0.0.1', port: store.port, isServer: true, worldSize: 1, timeoutMs: 2000 }),
      new RegExp(`cannot listen on 127\\.0\\.0\\.1:${store.port}: .*in use`),
    );
  } finally {
    store.close();
  }
});
