// Pre-flight before the first step (docs/reliability.md R20–R23, R28), each fault injected as it was
// reported: a checkpoint folder under a regular file (`--checkpoint-dir /etc/passwd/ck`
// trained a whole epoch, then failed with ENOTDIR), a disk without room for checkpoints
// (ENOSPC after training, without the file's name, and an empty checkpoint folder left
// behind), and ranks started with different options (different step counts: a silent
// hang until the 30-minute timeout). Each now fails before any training step, on every
// rank, with a message that names the folder, the sizes, or the options and ranks.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { type CheckpointError, saveCheckpoint } from '../src/checkpoint/index.ts';
import { nn } from '../src/index.ts';
import { type TrainConfigInput, train } from '../src/train/index.ts';
import { freePort } from './helpers/multiproc.ts';
import { TINY_TRAIN } from './helpers/tiny-train.ts';
import { ROOT } from './workers/train-spawn.ts';

const tmp = mkdtempSync(join(tmpdir(), 'tsddp-preflight-'));
after(() => rmSync(tmp, { recursive: true, force: true }));
const quiet = { progress: false } as const;

const tiny: TrainConfigInput = TINY_TRAIN;

test('a checkpoint folder under a regular file fails before the first step, naming the folder', async () => {
  const file = join(tmp, 'passwd');
  writeFileSync(file, 'root:x:0:0\n');
  let steps = 0;
  await assert.rejects(
    train({ ...tiny, checkpointDir: join(file, 'ck') }, { ...quiet, onStep: () => void steps++ }),
    (e: Error) => {
      assert.equal(e.name, 'PreflightError');
      assert.match(e.message, /--checkpoint-dir .*passwd\/ck cannot be created: ENOTDIR/);
      return true;
    },
  );
  assert.equal(steps, 0, 'no training step ran');
});

const ROOT_ONLY = 'mounting a 1 MB tmpfs needs root (CI and the development VM run as root)';

/** Mounts a 1 MB tmpfs at a new folder `name`; the returned function unmounts it. */
function smallDisk(name: string): [string, () => void] {
  const dir = join(tmp, name);
  mkdirSync(dir);
  const mount = spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=1M', 'tmpfs', dir], { encoding: 'utf8' });
  assert.equal(mount.status, 0, `mount: ${mount.stderr}`);
  return [dir, () => spawnSync('umount', [dir])];
}

test('a disk without room for two checkpoints fails before the first step, with the sizes', async (t) => {
  if (process.getuid?.() !== 0) {
    t.skip(ROOT_ONLY);
    return;
  }
  const [small, unmount] = smallDisk('small');
  try {
    const ckpt = join(small, 'ck');
    await assert.rejects(train({ ...tiny, checkpointDir: ckpt }, quiet), (e: Error) => {
      assert.equal(e.name, 'PreflightError');
      assert.match(
        e.message,
        /--checkpoint-dir .*small\/ck: 1 MB free, but two checkpoints .* take about [2-9] MB/,
      );
      return true;
    });
    assert.deepEqual(readdirSync(ckpt), [], 'the probe file is gone; no checkpoint folder was started');
  } finally {
    unmount();
  }
});

test('a disk that fills during a checkpoint write: the error names the file; no checkpoint folder is left', async (t) => {
  if (process.getuid?.() !== 0) {
    t.skip(ROOT_ONLY);
    return;
  }
  const [full, unmount] = smallDisk('full');
  try {
    const model = new nn.Linear(600, 600); // 1.4 MB of float32 weights: more than the disk holds
    await assert.rejects(saveCheckpoint(full, { model, epoch: 0, step: 40, worldSize: 1 }), (e: Error) => {
      assert.equal(e.name, 'CheckpointError');
      assert.equal((e as CheckpointError).code, 'WRITE');
      assert.match(e.message, /full\/ckpt-000040\/model\.safetensors: cannot be written: ENOSPC/);
      return true;
    });
    assert.deepEqual(readdirSync(full), [], 'no empty or partial ckpt-000040 folder');
  } finally {
    unmount();
  }
});

/** `tsddp train` as one node of a 2-node job on loopback (one worker each). */
function node(rank: number, port: number, args: string[], cwd = ROOT) {
  const child = spawn(
    process.execPath,
    [
      join(ROOT, 'bin', 'tsddp.mjs'),
      'train',
      ...['--nnodes', '2', '--node-rank', String(rank), '--nproc-per-node', '1'],
      ...['--master-addr', '127.0.0.1', '--master-port', String(port)],
      ...['--model', 'resnet18', '--width-multiplier', '0.125', '--image-size', '16', '--val-size', '8'],
      ...['--batch-size', '4', '--epochs', '1', '--workers', '0', '--eval-every', '0'],
      ...args,
    ],
    { cwd, env: { ...process.env, OMP_NUM_THREADS: '1' }, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let out = '';
  child.stdout.on('data', (b: Buffer) => {
    out += b;
  });
  child.stderr.on('data', (b: Buffer) => {
    out += b;
  });
  return new Promise<{ code: number | null; out: string }>((res) =>
    child.on('close', (code) => res({ code, out })),
  );
}

test('nodes started with different options fail at once on every rank, naming the options', async () => {
  const port = await freePort();
  const t0 = performance.now();
  const [a, b] = await Promise.all([
    node(0, port, ['--train-size', '32']),
    node(1, port, ['--train-size', '64', '--seed', '3']),
  ]);
  const secs = (performance.now() - t0) / 1000;
  for (const r of [a, b]) {
    assert.notEqual(r.code, 0, r.out);
    assert.match(
      r.out,
      /PreflightError: pre-flight checks failed before the first step:\n(?:\[rank \d\] |\s*\| )?rank 1 was started with another configuration than rank 0: seed 3 \(rank 0: 0\), trainSize 64 \(rank 0: 32\)/,
    );
  }
  assert.ok(secs < 60, `failed in ${secs.toFixed(1)} s, well inside any timeout`);
  assert.ok(!existsSync(join(ROOT, 'ck')));
});

test('one rank whose checkpoint folder is unusable stops every rank; the others name that rank', async () => {
  // The same options on both nodes, a relative --checkpoint-dir: on node 1 (another
  // working folder) it is a regular file, as where a shared file system is not mounted.
  const port = await freePort();
  const [dirA, dirB] = [join(tmp, 'node-a'), join(tmp, 'node-b')];
  mkdirSync(dirA);
  mkdirSync(dirB);
  writeFileSync(join(dirB, 'ck'), 'not a folder');
  const args = ['--train-size', '32', '--checkpoint-dir', 'ck'];
  const [a, b] = await Promise.all([node(0, port, args, dirA), node(1, port, args, dirB)]);
  assert.notEqual(b.code, 0, b.out);
  assert.match(b.out, /PreflightError: --checkpoint-dir ck cannot be created: EEXIST/);
  assert.notEqual(a.code, 0, a.out);
  assert.match(
    a.out,
    /PreflightError: pre-flight checks failed before the first step:\n(?:\[rank \d\] |\s*\| )?rank 1: PreflightError: --checkpoint-dir ck cannot be created: EEXIST/,
  );
  assert.deepEqual(readdirSync(join(dirA, 'ck')), [], 'rank 0 wrote no checkpoint');
});

test('a worker whose MASTER_ADDR:MASTER_PORT is closed says so within seconds and fails at --timeout', async (t) => {
  const port = await freePort(); // nothing listens there
  const child = spawn(
    process.execPath,
    [
      join(ROOT, 'bin', 'tsddp.mjs'),
      'train',
      ...['--model', 'resnet18', '--width-multiplier', '0.125'],
      '--timeout',
      '5',
    ],
    {
      cwd: ROOT,
      env: {
        ...process.env,
        ...{ RANK: '1', WORLD_SIZE: '2', LOCAL_WORLD_SIZE: '2', MASTER_ADDR: '127.0.0.1' },
        ...{ MASTER_PORT: String(port), OMP_NUM_THREADS: '1' },
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  const t0 = performance.now();
  let out = '';
  let noticeAt = Number.NaN;
  child.stderr.on('data', (b: Buffer) => {
    out += b;
    if (Number.isNaN(noticeAt) && out.includes('is waiting for the rendezvous store'))
      noticeAt = (performance.now() - t0) / 1000;
  });
  const code = await new Promise<number | null>((res) => child.on('close', res));
  const endAt = (performance.now() - t0) / 1000;
  assert.equal(code, 1, out);
  assert.match(
    out,
    new RegExp(`rank 1 is waiting for the rendezvous store at 127\\.0\\.0\\.1:${port} .*Giving up after 5 s`),
  );
  assert.match(
    out,
    new RegExp(
      `DistributedError: rank 1: nothing answered at the rendezvous store 127\\.0\\.0\\.1:${port} .*within 5 s`,
    ),
  );
  assert.ok(noticeAt < 10, `the first message came after ${noticeAt.toFixed(1)} s`);
  assert.ok(endAt < 30, `failed after ${endAt.toFixed(1)} s (timeout 5 s)`);
  t.diagnostic(
    `notice after ${noticeAt.toFixed(1)} s, error after ${endAt.toFixed(1)} s (process start included)`,
  );
});

test('a worker whose MASTER_ADDR:MASTER_PORT is closed prints no C++ stack frames (was: 32 `frame #` lines), only the DistributedError', async () => {
  const port = String(await freePort());
  const env = {
    ...process.env,
    ...{ RANK: '1', WORLD_SIZE: '2', LOCAL_WORLD_SIZE: '2', MASTER_ADDR: '127.0.0.1' },
    ...{ MASTER_PORT: port, OMP_NUM_THREADS: '1' },
  };
  const args = [
    join(ROOT, 'bin', 'tsddp.mjs'),
    'train',
    '--model',
    'resnet18',
    '--width-multiplier',
    '0.125',
  ];
  const r = spawnSync(process.execPath, [...args, '--timeout', '2'], {
    cwd: ROOT,
    env,
    encoding: 'utf8',
    timeout: 60_000,
  });
  assert.equal(r.status, 1, r.stderr);
  assert.match(
    r.stderr,
    new RegExp(
      `DistributedError: rank 1: nothing answered at the rendezvous store 127\\.0\\.0\\.1:${port} .*within 2 s`,
    ),
  );
  assert.doesNotMatch(r.stderr, /frame #\d+:|Exception raised from/);
});
