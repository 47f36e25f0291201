// The dashboard page: applies the server's events (metric records and launcher events,
// see src/dashboard/events.ts) to a small state, and redraws the cards and uPlot charts at
// most a few times a second. The server replays the whole history on every (re)connect,
// so the state starts empty each time the stream opens.
/* global uPlot */

const MAX_POINTS = 5000; // per series; past it, only every 2nd, 4th, ... step is kept
const PALETTE = ['#4e9af1', '#f28e2b', '#59a14f', '#e15759', '#b07aa1', '#edc948', '#76b7b2', '#ff9da7'];
const rankColor = (r) => (r < PALETTE.length ? PALETTE[r] : `hsl(${(r * 47) % 360} 65% 60%)`);
const $ = (id) => document.getElementById(id);

let state;
function reset() {
  state = { job: null, attempt: -1, failures: 0, end: null, ranks: new Map(), evals: new Map(), stride: 1 };
  $('events').replaceChildren();
}

// ---- events ----
function apply(e) {
  switch (e.type) {
    case 'job':
      state.job = e;
      note(e.time, `job ${e.runId}: world size ${e.worldSize}, metrics in ${e.metricsFile}`);
      break;
    case 'attempt':
      state.attempt = e.attempt;
      note(e.time, e.attempt === 0 ? 'workers started' : `restart ${e.attempt}: workers started again`);
      break;
    case 'failure':
      state.failures++;
      note(e.time, `attempt ${e.attempt} failed`, e.summary);
      break;
    case 'truncate':
      state.ranks.get(e.rank)?.clear();
      break;
    case 'resume':
      for (const [step] of rankSteps(e.rank)) if (step > e.step) rankSteps(e.rank).delete(step);
      for (const [step] of state.evals) if (step > e.step) state.evals.delete(step);
      note(e.time, `rank ${e.rank} resumed at step ${e.step} from ${e.checkpoint}`);
      break;
    case 'step':
      if (e.step % state.stride === 0) rankSteps(e.rank).set(e.step, e);
      if (rankSteps(e.rank).size > MAX_POINTS) thin();
      break;
    case 'eval':
      if (!state.evals.has(e.step))
        note(e.time, `eval at step ${e.step}: loss ${e.loss.toFixed(4)}, top-1 ${pct(e.top1)}`);
      state.evals.set(e.step, e);
      break;
    case 'summary':
      break;
    case 'end':
      state.end = e;
      note(e.time, `job ${e.status} (exit code ${e.exitCode})`);
      break;
  }
  dirty();
}

function rankSteps(rank) {
  let m = state.ranks.get(rank);
  if (m === undefined) {
    m = new Map();
    state.ranks.set(rank, m);
  }
  return m;
}

// Keeps every rank's points aligned on the same steps (multiples of the stride).
function thin() {
  state.stride *= 2;
  for (const m of state.ranks.values()) for (const step of m.keys()) if (step % state.stride) m.delete(step);
}

function note(time, text, detail) {
  const li = document.createElement('li');
  const when = document.createElement('time');
  when.textContent = new Date(time).toLocaleTimeString([], { hour12: false });
  li.append(when, ` ${text}`);
  if (detail) {
    const pre = document.createElement('pre');
    pre.textContent = detail;
    li.append(pre);
  }
  $('events').prepend(li);
}

// ---- numbers ----
const pct = (v) => `${(100 * v).toFixed(1)}%`;
const mean = (xs) => (xs.length === 0 ? null : xs.reduce((a, b) => a + b, 0) / xs.length);
function duration(sec) {
  if (!Number.isFinite(sec) || sec < 0) return '–';
  const s = Math.round(sec);
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const ss = String(s % 60).padStart(2, '0');
  return h > 0 ? `${h}:${String(m).padStart(2, '0')}:${ss}` : `${m}:${ss}`;
}

/** The latest step records of each rank (last `n`). */
function recent(n) {
  return [...state.ranks.values()].map((m) => [...m.values()].slice(-n)).filter((rs) => rs.length > 0);
}

function status() {
  if (state.end) return state.end.status;
  if (state.job === null) return 'connecting';
  const restarting = state.failures > 0 && state.failures > state.attempt;
  if (restarting) return 'restarting';
  return recent(1).length > 0 ? 'running' : 'starting';
}

// ---- cards ----
function renderCards() {
  const st = status();
  document.body.dataset.status = st;
  $('status').textContent = st;
  $('status').className = `pill ${st}`;
  const job = state.job;
  // torchrun's default run id 'none' (and a lone process's 'local') say nothing.
  $('run').textContent = job && job.runId !== 'none' && job.runId !== 'local' ? `run ${job.runId}` : '';
  $('world').textContent = job ? `${job.worldSize} rank${job.worldSize === 1 ? '' : 's'}` : '–';
  const max = job ? job.maxRestarts : 0;
  $('restarts').textContent = state.attempt < 0 ? '–' : `${state.attempt} / ${max}`;
  const last = recent(1).map((rs) => rs[0]);
  const head = last.reduce((a, b) => (a === null || b.step > a.step ? b : a), null);
  if (head) {
    const total = head.totalSteps;
    $('step').textContent = total ? `${head.step} / ${total}` : String(head.step);
    $('progress').style.width = total ? `${(100 * head.step) / total}%` : '0';
    $('epoch').textContent = head.epochs ? `${head.epoch + 1} / ${head.epochs}` : String(head.epoch + 1);
  }
  const rates = recent(10).map((rs) => mean(rs.map((r) => r.imagesPerSec)));
  $('throughput').textContent = rates.length ? Math.round(rates.reduce((a, b) => a + b, 0)).toString() : '–';
  const evals = [...state.evals.values()];
  $('top1').textContent = evals.length ? pct(evals.at(-1).top1) : '–';
  $('eta').textContent = state.end ? (state.end.status === 'finished' ? 'done' : '–') : eta(head);
  renderElapsed();
}

function eta(head) {
  if (!head?.totalSteps) return '–';
  const rs = [...rankSteps(head.rank).values()].slice(-20);
  if (rs.length < 2) return '–';
  const secPerStep = (rs.at(-1).time - rs[0].time) / 1000 / (rs.at(-1).step - rs[0].step);
  return duration((head.totalSteps - head.step) * secPerStep);
}

function renderElapsed() {
  if (!state.job) return;
  const until = state.end ? state.end.time : Date.now();
  $('elapsed').textContent = duration((until - state.job.time) / 1000);
}

// ---- charts ----
const axisStyle = { stroke: '#9aa4b2', grid: { stroke: 'rgba(255,255,255,0.07)' }, ticks: { show: false } };
const charts = new Map();

function chart(name, series, opts = {}) {
  const fig = document.querySelector(`[data-chart="${name}"]`);
  let c = charts.get(name);
  const key = series.map((s) => s.label).join('|');
  if (c && c.key !== key) {
    c.plot.destroy();
    c = undefined;
  }
  if (c === undefined) {
    const plot = new uPlot(
      {
        width: fig.clientWidth - 24,
        height: 210,
        scales: { x: { time: false }, ...opts.scales },
        axes: [{ ...axisStyle }, { ...axisStyle, size: 56, ...opts.y }],
        series: [
          { label: 'step' },
          ...series.map(({ data, ...s }) => ({
            width: 1.5,
            spanGaps: true,
            value: fixed(opts.digits ?? 1),
            ...s,
          })),
        ],
        legend: { live: true },
        // Away from the cursor, the legend shows the latest values.
        hooks: { setCursor: [(u) => u.cursor.idx == null && showLatest(u)] },
        cursor: { drag: { x: true, y: false } },
      },
      [[]],
      fig,
    );
    c = { plot, key };
    charts.set(name, c);
  }
  return c.plot;
}

function draw(name, xs, series, opts) {
  const plot = chart(name, series, opts);
  plot.setData([xs, ...series.map((s) => s.data)]);
  if (plot.cursor.idx == null) showLatest(plot);
  document.querySelector(`[data-chart="${name}"]`).dataset.points = String(xs.length);
}

const fixed = (digits) => (_u, v) => (v == null ? '–' : v.toFixed(digits));

function showLatest(plot) {
  const n = plot.data[0].length;
  if (n > 0) plot.setLegend({ idx: n - 1 });
}

function renderCharts() {
  const ranks = [...state.ranks.keys()].sort((a, b) => a - b);
  const steps = new Set();
  for (const m of state.ranks.values()) for (const s of m.keys()) steps.add(s);
  for (const s of state.evals.keys()) steps.add(s);
  const xs = [...steps].sort((a, b) => a - b);
  const col = (rank, f) => xs.map((s) => f(state.ranks.get(rank).get(s)));
  const across = (f) =>
    xs.map((s) =>
      mean(
        ranks
          .map((r) => state.ranks.get(r).get(s))
          .filter((x) => x !== undefined && f(x) != null)
          .map(f),
      ),
    );
  const val = (f) => (rec) => (rec === undefined ? null : (f(rec) ?? null));
  const perRank = (f) =>
    ranks.map((r) => ({ label: `rank ${r}`, stroke: rankColor(r), data: col(r, val(f)) }));
  const evalOf = (f) => xs.map((s) => (state.evals.has(s) ? f(state.evals.get(s)) : null));
  const evalStyle = { stroke: '#ffffff', width: 2, dash: [4, 4], points: { show: true, size: 7 } };

  draw(
    'throughput',
    xs,
    perRank((r) => r.imagesPerSec),
    { digits: 0 },
  );
  const evalLoss = { label: 'eval', ...evalStyle, data: evalOf((e) => e.loss) };
  draw('loss', xs, [...perRank((r) => r.loss), evalLoss], { digits: 3 });
  draw(
    'accuracy',
    xs,
    [
      {
        label: 'train',
        stroke: '#4e9af1',
        data: across((r) => r.acc).map((v) => (v === null ? null : 100 * v)),
      },
      { label: 'eval top-1', ...evalStyle, data: evalOf((e) => 100 * e.top1) },
    ],
    { scales: { y: { range: [0, 100] } }, y: { values: (_, ts) => ts.map((t) => `${t}%`) } },
  );
  drawStacked(xs, across);
  draw('comm', xs, [
    { label: 'all-reduce', stroke: '#e15759', data: across((r) => r.commMs) },
    { label: 'overlap', stroke: '#59a14f', data: across((r) => r.overlapMs) },
    { label: 'backward', stroke: '#9aa4b2', dash: [3, 3], data: across((r) => r.backwardMs) },
  ]);
  const lr = {
    label: 'lr',
    stroke: '#edc948',
    data: across((r) => r.lr),
    value: (_u, v) => v?.toPrecision(3) ?? '–',
  };
  draw('lr', xs, [lr], {
    y: { values: (_, ts) => ts.map((t) => t.toPrecision(2)) },
  });
}

// Stacked areas, painted top part first: each series is the sum of itself and the parts
// below it, and shows its own value in the legend.
// The parts' own values; the chart keeps the legend functions of its first drawing.
let stackParts = [];
function drawStacked(xs, across) {
  const parts = [
    ['data', '#76b7b2', (r) => r.dataMs],
    ['forward', '#4e9af1', (r) => r.forwardMs],
    ['backward', '#f28e2b', (r) => r.backwardMs],
    ['optimizer', '#b07aa1', (r) => r.optimizerMs],
  ];
  const raw = parts.map(([, , f]) => across(f));
  stackParts = raw;
  let sum = xs.map(() => 0);
  const stacked = raw.map((col) => {
    sum = sum.map((v, i) => (col[i] === null ? v : v + col[i]));
    return sum;
  });
  const series = parts
    .map(([label, color], i) => ({
      label,
      stroke: color,
      fill: color,
      data: stacked[i],
      value: (_u, _v, _si, idx) => stackParts[i][idx]?.toFixed(1) ?? '–',
    }))
    .reverse();
  draw('time', xs, series);
}

// ---- loop ----
let pending = false;
function dirty() {
  if (pending) return;
  pending = true;
  setTimeout(() => {
    pending = false;
    renderCards();
    renderCharts();
  }, 150);
}

addEventListener('resize', () => {
  for (const [name, c] of charts) {
    const fig = document.querySelector(`[data-chart="${name}"]`);
    c.plot.setSize({ width: fig.clientWidth - 24, height: 210 });
  }
});
setInterval(renderElapsed, 1000);

reset();
const source = new EventSource('/events');
source.onopen = () => {
  reset();
  dirty();
};
source.onmessage = (m) => {
  const e = JSON.parse(m.data);
  apply(e);
  if (e.type === 'end') source.close();
};
source.onerror = () => {
  if (state.end) return;
  document.body.dataset.status = 'disconnected';
  $('status').textContent = 'disconnected';
  $('status').className = 'pill disconnected';
};
