// Crashes under the launcher (docs/reliability.md R2 for the recipe): a worker SIGKILLed mid-run
// with --max-restarts 1 makes tsrun restart the gang; the restarted workers resume from
// the last checkpoint on their own, so the crash costs only the steps since that
// checkpoint and the result equals an uninterrupted run's bitwise. Also: `tsddp train
// --nproc-per-node` launches its own workers and merges their metrics.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { readJsonLines, type StepRecord } from '../src/metrics/index.ts';
import type { TrainConfigInput, TrainResult } from '../src/train/index.ts';
import { eventFiles, readEvents, scalars } from './helpers/tensorboard-events.ts';
import { ROOT } from './workers/train-spawn.ts';

const tmp = mkdtempSync(join(tmpdir(), 'tsddp-train-resume-'));
after(() => rmSync(tmp, { recursive: true, force: true }));
const sha = (file: string) => createHash('sha256').update(readFileSync(file)).digest('hex');
const stepRecords = (file: string) => readJsonLines(file).filter((r): r is StepRecord => r.type === 'step');

/** Starts `tsddp <args>`; `out` collects stdout and stderr, `closed` resolves with the exit code. */
function startTsddp(args: string[]) {
  const child = spawn(process.execPath, ['bin/tsddp.mjs', ...args], {
    cwd: ROOT,
    env: { ...process.env, OMP_NUM_THREADS: '1' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const run = { child, out: '', closed: new Promise<number | null>((res) => child.on('close', res)) };
  child.stdout.on('data', (b: Buffer) => {
    run.out += b;
  });
  child.stderr.on('data', (b: Buffer) => {
    run.out += b;
  });
  return run;
}

/** Runs `tsddp <args>` to the end; kills it after `timeoutMs`. */
async function tsddp(args: string[], timeoutMs = 90_000): Promise<{ code: number | null; out: string }> {
  const run = startTsddp(args);
  const timer = setTimeout(() => run.child.kill('SIGKILL'), timeoutMs);
  const code = await run.closed;
  clearTimeout(timer);
  return { code, out: run.out };
}

function config(name: string): TrainConfigInput {
  return {
    model: 'resnet18',
    widthMultiplier: 0.125,
    imageSize: 16,
    trainSize: 64, // 2 ranks x 32 samples = 8 batches = 4 steps of 2 micro-batches per epoch
    valSize: 10,
    batchSize: 4,
    gradAccum: 2,
    epochs: 3,
    lr: 0.05,
    warmupEpochs: 1,
    amp: 'bf16',
    workers: 1,
    evalEvery: 0,
    checkpointDir: join(tmp, name),
    checkpointEvery: 5,
    metricsFile: join(tmp, `${name}.jsonl`),
  };
}

async function launch(name: string, job: object, maxRestarts: number) {
  const jobFile = join(tmp, `${name}.json`);
  writeFileSync(jobFile, JSON.stringify(job));
  return tsddp([
    'run',
    '--nproc-per-node',
    '2',
    '--master-port',
    '0',
    '--max-restarts',
    String(maxRestarts),
    'test/workers/train-worker.ts',
    jobFile,
  ]);
}

test('a worker killed mid-run under tsrun --max-restarts 1 costs only the steps since the last checkpoint', async () => {
  const whole = config('whole');
  const u = await launch('whole', { config: whole }, 0);
  assert.equal(u.code, 0, u.out);

  // Rank 1 is SIGKILLed after step 7 of the first attempt; the last checkpoint is step 5.
  const crashed = config('crashed');
  const c = await launch(
    'crashed',
    { config: crashed, crash: { atStep: 7, ranks: [1], attempt: 0 }, result: join(tmp, 'crashed-res') },
    1,
  );
  assert.equal(c.code, 0, c.out);
  assert.match(c.out, /SIGKILL/, 'the launcher reports the killed worker');
  const res = [0, 1].map(
    (r) => JSON.parse(readFileSync(join(tmp, `crashed-res.rank${r}`), 'utf8')) as TrainResult,
  );
  for (const r of res) {
    assert.equal(r.startStep, 5, 'the restarted gang resumed from the step-5 checkpoint');
    assert.equal(r.resumedFrom, join(tmp, 'crashed', 'ckpt-000005'));
    assert.equal(r.steps, 12);
  }

  // Same steps, same losses on every rank, the same final model and optimizer state.
  const su = stepRecords(whole.metricsFile as string);
  const sc = stepRecords(crashed.metricsFile as string);
  assert.equal(su.length, 24);
  assert.deepEqual(
    sc.map((s) => [s.step, s.rank, s.loss, s.lr]),
    su.map((s) => [s.step, s.rank, s.loss, s.lr]),
  );
  for (const f of ['model.safetensors', 'optimizer.safetensors']) {
    assert.equal(sha(join(tmp, 'crashed', 'ckpt-000012', f)), sha(join(tmp, 'whole', 'ckpt-000012', f)), f);
  }
});

test('tsddp train --nproc-per-node 2 launches the workers and merges their metrics', async () => {
  const metrics = join(tmp, 'cli.jsonl');
  const r = await tsddp([
    'train',
    '--nproc-per-node',
    '2',
    '--master-port',
    '0',
    '--model',
    'resnet18',
    '--width-multiplier',
    '0.125',
    '--image-size',
    '16',
    '--train-size',
    '32',
    '--val-size',
    '10',
    '--batch-size',
    '4',
    '--epochs',
    '2',
    '--max-steps',
    '6',
    '--workers',
    '1',
    '--metrics-file',
    metrics,
    '--tensorboard',
    join(tmp, 'cli-tb'),
    // More of the recipe's switches, on the real path.
    '--channels-last',
    '--comm-hook',
    'fp16',
    '--amp',
    'bf16',
    '--schedule',
    'step',
    '--step-epochs',
    '1',
    '--label-smoothing',
    '0.1',
    '--nesterov',
  ]);
  assert.equal(r.code, 0, r.out);
  assert.match(r.out, /world 2 x batch 4 x accum 1 = 8 images\/step/);
  assert.match(r.out, /eval after epoch 1 \(step 4\).*\(10 images\)/);
  const recs = readJsonLines(metrics);
  const steps = recs.filter((x) => x.type === 'step');
  assert.deepEqual(
    steps.map((s) => `${s.step}:${s.rank}`),
    [1, 2, 3, 4, 5, 6].flatMap((s) => [`${s}:0`, `${s}:1`]),
  );
  assert.equal(recs.filter((x) => x.type === 'eval').length, 4); // after epoch 1 and at the stop, on both ranks
  // --tensorboard: rank 0's one event file, with DDP's communication time beside the loss.
  const [board] = eventFiles(join(tmp, 'cli-tb'));
  const events = readEvents(board);
  const loss = scalars(events, 'train/loss');
  assert.ok(loss.length > 0 && loss.every(([step]) => step >= 1 && step <= 6), JSON.stringify(loss));
  assert.deepEqual(
    scalars(events, 'comm/allreduce_ms').map(([step]) => step),
    loss.map(([step]) => step),
  );
  assert.deepEqual(
    scalars(events, 'eval/top1').map(([step]) => step),
    recs.filter((x) => x.type === 'eval' && x.rank === 0).map((x) => x.step),
  );
});

/** The worker processes under `launcher` (its children), with their RANK. */
function workersOf(launcher: number): { pid: number; rank: string }[] {
  const children = readdirSync(`/proc/${launcher}/task`).flatMap((tid) =>
    readFileSync(`/proc/${launcher}/task/${tid}/children`, 'utf8')
      .trim()
      .split(/\s+/)
      .filter(Boolean)
      .map(Number),
  );
  return children.flatMap((pid) => {
    try {
      const env = readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0');
      const rank = env.find((e) => e.startsWith('RANK='))?.slice(5);
      return rank === undefined ? [] : [{ pid, rank }];
    } catch {
      return []; // already gone
    }
  });
}

/** A long 2-rank `tsddp train` (50 epochs) writing `metrics`; the test stops it by a fault. */
function longRun(metrics: string, extra: string[] = []) {
  const run = startTsddp([
    'train',
    ...['--nproc-per-node', '2', '--master-port', '0', '--model', 'resnet18', '--width-multiplier', '0.125'],
    ...['--image-size', '16', '--train-size', '64', '--val-size', '8', '--batch-size', '4'],
    ...['--epochs', '50', '--workers', '0', '--eval-every', '0', '--metrics-file', metrics, ...extra],
  ]);
  const { child } = run;
  /** Waits until every rank has recorded `n` steps; then the pid of the worker of `rank`. */
  const workerAfter = async (n: number, rank: string): Promise<number> => {
    const deadline = Date.now() + 60_000;
    const stepsIn = (f: string) => (existsSync(f) ? stepRecords(f).length : 0);
    while (stepsIn(`${metrics}.rank0`) < n || stepsIn(`${metrics}.rank1`) < n) {
      assert.ok(Date.now() < deadline, `no steps recorded in time:\n${run.out}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    const w = workersOf(child.pid as number).find((x) => x.rank === rank);
    assert.ok(w, `rank ${rank}'s process under the launcher:\n${run.out}`);
    return w.pid;
  };
  return { run, workerAfter };
}

test('rank 0 SIGKILLed mid-run: the launcher still merges the metrics the ranks wrote', async () => {
  const metrics = join(tmp, 'killed.jsonl');
  const { run, workerAfter } = longRun(metrics);
  // Both ranks have recorded a few steps: kill rank 0 (it never merges), as a crash would.
  process.kill(await workerAfter(3, '0'), 'SIGKILL');
  assert.equal(await run.closed, 1, run.out);
  assert.match(run.out, /merged \d+ metric records of the failed run into .*killed\.jsonl/);
  const merged = stepRecords(metrics);
  assert.ok(merged.length >= 6, `the merged file holds both ranks' steps (${merged.length})`);
  assert.deepEqual([...new Set(merged.map((s) => s.rank))].sort(), [0, 1]);
});

test('a stopped peer (SIGSTOP) fails the run at --timeout, not after half an hour', async (t) => {
  const { run, workerAfter } = longRun(join(tmp, 'stopped.jsonl'), ['--timeout', '5']);
  const pid = await workerAfter(2, '1');
  const t0 = Date.now();
  process.kill(pid, 'SIGSTOP');
  const code = await run.closed;
  const secs = (Date.now() - t0) / 1000;
  assert.equal(code, 1, run.out);
  assert.ok(secs < 5 + 10, `the run failed ${secs.toFixed(1)} s after the peer stopped (timeout 5 s)`);
  assert.match(
    run.out,
    // Gloo words it "Timed out waiting ... for recv" or "Application timeout caused pair closure".
    /DistributedError: rank 0: another rank stopped answering .*(Timed out|timeout).*--timeout \(5 s\)/,
  );
  t.diagnostic(`failed ${secs.toFixed(1)} s after SIGSTOP`);
});

test('--watchdog: a rank that makes no step is reported with what each rank was doing; the gang restarts and resumes', async (t) => {
  const ckpt = join(tmp, 'watchdog-ckpt');
  const { run, workerAfter } = longRun(join(tmp, 'watchdog.jsonl'), [
    ...['--watchdog', '4', '--timeout', '600', '--max-restarts', '1', '--max-steps', '12'],
    ...['--checkpoint-dir', ckpt, '--checkpoint-every', '2'],
  ]);
  const pid = await workerAfter(3, '1');
  const t0 = Date.now();
  process.kill(pid, 'SIGSTOP'); // the collective timeout (600 s) would take ten minutes
  const code = await run.closed;
  assert.equal(code, 0, run.out);
  const report = /tsrun: watchdog: (.*); stopping the attempt/.exec(run.out)?.[1] ?? '';
  assert.match(
    report,
    /rank 1 \(pid \d+ on [^,]+, stopped by a signal\) has made no step for [4-9] s: last step \d+, then /,
  );
  assert.match(report, /rank 0 \(pid \d+ on [^,]+, \w+\) has made no step for [4-9] s: last step \d+, then /);
  assert.match(run.out, /restarting all workers \(restart 1 of --max-restarts 1\)/);
  assert.match(run.out, /resumed from .*watchdog-ckpt\/ckpt-0000\d\d/);
  const secs = (Date.now() - t0) / 1000;
  t.diagnostic(`watchdog report: ${report}`);
  t.diagnostic(`from SIGSTOP to the end of the restarted run: ${secs.toFixed(1)} s`);
});

test('--watchdog: a rank stuck in its setup, before any step, is found too (was: only --timeout found it)', async () => {
  const t0 = Date.now();
  const run = startTsddp([
    'run',
    ...['--nproc-per-node', '2', '--master-port', '0', '--watchdog', '2', '--max-restarts', '0'],
    'test/workers/train-setup-stall.ts',
  ]);
  const timer = setTimeout(() => run.child.kill('SIGKILL'), 60_000);
  const code = await run.closed;
  clearTimeout(timer);
  assert.notEqual(code, 0, run.out);
  const report = /tsrun: watchdog: (.*); stopping the attempt/.exec(run.out)?.[1] ?? '';
  assert.match(
    report,
    /rank 1 \(pid \d+ on [^,]+, [\w ]+\) has made no step for \d+ s: setup: pre-flight checks, data and model, before its first step/,
    run.out,
  );
  assert.ok(Date.now() - t0 < 25_000, 'found long before the 30 s the rank is stuck for');
});
