// Lose nothing, let no one in: how tsddp creates and removes the user's files (src/files,
// docs/guide/launching.md "Files tsddp writes"). Each fault as an adversarial run found it:
// a predictable temp folder whose files were written through planted symbolic links (a
// root-owned 0600 file was overwritten with step records), `--overwrite` deleting a whole
// folder given as --metrics-file (and replacing a device node with a regular file), and a
// launcher that printed a stack trace and left empty temp files when the disk was full.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import {
  chmodSync,
  chownSync,
  closeSync,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { after, test } from 'node:test';
import { mergeAfterLaunch } from '../src/cli/train.ts';
import { defaultMetricsFile } from '../src/dashboard/session.ts';
import {
  checkSafeDir,
  ensureSafeDir,
  tempNameOwner,
  UnsafePathError,
  writeFileAtomicSync,
} from '../src/files/index.ts';
import { MetricsWriter, mergeRankFiles, readJsonLines } from '../src/metrics/index.ts';
import { type TrainConfigInput, train } from '../src/train/index.ts';
import { snapshot } from './helpers/snapshot.ts';
import { TINY_TRAIN } from './helpers/tiny-train.ts';

const tmp = mkdtempSync(join(tmpdir(), 'tsddp-files-'));
after(() => rmSync(tmp, { recursive: true, force: true }));
const quiet = { progress: false } as const;
const isRoot = process.getuid?.() === 0;

/** A file only its owner can read, standing for one the attacker wants overwritten. */
function victim(name: string): string {
  const dir = join(tmp, 'victims');
  mkdirSync(dir, { recursive: true });
  const file = join(dir, name);
  writeFileSync(file, 'secret\n', { mode: 0o600 });
  return file;
}

const stepRecord = (rank: number, step: number) =>
  ({ type: 'step', rank, step, epoch: 0, loss: 1, time: 0 }) as unknown as Parameters<
    MetricsWriter['write']
  >[0];

test('the dashboard metrics folder is new, private and unguessable, not /tmp/tsddp-<run>-<pid>', () => {
  // The folder the old code used, planted by another user as a link to theirs.
  const planted = join(tmpdir(), `tsddp-planted-${process.pid}`);
  const theirs = join(tmp, 'theirs');
  mkdirSync(theirs);
  symlinkSync(theirs, planted);
  try {
    const a = defaultMetricsFile('planted', undefined, {});
    const b = defaultMetricsFile('planted', undefined, {});
    assert.notEqual(dirname(a), planted);
    assert.notEqual(dirname(a), dirname(b), 'each call makes its own folder');
    for (const f of [a, b]) {
      const st = lstatSync(dirname(f));
      assert.ok(st.isDirectory() && !st.isSymbolicLink());
      assert.equal(st.mode & 0o777, 0o700, 'only this user may enter it');
      assert.match(basename(dirname(f)), /^tsddp-planted-[A-Za-z0-9]{6}$/);
      rmSync(dirname(f), { recursive: true });
    }
    assert.deepEqual(readdirSync(theirs), []);
  } finally {
    rmSync(planted);
  }
});

test('a rank file planted as a symbolic link is never written through', () => {
  const dir = join(tmp, 'planted-rank');
  mkdirSync(dir);
  const target = victim('rank-target');
  const path = join(dir, 'm.jsonl');
  symlinkSync(target, `${path}.rank0`);
  // A resumed run appends (O_NOFOLLOW: ELOOP); a new run refuses to delete what is not its own.
  assert.throws(() => new MetricsWriter(path, 0, false), /ELOOP|symbolic link/);
  assert.throws(
    () => new MetricsWriter(path, 0, true),
    (e: Error) =>
      e instanceof UnsafePathError && /not a tsddp metrics file \(a symbolic link\)/.test(e.message),
  );
  assert.equal(readFileSync(target, 'utf8'), 'secret\n');
  assert.ok(lstatSync(`${path}.rank0`).isSymbolicLink(), 'the link is left as it was');
});

test('merging metrics writes no guessable temp file: links planted at the old names are not followed', () => {
  const dir = join(tmp, 'planted-merge');
  mkdirSync(dir);
  const path = join(dir, 'm.jsonl');
  using w = new MetricsWriter(path, 0, true);
  w.write(stepRecord(0, 1));
  const target = victim('merge-target');
  // The old code wrote `<file>.tmp<pid>` with writeFileSync, which follows links.
  for (const name of [`${path}.tmp${process.pid}`, `${path}.${process.pid}.tmp`]) symlinkSync(target, name);
  assert.equal(mergeRankFiles(path), 1);
  assert.equal(readFileSync(target, 'utf8'), 'secret\n');
  assert.deepEqual(
    readJsonLines(path).map((r) => r.step),
    [1],
  );
  // A link at the merged file's own path is refused rather than replaced.
  rmSync(path);
  symlinkSync(target, path);
  assert.throws(
    () => mergeRankFiles(path),
    /cannot merge the metrics into .*m\.jsonl: it is a symbolic link/,
  );
  assert.equal(readFileSync(target, 'utf8'), 'secret\n');
});

test('the launcher merge leaves a metrics file newer than every rank file alone (a refused run changes nothing)', async () => {
  const dir = join(tmp, 'no-remerge');
  mkdirSync(dir);
  const path = join(dir, 'm.jsonl');
  {
    using w = new MetricsWriter(path, 0, true);
    w.write(stepRecord(0, 1));
  }
  await new Promise((r) => setTimeout(r, 50)); // a later clock tick than the rank file's last write
  assert.equal(mergeRankFiles(path), 1);
  const before = statSync(path);
  assert.equal(mergeRankFiles(path), null, 'nothing new to merge');
  const after = statSync(path);
  assert.equal(after.ino, before.ino, 'the same file, not a rewritten one');
  // A file of the user's at the metrics path is never replaced by a merge.
  writeFileSync(path, 'my notes\n');
  {
    using w = new MetricsWriter(path, 0, false);
    w.write(stepRecord(0, 2));
  }
  assert.throws(() => mergeRankFiles(path), /not a tsddp metrics file/);
  assert.equal(readFileSync(path, 'utf8'), 'my notes\n');
});

test('a folder every user may write into (without the sticky bit) or another user owns is refused', () => {
  const open = join(tmp, 'open');
  mkdirSync(open);
  chmodSync(open, 0o777);
  assert.throws(() => checkSafeDir(open, 'the metrics folder'), /may be written by every user \(mode 777\)/);
  chmodSync(open, 0o1777); // /tmp's mode: others cannot remove or replace this user's files
  checkSafeDir(open, 'the metrics folder');
  checkSafeDir(tmpdir(), 'the temp folder');
  if (isRoot) {
    // Root is trusted; a folder of another user is not.
    const other = join(tmp, 'other');
    mkdirSync(other);
    chownSync(other, 65534, 65534);
    assert.throws(() => checkSafeDir(other, 'the metrics folder'), /belongs to another user \(uid 65534\)/);
    const link = join(tmp, 'their-link');
    symlinkSync(tmp, link);
    spawnSync('chown', ['-h', '65534', link]);
    assert.throws(() => checkSafeDir(link, 'the metrics folder'), /symbolic link made by another user/);
    // The review's case: `--log-dir /tmp` makes /tmp/none/attempt_0/rank_0; another user
    // planted /tmp/none (theirs, in a sticky folder open to all). The folder tsddp then
    // creates below it is its own, but everything above it is theirs to swap.
    const sticky = join(tmp, 'sticky');
    mkdirSync(join(sticky, 'none'), { recursive: true });
    chmodSync(sticky, 0o1777);
    chownSync(join(sticky, 'none'), 65534, 65534);
    assert.throws(
      () => ensureSafeDir(join(sticky, 'none', 'attempt_0', 'rank_0'), '--log-dir'),
      /is under .*sticky\/none, which another user \(uid 65534\) made in .*sticky, a folder open to all/,
    );
    // Trusting other owners (a container's bind mount) is an explicit choice.
    process.env.TSDDP_TRUST_FOLDER_OWNERS = '1';
    try {
      checkSafeDir(other, 'the metrics folder');
    } finally {
      delete process.env.TSDDP_TRUST_FOLDER_OWNERS;
    }
  }
  // A folder open to all (no sticky bit) anywhere above is refused, whoever made it.
  const openAbove = join(tmp, 'open-above');
  mkdirSync(openAbove);
  chmodSync(openAbove, 0o777);
  assert.throws(
    () => ensureSafeDir(join(openAbove, 'mine', 'runs'), 'the metrics folder'),
    /is under .*open-above, which every user may write into \(mode 777\)/,
  );
});

test('tsddp train refuses a metrics folder any user may write into, before any work', async () => {
  const open = join(tmp, 'open-run');
  mkdirSync(open);
  chmodSync(open, 0o777);
  let steps = 0;
  await assert.rejects(
    train({ ...tiny(), metricsFile: join(open, 'm.jsonl') }, { ...quiet, onStep: () => void steps++ }),
    (e: Error) =>
      e.name === 'UnsafePathError' && /--metrics-file's folder .*open-run may be written/.test(e.message),
  );
  assert.equal(steps, 0);
  assert.deepEqual(readdirSync(open), []);
});

test('writeFileAtomicSync replaces a file whole, and a failed write leaves no temp file', () => {
  const dir = join(tmp, 'atomic');
  mkdirSync(dir);
  const file = join(dir, 'a.json');
  writeFileAtomicSync(file, 'one');
  writeFileAtomicSync(file, 'two');
  assert.equal(readFileSync(file, 'utf8'), 'two');
  assert.deepEqual(readdirSync(dir), ['a.json']);
  // Renaming over a folder fails: the temp file must go.
  mkdirSync(join(dir, 'sub'));
  assert.throws(() => writeFileAtomicSync(join(dir, 'sub'), 'x'), /EISDIR|EEXIST|ENOTEMPTY/);
  assert.deepEqual(readdirSync(dir).sort(), ['a.json', 'sub']);
  assert.ok(readdirSync(dir).every((n) => tempNameOwner(n) === null));
});

function tiny(): TrainConfigInput {
  return { ...TINY_TRAIN, maxSteps: 2 };
}

test('--overwrite with --metrics-file naming a folder of experiments deletes nothing', async () => {
  const runs = join(tmp, 'runs');
  mkdirSync(join(runs, 'exp1'), { recursive: true });
  writeFileSync(join(runs, 'exp1', 'metrics.csv'), 'step,loss\n1,2.3\n');
  writeFileSync(join(runs, 'notes.md'), '# experiments\n');
  const before = snapshot(runs);
  for (const overwrite of [false, true]) {
    await assert.rejects(train({ ...tiny(), metricsFile: runs, overwrite }, quiet), (e: Error) => {
      assert.equal(e.name, 'UnsafePathError');
      assert.match(e.message, /--metrics-file .*runs: .*runs is a folder, not a file/);
      return true;
    });
  }
  assert.deepEqual(snapshot(runs), before);
});

test('--overwrite with --metrics-file naming a device or a named pipe leaves it as it was', async () => {
  const fifo = join(tmp, 'pipe');
  assert.equal(spawnSync('mkfifo', [fifo]).status, 0);
  await assert.rejects(
    train({ ...tiny(), metricsFile: fifo, overwrite: true }, quiet),
    /--metrics-file .*pipe: .*pipe is a named pipe, not a file/,
  );
  assert.ok(statSync(fifo).isFIFO());
  if (isRoot) {
    // The report's case, /dev/full, without touching the real one: a node of the same device.
    const dev = join(tmp, 'full');
    assert.equal(spawnSync('mknod', [dev, 'c', '1', '7']).status, 0);
    await assert.rejects(
      train({ ...tiny(), metricsFile: dev, overwrite: true }, quiet),
      /full is a character device, not a file/,
    );
    assert.ok(statSync(dev).isCharacterDevice());
  }
});

test('--overwrite deletes only what tsddp wrote: a checkpoint holding a user file, or a file of theirs, stops it whole', async () => {
  const base = join(tmp, 'mixed');
  const cfg = {
    ...tiny(),
    checkpointDir: join(base, 'ck'),
    checkpointEvery: 1,
    metricsFile: join(base, 'm.jsonl'),
  };
  await train(cfg, quiet);
  const kept = join(base, 'ck', 'ckpt-000001', 'notes.txt');
  writeFileSync(kept, 'my analysis of step 1\n');
  let before = snapshot(base);
  await assert.rejects(train({ ...cfg, overwrite: true }, quiet), (e: Error) => {
    assert.equal(e.name, 'PriorRunError');
    assert.match(e.message, /nothing was deleted: .*ckpt-000001 holds notes\.txt, which tsddp did not write/);
    return true;
  });
  assert.deepEqual(snapshot(base), before, 'not even the other checkpoint or the metrics');
  rmSync(kept);
  // A metrics path holding the user's own text, not tsddp's records.
  writeFileSync(cfg.metricsFile, 'my lab notes\n');
  before = snapshot(base);
  await assert.rejects(
    train({ ...cfg, overwrite: true }, quiet),
    /m\.jsonl is a file whose first line is not a metric record, not a tsddp metrics file/,
  );
  assert.deepEqual(snapshot(base), before);
  // What tsddp wrote alone: --overwrite goes ahead.
  rmSync(cfg.metricsFile);
  const r = await train({ ...cfg, overwrite: true }, quiet);
  assert.equal(r.startStep, 0);
});

/** Mounts a tmpfs of `size` at a new folder; the returned function unmounts it (root only). */
function tmpfs(name: string, size: string): [string, () => void] {
  const dir = join(tmp, name);
  mkdirSync(dir);
  const r = spawnSync('mount', ['-t', 'tmpfs', '-o', `size=${size}`, 'tmpfs', dir], { encoding: 'utf8' });
  assert.equal(r.status, 0, `mount: ${r.stderr}`);
  return [dir, () => spawnSync('umount', [dir])];
}

/** Captures what `fn` writes to stderr. */
async function stderrOf(fn: () => Promise<void>): Promise<string> {
  const write = process.stderr.write;
  let out = '';
  process.stderr.write = ((chunk: string) => {
    out += chunk;
    return true;
  }) as typeof process.stderr.write;
  try {
    await fn();
  } finally {
    process.stderr.write = write;
  }
  return out;
}

test('the launcher merging metrics onto a full or read-only disk: one line, rank files kept, no temp file', async (t) => {
  if (!isRoot) {
    t.skip('mounting a tmpfs needs root (CI and the development VM run as root)');
    return;
  }
  const [disk, unmount] = tmpfs('fulldisk', '64k');
  try {
    const path = join(disk, 'm.jsonl');
    {
      using w = new MetricsWriter(path, 0, true);
      for (let s = 1; s <= 20; s++) w.write(stepRecord(0, s));
    }
    // Fill the rest of the disk.
    const fd = openSync(join(disk, 'filler'), 'w');
    try {
      for (;;) writeSync(fd, Buffer.alloc(4096));
    } catch (e) {
      assert.equal((e as NodeJS.ErrnoException).code, 'ENOSPC');
    } finally {
      closeSync(fd);
    }
    const full = await stderrOf(() => mergeAfterLaunch(path, 1));
    assert.match(
      full,
      /^tsddp train: could not merge the ranks' metrics into .*m\.jsonl: ENOSPC.*rank files/,
    );
    assert.equal(full.trim().split('\n').length, 1, 'one line, no stack trace');
    assert.deepEqual(readdirSync(disk).sort(), ['filler', 'm.jsonl.rank0'], 'no temp file left');

    rmSync(join(disk, 'filler'));
    assert.equal(spawnSync('mount', ['-o', 'remount,ro', disk]).status, 0);
    const ro = await stderrOf(() => mergeAfterLaunch(path, 1));
    assert.match(ro, /could not merge .*: EROFS/);
    assert.equal(ro.trim().split('\n').length, 1);
    assert.equal(readJsonLines(`${path}.rank0`).length, 20);
    assert.ok(!existsSync(path));
  } finally {
    unmount();
  }
});
