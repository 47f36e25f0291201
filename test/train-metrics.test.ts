// Metrics files (per-rank JSONL merged by rank 0; a resume supersedes the dead attempt's
// later steps) and the progress display (one rewritten line on a terminal, plain lines
// every logEvery steps otherwise).
import assert from 'node:assert/strict';
import { appendFileSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { after, test } from 'node:test';
import {
  formatDuration,
  type MetricRecord,
  MetricsWriter,
  mergeMetrics,
  readJsonLines,
  type StepRecord,
} from '../src/metrics/index.ts';
import { Progress } from '../src/train/progress.ts';

const tmp = mkdtempSync(join(tmpdir(), 'tsddp-train-metrics-'));
after(() => rmSync(tmp, { recursive: true, force: true }));

function step(rank: number, s: number, loss: number): StepRecord {
  return {
    type: 'step',
    rank,
    epoch: 0,
    step: s,
    loss,
    acc: 0,
    lr: 0.1,
    images: 8,
    imagesPerSec: 1,
    dataMs: 0,
    forwardMs: 0,
    backwardMs: 0,
    optimizerMs: 0,
    stepMs: 1,
    liveTensors: 10,
    time: 0,
  };
}

test('rank files merge in step order; a resume drops the dead attempt’s later steps; torn lines are skipped', () => {
  const path = join(tmp, 'm.jsonl');
  const w0 = new MetricsWriter(path, 0, true);
  const w1 = new MetricsWriter(path, 1, true);
  for (let s = 1; s <= 5; s++) {
    w0.write(step(0, s, 10 + s));
    w1.write(step(1, s, 20 + s));
  }
  appendFileSync(`${path}.rank1`, '{"type":"step","rank":1,"st'); // killed mid-write
  appendFileSync(`${path}.rank1`, '\n');
  // The gang restarts from the step-3 checkpoint and redoes steps 4..6.
  for (const w of [new MetricsWriter(path, 0, false), new MetricsWriter(path, 1, false)]) {
    w.write({ type: 'resume', rank: w.rank, step: 3, epoch: 0, checkpoint: 'ckpt-000003', time: 0 });
    for (let s = 4; s <= 6; s++) w.write(step(w.rank, s, 100 * (w.rank + 1) + s));
  }
  const n = mergeMetrics(path, 2);
  const merged = readJsonLines(path);
  assert.equal(n, merged.length);
  const steps = merged.filter((r): r is StepRecord => r.type === 'step');
  assert.deepEqual(
    steps.map((r) => [r.step, r.rank, r.loss]),
    [
      [1, 0, 11],
      [1, 1, 21],
      [2, 0, 12],
      [2, 1, 22],
      [3, 0, 13],
      [3, 1, 23],
      [4, 0, 104],
      [4, 1, 204],
      [5, 0, 105],
      [5, 1, 205],
      [6, 0, 106],
      [6, 1, 206],
    ],
  );
  assert.equal(merged.filter((r: MetricRecord) => r.type === 'resume').length, 2);
  // A fresh run starts the rank file anew.
  new MetricsWriter(path, 0, true).write(step(0, 1, 1));
  assert.equal(readFileSync(`${path}.rank0`, 'utf8').trim().split('\n').length, 1);
});

class Sink extends Writable {
  text = '';
  isTTY = false;
  override _write(chunk: Buffer, _enc: string, cb: () => void): void {
    this.text += chunk;
    cb();
  }
}

const info = (s: number) => ({
  epoch: 0,
  epochs: 2,
  step: s,
  totalSteps: 10,
  loss: s,
  acc: 0.5,
  lr: 0.1,
  images: 64,
});

test('progress: plain lines every logEvery steps (and the last) when not a terminal', () => {
  const out = new Sink();
  const p = new Progress({ out, logEvery: 4 });
  // One step a second (the trainer passes each step's end time).
  for (let s = 1; s <= 10; s++) p.update(info(s), 1000 * s);
  p.log('eval: top-1 50%');
  p.done();
  const lines = out.text.trim().split('\n');
  assert.equal(lines.length, 4);
  // Steps 2-4: 3 x 64 images in 3 s; 6 steps left at 1 s each.
  assert.equal(lines[0], 'epoch 1/2  step 4/10  loss 2.5000  acc 50.0%  lr 0.100  64.0 img/s  ETA 0:06');
  assert.match(lines[1], /step 8\/10 {2}loss 6\.5000/); // mean over the steps since the last line
  assert.match(lines[2], /step 10\/10 {2}loss 9\.5000 .*ETA 0:00/);
  assert.equal(lines[3], 'eval: top-1 50%');
  assert.ok(!out.text.includes('\r'));
});

test('progress: one line rewritten in place on a terminal', () => {
  const out = new Sink();
  out.isTTY = true;
  const p = new Progress({ out, logEvery: 4 });
  p.update(info(1));
  p.log('a message');
  p.update(info(10));
  p.done();
  // Each redraw: carriage return + erase line (ESC [K); a message clears the line first.
  const CLEAR = '\r\u001b[K';
  const parts = out.text.split(CLEAR);
  assert.equal(parts[0], '');
  assert.match(parts[1], /^epoch 1\/2 {2}step 1\/10 /);
  assert.equal(parts[2], 'a message\n');
  assert.match(parts[1], / {2}\[█{2}░{22}\] {2}10%$/);
  assert.match(parts[3], /^epoch 1\/2 {2}step 10\/10 .* {2}\[█{24}\] 100%\n$/);
  assert.equal(parts.length, 4);
  assert.equal(formatDuration(3725), '1:02:05');
  assert.equal(formatDuration(65), '1:05');
});
