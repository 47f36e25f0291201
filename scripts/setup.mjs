#!/usr/bin/env node
// Makes this checkout ready to run: libtorch, Gloo headers, node_modules, and the two
// native addons (docs/architecture.md §3). Runs before `npm ci`, so it may only use node:
// builtins. Idempotent: a stamp in .tsddp/setup.json records what was built from what,
// and a run with nothing to do prints one line and exits without spawning.
//   node scripts/setup.mjs [--rebuild]     (--rebuild: clean build of the addons)
// Env: LIBTORCH (libtorch or torch package folder, wins over python), GLOO_INCLUDE_DIR
// (include root holding gloo/), TSDDP_TORCH_VERSION (pip fallback, default 2.13.0),
// TORCH_CXX11_ABI (0|1, only to override detection for a LIBTORCH folder).
// The installed package uses scripts/install.mjs instead (no apt, no npm ci, a per-user
// torch cache); both share scripts/lib.
import { existsSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ensureAddons, glooIncludeRoot, missingBuildPackages, readStamp } from './lib/addons.mjs';
import { aptInstall, fail, isRoot, onPath, run, SetupError } from './lib/proc.mjs';
import { findTorch, validateTorch } from './lib/torch.mjs';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const REBUILD = process.argv.includes('--rebuild');
const log = (msg) => console.log(`tsddp setup: ${msg}`);
let step = 'start'; // named in the failure message

// ---- Gloo/libjpeg headers and build tools, with apt as root ----
function ensureSystemDeps() {
  const glooRoot = glooIncludeRoot();
  const missing = missingBuildPackages(glooRoot).map((m) => m.pkg);
  if (missing.length === 0) return glooRoot;
  const cmd = `apt-get update && apt-get install -y --no-install-recommends ${missing.join(' ')}`;
  if (!isRoot()) fail(`missing ${missing.join(', ')}; run: sudo sh -c '${cmd}'`);
  log(`installing ${missing.join(' ')} with apt`);
  aptInstall(missing);
  if (!onPath('ccache')) {
    // Only a speed-up: rebuilds after `git checkout` come from the cache.
    try {
      aptInstall(['ccache']);
    } catch (e) {
      log(`ccache not installed (${e.message}); continuing without it`);
    }
  }
  return glooRoot;
}

// ---- Chromium, for the dashboard's browser test (training does not need it) ----
function ensureChromium() {
  const found = ['/usr/bin/chromium', '/usr/bin/chromium-browser'].some((p) => existsSync(p));
  if (process.env.CHROMIUM_PATH || found || onPath('chromium')) return;
  // fonts-liberation is only a Recommends of chromium: without a font the page has no text.
  const pkgs = ['chromium', 'fonts-liberation'];
  const cmd = `apt-get update && apt-get install -y --no-install-recommends ${pkgs.join(' ')}`;
  if (!isRoot()) {
    log(`chromium is missing (the dashboard's browser test needs it); install it with: sudo sh -c '${cmd}'`);
    return;
  }
  log('installing chromium with apt (for the dashboard test)');
  try {
    aptInstall(pkgs);
  } catch (e) {
    log(`chromium not installed (${e.message}); the dashboard test fails until it is: ${cmd}`);
  }
}

// ---- node_modules ----
// npm rewrites node_modules/.package-lock.json on every install: it is the install stamp.
function ensureNodeModules() {
  const hidden = join(ROOT, 'node_modules', '.package-lock.json');
  const lock = join(ROOT, 'package-lock.json');
  const stale =
    !existsSync(join(ROOT, 'node_modules', 'cmake-js', 'package.json')) ||
    !existsSync(hidden) ||
    (existsSync(lock) && statSync(lock).mtimeMs > statSync(hidden).mtimeMs);
  // onnxruntime-node (a devDependency: the ONNX tests) ships its CPU binaries in the
  // package; its install script (run by npm before 11) would fetch optional CUDA ones
  // from outside the npm registry.
  const env = { ...process.env, ONNXRUNTIME_NODE_INSTALL: 'skip' };
  if (stale) run('npm', ['ci', '--no-audit', '--no-fund'], { cwd: ROOT, env });
}

// ---- the Python packages the tests read tsddp's files with ----
// Where .venv is this checkout's own (it holds the torch the addon builds against), the
// tests also check tsddp's files with the other side's own reader: TensorBoard's event
// loader reads SummaryWriter's files (test/tensorboard.test.ts); transformers loads what
// GPT.savePretrained writes and makes the GPT-2 folders live (test/hf-gpt2.test.ts); the
// ONNX checker and onnxruntime check what t.onnx.export writes (test/onnx.test.ts).
// Pinned; without them those tests skip, or read the committed fixtures.
const ORACLES = { tensorboard: '2.21.0', transformers: '5.18.0', onnx: '1.23.1', onnxruntime: '1.30.0' };

function ensureOracles(torch) {
  if (torch.source !== '.venv') return;
  const venv = join(ROOT, '.venv');
  const lib = join(venv, 'lib');
  const sitePackages = readdirSync(lib)
    .filter((d) => d.startsWith('python'))
    .map((d) => join(lib, d, 'site-packages'));
  const missing = Object.entries(ORACLES).filter(
    ([pkg]) => !sitePackages.some((d) => existsSync(join(d, pkg))),
  );
  if (missing.length === 0) return;
  const specs = missing.map(([pkg, version]) => `${pkg}==${version}`);
  log(`pip install ${specs.join(' ')} into .venv (the tests read tsddp's files with it)`);
  try {
    run(join(venv, 'bin', 'python'), ['-m', 'pip', 'install', '--disable-pip-version-check', '-q', ...specs]);
  } catch (e) {
    log(`${specs.join(' ')} not installed (${e.message}); the tests that need it skip`);
  }
}

async function main() {
  const stamp = readStamp(ROOT);
  step = 'libtorch';
  const torch = await findTorch({
    stamp,
    venv: join(ROOT, '.venv'),
    venvSource: '.venv',
    log,
    allowApt: true,
  });
  validateTorch(torch);
  const same = ['Dir', 'Version', 'Source'].every((k) => stamp[`torch${k}`] === torch[k.toLowerCase()]);
  if (!same)
    log(`using torch ${torch.version} from ${torch.source} (${torch.dir}, cxx11 abi ${torch.cxx11Abi})`);
  step = 'system packages';
  const glooRoot = ensureSystemDeps();
  step = 'chromium';
  ensureChromium();
  step = 'npm ci';
  ensureNodeModules();
  step = 'build';
  const { built } = ensureAddons(ROOT, torch, glooRoot, { rebuild: REBUILD, log });
  step = 'test oracles';
  ensureOracles(torch);
  if (!built) log(`up to date (torch ${torch.version} from ${torch.source})`);
}

try {
  await main();
} catch (e) {
  console.error(`tsddp setup: FAILED at step "${step}": ${e instanceof SetupError ? e.message : e.stack}`);
  process.exit(1);
}
