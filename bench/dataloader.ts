// DataLoader throughput: images/s of the loader alone — no model — for tsddp and for
// PyTorch's DataLoader (bench/reference/dataloader.py), measured alternately in one run
// (architecture §10), with 0, 1 and 2 workers:
//
//   shapes   Shapes 32x32 (procedural), RandomCrop(32, padding 4) + RandomHorizontalFlip +
//            ToTensor + Normalize, batch 128. PyTorch has no Shapes: its side renders the
//            same drawing with NumPy (reference/dataloader.py: same parameters, 3x3
//            supersampling and noise) and applies torchvision's transforms to a PIL image,
//            as torchvision's CIFAR10 does.
//   folder   ImageFolder of JPEGs (4 classes, --images files of 300-500 px a side, made
//            here once with sharp and shared by both sides), decode + RandomResizedCrop(224)
//            + RandomHorizontalFlip + ToTensor + Normalize(ImageNet), batch 32. PyTorch:
//            PIL decode (torchvision's pil_loader) and torchvision's transforms, or a line
//            by line port of them on PIL + torch where torchvision is not installed.
//
// Each measurement is one epoch (shuffle, non-persistent workers), timed from creating the
// iterator to the last batch, so worker start-up counts as it does at every epoch of a
// non-persistent loader; "steady" leaves out the first batch (start-up included in it).
// Both sides run with OMP_NUM_THREADS=1 (loader workers are single-threaded on both).
//
// Then, to say why the numbers differ: per-image cost of each stage in one thread on both
// sides (decode, each transform, collate), the cost of starting a worker, and — for
// "never the bottleneck of training" — tsddp's ResNet-18 training throughput on this CPU.
//
//   node --import tsx bench/dataloader.ts [--rounds 5] [--images 512] [--workers 0,1,2]
//       [--folder DIR] [--out results.json] [--python PATH] [--no-python] [--no-train]
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import sharp from 'sharp';
import { probeTorchPython, referenceScript, runPythonJson } from '../src/benchmark/reference.ts';
import { fmt, markdownTable, median, type Summary, summarize } from '../src/benchmark/stats.ts';
import { imageAddon, jpegDecoderName } from '../src/data/image-addon.ts';
import { JsonLineProcess } from '../src/host/gang.ts';
import { describeMachine, machineInfo } from '../src/host/machine.ts';
import { pairedRatios } from './lib/abab.ts';
import { intFlag } from './lib/flags.ts';

const { values: opts } = parseArgs({
  options: {
    rounds: { type: 'string', default: '5' },
    images: { type: 'string', default: '512' },
    'shapes-size': { type: 'string', default: '4096' },
    'shapes-batch': { type: 'string', default: '128' },
    'folder-batch': { type: 'string', default: '32' },
    workers: { type: 'string', default: '0,1,2' },
    cases: { type: 'string', default: 'shapes,folder' },
    folder: { type: 'string' },
    seed: { type: 'string', default: '0' },
    out: { type: 'string' },
    python: { type: 'string' },
    impl: { type: 'string', default: 'auto' },
    'no-python': { type: 'boolean', default: false },
    'no-train': { type: 'boolean', default: false },
    'no-breakdown': { type: 'boolean', default: false },
    help: { type: 'boolean', short: 'h', default: false },
  },
});
if (opts.help) {
  console.log(
    'usage: node --import tsx bench/dataloader.ts [--rounds 5] [--images 512] [--workers 0,1,2]\n' +
      '  [--cases shapes,folder] [--shapes-size 4096] [--shapes-batch 128] [--folder-batch 32]\n' +
      '  [--folder DIR] [--seed 0] [--out FILE.json] [--python PATH] [--impl auto|torchvision|pil]\n' +
      '  [--no-python] [--no-train] [--no-breakdown]',
  );
  process.exit(0);
}
const int = intFlag;
const rounds = int('rounds', opts.rounds);
const nImages = int('images', opts.images, 4);
const shapesSize = int('shapes-size', opts['shapes-size']);
const shapesBatch = int('shapes-batch', opts['shapes-batch']);
const folderBatch = int('folder-batch', opts['folder-batch']);
const seed = int('seed', opts.seed, 0);
const workerCounts = (opts.workers ?? '').split(',').map((w) => int('workers', w, 0));
const datasets = (opts.cases ?? '').split(',').filter(Boolean) as ('shapes' | 'folder')[];
for (const d of datasets)
  if (d !== 'shapes' && d !== 'folder') throw new TypeError(`--cases: unknown '${d}'`);
const caseNames = datasets.flatMap((d) => workerCounts.map((w) => `${d}:${w}`));

// Before libtorch (and OpenMP) loads, so the addon and the Python child see the same setting.
process.env.OMP_NUM_THREADS = '1';
const t = await import('../src/index.ts');
t.setNumThreads(1);
const { data } = t;

const log = (line: string): void => {
  process.stderr.write(`${line}\n`);
};

// --- the JPEG folder (made once, reused by later runs) ------------------------------------------

/** A small deterministic generator for the folder's contents (not tsddp's Rng: the files must not change with it). */
function lcg(s: number): () => number {
  let x = s >>> 0;
  return () => {
    x = (Math.imul(x, 1664525) + 1013904223) >>> 0;
    return x / 4294967296;
  };
}

/**
 * `n` JPEGs in 4 class folders: smooth colour fields (a 12x12 random image upscaled)
 * with pixel noise, 300-500 px a side, quality 90 — about 55 KB each, 2.7 bits/pixel,
 * so decoding does the work of a photo rather than of a flat image.
 */
async function makeFolder(root: string, n: number): Promise<void> {
  const rnd = lcg(12345);
  for (let i = 0; i < n; i++) {
    const dir = join(root, `class_${i % 4}`);
    mkdirSync(dir, { recursive: true });
    const w = 300 + Math.floor(rnd() * 201);
    const h = 300 + Math.floor(rnd() * 201);
    const low = Buffer.alloc(12 * 12 * 3);
    for (let k = 0; k < low.length; k++) low[k] = Math.floor(rnd() * 256);
    const px = await sharp(low, { raw: { width: 12, height: 12, channels: 3 } })
      .resize(w, h, { kernel: 'cubic' })
      .raw()
      .toBuffer();
    for (let k = 0; k < px.length; k++) {
      const noise = Math.round((rnd() + rnd() + rnd() - 1.5) * 20);
      px[k] = Math.max(0, Math.min(255, px[k] + noise));
    }
    await sharp(px, { raw: { width: w, height: h, channels: 3 } })
      .jpeg({ quality: 90 })
      .toFile(join(dir, `img_${String(i).padStart(5, '0')}.jpg`));
  }
  writeFileSync(join(root, '.complete'), `${n}\n`);
}

function folderStats(root: string): { files: number; bytes: number } {
  let files = 0;
  let bytes = 0;
  for (const c of readdirSync(root)) {
    const dir = join(root, c);
    if (!statSync(dir).isDirectory()) continue;
    for (const f of readdirSync(dir)) {
      files++;
      bytes += statSync(join(dir, f)).size;
    }
  }
  return { files, bytes };
}

const folder = opts.folder ?? join(tmpdir(), `tsddp-bench-dataloader-jpeg-${nImages}-v1`);
if (datasets.includes('folder') && !existsSync(join(folder, '.complete'))) {
  if (opts.folder) throw new Error(`--folder ${folder}: no such benchmark folder (or not complete)`);
  log(`making ${nImages} JPEGs in ${folder}`);
  rmSync(folder, { recursive: true, force: true });
  await makeFolder(folder, nImages);
}
const folderInfo = datasets.includes('folder') ? folderStats(folder) : { files: 0, bytes: 0 };

// --- tsddp side ---------------------------------------------------------------------------------

const IMAGENET_MEAN = [0.485, 0.456, 0.406];
const IMAGENET_STD = [0.229, 0.224, 0.225];
const shapesTransform = new data.Compose([
  new data.RandomCrop(32, { padding: 4 }),
  new data.RandomHorizontalFlip(),
  new data.ToTensor(),
  new data.Normalize(data.SHAPES_MEAN, data.SHAPES_STD),
]);
const folderTransform = new data.Compose([
  new data.RandomResizedCrop(224),
  new data.RandomHorizontalFlip(),
  new data.ToTensor(),
  new data.Normalize(IMAGENET_MEAN, IMAGENET_STD),
]);
const tsDatasets = {
  shapes: () => ({
    ds: new data.Shapes({ size: shapesSize, imageSize: 32, seed, transform: shapesTransform }),
    batch: shapesBatch,
  }),
  folder: () => ({
    ds: new data.ImageFolder({ root: folder, transform: folderTransform }),
    batch: folderBatch,
  }),
};

interface Measure {
  images: number;
  seconds: number;
  /** Seconds from creating the iterator to the first batch. */
  first_s: number;
}

async function tsRun(name: 'shapes' | 'folder', workers: number, limitBatches = Number.POSITIVE_INFINITY) {
  const { ds, batch } = tsDatasets[name]();
  const loader = new data.DataLoader(ds, { batchSize: batch, shuffle: true, numWorkers: workers, seed });
  let images = 0;
  let first = Number.NaN;
  let batches = 0;
  const t0 = performance.now();
  for await (using b of loader) {
    if (batches++ === 0) first = performance.now() - t0;
    images += (b.image as InstanceType<typeof t.Tensor>).shape[0];
    if (batches >= limitBatches) break;
  }
  const seconds = (performance.now() - t0) / 1000;
  await loader.close();
  return { images, seconds, first_s: first / 1000 } satisfies Measure;
}

async function tsRound(): Promise<Record<string, Measure>> {
  const out: Record<string, Measure> = {};
  for (const c of caseNames) {
    const [name, w] = c.split(':');
    out[c] = await tsRun(name as 'shapes' | 'folder', Number(w));
  }
  return out;
}

// --- PyTorch side: one long-lived Python process answering a request per round -----------------

interface PyInfo {
  torch: string;
  python: string;
  pillow: string;
  numpy: string;
  transforms: string;
  threads: number;
  folder_images: number;
}

const pyArgs = [
  '--folder',
  folder,
  '--shapes-size',
  String(shapesSize),
  '--shapes-batch',
  String(shapesBatch),
  '--folder-batch',
  String(folderBatch),
  '--seed',
  String(seed),
  '--threads',
  '1',
  '--impl',
  opts.impl ?? 'auto',
];
const torchPy = opts['no-python'] ? null : probeTorchPython(opts.python);
if (!torchPy && !opts['no-python']) {
  log(`PyTorch (Python) is not importable from ${opts.python ?? '.venv/bin/python or python3'}: tsddp only.`);
}

// --- rounds: tsddp, then PyTorch, alternately -------------------------------------------------

const machine = machineInfo();
log(
  `dataloader: ${rounds} rounds of [${caseNames.join(', ')}]; folder ${folder} ` +
    `(${folderInfo.files} files, ${fmt(folderInfo.bytes / Math.max(1, folderInfo.files) / 1024)} KB each)`,
);

// The PyTorch side: bench/reference/dataloader.py --serve, one request per line (it exits on EOF).
const pyScript = referenceScript('dataloader.py');
let py: JsonLineProcess<PyInfo> | null = null;
let pyInfo: PyInfo | null = null;
if (torchPy) {
  py = await JsonLineProcess.start<PyInfo>(torchPy.python, [pyScript, ...pyArgs, '--serve'], process.env);
  pyInfo = py.ready;
  log(`PyTorch side: ${torchPy.python} (torch ${pyInfo.torch}), transforms: ${pyInfo.transforms}`);
  if (datasets.includes('folder') && pyInfo.folder_images !== folderInfo.files) {
    throw new Error(
      `PyTorch's ImageFolder found ${pyInfo.folder_images} images, tsddp's ${folderInfo.files}`,
    );
  }
}

// Warm-up (not recorded): JIT, page cache, Python's lazy imports — a few batches per dataset.
for (const d of datasets) await tsRun(d, 0, 3);
if (py) await py.request({ cases: datasets.map((d) => `${d}:0`) });

const values: Record<'tsddp' | 'pytorch', Record<string, Measure[]>> = { tsddp: {}, pytorch: {} };
const push = (side: 'tsddp' | 'pytorch', r: Record<string, Measure>): void => {
  for (const [k, v] of Object.entries(r)) {
    values[side][k] ??= [];
    values[side][k].push(v);
  }
};
for (let r = 0; r < rounds; r++) {
  let t0 = performance.now();
  push('tsddp', await tsRound());
  log(`round ${r + 1}/${rounds} tsddp: ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  if (py) {
    t0 = performance.now();
    push('pytorch', (await py.request<{ cases: Record<string, Measure> }>({ cases: caseNames })).cases);
    log(`round ${r + 1}/${rounds} pytorch: ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  }
}

// --- why: per-stage costs in one thread, and a worker's start-up ---------------------------------

type Breakdown = Record<string, Record<string, number> | number>;

async function tsBreakdown(limit: number): Promise<Breakdown> {
  const files = new data.ImageFolder({ root: folder }).samples.slice(0, limit).map(([p]) => p);
  const rrc = new data.RandomResizedCrop(224);
  const flip = new data.RandomHorizontalFlip();
  const toTensor = new data.ToTensor();
  const norm = new data.Normalize(IMAGENET_MEAN, IMAGENET_STD);
  // What the loader runs: Compose fuses the four into one pass (C++ with tsddp_image.node).
  const fused = new data.Compose([rrc, flip, toTensor, norm]);
  const stages: Record<string, number> = {};
  let fusedMs = 0;
  for (let rep = 0; rep < 2; rep++) {
    fusedMs = 0;
    for (const k of ['decode', 'RandomResizedCrop', 'RandomHorizontalFlip', 'ToTensor', 'Normalize'])
      stages[k] = 0;
    for (const [i, p] of files.entries()) {
      const rng = new data.Rng(seed, i);
      const t0 = performance.now();
      const img = await data.decodeImage(p);
      const t1 = performance.now();
      const a = rrc.apply(img, rng);
      const t2 = performance.now();
      const b = flip.apply(a, rng);
      const t3 = performance.now();
      const c = toTensor.apply(b);
      const t4 = performance.now();
      norm.apply(c);
      const t5 = performance.now();
      fused.apply(img, new data.Rng(seed, i));
      fusedMs += performance.now() - t5;
      stages.decode += t1 - t0;
      stages.RandomResizedCrop += t2 - t1;
      stages.RandomHorizontalFlip += t3 - t2;
      stages.ToTensor += t4 - t3;
      stages.Normalize += t5 - t4;
    }
  }
  for (const k of Object.keys(stages)) stages[k] /= files.length;
  fusedMs /= files.length;
  // The decoder's fixed cost per call: a 16x16 JPEG, decoded the same way.
  const tiny = await sharp(Buffer.alloc(16 * 16 * 3, 128), { raw: { width: 16, height: 16, channels: 3 } })
    .jpeg()
    .toBuffer();
  const tinyPath = join(tmpdir(), `tsddp-bench-tiny-${process.pid}.jpg`);
  writeFileSync(tinyPath, tiny);
  for (let i = 0; i < 20; i++) await data.decodeImage(tinyPath);
  let t0 = performance.now();
  for (let i = 0; i < 200; i++) await data.decodeImage(tinyPath);
  const tinyMs = (performance.now() - t0) / 200;
  rmSync(tinyPath, { force: true });
  // The decode stage above awaits each decode on libuv's pool in turn, so it includes the
  // hand-off to a pool thread and back; the loader overlaps that with the transforms. The
  // CPU cost of the decode itself: libjpeg-turbo called synchronously.
  const addon = imageAddon();
  let syncDecodeMs = Number.NaN;
  if (addon) {
    const bytes = files.map((p) => readFileSync(p));
    const t1 = performance.now();
    for (const b of bytes) addon.decodeJpeg(b);
    syncDecodeMs = (performance.now() - t1) / bytes.length;
  }

  const shapes = new data.Shapes({ size: shapesSize, imageSize: 32, seed });
  const n = Math.min(limit * 4, shapesSize);
  const s0 = performance.now();
  const arrays = Array.from({ length: n }, (_, i) => shapes.render(i));
  const s1 = performance.now();
  for (const [i, a] of arrays.entries()) shapesTransform.apply(a, new data.Rng(seed, i));
  const s2 = performance.now();

  const samples = Array.from({ length: 32 }, () => ({
    image: { data: new Float32Array(3 * 224 * 224), shape: [3, 224, 224] },
    label: 0,
  }));
  t0 = performance.now();
  for (let i = 0; i < 10; i++) data.defaultCollate(samples);
  const collateMs = (performance.now() - t0) / 10 / 32;
  return {
    folder: stages,
    decode_16x16_ms: tinyMs,
    decode_sync_ms: syncDecodeMs,
    fused_transforms_ms: fusedMs,
    shapes: { render: (s1 - s0) / n, transforms: (s2 - s1) / n },
    collate_224_per_image_ms: collateMs,
  };
}

/** Seconds for one epoch of a 1-sample dataset with one worker: starting and stopping a worker. */
async function tsWorkerStart(): Promise<number> {
  const xs: number[] = [];
  for (let i = 0; i < 5; i++) {
    const loader = new data.DataLoader(new data.Shapes({ size: 1, imageSize: 8 }), { numWorkers: 1 });
    const t0 = performance.now();
    for await (using _ of loader);
    xs.push((performance.now() - t0) / 1000);
  }
  return median(xs);
}

let tsBd: Breakdown | null = null;
let pyBd: Breakdown | null = null;
let tsStart = Number.NaN;
let pyStart = Number.NaN;
if (!opts['no-breakdown'] && datasets.includes('folder')) {
  log('per-stage breakdown');
  tsBd = await tsBreakdown(128);
  tsStart = await tsWorkerStart();
  if (py) {
    await py.close();
    py = null;
    const parsed = runPythonJson<{ breakdown: Breakdown & { worker_start_s?: number } }>(
      torchPy!.python,
      pyScript,
      [...pyArgs, '--breakdown', '--breakdown-images', '128'],
      process.env,
    );
    pyBd = parsed.breakdown;
    pyStart = Number(pyBd.worker_start_s ?? Number.NaN);
  }
}
await py?.close();

// --- training throughput, for "the loader is never the bottleneck" ----------------------------

interface TrainMeasure {
  model: string;
  batch: number;
  threads: number;
  imgPerS: number;
}

function trainThroughput(
  stem: 'cifar' | 'imagenet',
  size: number,
  batch: number,
  steps: number,
): TrainMeasure {
  const threads = availableParallelism();
  t.setNumThreads(threads);
  try {
    t.manualSeed(0);
    const model = t.models.resnet18({ numClasses: 10, stem });
    const opt = new t.optim.SGD(model.parameters(), { lr: 0.01, momentum: 0.9 });
    const x = t.randn([batch, 3, size, size]).keep();
    const y = t.randint(10, [batch], { dtype: 'int64' }).keep();
    const step = (): void => {
      using _ = t.scope();
      opt.zeroGrad();
      t.crossEntropy(model.call(x), y).backward();
      opt.step();
    };
    step(); // warm-up: allocator, first-call dispatch
    const t0 = performance.now();
    for (let i = 0; i < steps; i++) step();
    const s = (performance.now() - t0) / 1000;
    x.dispose();
    y.dispose();
    return {
      model: `ResNet-18 (${stem} stem) ${size}x${size}`,
      batch,
      threads,
      imgPerS: (steps * batch) / s,
    };
  } finally {
    t.setNumThreads(1);
  }
}

const train: Record<string, TrainMeasure> = {};
if (!opts['no-train']) {
  log('training throughput (ResNet-18, all cores)');
  if (datasets.includes('shapes')) train.shapes = trainThroughput('cifar', 32, 64, 3);
  if (datasets.includes('folder')) train.folder = trainThroughput('imagenet', 224, 16, 2);
}

// --- report -------------------------------------------------------------------------------------

interface CaseResult {
  tsddp: { imgPerS: Summary; steadyImgPerS: Summary; firstBatchMs: Summary };
  pytorch: { imgPerS: Summary; steadyImgPerS: Summary; firstBatchMs: Summary } | null;
  /** Per-round tsddp img/s / PyTorch img/s (above 1: tsddp is faster). */
  speedRatio: Summary | null;
}

const rate = (m: Measure): number => m.images / m.seconds;
const steady = (m: Measure, batch: number): number =>
  m.images > batch ? (m.images - batch) / (m.seconds - m.first_s) : Number.NaN;
const summarizeSide = (ms: Measure[], batch: number) => ({
  imgPerS: summarize(ms.map(rate)),
  steadyImgPerS: summarize(ms.map((m) => steady(m, batch))),
  firstBatchMs: summarize(ms.map((m) => m.first_s * 1000)),
});

const results: Record<string, CaseResult> = {};
for (const c of caseNames) {
  const batch = c.startsWith('shapes') ? shapesBatch : folderBatch;
  const ts = values.tsddp[c];
  const pyv = values.pytorch[c];
  results[c] = {
    tsddp: summarizeSide(ts, batch),
    pytorch: pyv ? summarizeSide(pyv, batch) : null,
    speedRatio: pyv ? summarize(pairedRatios(ts.map(rate), pyv.map(rate))) : null,
  };
}

const label = (c: string): [string, string] => {
  const [d, w] = c.split(':');
  return [
    d === 'shapes' ? `Shapes 32x32, batch ${shapesBatch}` : `ImageFolder JPEG → 224, batch ${folderBatch}`,
    w,
  ];
};
const header = [
  `Machine: ${describeMachine(machine, { load: true })}`,
  `tsddp: libtorch ${t.buildInfo().torchVersion}, JPEG decoder ${jpegDecoderName()}, sharp ${sharp.versions.sharp} ` +
    `(libvips ${sharp.versions.vips}, concurrency ${sharp.concurrency()})` +
    (pyInfo
      ? ` · PyTorch: torch ${pyInfo.torch}, Python ${pyInfo.python}, Pillow ${pyInfo.pillow}, transforms: ${pyInfo.transforms}`
      : ' · PyTorch: not run'),
  `OMP_NUM_THREADS=1${process.env.GLIBC_TUNABLES ? `, GLIBC_TUNABLES=${process.env.GLIBC_TUNABLES}` : ''} · ${rounds} alternating rounds (tsddp, then PyTorch), one epoch per measurement, medians · ` +
    `Shapes: ${shapesSize} images; ImageFolder: ${folderInfo.files} JPEGs, 300-500 px, ` +
    `${fmt(folderInfo.bytes / Math.max(1, folderInfo.files) / 1024)} KB each`,
];
const rows = caseNames.map((c) => {
  const r = results[c];
  return [
    ...label(c),
    fmt(r.tsddp.imgPerS.median),
    r.pytorch ? fmt(r.pytorch.imgPerS.median) : '—',
    r.speedRatio ? `${fmt(r.speedRatio.median, 2)}x` : '—',
    fmt(r.tsddp.steadyImgPerS.median),
    r.pytorch ? fmt(r.pytorch.steadyImgPerS.median) : '—',
    fmt(r.tsddp.firstBatchMs.median),
    r.pytorch ? fmt(r.pytorch.firstBatchMs.median) : '—',
  ];
});

console.log(header.join('\n'));
console.log();
console.log(
  markdownTable(
    [
      'dataset',
      'workers',
      'tsddp img/s',
      'PyTorch img/s',
      'tsddp / PyTorch',
      'tsddp steady',
      'PyTorch steady',
      'tsddp 1st batch ms',
      'PyTorch 1st batch ms',
    ],
    rows,
  ),
);
console.log();
console.log(
  'img/s: images / epoch time (worker start-up included), median over rounds; tsddp / PyTorch: median of ' +
    'per-round speed ratios (above 1.0x: tsddp faster). steady: after the first batch. 1st batch: ' +
    'from creating the iterator.',
);

if (tsBd) {
  const f = tsBd.folder as Record<string, number>;
  const pf = pyBd?.folder as Record<string, number> | undefined;
  const bdRows = Object.keys(f).map((k) => [
    k,
    fmt(f[k]),
    pf ? fmt(pf[k]) : '—',
    pf ? `${fmt(f[k] / pf[k], 2)}x` : '—',
  ]);
  const total = (o: Record<string, number>) => Object.values(o).reduce((a, b) => a + b, 0);
  bdRows.push([
    'total per image',
    fmt(total(f)),
    pf ? fmt(total(pf)) : '—',
    pf ? `${fmt(total(f) / total(pf), 2)}x` : '—',
  ]);
  const pyChain = pf
    ? pf.RandomResizedCrop + pf.RandomHorizontalFlip + pf.ToTensor + pf.Normalize
    : undefined;
  const fusedMs = tsBd.fused_transforms_ms as number;
  bdRows.push([
    'the four transforms fused (the loader path)',
    fmt(fusedMs),
    pyChain ? `${fmt(pyChain)} (the four)` : '—',
    pyChain ? `${fmt(fusedMs / pyChain, 2)}x` : '—',
  ]);
  const ts = tsBd.shapes as Record<string, number>;
  const ps = pyBd?.shapes as Record<string, number> | undefined;
  bdRows.push([
    'Shapes: render 32x32',
    fmt(ts.render),
    ps ? fmt(ps.render) : '—',
    ps ? `${fmt(ts.render / ps.render, 2)}x` : '—',
  ]);
  bdRows.push([
    'Shapes: transforms',
    fmt(ts.transforms),
    ps ? fmt(ps.transforms) : '—',
    ps ? `${fmt(ts.transforms / ps.transforms, 2)}x` : '—',
  ]);
  const tc = tsBd.collate_224_per_image_ms as number;
  const pc = pyBd?.collate_224_per_image_ms as number | undefined;
  bdRows.push([
    'collate 3x224x224 float32',
    fmt(tc),
    pc !== undefined ? fmt(pc) : '—',
    pc ? `${fmt(tc / pc, 2)}x` : '—',
  ]);
  bdRows.push([
    'decode, synchronous (libjpeg-turbo CPU time)',
    fmt(tsBd.decode_sync_ms as number),
    pf ? fmt(pf.decode) : '—',
    pf ? `${fmt((tsBd.decode_sync_ms as number) / pf.decode, 2)}x` : '—',
  ]);
  bdRows.push([
    'decode a 16x16 JPEG (fixed cost)',
    fmt(tsBd.decode_16x16_ms as number),
    fmt(Number(pyBd?.decode_16x16_ms)),
    '',
  ]);
  bdRows.push(['start + stop 1 worker (ms)', fmt(tsStart * 1000), fmt(pyStart * 1000), '']);
  console.log();
  console.log('Per-image cost of each stage, one thread, in-process (ms; folder stages over 128 JPEGs):');
  console.log();
  console.log(markdownTable(['stage', 'tsddp ms', 'PyTorch ms', 'ratio'], bdRows));
}
if (Object.keys(train).length > 0) {
  console.log();
  for (const [d, m] of Object.entries(train)) {
    const best = Math.max(...workerCounts.map((w) => results[`${d}:${w}`].tsddp.steadyImgPerS.median));
    console.log(
      `Training for scale: ${m.model}, batch ${m.batch}, ${m.threads} threads: ${fmt(m.imgPerS)} img/s ` +
        `(tsddp's loader, best steady rate above: ${fmt(best)} img/s, ${fmt(best / m.imgPerS, 2)}x the training rate).`,
    );
  }
}
if (py === null && !torchPy) console.log('\nPyTorch (Python) was not importable: tsddp numbers only.');
if (pyInfo && !/^torchvision/.test(pyInfo.transforms)) {
  console.log(`\nPyTorch side without torchvision: ${pyInfo.transforms} (bench/reference/dataloader.py).`);
}

if (opts.out) {
  const json = {
    benchmark: 'dataloader',
    date: new Date().toISOString(),
    machine,
    tsddp: {
      libtorch: t.buildInfo().torchVersion,
      jpegDecoder: jpegDecoderName(),
      sharp: sharp.versions.sharp,
      vips: sharp.versions.vips,
    },
    pytorch: pyInfo ? { ...pyInfo, interpreter: torchPy?.python } : null,
    settings: { rounds, shapesSize, shapesBatch, folderBatch, folder, folderInfo, seed, workerCounts },
    unit: 'images per second',
    cases: results,
    raw: values,
    breakdown: { tsddp: tsBd, pytorch: pyBd, workerStartS: { tsddp: tsStart, pytorch: pyStart } },
    train,
  };
  writeFileSync(opts.out, `${JSON.stringify(json, null, 2)}\n`);
  log(`wrote ${opts.out}`);
}
