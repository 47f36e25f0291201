// Builds the two addons in native/ with cmake-js (docs/architecture.md §3) and records what
// they were built from in .tsddp/setup.json, the stamp that makes a second run a no-op and
// that src/core/native.ts checks at load. Shared by scripts/setup.mjs (a checkout) and
// scripts/install.mjs (the installed package).
import { spawnSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  renameSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { createRequire } from 'node:module';
import { availableParallelism } from 'node:os';
import { basename, dirname, join, relative, resolve } from 'node:path';
import { cudaFlags } from './cuda.mjs';
import { fail, onPath, run } from './proc.mjs';

// Bump when the build command below changes, so existing builds are redone.
const RECIPE = 4;

export const releaseDir = (root) => join(root, 'native', 'build', 'Release');
export const addonPaths = (root) => ({
  addon: join(releaseDir(root), 'tsddp.node'),
  imageAddon: join(releaseDir(root), 'tsddp_image.node'),
});

/**
 * Points `dir`/torch-lib (default native/build/Release) at the torch's lib folder: the
 * addon's RUNPATH is $ORIGIN/torch-lib (native/CMakeLists.txt), so this link is the one
 * place that says which torch it loads, for a built and a prebuilt addon alike. Replaced
 * by a rename, so a process starting meanwhile finds the old link or the new one.
 */
export function linkTorch(root, torch, dir = releaseDir(root)) {
  const link = join(dir, 'torch-lib');
  const target = join(torch.dir, 'lib');
  let current;
  try {
    current = readlinkSync(link);
  } catch {
    current = undefined; // no link yet (or not a link: replaced below)
  }
  if (current === target) return;
  const tmp = join(dir, `.torch-lib.${randomBytes(6).toString('hex')}`);
  symlinkSync(target, tmp);
  try {
    renameSync(tmp, link);
  } catch (e) {
    rmSync(tmp, { force: true });
    fail(`cannot link ${link} to ${target}: ${e.message}`);
  }
}

// ---- stamp ----
const stampPath = (root) => join(root, '.tsddp', 'setup.json');
export function readStamp(root) {
  try {
    return JSON.parse(readFileSync(stampPath(root), 'utf8'));
  } catch {
    return {};
  }
}
export function writeStamp(root, stamp) {
  mkdirSync(dirname(stampPath(root)), { recursive: true });
  writeFileSync(stampPath(root), `${JSON.stringify(stamp, null, 2)}\n`);
}

// ---- what the C++ build needs from the system ----
/** The Gloo include root: GLOO_INCLUDE_DIR, else /usr/include (Debian's libgloo-dev). */
export function glooIncludeRoot() {
  const root = process.env.GLOO_INCLUDE_DIR ? resolve(process.env.GLOO_INCLUDE_DIR) : '/usr/include';
  if (process.env.GLOO_INCLUDE_DIR && !existsSync(join(root, 'gloo', 'algorithm.h')))
    fail(`GLOO_INCLUDE_DIR=${root} has no gloo/algorithm.h`);
  return root;
}

/** Debian/Ubuntu packages the build needs and this machine lacks, each with why. */
export function missingBuildPackages(glooRoot) {
  const missing = [];
  if (!existsSync(join(glooRoot, 'gloo', 'algorithm.h')))
    missing.push({ pkg: 'libgloo-dev', why: 'Gloo headers, for ProcessGroupGloo' });
  // libjpeg(-turbo) headers for tsddp_image.node, the data workers' image kernels (native/image).
  if (!existsSync('/usr/include/jpeglib.h'))
    missing.push({ pkg: 'libjpeg-dev', why: 'libjpeg-turbo headers, for JPEG decoding' });
  if (!onPath('cmake')) missing.push({ pkg: 'cmake', why: 'the build system' });
  if (!onPath('c++') && !onPath('g++')) missing.push({ pkg: 'g++', why: 'the C++ compiler' });
  return missing;
}

// ---- the build ----
function listFiles(dir) {
  return readdirSync(dir, { withFileTypes: true })
    .flatMap((e) => (e.isDirectory() ? listFiles(join(dir, e.name)) : [join(dir, e.name)]))
    .sort();
}

export const sha256 = (data) => createHash('sha256').update(data).digest('hex');

/**
 * A hash of the addons' sources and build recipe (not of the machine): a prebuilt addon is
 * used only where the package's sources hash to what it was built from.
 */
export function sourcesHash(root) {
  const h = createHash('sha256');
  h.update(`recipe ${RECIPE}\n`);
  const native = join(root, 'native');
  // The compiled inputs only: an editor's or the OS's stray file must not change it.
  const sources = [...listFiles(join(native, 'src')), ...listFiles(join(native, 'image'))].filter((f) =>
    /\.(cc|h)$/.test(f),
  );
  for (const f of [join(native, 'CMakeLists.txt'), ...sources])
    h.update(`${relative(root, f)}\0${sha256(readFileSync(f))}\n`);
  return h.digest('hex');
}

/** A hash of everything the addons are built from: a changed input means a rebuild. */
export function inputsHash(root, torch, glooRoot) {
  const req = createRequire(join(root, 'package.json'));
  const napi = JSON.parse(readFileSync(req.resolve('node-addon-api/package.json'), 'utf8'));
  const machine = [
    torch.dir,
    torch.version,
    torch.cxx11Abi,
    glooRoot,
    napi.version,
    process.versions.node.split('.')[0],
    process.versions.modules,
  ];
  return sha256(`${sourcesHash(root)}\n${JSON.stringify(machine)}`);
}

export function buildAddons(root, torch, glooRoot, { rebuild = false } = {}) {
  const env = { ...process.env };
  // Use the running node's own headers when installed next to it; cmake-js otherwise takes
  // Node-API's from the node-api-headers package (native/package.json declares napi_versions).
  const prefix = dirname(dirname(process.execPath));
  if (existsSync(join(prefix, 'include', 'node', 'node.h'))) env.npm_config_nodedir = prefix;
  // ccache keys on paths: relative to the project that holds node_modules/tsddp, the sources
  // and node-addon-api's headers have the same paths in every project, so installing into
  // a second project (or again after rm -rf node_modules) compiles from the cache.
  if (env.CCACHE_BASEDIR === undefined)
    env.CCACHE_BASEDIR = basename(dirname(root)) === 'node_modules' ? dirname(dirname(root)) : root;
  const cmakeJs = join(
    dirname(createRequire(join(root, 'package.json')).resolve('cmake-js/package.json')),
    'bin',
    'cmake-js',
  );
  const common = [
    '-d',
    join(root, 'native'),
    '-B',
    'Release',
    '--parallel',
    String(availableParallelism()),
    `--CDTORCH_DIR=${torch.dir}`,
    `--CDTORCH_CXX11_ABI=${torch.cxx11Abi}`,
    '--CDTORCH_RUNPATH=$ORIGIN/torch-lib',
  ];
  // A non-default Gloo include root: cmake-js overrides CMAKE_CXX_FLAGS, so add it as a
  // standard include dir; always passed (empty by default) so the cache never keeps an
  // old one. Never pass /usr/include itself: -isystem on it breaks libstdc++'s include_next.
  const gloo = glooRoot === '/usr/include' ? '' : glooRoot;
  common.push(`--CDCMAKE_CXX_STANDARD_INCLUDE_DIRECTORIES=${gloo}`);
  common.push(...cudaFlags(torch.dir));
  // configure every time (a second or two) so a changed TORCH_DIR/ABI is never stale
  // in CMakeCache; rebuild wipes native/build first (ccache keeps it cheap).
  const opts = { env, cwd: root };
  if (rebuild) run(process.execPath, [cmakeJs, 'rebuild', ...common], opts);
  else {
    run(process.execPath, [cmakeJs, 'configure', ...common], opts);
    run(process.execPath, [cmakeJs, 'build', ...common], opts);
  }
  for (const f of Object.values(addonPaths(root)))
    if (!existsSync(f)) fail(`build finished but ${relative(root, f)} is missing`);
  linkTorch(root, torch);
}

/**
 * Loads both addons (from `dir`, default native/build/Release) in a child, so a crash on
 * dlopen is reported, not fatal here; returns the torch version tsddp.node reports.
 */
export function verifyAddon(root, dir = releaseDir(root)) {
  const addon = join(dir, 'tsddp.node');
  const image = join(dir, 'tsddp_image.node');
  const code = `const a = require(${JSON.stringify(addon)});
    if (require('node:fs').existsSync(${JSON.stringify(image)})) require(${JSON.stringify(image)});
    const i = typeof a.buildInfo === 'function' ? a.buildInfo() : {};
    console.log(i.torchVersion ?? i.torch ?? '(no buildInfo().torchVersion yet)');`;
  const r = spawnSync(process.execPath, ['-e', code], { cwd: root, encoding: 'utf8' });
  if (r.status !== 0) fail(`the addon does not load:\n${r.stderr || r.stdout}`);
  return r.stdout.trim();
}

/** Whether native/build/Release holds addons built here from the inputs that hash to `hash` (inputsHash). */
export function builtCurrent(root, hash) {
  const built = Object.values(addonPaths(root)).every((f) => existsSync(f));
  return built && readStamp(root).inputsHash === hash;
}

/**
 * Builds the addons unless the stamp says they are built from these very inputs. Returns
 * what it did, for the caller's one-line report. `beforeBuild` runs only when a build is
 * needed (the check for build tools: up-to-date addons need none).
 */
export function ensureAddons(root, torch, glooRoot, { rebuild = false, log, beforeBuild = () => {} }) {
  const t0 = Date.now();
  const stamp = readStamp(root);
  const record = {
    torchDir: torch.dir,
    torchVersion: torch.version,
    torchSource: torch.source,
    cxx11Abi: torch.cxx11Abi,
  };
  const hash = inputsHash(root, torch, glooRoot);
  if (!rebuild && builtCurrent(root, hash)) {
    // Same inputs: rewrite the stamp only when the same torch was reached another way.
    if (Object.entries(record).some(([k, v]) => stamp[k] !== v)) writeStamp(root, { ...stamp, ...record });
    linkTorch(root, torch);
    return { built: false };
  }
  beforeBuild();
  // What a prebuilt install put beside the addons (its bundled libjpeg) must not shadow
  // the system's for an addon built here.
  if (stamp.addons === 'prebuilt')
    for (const f of stamp.files ?? [])
      if (basename(f) === f) rmSync(join(releaseDir(root), f), { force: true });
  // Recorded before building: a failed build must not re-probe python or re-run pip.
  writeStamp(root, { ...record, inputsHash: null, builtAt: null });
  log(`building the addons (${rebuild ? 'rebuild' : 'inputs changed'})`);
  buildAddons(root, torch, glooRoot, { rebuild });
  const reported = verifyAddon(root);
  writeStamp(root, { ...record, addons: 'built', inputsHash: hash, builtAt: new Date().toISOString() });
  log(`built the addons in ${((Date.now() - t0) / 1000).toFixed(1)} s; they load, torch ${reported}`);
  return { built: true };
}
