// The live dashboard: the server alone (SSE replay, live events, static files, loopback
// host check, a busy port), the metric-file tail (partial lines, a restarted file), the
// --dashboard flag, and end to end: a real 2-worker `tsddp train --dashboard` watched in
// headless Chromium while it trains, until it shows 'finished' (screenshot saved).
import assert from 'node:assert/strict';
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { appendFileSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { get, type IncomingMessage } from 'node:http';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { chromium } from 'playwright-core';
import { DashboardError, type DashboardEvent, DashboardServer, MetricsTail } from '../src/dashboard/index.ts';
import { LaunchConfigError, resolveLaunchConfig } from '../src/launch/index.ts';
import type { StepRecord } from '../src/train/index.ts';

const ROOT = new URL('..', import.meta.url).pathname;
/** "type:rank:step" of an event, for comparing sequences. */
const tag = (e: DashboardEvent) => `${e.type}:${'rank' in e ? e.rank : ''}:${'step' in e ? e.step : ''}`;
// Debian's chromium (scripts/setup.mjs installs it as root), or CHROMIUM_PATH.
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const tmp = mkdtempSync(join(tmpdir(), 'tsddp-dashboard-test-'));
after(() => rmSync(tmp, { recursive: true, force: true }));

function step(rank: number, n: number): StepRecord {
  return {
    type: 'step',
    rank,
    epoch: 0,
    step: n,
    loss: 2 - n / 10,
    acc: n / 10,
    lr: 0.1,
    images: 8,
    imagesPerSec: 100 + n,
    dataMs: 1,
    forwardMs: 10,
    backwardMs: 20,
    optimizerMs: 2,
    stepMs: 33,
    liveTensors: 100,
    totalSteps: 10,
    epochs: 1,
    time: Date.now(),
  };
}

/** An HTTP GET with a chosen Host header; resolves with the response (body not read). */
function request(url: string, host?: string): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => {
    get(url, { headers: host ? { host } : {} }, resolve).on('error', reject);
  });
}

async function body(res: IncomingMessage): Promise<string> {
  let s = '';
  for await (const chunk of res) s += chunk;
  return s;
}

/** Collects the SSE `data:` events of a stream from the start; `until` waits for a condition on all so far. */
function sse(res: IncomingMessage) {
  const seen: DashboardEvent[] = [];
  let buf = '';
  let ended = false;
  const waiters = new Set<() => void>();
  const wake = () => {
    for (const w of waiters) w();
  };
  res.on('data', (chunk: Buffer) => {
    buf += chunk;
    for (let i = buf.indexOf('\n\n'); i >= 0; i = buf.indexOf('\n\n')) {
      const data = buf
        .slice(0, i)
        .split('\n')
        .find((l) => l.startsWith('data: '));
      buf = buf.slice(i + 2);
      if (data) seen.push(JSON.parse(data.slice(6)));
    }
    wake();
  });
  res.on('end', () => {
    ended = true;
    wake();
  });
  return {
    seen,
    until(done: (seen: DashboardEvent[]) => boolean): Promise<DashboardEvent[]> {
      return new Promise((resolve, reject) => {
        const check = () => {
          if (done(seen)) resolve(seen);
          else if (ended) reject(new Error(`the stream ended first; seen: ${seen.map(tag).join(' ')}`));
          else return;
          waiters.delete(check);
        };
        waiters.add(check);
        check();
      });
    },
  };
}

test('the server replays its history to a late page, streams live events, and ends streams on close', async () => {
  const server = await DashboardServer.start({ port: 0 });
  assert.match(server.url, /^http:\/\/127\.0\.0\.1:\d+\/$/);
  server.publish({ type: 'job', runId: 'r', worldSize: 2, maxRestarts: 1, metricsFile: 'm', time: 1 });
  for (const s of [1, 2, 3]) server.publish(step(s % 2, s));

  const res = await request(`${server.url}events`);
  assert.equal(res.headers['content-type'], 'text/event-stream');
  const stream = sse(res);
  const replay = await stream.until((seen) => seen.length >= 4);
  assert.deepEqual(replay.map(tag), ['job::', 'step:1:1', 'step:0:2', 'step:1:3']);
  server.publish({ type: 'attempt', attempt: 1, time: 2 });
  const live = await stream.until((seen) => seen.length >= 5);
  assert.deepEqual(live.slice(4), [{ type: 'attempt', attempt: 1, time: 2 }]);

  const page = await request(server.url);
  assert.equal(page.statusCode, 200);
  assert.match(await body(page), /<script src="\/uplot\.js">/);
  const lib = await request(`${server.url}uplot.js`);
  assert.equal(lib.statusCode, 200);
  assert.ok((await body(lib)).includes('uPlot'), 'serves the chart library');
  assert.equal((await request(`${server.url}nope`)).statusCode, 404);
  // A page of another site reaching the port through a rebound DNS name is refused.
  assert.equal((await request(server.url, 'evil.example:80')).statusCode, 403);

  const ended = new Promise<void>((resolve) => res.on('end', resolve));
  await server.close();
  await ended; // the open stream was ended, so nothing keeps the process alive
});

test('the server keeps a bounded history: thinned to every 2nd, 4th, ... step, other events all kept', async () => {
  const server = await DashboardServer.start({ port: 0, maxStepRecords: 10 });
  server.publish({ type: 'job', runId: 'r', worldSize: 1, maxRestarts: 0, metricsFile: 'm', time: 1 });
  for (let s = 1; s <= 40; s++) server.publish(step(0, s));
  const res = await request(`${server.url}events`);
  const replay = await sse(res).until(
    (seen) => seen.length > 0 && tag(seen[seen.length - 1]) === 'step:0:40',
  );
  const steps = replay.flatMap((e) => (e.type === 'step' ? [e.step] : []));
  assert.ok(steps.length <= 10, `${steps.length} step records kept`);
  assert.ok(steps.every((s) => s % 4 === 0) && steps.at(-1) === 40, String(steps));
  assert.equal(replay[0].type, 'job');
  res.destroy();
  await server.close();
});

test('a busy port is a DashboardError naming the address and port', async () => {
  const blocker = createServer();
  await new Promise<void>((r) => blocker.listen(0, '127.0.0.1', r));
  const port = (blocker.address() as { port: number }).port;
  try {
    await assert.rejects(
      DashboardServer.start({ port }),
      (e: unknown) =>
        e instanceof DashboardError && e.message.includes(`127.0.0.1:${port}`) && /in use/.test(e.message),
    );
    // The launcher stops before starting any worker, with that message.
    const r = spawnSync(
      process.execPath,
      ['bin/tsddp.mjs', 'run', '--dashboard', String(port), 'test/workers/launch-env.ts'],
      { cwd: ROOT, encoding: 'utf8', timeout: 30_000 },
    );
    assert.equal(r.status, 1, r.stderr);
    assert.match(
      r.stderr,
      new RegExp(`tsrun: error: cannot serve the dashboard on 127\\.0\\.0\\.1:${port}: .*in use`),
    );
    assert.doesNotMatch(r.stderr, /run id/, 'no worker was started');
  } finally {
    blocker.close();
  }
});

test('--dashboard takes an optional port', () => {
  const script = join(ROOT, 'test/workers/launch-env.ts');
  assert.deepEqual(resolveLaunchConfig(script, [], { dashboard: true }, {}).dashboard, { port: 0 });
  assert.deepEqual(resolveLaunchConfig(script, [], { dashboard: '8080' }, {}).dashboard, { port: 8080 });
  assert.equal(resolveLaunchConfig(script, [], {}, {}).dashboard, undefined);
  assert.throws(
    () => resolveLaunchConfig(script, [], { dashboard: 'x' }, {}),
    (e: unknown) =>
      e instanceof LaunchConfigError && /--dashboard must be an integer in \[0, 65535\]/.test(e.message),
  );
});

test('tsrun --dashboard before the script: a free port, and workers are told where to write metrics', () => {
  const logDir = join(tmp, 'logs');
  const r = spawnSync(
    process.execPath,
    ['bin/tsddp.mjs', 'run', '--dashboard', '--log-dir', logDir, 'test/workers/dashboard-env.ts', '--x', '1'],
    { cwd: ROOT, encoding: 'utf8', timeout: 30_000 },
  );
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stderr, /tsrun: dashboard: http:\/\/127\.0\.0\.1:\d+\/ /);
  const printed = JSON.parse(r.stdout.replace(/^\[rank 0\] /, ''));
  assert.deepEqual(printed, { metricsFile: join(logDir, 'none', 'metrics.jsonl'), argv: ['--x', '1'] });
});

test('the tail reads complete lines, waits for partial ones, and starts over on a restarted file', () => {
  const metrics = join(tmp, 'tail', 'm.jsonl');
  mkdirSync(join(tmp, 'tail'));
  const events: DashboardEvent[] = [];
  const tail = new MetricsTail(metrics, [0, 1], (e) => events.push(e));
  tail.poll(); // no files yet
  const line = (s: number, r = 0) => `${JSON.stringify(step(r, s))}\n`;
  writeFileSync(`${metrics}.rank0`, line(1) + line(2).slice(0, 20));
  writeFileSync(`${metrics}.rank1`, line(1, 1));
  tail.poll();
  assert.deepEqual(events.map(tag), ['step:0:1', 'step:1:1']);
  appendFileSync(`${metrics}.rank0`, `${line(2).slice(20)}not json\n`);
  tail.poll();
  assert.deepEqual(events.slice(2).map(tag), ['step:0:2']);
  // A restart without a checkpoint: the worker removes the file and writes a new one.
  rmSync(`${metrics}.rank0`);
  writeFileSync(`${metrics}.rank0`, line(1));
  tail.close();
  assert.deepEqual(events.slice(3).map(tag), ['truncate:0:', 'step:0:1']);
});

/** Waits for a line matching `re` on the child's stderr. */
function waitForStderr(child: ChildProcess, re: RegExp, log: string[]): Promise<RegExpExecArray> {
  return new Promise((resolve, reject) => {
    const onData = (b: Buffer) => {
      log.push(b.toString());
      const m = re.exec(log.join(''));
      if (m) resolve(m);
    };
    child.stderr?.on('data', onData);
    child.on('exit', (code) => reject(new Error(`exited (${code}) before ${re}:\n${log.join('')}`)));
  });
}

test('a lone `tsddp train --dashboard` (no launcher) streams its steps live, then ends the stream and exits', async () => {
  const metrics = join(tmp, 'single', 'metrics.jsonl');
  const child = spawn(
    process.execPath,
    [
      'bin/tsddp.mjs',
      'train',
      ...'--model resnet18 --width-multiplier 0.125 --image-size 16 --train-size 512 --val-size 16'.split(
        ' ',
      ),
      ...'--batch-size 8 --epochs 1 --workers 0 --log-every 8 --dashboard --metrics-file'.split(' '),
      metrics,
    ],
    { cwd: ROOT, env: { ...process.env, OMP_NUM_THREADS: '1' }, stdio: ['ignore', 'ignore', 'pipe'] },
  );
  const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
  try {
    const log: string[] = [];
    const [, url] = await waitForStderr(child, /tsddp train: dashboard: (http:\/\/127\.0\.0\.1:\d+\/)/, log);
    const res = await request(`${url}events`);
    // Training runs in the main thread; the server, in its own, answers meanwhile (steps
    // arrive every --log-every steps, when the trainer reads their losses).
    const stream = sse(res);
    await stream.until((seen) => seen.some((e) => e.type === 'step'));
    assert.equal(child.exitCode, null, 'a step arrived while the process was still training');
    assert.ok(!stream.seen.some((e) => e.type === 'summary' || e.type === 'end'));
    const all = await stream.until((seen) => seen.some((e) => e.type === 'end'));
    assert.equal(all.filter((e) => e.type === 'step').length, 64);
    assert.deepEqual(all.at(-1), { ...(all.at(-1) as object), type: 'end', status: 'finished', exitCode: 0 });
    assert.equal(await exited, 0, log.join(''));
  } finally {
    if (child.exitCode === null) child.kill('SIGTERM');
  }
});

test('end to end: headless Chromium watches a 2-worker training live until it finishes', async () => {
  assert.ok(
    existsSync(CHROMIUM),
    `no Chromium at ${CHROMIUM}: the dashboard test needs Debian's chromium; install it with ` +
      "`sudo sh -c 'apt-get update && apt-get install -y --no-install-recommends chromium fonts-liberation'` " +
      '(npm run setup does it when run as root), or set CHROMIUM_PATH',
  );
  const metrics = join(tmp, 'e2e', 'metrics.jsonl');
  const started = performance.now();
  const train = spawn(
    process.execPath,
    [
      'bin/tsddp.mjs',
      'train',
      ...'--nproc-per-node 2 --master-port 0 --model resnet18 --width-multiplier 0.125'.split(' '),
      ...'--image-size 16 --train-size 384 --val-size 64 --batch-size 8 --epochs 3 --workers 0'.split(' '),
      ...['--lr', '0.05', '--log-every', '24', '--metrics-file', metrics, '--dashboard'],
    ],
    { cwd: ROOT, env: { ...process.env, OMP_NUM_THREADS: '1' }, stdio: ['ignore', 'ignore', 'pipe'] },
  );
  const exited = new Promise<number | null>((resolve) => train.on('exit', resolve));
  const browser = await chromium.launch({ executablePath: CHROMIUM });
  try {
    const log: string[] = [];
    const [, url] = await waitForStderr(train, /dashboard: (http:\/\/127\.0\.0\.1:\d+\/)/, log);
    const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
    await page.goto(url);
    assert.equal(await page.title(), 'tsddp · live training');
    // Each chart's point count (the page keeps it in data-points).
    const points = async () =>
      Promise.all(
        (await page.locator('[data-chart]').all()).map(async (f) =>
          Number(await f.getAttribute('data-points')),
        ),
      );
    // Browser-side conditions are strings: this project's tsconfig has no DOM types.
    const firstChartPoints = "Number(document.querySelector('[data-chart]').dataset.points)";
    const status = () => page.getAttribute('body', 'data-status');

    // While it trains: the charts have data, and more a moment later.
    await page.waitForFunction(
      `document.body.dataset.status === 'running' && ${firstChartPoints} > 0`,
      undefined,
      {
        timeout: 30_000,
      },
    );
    const first = await points();
    const firstStep = await page.textContent('#step');
    assert.equal(await status(), 'running', 'the first read is taken while training runs');
    await page.waitForFunction(`${firstChartPoints} > ${first[0]}`, undefined, { timeout: 20_000 });
    assert.ok((await points())[0] > first[0]);
    assert.equal((await page.locator('[data-chart] canvas').count()) >= 6, true, 'six uPlot charts drawn');
    assert.equal(await page.textContent('#world'), '2 ranks');

    // The end: 'finished', every step shown, the launcher gone (the server did not keep it).
    await page.waitForSelector('body[data-status="finished"]', { timeout: 40_000 });
    const final = await points();
    assert.ok(
      final.every((n) => n === 72),
      `every chart has all 72 steps: ${final} (first read: ${firstStep})`,
    );
    assert.equal(await page.textContent('#step'), '72 / 72');
    assert.equal(await page.textContent('#epoch'), '3 / 3');
    assert.equal(await page.textContent('#restarts'), '0 / 0');
    assert.match((await page.textContent('#top1')) ?? '', /^\d+\.\d%$/);
    assert.equal(await page.textContent('#eta'), 'done');
    const events = (await page.textContent('#events')) ?? '';
    assert.match(events, /workers started/);
    assert.match(events, /eval at step 72/);
    assert.match(events, /job finished \(exit code 0\)/);
    assert.equal(await exited, 0, log.join(''));

    mkdirSync(join(ROOT, 'test-artifacts'), { recursive: true });
    await page.screenshot({ path: join(ROOT, 'test-artifacts', 'dashboard.png'), fullPage: true });
    console.log(`end to end in ${((performance.now() - started) / 1000).toFixed(1)} s`);
  } finally {
    await browser.close();
    if (train.exitCode === null) train.kill('SIGTERM');
  }
});
