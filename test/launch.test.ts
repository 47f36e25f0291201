// tsrun / `tsddp run`: flag validation, the worker environment (architecture §6), arguments
// passed through to the script, the OMP_NUM_THREADS policy, `[rank N]` console prefixes,
// per-rank log files, and plain-node workers for JavaScript entry files.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { LaunchConfigError, resolveLaunchConfig } from '../src/launch/index.ts';
import { jsonLines, Launcher, waitGone, worker } from './workers/launch-harness.ts';

const tmp = mkdtempSync(join(tmpdir(), 'tsrun-test-'));
after(() => rmSync(tmp, { recursive: true, force: true }));
const script = worker('launch-env.ts');

function configError(args: Parameters<typeof resolveLaunchConfig>[2], re: RegExp, file = script): void {
  assert.throws(
    () => resolveLaunchConfig(file, [], args, {}),
    (e: unknown) => e instanceof LaunchConfigError && re.test(e.message),
  );
}

test('flags are validated with errors that name the flag and the fix', () => {
  configError(
    { nnodes: '2', nodeRank: '2' },
    /--node-rank 2 is out of range for --nnodes 2 \(node ranks are 0\.\.1\)/,
  );
  configError({ nnodes: '2', masterPort: '0' }, /--master-port 0 .* only works on one node/);
  configError({ standalone: true, nnodes: '2' }, /--standalone runs a single node, but --nnodes is 2/);
  configError({ nnodes: '1:4' }, /a node range is elastic; give --rdzv-backend c10d/);
  configError({ nprocPerNode: '0' }, /--nproc-per-node must be an integer >= 1, got '0'/);
  configError({ masterPort: '70000' }, /--master-port must be an integer in \[0, 65535\], got '70000'/);
  configError({ maxRestarts: '-1' }, /--max-restarts must be an integer >= 0/);
  configError({ rdzvTimeout: 'soon' }, /--rdzv-timeout must be a positive number of seconds, got 'soon'/);
  configError({ tee: '3' }, /--tee and --redirects write log files: give --log-dir too/);
  configError(
    { logDir: tmp, tee: '4' },
    /--tee takes 0 \(none\), 1 \(stdout\), 2 \(stderr\) or 3 \(both\), got '4'/,
  );
  configError({ runId: 'a/b' }, /--run-id may only hold/);
  configError({}, /script not found: nope\.ts/, 'nope.ts');
});

test('defaults follow torchrun; OMP_NUM_THREADS is cores / local workers unless set', () => {
  const c = resolveLaunchConfig(script, ['--x'], { nprocPerNode: '2' }, {});
  assert.equal(c.nnodes, 1);
  assert.equal(c.nodeRank, 0);
  assert.equal(c.masterAddr, '127.0.0.1');
  assert.equal(c.masterPort, 29500);
  assert.equal(c.maxRestarts, 0);
  assert.equal(c.monitorIntervalMs, 100);
  assert.equal(c.runId, 'none');
  assert.deepEqual(c.scriptArgs, ['--x']);
  assert.equal(c.ompNumThreads, Math.max(1, Math.floor(availableParallelism() / 2)));
  assert.equal(resolveLaunchConfig(script, [], { nprocPerNode: '64' }, {}).ompNumThreads, 1);
  assert.equal(resolveLaunchConfig(script, [], {}, { OMP_NUM_THREADS: '3' }).ompNumThreads, undefined);
  const s = resolveLaunchConfig(script, [], { standalone: true, masterPort: '1234' }, {});
  assert.equal(s.masterPort, 0);
  assert.match(s.runId, /^[0-9a-f-]{36}$/);
  // --tee / --redirects per local rank, as torchrun writes them.
  const t = resolveLaunchConfig(
    script,
    [],
    { nprocPerNode: '2', logDir: tmp, redirects: '0:1,1:3', tee: '0:2' },
    {},
  );
  assert.deepEqual(t.fileStreams, [
    { stdout: true, stderr: true },
    { stdout: true, stderr: true },
  ]);
  assert.deepEqual(t.consoleStreams, [
    { stdout: false, stderr: true },
    { stdout: false, stderr: false },
  ]);
});

test('the CLI reports a bad flag and exits 2 before starting anything', async () => {
  const l = new Launcher(['--nnodes', '2', '--node_rank', '5', script]);
  const exit = await l.exit(20_000);
  assert.equal(exit.code, 2);
  assert.match(l.stderr, /tsrun: error: --node-rank 5 is out of range for --nnodes 2/);
});

interface EnvReport {
  env: Record<string, string | undefined>;
  argv: string[];
  ppid: number;
  sum: number;
}

test('workers get the torchrun environment and the script its arguments; logs per rank', async () => {
  const logDir = join(tmp, 'logs');
  const l = new Launcher(
    [
      '--nproc-per-node',
      '2',
      '--standalone',
      '--log-dir',
      logDir,
      '--run-id',
      'envtest',
      script,
      '--epochs',
      '3',
      '-x',
      '--max-restarts',
      '7',
    ],
    { env: { OMP_NUM_THREADS: '' } },
  );
  const exit = await l.exit(60_000);
  assert.equal(exit.code, 0, l.output);
  const port = await l.port();
  const reports = jsonLines<EnvReport>(l.stdout).sort((a, b) => Number(a.env.RANK) - Number(b.env.RANK));
  assert.equal(reports.length, 2, l.output);
  const omp = String(Math.max(1, Math.floor(availableParallelism() / 2)));
  for (const [i, r] of reports.entries()) {
    assert.deepEqual(r.env, {
      RANK: String(i),
      LOCAL_RANK: String(i),
      WORLD_SIZE: '2',
      LOCAL_WORLD_SIZE: '2',
      GROUP_RANK: '0',
      GROUP_WORLD_SIZE: '1',
      ROLE_RANK: String(i),
      MASTER_ADDR: '127.0.0.1',
      MASTER_PORT: String(port),
      TORCHELASTIC_RESTART_COUNT: '0',
      TORCHELASTIC_MAX_RESTARTS: '0',
      TORCHELASTIC_RUN_ID: 'envtest',
      TSDDP_USE_AGENT_STORE: '1',
      OMP_NUM_THREADS: omp,
    });
    // The guard removes TSDDP_LAUNCHER_PID once it has read it (JSON drops the undefined).
    assert.equal('TSDDP_LAUNCHER_PID' in r.env, false);
    // Everything after the script is the script's, even launcher-looking flags.
    assert.deepEqual(r.argv, ['--epochs', '3', '-x', '--max-restarts', '7']);
    assert.equal(r.ppid, l.child.pid);
    assert.equal(r.sum, 3);
  }
  assert.match(l.stderr, new RegExp(`OMP_NUM_THREADS is not set: using ${omp} per worker`));
  assert.match(l.stderr, /^\[rank 0\] rank 0 done$/m);
  assert.match(l.stderr, /^\[rank 1\] rank 1 done$/m);
  // Files hold the raw output (no prefix), one folder per attempt and rank.
  for (const rank of [0, 1]) {
    const dir = join(logDir, 'envtest', 'attempt_0', `rank_${rank}`);
    assert.match(readFileSync(join(dir, 'stdout.log'), 'utf8'), /^\{"env":\{"RANK":"\d"/);
    assert.equal(
      readFileSync(join(dir, 'stderr.log'), 'utf8')
        .split('\n')
        .filter((x) => x.includes('done'))[0],
      `rank ${rank} done`,
    );
  }
  assert.deepEqual(await waitGone(l.marker, 5000), []);
});

test('`tsddp run` starts .mjs entry files with plain node (no TypeScript loader)', async () => {
  const file = join(tmp, 'plain.mjs');
  writeFileSync(
    file,
    'console.log(JSON.stringify({ rank: process.env.RANK, execArgv: process.execArgv, args: process.argv.slice(2) }));\n',
  );
  const l = new Launcher(['--nproc_per_node', '2', '--standalone', file, 'a', '--b'], {
    bin: ['bin/tsddp.mjs', 'run'],
  });
  const exit = await l.exit(30_000);
  assert.equal(exit.code, 0, l.output);
  const lines = jsonLines<{ rank: string; execArgv: string[]; args: string[] }>(l.stdout);
  assert.deepEqual(lines.map((x) => x.rank).sort(), ['0', '1']);
  for (const x of lines) {
    assert.deepEqual(x.args, ['a', '--b']);
    assert.equal(x.execArgv.length, 2, String(x.execArgv));
    assert.equal(x.execArgv[0], '--import');
    assert.match(x.execArgv[1], /^data:text\/javascript,/);
  }
});

test('on a terminal, a worker progress line redrawn with \\r is passed through live, prefixed', async () => {
  const { StreamSink } = await import('../src/launch/worker-process.ts');
  const fakeConsole = (isTTY: boolean) => {
    const c = {
      isTTY,
      text: '',
      write(s: string) {
        c.text += s;
        return true;
      },
    };
    return c;
  };
  const tty = fakeConsole(true);
  const sink = new StreamSink('[rank 0] ', tty as unknown as NodeJS.WriteStream, null, false);
  sink.write(Buffer.from('start\n\r\x1b[Kstep 1/3'));
  assert.equal(tty.text, '[rank 0] start\n\r\x1b[K[rank 0] step 1/3');
  sink.write(Buffer.from('\r\x1b[Kstep 2/3'));
  assert.ok(tty.text.endsWith('\r\x1b[K[rank 0] step 2/3'));
  // A full line clears the status line first and keeps only what a terminal would show.
  sink.write(Buffer.from('\r\x1b[Keval: 99%\n'));
  assert.ok(tty.text.endsWith('[rank 0] step 2/3\r\x1b[K[rank 0] eval: 99%\n'), JSON.stringify(tty.text));
  sink.end();
  // Not a terminal: nothing until the newline, and no control characters.
  const pipe = fakeConsole(false);
  const plain = new StreamSink('[rank 1] ', pipe as unknown as NodeJS.WriteStream, null, false);
  plain.write(Buffer.from('\r\x1b[Kstep 1/3'));
  assert.equal(pipe.text, '');
  plain.write(Buffer.from('\r\x1b[Kstep 3/3\n'));
  assert.equal(pipe.text, '[rank 1] step 3/3\n');
});

test('--watchdog takes positive seconds or 0 (off)', () => {
  const script = join(tmp, 'watchdog.mjs');
  writeFileSync(script, '');
  assert.equal(resolveLaunchConfig(script, [], {}, {}).watchdogMs, 0);
  assert.equal(resolveLaunchConfig(script, [], { watchdog: '0' }, {}).watchdogMs, 0);
  assert.equal(resolveLaunchConfig(script, [], { watchdog: '2.5' }, {}).watchdogMs, 2500);
  for (const bad of ['-1', 'soon', ''])
    assert.throws(
      () => resolveLaunchConfig(script, [], { watchdog: bad }, {}),
      (e: unknown) =>
        e instanceof LaunchConfigError && /--watchdog must be a positive number of seconds/.test(e.message),
    );
});

test('--rdzv-conf unknown keys ignored with static rendezvous: refused by name, with the keys the static backend takes', () => {
  configError(
    { nnodes: '2', rdzvConf: 'frobnicate=1' },
    /--rdzv-conf: unknown key 'frobnicate' for --rdzv-backend static \(it takes timeout, rank\)/,
  );
  configError(
    { nnodes: '2', rdzvConf: 'join_timeout=60' },
    /--rdzv-conf: join_timeout is a key of --rdzv-backend c10d; --rdzv-backend static takes timeout, rank/,
  );
  configError(
    { rdzvConf: 'timeout=soon' },
    /--rdzv-conf timeout must be a positive number of seconds, got 'soon'/,
  );
  configError(
    { rdzvConf: 'timeout=5', rdzvTimeout: '7' },
    /--rdzv-conf timeout=5 and --rdzv-timeout 7 name the same thing/,
  );
  configError(
    { nnodes: '2', nodeRank: '1', rdzvConf: 'rank=0' },
    /--rdzv-conf rank=0 disagrees with --node-rank 1/,
  );
  // PyTorch's PET_RDZV_CONF is read as well.
  assert.throws(() => resolveLaunchConfig(script, [], {}, { PET_RDZV_CONF: 'nope=1' }), /unknown key 'nope'/);
  // torchrun's static keys keep working: timeout is the rendezvous timeout, rank the node rank.
  const c = resolveLaunchConfig(
    script,
    [],
    { nnodes: '2', nodeRank: '1', rdzvConf: 'timeout=45,rank=1' },
    {},
  );
  assert.equal(c.rdzvTimeoutMs, 45_000);
  assert.equal(c.nodeRank, 1);
  assert.equal(
    resolveLaunchConfig(script, [], { rdzvConf: 'timeout=5', rdzvTimeout: '5' }, {}).rdzvTimeoutMs,
    5000,
  );
  assert.equal(resolveLaunchConfig(script, [], { rdzvConf: '' }, {}).rdzvTimeoutMs, 600_000);
});
