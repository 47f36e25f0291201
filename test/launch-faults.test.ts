// tsrun under faults (docs/reliability.md R2–R5, R14): gang restart with resume from a checkpoint, a
// worker that always fails, signals to the launcher, a hung peer, uneven batch counts.
// Each job is tiny; every wait is bounded, and no process may be left behind.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, afterEach, test } from 'node:test';
import { alive, freePort, jsonLines, Launcher, waitGone, worker } from './workers/launch-harness.ts';

const tmp = mkdtempSync(join(tmpdir(), 'tsrun-faults-'));
const launched: Launcher[] = [];
after(() => rmSync(tmp, { recursive: true, force: true }));
// A failed assertion must not leave a job running into the next test.
afterEach(() => {
  for (const l of launched.splice(0)) l.kill();
});

function start(args: string[], opts: ConstructorParameters<typeof Launcher>[1] = {}): Launcher {
  const l = new Launcher(args, opts);
  launched.push(l);
  return l;
}

function freshDir(name: string): string {
  const dir = join(tmp, name);
  mkdirSync(dir, { recursive: true });
  return dir;
}

const final = (dir: string) =>
  JSON.parse(readFileSync(join(dir, 'final.json'), 'utf8')) as { w: string; attempt: number };
const train = worker('launch-train.ts');
const STEPS = '6';

// The uninterrupted run every restarted run must reproduce bitwise.
let reference: string | undefined;
async function referenceWeights(): Promise<string> {
  if (reference) return reference;
  const dir = freshDir('reference');
  const l = start(['--nproc-per-node', '2', '--standalone', train, '--dir', dir, '--steps', STEPS]);
  const exit = await l.exit(60_000);
  assert.equal(exit.code, 0, l.output);
  assert.equal(final(dir).attempt, 0);
  reference = final(dir).w;
  return reference;
}

interface TrainReport {
  rank: number;
  attempt: number;
  resumedFrom: number;
}

test('a SIGKILLed worker restarts the whole gang, which resumes and ends bitwise equal (docs/reliability.md R2)', async () => {
  const dir = freshDir('restart');
  const l = start([
    '--nproc-per-node',
    '2',
    '--standalone',
    '--max-restarts',
    '1',
    train,
    '--dir',
    dir,
    '--steps',
    STEPS,
    '--kill-at',
    '3',
  ]);
  // The reference job runs meanwhile (nothing here depends on timing).
  const [expected, exit] = await Promise.all([referenceWeights(), l.exit(60_000)]);
  assert.equal(exit.code, 0, l.output);
  assert.match(
    l.stderr,
    /attempt 0 failed: rank 1 \(local rank 1 on node 0 at [^,]+, pid \d+\) was killed by signal SIGKILL/,
  );
  assert.match(l.stderr, /restarting all workers \(restart 1 of --max-restarts 1\)/);
  const reports = jsonLines<TrainReport>(l.stdout);
  // Both ranks ran twice; on attempt 1 (TORCHELASTIC_RESTART_COUNT=1) both resumed from the checkpoint.
  const second = reports.filter((r) => r.attempt === 1);
  assert.deepEqual(second.map((r) => r.rank).sort(), [0, 1], l.output);
  for (const r of second)
    assert.ok(r.resumedFrom >= 2 && r.resumedFrom <= 3, `resumed from ${r.resumedFrom}`);
  assert.equal(final(dir).attempt, 1);
  assert.equal(final(dir).w, expected);
  assert.deepEqual(await waitGone(l.marker, 5000), []);
});

test('a failure on one node restarts the gang on every node (two launchers, --nnodes 2)', async () => {
  const expected = await referenceWeights();
  const dir = freshDir('two-nodes');
  const port = String(await freePort());
  const common = [
    '--nnodes',
    '2',
    '--master-port',
    port,
    '--run-id',
    'gang',
    '--max-restarts',
    '1',
    '--rdzv-timeout',
    '30',
  ];
  const args = [train, '--dir', dir, '--steps', STEPS, '--kill-at', '3'];
  const node0 = start([...common, '--node-rank', '0', ...args]);
  await node0.port();
  const node1 = start([...common, '--node-rank', '1', ...args]);
  const [e0, e1] = await Promise.all([node0.exit(60_000), node1.exit(60_000)]);
  assert.equal(e0.code, 0, node0.output);
  assert.equal(e1.code, 0, node1.output);
  // Rank 1 runs on node 1 and killed itself there; node 0 restarted too. Both name the
  // failure that came first in the job (normally that one; rank 0's peer error races it).
  assert.match(
    node1.stderr,
    /rank 1 \(local rank 0 on node 1 at [^,]+, pid \d+\) was killed by signal SIGKILL/,
  );
  for (const l of [node0, node1]) {
    assert.match(l.stderr, /attempt 0 failed: rank [01] \(local rank 0 on node [01] at [^,]+, pid \d+\)/);
    assert.match(l.stderr, /restarting all workers \(restart 1 of --max-restarts 1\)/);
  }
  for (const l of [node0, node1])
    assert.deepEqual(
      jsonLines<TrainReport>(l.stdout).map((r) => r.attempt),
      [0, 1],
    );
  assert.equal(final(dir).w, expected);
  assert.deepEqual(await waitGone(node0.marker, 5000), []);
  assert.deepEqual(await waitGone(node1.marker, 5000), []);
});

test('a worker that always fails: non-zero exit in bounded time, first failing rank, exit code, stderr tail (docs/reliability.md R3)', async () => {
  // Rank 0 ignores SIGTERM and runs a worker thread, so stopping it takes the SIGKILL escalation.
  const l = start([
    '--nproc-per-node',
    '2',
    '--standalone',
    '--max-restarts',
    '1',
    '--term-timeout',
    '1',
    worker('launch-fail.ts'),
  ]);
  const exit = await l.exit(45_000);
  assert.equal(exit.code, 1, l.output);
  // 2 attempts, each: start (~2 s) + fail + 1 s grace.
  assert.ok(exit.ms < 30_000, `took ${exit.ms} ms`);
  for (const a of [0, 1])
    assert.match(l.stderr, new RegExp(`attempt ${a} failed: rank 1 .* exited with code 3`));
  const summary = l.stderr.slice(l.stderr.indexOf('job failed'));
  assert.match(
    summary,
    /^job failed \(after 1 restart\(s\), --max-restarts 1\); first failure:\nrank 1 \(local rank 1 on node 0 at [^,]+, pid \d+\) exited with code 3\n/,
  );
  assert.match(summary, /then: rank 0 was killed by signal SIGKILL/);
  assert.match(summary, /last 20 line\(s\) of rank 1's stderr:/);
  // The tail of the last attempt: lines 6..25, in order.
  const tail = [...summary.matchAll(/ {4}\| (.*)/g)].map((m) => m[1]);
  assert.deepEqual(
    tail,
    Array.from({ length: 20 }, (_, i) => `rank 1 attempt 1 failure detail ${i + 6}`),
  );
  assert.deepEqual(await waitGone(l.marker, 3000), []);
});

async function signalLauncher(signal: NodeJS.Signals): Promise<void> {
  const l = start(['--nproc-per-node', '2', '--standalone', worker('launch-hold.ts')]);
  const port = await l.port();
  await l.waitFor(/"ready":true[\s\S]*"ready":true/, 30_000);
  const pids = jsonLines<{ pid: number }>(l.stdout).map((r) => r.pid);
  assert.equal(pids.length, 2, l.output);
  for (const pid of pids) assert.ok(alive(pid));
  const t0 = Date.now();
  l.child.kill(signal);
  const left = await waitGone(l.marker, 10_000);
  assert.deepEqual(left, [], `still alive ${Date.now() - t0} ms after ${signal}: ${left}`);
  for (const pid of pids) assert.equal(alive(pid), false);
  const exit = await l.exit(5000);
  assert.equal(exit.signal === signal || exit.code === 128 + (signal === 'SIGTERM' ? 15 : 9), true);
  // The store's port is free again.
  await new Promise<void>((resolve, reject) => {
    const srv = createServer().once('error', reject);
    srv.listen(port, '127.0.0.1', () => srv.close(() => resolve()));
  });
}

test('SIGTERM to the launcher: workers (and their threads) are gone, the port is free (docs/reliability.md R4)', async () => {
  await signalLauncher('SIGTERM');
});

test('SIGKILL to the launcher: the worker guard ends every worker, even one blocked in sync code (docs/reliability.md R4)', async () => {
  await signalLauncher('SIGKILL');
});

test('a hung peer (SIGSTOP) makes the others fail at the collective timeout; the gang restarts (docs/reliability.md R5)', async () => {
  const l = start([
    '--nproc-per-node',
    '2',
    '--standalone',
    '--max-restarts',
    '1',
    '--term-timeout',
    '2',
    worker('launch-hang.ts'),
    '--timeout-ms',
    '1500',
    '--steps',
    '6',
  ]);
  const exit = await l.exit(60_000);
  assert.equal(exit.code, 0, l.output);
  assert.match(l.stderr, /allReduce failed on rank 0: .*Timed out waiting 1500ms/);
  assert.match(l.stderr, /attempt 0 failed: rank 0 .* exited with code 1/);
  const done = jsonLines<{ rank: number; attempt: number; sum: number }>(l.stdout);
  assert.deepEqual(
    done.map((r) => [r.attempt, r.sum]),
    [
      [1, 2],
      [1, 2],
    ],
  );
  assert.deepEqual(await waitGone(l.marker, 5000), []);
});

test('uneven batch counts end in a clear timeout error, not a hang (docs/reliability.md R14)', async () => {
  const l = start([
    '--nproc-per-node',
    '2',
    '--standalone',
    '--term-timeout',
    '1',
    worker('launch-uneven.ts'),
    '--timeout-ms',
    '1500',
    '--batches',
    '4',
  ]);
  const exit = await l.exit(30_000);
  assert.equal(exit.code, 1, l.output);
  assert.ok(exit.ms < 20_000, `took ${exit.ms} ms`);
  // Rank 0 waits in a 4th all-reduce that rank 1 never joins, rank 1 at the barrier: whichever
  // times out first is the failure reported.
  assert.match(
    l.stderr,
    /\| DistributedError: (allReduce failed on rank 0|barrier failed on rank 1): .*Timed out waiting 1500ms/,
  );
  assert.equal(jsonLines(l.stdout).length, 0);
  assert.deepEqual(await waitGone(l.marker, 5000), []);
});

test('C++ stack frames in a worker’s log lines are hidden unless TORCH_SHOW_CPP_STACKTRACES=1; log files keep them', async () => {
  // Nothing listens on this port: libtorch logs each failed store connection with its stack.
  const closed = await freePort();
  const logs = freshDir('frames');
  const args = ['--nproc-per-node', '1', '--standalone', '--log-dir', logs, '--run-id', 'frames'];
  const hidden = start([...args, worker('store-unreachable.ts'), String(closed)]);
  assert.equal((await hidden.exit(30_000)).code, 1, hidden.output);
  assert.match(hidden.stderr, /store: TCPStore: The client socket has timed out/);
  assert.doesNotMatch(hidden.stderr, /frame #\d+:/);
  assert.match(
    hidden.stderr,
    /\[rank 0\] \(\d+ C\+\+ stack frames hidden; TORCH_SHOW_CPP_STACKTRACES=1 shows them\)/,
  );
  const log = readFileSync(join(logs, 'frames', 'attempt_0', 'rank_0', 'stderr.log'), 'utf8');
  assert.match(log, /frame #0: /, 'the log file keeps every line');

  const shown = start([...args, worker('store-unreachable.ts'), String(closed)], {
    env: { TORCH_SHOW_CPP_STACKTRACES: '1' },
  });
  assert.equal((await shown.exit(30_000)).code, 1, shown.output);
  assert.match(shown.stderr, /\[rank 0\] frame #0: /);
  assert.doesNotMatch(shown.stderr, /stack frames hidden/);
});
