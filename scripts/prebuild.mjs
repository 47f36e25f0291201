#!/usr/bin/env node
// Makes prebuilds/ for the published package (docs/guide/install.md): this checkout's two
// addons, as scripts/setup.mjs built them against the default torch wheel, copied into
// prebuilds/<key>/ and listed with their sha256 in prebuilds/manifest.json. `npm pack`
// runs it (prepack, through scripts/build.mjs). With --clean it first rebuilds from scratch
// with ccache off: the way to make a release's prebuilds. The build is path-independent
// (native/CMakeLists.txt maps __FILE__ prefixes; the RUNPATH is $ORIGIN/torch-lib), so the
// same sources, torch and compiler give the same bytes in any checkout.
//   node scripts/prebuild.mjs [--clean]
import { spawnSync } from 'node:child_process';
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  addonPaths,
  ensureAddons,
  glooIncludeRoot,
  inputsHash,
  readStamp,
  sha256,
  sourcesHash,
} from './lib/addons.mjs';
import { NAPI_VERSION, prebuildKey, prebuildsDir, requiredVersion, thisHost } from './lib/prebuilt.mjs';
import { capture, fail, SetupError } from './lib/proc.mjs';
import { DEFAULT_TORCH_VERSION, findTorch, validateTorch } from './lib/torch.mjs';

/** The torch the checkout's addons were built against, as its stamp records it. */
function stampedTorch(stamp) {
  return {
    dir: stamp.torchDir,
    version: stamp.torchVersion,
    source: stamp.torchSource,
    cxx11Abi: stamp.cxx11Abi,
  };
}

// The C and C++ runtime every Node process on glibc Linux already has, and torch's own
// libraries (found through torch-lib): everything else an addon links is shipped beside it.
const PRESENT = /^(linux-vdso|ld-linux[-\w]*|lib(c|m|dl|rt|pthread|stdc\+\+|gcc_s|torch\w*|c10\w*))\.so\b/;

/** Libraries `addon` needs that a bare machine may lack: { name, path } as ldd resolves them. */
function libsToBundle(addon) {
  const needed = [
    ...capture('readelf', ['-d', addon]).out.matchAll(/\(NEEDED\)\s+Shared library: \[(.+?)\]/g),
  ];
  const ldd = capture('ldd', [addon]).out;
  return needed
    .map(([, name]) => name)
    .filter((name) => !PRESENT.test(name))
    .map((name) => {
      const path = new RegExp(`^\\s*${name.replace(/[.+]/g, '\\$&')} => (\\S+)`, 'm').exec(ldd)?.[1];
      if (path === undefined) fail(`${addon} needs ${name}, which ldd does not find here`);
      return { name, path: realpathSync(path) };
    });
}

/** The copyright file of the Debian package that owns `path`, when dpkg knows it. */
function copyrightOf(path) {
  const pkg = capture('dpkg-query', ['-S', path]).out.split(':')[0];
  const file = pkg ? `/usr/share/doc/${pkg}/copyright` : '';
  return file && existsSync(file) ? file : undefined;
}

function buildInfo(addon) {
  const code = `console.log(JSON.stringify(require(${JSON.stringify(addon)}).buildInfo()))`;
  const r = spawnSync(process.execPath, ['-e', code], { encoding: 'utf8' });
  if (r.status !== 0) fail(`${addon} does not load:\n${r.stderr}`);
  return JSON.parse(r.stdout);
}

/**
 * Writes prebuilds/ from the checkout's build and returns its folder name, or returns
 * { why } (and leaves no prebuilds/) when the build cannot be shipped: not built, built
 * from other sources than the checkout's, or against another torch than the default.
 */
export function makePrebuilds(root) {
  rmSync(prebuildsDir(root), { recursive: true, force: true });
  const stamp = readStamp(root);
  const torch = stampedTorch(stamp);
  if (!torch.dir || !existsSync(torch.dir)) return { why: 'the addons are not built (run npm run setup)' };
  if (torch.version?.split('+')[0] !== DEFAULT_TORCH_VERSION)
    return {
      why: `the addons are built against torch ${torch.version}, not the default ${DEFAULT_TORCH_VERSION}`,
    };
  const host = thisHost();
  if (host.platform !== 'linux' || host.glibc === undefined)
    return { why: 'prebuilds are made on glibc Linux only' };
  const glooRoot = glooIncludeRoot();
  if (stamp.inputsHash !== inputsHash(root, torch, glooRoot))
    return { why: 'the addons are older than the sources (run npm run setup)' };

  const addons = Object.values(addonPaths(root)).filter((f) => existsSync(f));
  // name in the prebuild folder -> where it comes from (an addon, a library it needs, its licence)
  const sources = new Map(addons.map((f) => [basename(f), f]));
  for (const lib of addons.flatMap(libsToBundle)) {
    sources.set(lib.name, lib.path);
    const copyright = copyrightOf(lib.path);
    if (copyright) sources.set(`${lib.name}.copyright`, copyright);
  }
  const bytes = Buffer.concat(addons.map((f) => readFileSync(f)));
  const max = (prefix) => requiredVersion(bytes, prefix);
  const entry = {
    platform: host.platform,
    arch: host.arch,
    libc: 'glibc',
    glibc: max('GLIBC'),
    glibcxx: max('GLIBCXX'),
    torchVersion: torch.version,
    cxx11Abi: torch.cxx11Abi,
    napi: NAPI_VERSION,
    compiler: `g++ ${buildInfo(addonPaths(root).addon).compiler}`,
  };
  const dir = prebuildKey(entry);
  mkdirSync(join(prebuildsDir(root), dir), { recursive: true });
  const hashes = {};
  for (const [name, from] of sources) {
    copyFileSync(from, join(prebuildsDir(root), dir, name));
    hashes[name] = sha256(readFileSync(from));
  }
  const manifest = { sourcesHash: sourcesHash(root), prebuilds: [{ dir, ...entry, files: hashes }] };
  writeFileSync(join(prebuildsDir(root), 'manifest.json'), `${JSON.stringify(manifest, null, 2)}\n`);
  return { dir, hashes };
}

/** A build from scratch, ccache off, against the torch scripts/setup.mjs would take. */
async function cleanBuild(root, log) {
  const torch = await findTorch({ stamp: {}, venv: join(root, '.venv'), venvSource: '.venv', log });
  validateTorch(torch);
  process.env.CCACHE_DISABLE = '1'; // every object compiled now, none from the cache
  ensureAddons(root, torch, glooIncludeRoot(), { rebuild: true, log });
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
  const log = (msg) => console.log(`prebuild: ${msg}`);
  try {
    if (process.argv.includes('--clean')) await cleanBuild(root, log);
    const made = makePrebuilds(root);
    if (made.why) fail(made.why);
    for (const [name, hash] of Object.entries(made.hashes))
      log(`prebuilds/${made.dir}/${name} sha256 ${hash}`);
  } catch (e) {
    console.error(`prebuild: FAILED: ${e instanceof SetupError ? e.message : e.stack}`);
    process.exit(1);
  }
}
