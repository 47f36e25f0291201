// `tsddp report`: a metrics JSONL becomes PNG charts (rendered by sharp, no browser) and an
// HTML page. The PNGs decode at their size and are not blank, the page shows the run's
// numbers, the charts' axes are labelled with round ticks that cover the data, odd data
// (NaN, one point, none) still draws, and bad files fail with a ReportError naming them.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import {
  appendFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import sharp from 'sharp';
import type { EvalRecord, StepRecord } from '../src/metrics/index.ts';
import { barChart, lineChart } from '../src/report/charts.ts';
import { loadMetrics } from '../src/report/load.ts';
import { svgToPng } from '../src/report/png.ts';
import { buildReport, ReportError } from '../src/report/report.ts';
import { PALETTE } from '../src/report/svg.ts';
import { lossChart } from '../src/report/training-charts.ts';
import { train } from '../src/train/trainer.ts';
import { synthRecords, writeRecords } from './fixtures/report/synth.ts';

const tmp = mkdtempSync(join(tmpdir(), 'tsddp-report-'));
after(() => rmSync(tmp, { recursive: true, force: true }));

const CHARTS = ['loss.png', 'accuracy.png', 'throughput.png', 'step-time.png', 'comm.png'];

/** Decodes `file`; checks its size and that it is a picture, not a blank page. Returns its colours. */
async function checkPng(file: string, width = 800, height = 450): Promise<Map<number, number>> {
  const meta = await sharp(file).metadata();
  assert.equal(meta.format, 'png', file);
  assert.deepEqual([meta.width, meta.height], [width, height], file);
  const { data, info } = await sharp(file).removeAlpha().raw().toBuffer({ resolveWithObject: true });
  const colours = new Map<number, number>();
  for (let i = 0; i < data.length; i += info.channels) {
    const c = (data[i] << 16) | (data[i + 1] << 8) | data[i + 2];
    colours.set(c, (colours.get(c) ?? 0) + 1);
  }
  assert.ok(colours.size >= 20, `${file}: only ${colours.size} colours`);
  const white = colours.get(0xffffff) ?? 0;
  assert.ok(
    white < 0.97 * info.width * info.height,
    `${file}: ${white} of ${info.width * info.height} pixels white`,
  );
  return colours;
}

const rgb = (hex: string): number => Number.parseInt(hex.slice(1), 16);

/** The y tick labels of a chart (right-aligned 12px text left of the plot), as numbers. */
function yTicks(svg: string): number[] {
  return [...svg.matchAll(/font-size="12" text-anchor="end" fill="#222">([^<]+)<\/text>/g)].map((m) =>
    Number(m[1].replace(/,/g, '')),
  );
}

/** Ticks a person would draw: evenly spaced by 1, 2 or 5 x 10^k, covering [lo, hi] with no spare step. */
function assertRoundTicks(ticks: number[], lo: number, hi: number): void {
  assert.ok(ticks.length >= 3 && ticks.length <= 11, `ticks ${ticks}`);
  const step = ticks[1] - ticks[0];
  for (let i = 1; i < ticks.length; i++)
    assert.ok(Math.abs(ticks[i] - ticks[i - 1] - step) < step * 1e-6, `${ticks}`);
  const mantissa = step / 10 ** Math.floor(Math.log10(step) + 1e-9);
  assert.ok(
    [1, 2, 5].some((m) => Math.abs(mantissa - m) < 1e-6),
    `step ${step}`,
  );
  assert.ok(ticks[0] <= lo && ticks[0] > lo - step, `first tick ${ticks[0]} for data from ${lo}`);
  const last = ticks[ticks.length - 1];
  assert.ok(last >= hi && last < hi + step, `last tick ${last} for data up to ${hi}`);
}

test('a 2-rank DDP run with a resume: five PNG charts and a page with the run’s numbers', async () => {
  const file = join(tmp, 'ddp', 'metrics.jsonl');
  mkdirSync(join(tmp, 'ddp'));
  const records = synthRecords({ world: 2, resumeAt: 150 });
  writeRecords(file, records);
  const out = join(tmp, 'ddp', 'report');
  const paths = await buildReport(file, out);
  assert.equal(paths.html, join(out, 'report.html'));
  assert.deepEqual(
    paths.charts,
    CHARTS.map((c) => join(out, c)),
  );
  const colours = new Map<string, Map<number, number>>();
  for (const c of paths.charts) colours.set(c, await checkPng(c));
  // The stacked step-time bars are solid blocks of the first four palette colours.
  const bars = colours.get(join(out, 'step-time.png')) as Map<number, number>;
  for (const hex of PALETTE.slice(0, 4))
    assert.ok((bars.get(rgb(hex)) ?? 0) > 100, `${hex} in step-time.png`);

  const html = readFileSync(paths.html, 'utf8');
  for (const c of CHARTS) assert.match(html, new RegExp(`<img src="${c}"`));
  const steps = records.filter((r): r is StepRecord => r.type === 'step');
  const last = steps.filter((s) => s.step === 300);
  const finalLoss = (last[0].loss + last[1].loss) / 2;
  const evals = records.filter((r): r is EvalRecord => r.type === 'eval' && r.rank === 0);
  const best = Math.max(...evals.map((e) => e.top1));
  const row = (k: string, v: string) =>
    assert.ok(html.includes(`<th>${k}</th><td>${v}`), `${k}: ${v}\n${html}`);
  row('World size', '2');
  row('Steps', '300 (resumed at step 150)');
  row('Wall time', '0:43 (43.2 s), since the last resume');
  row('Throughput', '456.7 images/s, all ranks');
  row('Final train loss (step 300)', finalLoss.toFixed(4));
  row('Best validation top-1', `${(100 * best).toFixed(2)}% at step 300`);
  assert.match(html, /resumed at step 150 from <code>ckpt-150<\/code>/);
});

test('the loss chart: labelled axes, smoothing named in the legend, round ticks from 0 over the data', () => {
  const file = join(tmp, 'loss.jsonl');
  const records = synthRecords({ world: 2, resumeAt: 150 });
  writeRecords(file, records);
  const svg = lossChart(loadMetrics(file));
  assert.match(svg, />cross-entropy loss</);
  assert.match(svg, />step</);
  assert.match(svg, />Loss</);
  // 300 steps: a window of 300 / 25 = 12.
  assert.match(svg, />train \(mean of 2 ranks, moving avg of 12 steps\)</);
  assert.match(svg, />validation</);
  assert.match(svg, />resumed at step 150</);
  const evalLoss = records.filter((r): r is EvalRecord => r.type === 'eval').map((e) => e.loss);
  const firstSteps = records
    .filter((r): r is StepRecord => r.type === 'step' && r.step <= 6)
    .map((s) => s.loss);
  // The smoothed curve starts at the mean of the first steps (a centred window at the edge).
  const top = Math.max(...evalLoss, firstSteps.reduce((a, b) => a + b) / firstSteps.length);
  assertRoundTicks(yTicks(svg), 0, top);
});

test('line charts: ticks cover the data, NaN leaves a gap, a lone point is a dot, no data says so', async () => {
  const pts = Array.from({ length: 60 }, (_, i): [number, number] => [i, 1234 + 37 * Math.sin(i / 5)]);
  pts[30][1] = Number.NaN;
  const svg = lineChart({
    title: 'Rate <&>',
    xLabel: 'step',
    yLabel: 'images/s',
    series: [{ name: 'r0', points: pts }],
  });
  assert.equal(svg.match(/<path /g)?.length, 2, 'two segments around the NaN');
  const ys = pts.map((p) => p[1]).filter(Number.isFinite);
  assertRoundTicks(yTicks(svg), Math.min(...ys), Math.max(...ys));
  assert.match(svg, />1,250</, 'thousands separated');
  assert.match(svg, /Rate &#60;&#38;&#62;/);
  await svgToPng(svg, join(tmp, 'edge', 'nan.png'));
  await checkPng(join(tmp, 'edge', 'nan.png'));

  const one = lineChart({
    title: 't',
    xLabel: 'world size',
    yLabel: 'images/s',
    series: [{ name: 'a', points: [[2, 1530]] }],
  });
  assert.equal(one.match(/<circle /g)?.length, 2, 'the dot and its legend swatch');
  assert.doesNotMatch(one, /<path /);
  assert.doesNotMatch(one, />no data</);
  for (const series of [[], [{ name: 'nan', points: [[1, Number.NaN]] as Array<[number, number]> }]]) {
    const empty = lineChart({ title: 'Empty', xLabel: 'x', yLabel: 'y', series, yMin: 0 });
    assert.match(empty, />no data</);
    await svgToPng(empty, join(tmp, 'edge', 'empty.png'));
    await checkPng(join(tmp, 'edge', 'empty.png'));
  }

  const log = lineChart({
    title: 'Comm vs bucket',
    xLabel: 'bucketCapMb (MiB)',
    yLabel: 'ms',
    logX: true,
    yMin: 0,
    series: [
      {
        name: 'tsddp',
        points: [
          [1, 12],
          [5, 9],
          [25, 8.2],
          [100, 8.5],
          [0, 3],
        ],
      },
    ],
  });
  const xLabels = [...log.matchAll(/text-anchor="middle" fill="#222">([\d.,]+)<\/text>/g)].map((m) => m[1]);
  assert.deepEqual(xLabels, ['1', '2', '5', '10', '20', '50', '100']);
  assert.equal(yTicks(log)[0], 0, 'yMin');
});

test('bar charts: stacked totals, grouped bars with n/a, long categories tilted, legend', async () => {
  const stacked = barChart({
    title: 'Step time',
    yLabel: 'ms per step',
    categories: ['rank 0', 'rank 1'],
    series: [
      { name: 'forward', values: [40, 42] },
      { name: 'backward', values: [80, 85.5] },
    ],
    stacked: true,
  });
  assert.match(stacked, />forward</);
  assert.match(stacked, />backward</);
  assert.match(stacked, /font-weight="bold">120</);
  assert.match(stacked, /font-weight="bold">128</);
  assertRoundTicks(yTicks(stacked), 0, 127.5);

  const categories = [
    'scaling: world 1',
    'scaling: world 2',
    'bucket: 25 MiB',
    'a rather long category label',
  ];
  const grouped = barChart({
    title: 'Ratios',
    yLabel: 'ratio',
    categories,
    series: [{ name: 'tsddp / PyTorch', values: [0.95, Number.NaN, 1.02, 0.9] }],
    width: 400,
  });
  assert.match(grouped, />n\/a</);
  assert.match(grouped, /rotate\(-35 /);
  assert.doesNotMatch(grouped, />tsddp \/ PyTorch</, 'one series: no legend');
  await svgToPng(grouped, join(tmp, 'edge', 'bars.png'));
  await checkPng(join(tmp, 'edge', 'bars.png'), 400, 450);
  assert.match(barChart({ title: 'none', yLabel: 'y', categories: [], series: [] }), />no data</);
});

test('one process, no summary: no comm chart (the page says why), throughput estimated from the steps', async () => {
  const file = join(tmp, 'single.jsonl');
  writeRecords(file, synthRecords({ world: 1, comm: false, summary: false, epochs: 1, stepsPerEpoch: 40 }));
  const out = join(tmp, 'single-report');
  mkdirSync(out);
  writeFileSync(join(out, 'comm.png'), 'stale');
  const paths = await buildReport(file, out);
  assert.deepEqual(
    paths.charts,
    CHARTS.slice(0, 4).map((c) => join(out, c)),
  );
  assert.equal(existsSync(join(out, 'comm.png')), false, 'stale comm.png removed');
  for (const c of paths.charts) await checkPng(c);
  const html = readFileSync(paths.html, 'utf8');
  assert.match(html, /no DDP communication recorded/);
  assert.match(html, /<th>World size<\/th><td>1</);
  assert.match(html, /images\/s, all ranks \(from step records\)/);
  assert.match(html, /no summary record/);
});

test('end to end: the metrics of a real (tiny, one-process) training run make a report', async () => {
  const file = join(tmp, 'real', 'metrics.jsonl');
  await train(
    {
      model: 'resnet18',
      widthMultiplier: 0.125,
      imageSize: 16,
      trainSize: 48,
      valSize: 16,
      batchSize: 16,
      epochs: 2,
      augment: false,
      workers: 0,
      metricsFile: file,
    },
    { progress: false },
  );
  const paths = await buildReport(file, join(tmp, 'real', 'report'));
  assert.equal(paths.charts.length, 4, 'no DDP in one process: no comm chart');
  for (const c of paths.charts) await checkPng(c);
  const html = readFileSync(paths.html, 'utf8');
  assert.match(html, /<th>Steps<\/th><td>6</);
  assert.match(html, /<th>Best validation top-1<\/th><td>\d+\.\d\d% at step \d/);
});

test('bad metrics files fail with a ReportError naming the file and the problem; a torn last line is fine', async () => {
  const cases: Array<[string, string | null, RegExp]> = [
    ['missing.jsonl', null, /no such file/],
    ['empty.jsonl', '\n\n', /is empty/],
    ['other.jsonl', '{"epoch":1,"acc":0.5}\n{"foo":2}\n', /not a tsddp metrics file: none of its 2 line/],
    ['text.jsonl', 'step,loss\n1,2.3\n', /not a tsddp metrics file/],
    ['nosteps.jsonl', `${JSON.stringify(synthRecords().at(-1))}\n`, /no step records \(only summary\)/],
    ['nostep.jsonl', '{"type":"step","rank":0,"loss":1}\n', /a step record has no integer step\/rank/],
  ];
  for (const [name, content, problem] of cases) {
    const file = join(tmp, name);
    if (content !== null) writeFileSync(file, content);
    await assert.rejects(buildReport(file, join(tmp, 'bad-out')), (e: Error) => {
      assert.ok(e instanceof ReportError, String(e));
      assert.ok(e.message.startsWith(`${file}: `), e.message);
      assert.match(e.message, problem);
      return true;
    });
  }
  await assert.rejects(buildReport(tmp, join(tmp, 'bad-out')), /is a directory/);
  const torn = join(tmp, 'torn.jsonl');
  writeRecords(torn, synthRecords({ epochs: 1, stepsPerEpoch: 10 }));
  appendFileSync(torn, '{"type":"step","rank":1,"st');
  const paths = await buildReport(torn, join(tmp, 'torn-report'));
  assert.ok(existsSync(paths.html));
});

test('tsddp report prints the paths it wrote (default <metrics dir>/report); exit 2 on a missing file', () => {
  const dir = join(tmp, 'cli');
  mkdirSync(dir);
  const file = join(dir, 'metrics.jsonl');
  writeRecords(file, synthRecords({ epochs: 1, stepsPerEpoch: 20 }));
  const run = spawnSync(process.execPath, ['bin/tsddp.mjs', 'report', file], { encoding: 'utf8' });
  assert.equal(run.status, 0, run.stderr);
  const printed = run.stdout.trim().split('\n');
  assert.deepEqual(printed, [
    join(dir, 'report', 'report.html'),
    ...CHARTS.map((c) => join(dir, 'report', c)),
  ]);
  for (const p of printed) assert.ok(existsSync(p), p);

  const missing = join(dir, 'nope.jsonl');
  const bad = spawnSync(process.execPath, ['bin/tsddp.mjs', 'report', missing, '--out', join(dir, 'x')], {
    encoding: 'utf8',
  });
  assert.equal(bad.status, 2);
  assert.equal(bad.stdout, '');
  assert.match(
    bad.stderr,
    new RegExp(`tsddp report: error: ${missing.replace(/[.]/g, '\\.')}: no such file`),
  );
});

test('tsddp report --out <an existing file>: one error line naming it, exit 2, the file untouched (was: an EEXIST stack trace)', () => {
  const dir = join(tmp, 'out-file');
  mkdirSync(dir);
  const file = join(dir, 'metrics.jsonl');
  writeRecords(file, synthRecords({ epochs: 1, stepsPerEpoch: 5 }));
  const taken = join(dir, 'notes.txt');
  writeFileSync(taken, 'mine\n');
  const run = spawnSync(process.execPath, ['bin/tsddp.mjs', 'report', file, '--out', taken], {
    encoding: 'utf8',
  });
  assert.equal(run.status, 2);
  assert.equal(
    run.stderr,
    `tsddp report: error: ${taken}: exists and is not a folder; give --out a folder for report.html and the charts\n`,
  );
  assert.equal(readFileSync(taken, 'utf8'), 'mine\n');
});

test('an interrupted run left only rank files: tsddp report merges them itself and says so', () => {
  const dir = join(tmp, 'interrupted');
  mkdirSync(dir);
  const file = join(dir, 'm.jsonl');
  // What a 2-rank run killed before rank 0's merge leaves: <file>.rank0, <file>.rank1.
  const records = synthRecords({ world: 2, epochs: 1, stepsPerEpoch: 20 }).filter(
    (r) => r.type !== 'summary',
  );
  for (const rank of [0, 1])
    writeRecords(
      `${file}.rank${rank}`,
      records.filter((r) => r.rank === rank),
    );
  const m = loadMetrics(file);
  assert.deepEqual(m.mergedFrom, [`${file}.rank0`, `${file}.rank1`]);
  assert.equal(m.steps.length, records.filter((r) => r.type === 'step').length);

  const run = spawnSync(process.execPath, ['bin/tsddp.mjs', 'report', file], { encoding: 'utf8' });
  assert.equal(run.status, 0, run.stderr);
  assert.match(
    run.stderr,
    /m\.jsonl is missing \(the run stopped before merging its metrics\); read its rank files .*m\.jsonl\.rank0, .*m\.jsonl\.rank1/,
  );
  assert.ok(existsSync(join(dir, 'report', 'report.html')));
  assert.ok(!existsSync(file), 'the report reads the rank files; it does not write the metrics file');
});
