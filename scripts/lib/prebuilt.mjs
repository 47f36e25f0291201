// Prebuilt addons (docs/guide/install.md): prebuilds/<key>/ holds tsddp.node and
// tsddp_image.node built by scripts/prebuild.mjs against one torch, and
// prebuilds/manifest.json says for what (platform, arch, glibc, torch version, C++ ABI,
// Node-API version) with each file's sha256. The install step copies a matching one into
// native/build/Release, where src/core/native.ts loads it, and links torch-lib beside it to
// the torch it found (the addon's RUNPATH is $ORIGIN/torch-lib): no compiler needed.
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { linkTorch, readStamp, releaseDir, sha256, sourcesHash, verifyAddon, writeStamp } from './addons.mjs';
import { fail, SetupError } from './proc.mjs';

export const NAPI_VERSION = 8; // native/CMakeLists.txt: NAPI_VERSION=8
export const prebuildsDir = (root) => join(root, 'prebuilds');
const manifestPath = (root) => join(prebuildsDir(root), 'manifest.json');

/** The folder name of a prebuild: what it runs on and against. */
export const prebuildKey = (e) =>
  `${e.platform}-${e.arch}-${e.libc}-torch${e.torchVersion}-cxx11abi${e.cxx11Abi}-napi${e.napi}`;

/** This machine: platform, arch and glibc version ('2.36'; undefined with another C library). */
export function thisHost() {
  const glibc = process.report?.getReport?.().header?.glibcVersionRuntime;
  return { platform: process.platform, arch: process.arch, glibc, napi: Number(process.versions.napi) };
}

/** a >= b for dotted version numbers ('2.36' >= '2.34'). */
export function versionAtLeast(a, b) {
  const [x, y] = [a, b].map((v) => v.split('.').map(Number));
  for (let i = 0; i < Math.max(x.length, y.length); i++)
    if ((x[i] ?? 0) !== (y[i] ?? 0)) return (x[i] ?? 0) > (y[i] ?? 0);
  return true;
}

/** The highest `${prefix}_x.y` symbol version a shared library asks for ('GLIBC' → '2.34'). */
export function requiredVersion(bytes, prefix) {
  const found = bytes.toString('latin1').matchAll(new RegExp(`\\b${prefix}_(\\d+(?:\\.\\d+)+)\\b`, 'g'));
  let best;
  for (const [, v] of found) if (best === undefined || !versionAtLeast(best, v)) best = v;
  return best;
}

export function readManifest(root) {
  try {
    return JSON.parse(readFileSync(manifestPath(root), 'utf8'));
  } catch {
    return undefined;
  }
}

/**
 * The prebuild for this machine and `torch` ({ entry }), or why there is none ({ why }):
 * the same sources, platform, arch, a glibc at least the one it was linked against, and the
 * very torch version (local tag included: 2.13.0+cpu is not the CUDA 2.13.0) and C++ ABI.
 */
export function selectPrebuilt(root, torch, host = thisHost()) {
  const manifest = readManifest(root);
  if (!manifest?.prebuilds?.length) return { why: 'this package has no prebuilt addons' };
  if (manifest.sourcesHash !== sourcesHash(root))
    return { why: "the prebuilt addons were built from other sources than this package's" };
  const { glibc } = host;
  const here = manifest.prebuilds.filter((e) => e.platform === host.platform && e.arch === host.arch);
  const list = manifest.prebuilds.map((e) => e.dir).join(', ');
  if (here.length === 0)
    return { why: `no prebuilt addons for ${host.platform}-${host.arch} (there are: ${list})` };
  if (glibc === undefined)
    return { why: 'the prebuilt addons need glibc, and this machine has another C library' };
  const fits = here.filter((e) => versionAtLeast(glibc, e.glibc) && e.napi <= (host.napi ?? Infinity));
  if (fits.length === 0) {
    const least = here.map((e) => e.glibc).reduce((a, b) => (versionAtLeast(a, b) ? b : a));
    return {
      why: `the prebuilt addons need glibc >= ${least} and Node-API ${here[0].napi}; this machine has glibc ${glibc}, Node-API ${host.napi}`,
    };
  }
  const entry = fits.find((e) => e.torchVersion === torch.version && e.cxx11Abi === torch.cxx11Abi);
  if (entry === undefined)
    return {
      why: `no prebuilt addons for torch ${torch.version} (C++11 ABI ${torch.cxx11Abi}); there are: ${list}`,
    };
  return { entry };
}

/** Whether native/build/Release already holds this prebuild, for this torch. */
export function prebuiltCurrent(root, torch, entry) {
  const stamp = readStamp(root);
  if (stamp.prebuilt !== entry.dir || stamp.torchDir !== torch.dir) return false;
  return Object.entries(entry.files).every(([name, hash]) => {
    const f = join(releaseDir(root), name);
    return existsSync(f) && sha256(readFileSync(f)) === hash;
  });
}

/**
 * Installs the prebuild into native/build/Release: each file checked against its sha256,
 * copied into a staging folder beside it, loaded there in a child (its own torch-lib link:
 * the RUNPATH is relative to the addon), and only then renamed into place, so a prebuild
 * that does not load here leaves the addons that were there, and a process still running
 * the old addon keeps its mapping. Then stamps it. Throws a SetupError when a file is
 * corrupt, cannot be copied or does not load here: the caller builds instead.
 */
export function installPrebuilt(root, torch, entry) {
  const from = join(prebuildsDir(root), entry.dir);
  const names = Object.keys(entry.files);
  for (const name of names) {
    const src = join(from, name);
    if (basename(name) !== name) fail(`prebuilds/manifest.json names a file outside its folder: ${name}`);
    if (!existsSync(src) || sha256(readFileSync(src)) !== entry.files[name])
      fail(
        `prebuilds/${entry.dir}/${name} is missing or does not match its sha256 in prebuilds/manifest.json`,
      );
  }
  const to = releaseDir(root);
  mkdirSync(dirname(to), { recursive: true });
  const staging = mkdtempSync(join(dirname(to), '.prebuilt-'));
  try {
    for (const name of names) copyFileSync(join(from, name), join(staging, name));
    linkTorch(root, torch, staging);
    const reported = verifyAddon(root, staging);
    mkdirSync(to, { recursive: true });
    for (const name of names) renameSync(join(staging, name), join(to, name));
    linkTorch(root, torch);
    writeStamp(root, {
      torchDir: torch.dir,
      torchVersion: torch.version,
      torchSource: torch.source,
      cxx11Abi: torch.cxx11Abi,
      addons: 'prebuilt',
      prebuilt: entry.dir,
      files: names,
      inputsHash: null,
      installedAt: new Date().toISOString(),
    });
    return reported;
  } catch (e) {
    if (e instanceof SetupError) throw e;
    throw new SetupError(`cannot install prebuilds/${entry.dir}: ${e.message}`);
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
}
