#!/usr/bin/env node
// Makes this checkout ready to run: libtorch, Gloo headers, node_modules, and the
// native addon (DESIGN.md section 3). Runs before `npm ci`, so it may only use node:
// builtins. Idempotent: a stamp in .tsddp/setup.json records what was built from
// what, and a run with nothing to do prints one line and exits without spawning.
//   node scripts/setup.mjs [--rebuild]     (--rebuild: clean build of the addon)
// Env: LIBTORCH (libtorch or torch package folder, wins over python), GLOO_INCLUDE_DIR
// (include root holding gloo/), TSDDP_TORCH_VERSION (pip fallback, default 2.13.0),
// TORCH_CXX11_ABI (0|1, only to override detection for a LIBTORCH folder).
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { delimiter, dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const STAMP = join(ROOT, '.tsddp', 'setup.json');
const ADDON = join(ROOT, 'native', 'build', 'Release', 'tsddp.node');
const IMAGE_ADDON = join(ROOT, 'native', 'build', 'Release', 'tsddp_image.node');
const VENV = join(ROOT, '.venv');
const MIN_TORCH = [2, 4];
// Bump when the build command below changes, so existing checkouts rebuild.
const RECIPE = 1;
const REBUILD = process.argv.includes('--rebuild');
const log = (msg) => console.log(`tsddp setup: ${msg}`);

let step = 'start'; // named in the failure message
class SetupError extends Error {}
const fail = (msg) => {
  throw new SetupError(msg);
};

// ---- small process helpers ----
function run(cmd, args, opts = {}) {
  const r = spawnSync(cmd, args, { stdio: 'inherit', cwd: ROOT, ...opts });
  if (r.error) fail(`cannot run ${cmd}: ${r.error.message}`);
  if (r.status !== 0) fail(`\`${[cmd, ...args].join(' ')}\` exited with ${r.status ?? r.signal}`);
}
function capture(cmd, args) {
  const r = spawnSync(cmd, args, { cwd: ROOT, encoding: 'utf8' });
  return { ok: !r.error && r.status === 0, out: r.stdout ?? '', err: r.stderr || r.error?.message || '' };
}
const onPath = (name) =>
  (process.env.PATH ?? '').split(delimiter).some((d) => d && existsSync(join(d, name)));
const isRoot = () => process.getuid?.() === 0;
const sha256 = (data) => createHash('sha256').update(data).digest('hex');

// ---- stamp ----
function readStamp() {
  try {
    return JSON.parse(readFileSync(STAMP, 'utf8'));
  } catch {
    return {};
  }
}
function writeStamp(stamp) {
  mkdirSync(dirname(STAMP), { recursive: true });
  writeFileSync(STAMP, `${JSON.stringify(stamp, null, 2)}\n`);
}

// ---- step 1: libtorch ----
const atLeastMin = (v) => {
  const [maj, min] = v.split(/[.+]/).map(Number);
  return maj > MIN_TORCH[0] || (maj === MIN_TORCH[0] && min >= MIN_TORCH[1]);
};

// Version from files, so neither LIBTORCH nor a cached python answer needs python.
function folderVersion(dir) {
  const read = (p) => (existsSync(join(dir, p)) ? readFileSync(join(dir, p), 'utf8') : '');
  const py = read('version.py').match(/__version__\s*=\s*'([^']+)'/); // torch package
  if (py) return py[1];
  const bv = read('build-version').trim(); // libtorch zip
  if (bv) return bv;
  const h =
    read('include/torch/headeronly/version.h') || read('include/torch/csrc/api/include/torch/version.h');
  const part = (n) => h.match(new RegExp(`TORCH_VERSION_${n}\\s+(\\d+)`))?.[1];
  return part('MAJOR') ? `${part('MAJOR')}.${part('MINOR')}.${part('PATCH')}` : undefined;
}

// A pre-cxx11-ABI libc10 has no std::__cxx11 symbols (mangled "B5cxx11").
function folderAbi(dir) {
  if (process.env.TORCH_CXX11_ABI) return Number(process.env.TORCH_CXX11_ABI);
  const lib = join(dir, 'lib', 'libc10.so');
  return existsSync(lib) && readFileSync(lib).includes('B5cxx11') ? 1 : 0;
}

function probePython(python) {
  const code =
    'import torch,os;print(os.path.dirname(torch.__file__), torch.__version__, int(torch._C._GLIBCXX_USE_CXX11_ABI))';
  const r = capture(python, ['-c', code]);
  if (!r.ok) return undefined; // no python, or no torch: not an error, try the next source
  const [dir, version, abi] = r.out.trim().split('\n').pop().split(' ');
  return { dir, version, cxx11Abi: Number(abi) };
}

function pipInstallTorch() {
  const version = process.env.TSDDP_TORCH_VERSION || '2.13.0';
  const py = join(VENV, 'bin', 'python');
  if (!existsSync(py)) {
    log('creating .venv');
    const r = spawnSync('python3', ['-m', 'venv', VENV], { stdio: 'inherit' });
    if (r.status !== 0) {
      // Debian's python3 ships venv without ensurepip; python3-venv adds it.
      if (!isRoot()) fail('`python3 -m venv` failed; run: sudo apt-get install -y python3-venv');
      aptInstall(['python3-venv']);
      run('python3', ['-m', 'venv', VENV]);
    }
  }
  log(`pip install torch==${version} into .venv (one-time, a few minutes)`);
  const quiet = process.env.CI ? ['--progress-bar', 'off'] : [];
  run(py, ['-m', 'pip', 'install', '--disable-pip-version-check', ...quiet, `torch==${version}`]);
  return probePython(py) ?? fail(`torch is still not importable from ${py} after pip install`);
}

function resolveTorch(stamp) {
  if (process.env.LIBTORCH) {
    const dir = resolve(process.env.LIBTORCH);
    return { dir, version: folderVersion(dir), source: 'LIBTORCH', cxx11Abi: folderAbi(dir) };
  }
  // Reuse python's cached answer: spawning python costs ~1 s and the answer only
  // changes when the folder goes away (the version is re-read from files anyway).
  if (stamp.torchDir && stamp.torchSource !== 'LIBTORCH' && existsSync(stamp.torchDir)) {
    const version = folderVersion(stamp.torchDir) ?? stamp.torchVersion;
    return { dir: stamp.torchDir, version, source: stamp.torchSource, cxx11Abi: stamp.cxx11Abi };
  }
  const sys = probePython('python3');
  if (sys && atLeastMin(sys.version)) return { ...sys, source: 'python3' };
  if (sys) log(`python3 has torch ${sys.version} (< ${MIN_TORCH.join('.')}), not using it`);
  const venv = probePython(join(VENV, 'bin', 'python'));
  if (venv && atLeastMin(venv.version)) return { ...venv, source: '.venv' };
  return { ...pipInstallTorch(), source: 'pip-installed' };
}

function validateTorch(t) {
  if (!existsSync(join(t.dir, 'include', 'torch')) || !existsSync(join(t.dir, 'lib', 'libtorch_cpu.so')))
    fail(`${t.dir} (from ${t.source}) is not a libtorch: it needs include/torch and lib/libtorch_cpu.so`);
  if (!t.version) fail(`cannot tell the torch version of ${t.dir}`);
  if (!atLeastMin(t.version)) fail(`torch ${t.version} in ${t.dir} is older than ${MIN_TORCH.join('.')}`);
}

// ---- step 2: Gloo headers and build tools ----
let aptUpdated = false;
function aptInstall(pkgs) {
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  if (!aptUpdated) run('apt-get', ['update'], { env });
  aptUpdated = true;
  run('apt-get', ['install', '-y', '--no-install-recommends', ...pkgs], { env });
}

function ensureSystemDeps() {
  const glooRoot = process.env.GLOO_INCLUDE_DIR ? resolve(process.env.GLOO_INCLUDE_DIR) : '/usr/include';
  const missing = [];
  if (!existsSync(join(glooRoot, 'gloo', 'algorithm.h'))) {
    if (process.env.GLOO_INCLUDE_DIR) fail(`GLOO_INCLUDE_DIR=${glooRoot} has no gloo/algorithm.h`);
    missing.push('libgloo-dev');
  }
  // libjpeg(-turbo) headers for tsddp_image.node, the data workers' image kernels (native/image).
  if (!existsSync('/usr/include/jpeglib.h')) missing.push('libjpeg-dev');
  if (!onPath('cmake')) missing.push('cmake');
  if (!onPath('c++') && !onPath('g++')) missing.push('g++');
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

// ---- step 2b: Chromium, for the dashboard's browser test (training does not need it) ----
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

// ---- step 3: node_modules ----
// npm rewrites node_modules/.package-lock.json on every install: it is the install stamp.
function ensureNodeModules() {
  const hidden = join(ROOT, 'node_modules', '.package-lock.json');
  const lock = join(ROOT, 'package-lock.json');
  const stale =
    !existsSync(join(ROOT, 'node_modules', 'cmake-js', 'package.json')) ||
    !existsSync(hidden) ||
    (existsSync(lock) && statSync(lock).mtimeMs > statSync(hidden).mtimeMs);
  if (stale) run('npm', ['ci', '--no-audit', '--no-fund']);
  return stale;
}

// ---- step 4: the addon ----
function listFiles(dir) {
  return readdirSync(dir, { withFileTypes: true })
    .flatMap((e) => (e.isDirectory() ? listFiles(join(dir, e.name)) : [join(dir, e.name)]))
    .sort();
}

function inputsHash(torch, glooRoot) {
  const h = createHash('sha256');
  const napi = JSON.parse(readFileSync(join(ROOT, 'node_modules', 'node-addon-api', 'package.json'), 'utf8'));
  h.update(
    JSON.stringify([
      RECIPE,
      torch.dir,
      torch.version,
      torch.cxx11Abi,
      glooRoot,
      napi.version,
      process.versions.node.split('.')[0],
      process.versions.modules,
    ]),
  );
  const sources = [...listFiles(join(ROOT, 'native', 'src')), ...listFiles(join(ROOT, 'native', 'image'))];
  for (const f of [join(ROOT, 'native', 'CMakeLists.txt'), ...sources])
    h.update(`${relative(ROOT, f)}\0${sha256(readFileSync(f))}\n`);
  return h.digest('hex');
}

function buildAddon(torch, glooRoot) {
  const env = { ...process.env };
  // Use the running node's own headers when installed next to it; otherwise cmake-js
  // downloads them from nodejs.org (it does not use node-api-headers for native/).
  const prefix = dirname(dirname(process.execPath));
  if (existsSync(join(prefix, 'include', 'node', 'node.h'))) env.npm_config_nodedir = prefix;
  const cmakeJs = join(ROOT, 'node_modules', 'cmake-js', 'bin', 'cmake-js');
  const common = [
    '-d',
    'native',
    '-B',
    'Release',
    '--parallel',
    String(availableParallelism()),
    `--CDTORCH_DIR=${torch.dir}`,
    `--CDTORCH_CXX11_ABI=${torch.cxx11Abi}`,
  ];
  // A non-default Gloo include root: cmake-js overrides CMAKE_CXX_FLAGS, so add it as a
  // standard include dir; always passed (empty by default) so the cache never keeps an
  // old one. Never pass /usr/include itself: -isystem on it breaks libstdc++'s include_next.
  const gloo = glooRoot === '/usr/include' ? '' : glooRoot;
  common.push(`--CDCMAKE_CXX_STANDARD_INCLUDE_DIRECTORIES=${gloo}`);
  // configure every time (a second or two) so a changed TORCH_DIR/ABI is never stale
  // in CMakeCache; --rebuild wipes native/build first (ccache keeps it cheap).
  if (REBUILD) run(process.execPath, [cmakeJs, 'rebuild', ...common], { env });
  else {
    run(process.execPath, [cmakeJs, 'configure', ...common], { env });
    run(process.execPath, [cmakeJs, 'build', ...common], { env });
  }
  for (const f of [ADDON, IMAGE_ADDON])
    if (!existsSync(f)) fail(`build finished but ${relative(ROOT, f)} is missing`);
}

// ---- step 5: load check, in a child so a crash on dlopen is reported, not fatal here ----
function verifyAddon() {
  const code = `const a = require(${JSON.stringify(ADDON)});
    const i = typeof a.buildInfo === 'function' ? a.buildInfo() : {};
    console.log(i.torchVersion ?? i.torch ?? '(no buildInfo().torchVersion yet)');`;
  const r = spawnSync(process.execPath, ['-e', code], { cwd: ROOT, encoding: 'utf8' });
  if (r.status !== 0) fail(`the addon does not load:\n${r.stderr || r.stdout}`);
  return r.stdout.trim();
}

function main() {
  const t0 = Date.now();
  const stamp = readStamp();
  step = 'libtorch';
  const torch = resolveTorch(stamp);
  validateTorch(torch);
  const same = ['Dir', 'Version', 'Source'].every((k) => stamp[`torch${k}`] === torch[k.toLowerCase()]);
  if (!same)
    log(`using torch ${torch.version} from ${torch.source} (${torch.dir}, cxx11 abi ${torch.cxx11Abi})`);
  const record = {
    torchDir: torch.dir,
    torchVersion: torch.version,
    torchSource: torch.source,
    cxx11Abi: torch.cxx11Abi,
  };
  step = 'gloo headers';
  const glooRoot = ensureSystemDeps();
  step = 'chromium';
  ensureChromium();
  step = 'npm ci';
  ensureNodeModules();
  step = 'build';
  const hash = inputsHash(torch, glooRoot);
  if (!REBUILD && existsSync(ADDON) && existsSync(IMAGE_ADDON) && stamp.inputsHash === hash) {
    if (!same) writeStamp({ ...stamp, ...record }); // same torch, reached another way
    log(`up to date (torch ${torch.version} from ${torch.source})`);
    return;
  }
  // Recorded before building: a failed build must not re-probe python or re-run pip.
  writeStamp({ ...record, inputsHash: null, builtAt: null });
  log(`building the addon (${REBUILD ? '--rebuild' : 'inputs changed'})`);
  buildAddon(torch, glooRoot);
  step = 'load check';
  const reported = verifyAddon();
  writeStamp({ ...record, inputsHash: hash, builtAt: new Date().toISOString() });
  log(
    `built ${relative(ROOT, ADDON)} in ${((Date.now() - t0) / 1000).toFixed(1)} s; it loads, torch ${reported}`,
  );
}

try {
  main();
} catch (e) {
  console.error(`tsddp setup: FAILED at step "${step}": ${e instanceof SetupError ? e.message : e.stack}`);
  process.exit(1);
}
