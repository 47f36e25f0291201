#!/usr/bin/env node
// The installed package's build step: npm runs it on `npm install tsddp` (the `install`
// script), and `npx tsddp setup` runs it by hand (after `npm install --ignore-scripts`, or
// to rebuild). It finds libtorch — LIBTORCH, else a torch >= 2.4 the user already has (the
// project's .venv or venv, $VIRTUAL_ENV, $CONDA_PREFIX, python3, `pip show torch`), else
// the official torch wheel pip-installed once into a per-user cache shared by every
// project (~/.cache/tsddp/torch-<version>). Then the addons: the package's prebuilt ones
// when one matches this machine and that torch (scripts/lib/prebuilt.mjs: no compiler
// needed), else built here with cmake-js. It never runs apt-get unless given
// --install-system-deps: a missing compiler, cmake or header is one message naming the
// Debian/Ubuntu packages to install.
//   node scripts/install.mjs [--rebuild] [--build-from-source] [--install-system-deps]
// Env: LIBTORCH, GLOO_INCLUDE_DIR, TSDDP_TORCH_VERSION, TSDDP_TORCH_INDEX, TORCH_CXX11_ABI (as for
// scripts/setup.mjs), TSDDP_CACHE_DIR (default $XDG_CACHE_HOME/tsddp or ~/.cache/tsddp).
import { existsSync, openSync, writeSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  builtCurrent,
  ensureAddons,
  glooIncludeRoot,
  inputsHash,
  linkTorch,
  missingBuildPackages,
  readStamp,
} from './lib/addons.mjs';
import { installPrebuilt, prebuiltCurrent, selectPrebuilt } from './lib/prebuilt.mjs';
import { aptInstall, fail, isRoot, SetupError } from './lib/proc.mjs';
import { DEFAULT_TORCH_VERSION, findTorch, validateTorch } from './lib/torch.mjs';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const args = process.argv.slice(2);
const REBUILD = args.includes('--rebuild');
// Compile even where a prebuilt addon matches: --rebuild, --build-from-source (npm passes
// `npm install --build-from-source` to install scripts as npm_config_build_from_source).
const FROM_SOURCE =
  REBUILD || args.includes('--build-from-source') || process.env.npm_config_build_from_source === 'true';
const SYSTEM_DEPS = args.includes('--install-system-deps');
// npm (7 and later) runs install scripts with their output captured, and shows it only
// when they fail (or with --foreground-scripts): the progress lines also go to the
// terminal npm runs in, when there is one, so a user sees what the install is doing.
function terminal() {
  if (process.env.npm_lifecycle_event !== 'install' || process.stdout.isTTY) return null;
  try {
    return openSync('/dev/tty', 'w');
  } catch {
    return null; // no terminal (CI, a container build): the captured output is all there is
  }
}
const tty = terminal();
const log = (msg) => {
  const line = `tsddp install: ${msg}`;
  console.log(line);
  if (tty !== null)
    try {
      writeSync(tty, `${line}\n`);
    } catch {
      // the terminal went away: the captured output still has the line
    }
};
const started = Date.now();
let step = 'start';

/** The per-user cache that holds the pip-installed torch, shared by all projects. */
export function cacheDir() {
  if (process.env.TSDDP_CACHE_DIR) return resolve(process.env.TSDDP_CACHE_DIR);
  return join(process.env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'tsddp');
}

function checkSystemDeps(glooRoot, noPrebuilt) {
  step = 'system packages';
  const missing = missingBuildPackages(glooRoot);
  if (missing.length === 0) return;
  const pkgs = missing.map((m) => m.pkg);
  if (SYSTEM_DEPS) {
    if (!isRoot())
      fail(`--install-system-deps needs root (apt-get); run: sudo npx tsddp setup --install-system-deps`);
    log(`installing ${pkgs.join(' ')} with apt`);
    aptInstall(pkgs);
    return;
  }
  const list = missing.map((m) => `  ${m.pkg.padEnd(12)} ${m.why}`).join('\n');
  fail(
    `${noPrebuilt ? `${noPrebuilt}, so ` : ''}the native build needs these Debian/Ubuntu packages, which are missing:\n${list}\n` +
      `install them with: sudo apt-get install -y ${pkgs.join(' ')}\n` +
      'then run: npx tsddp setup   (or let tsddp do it as root: npx tsddp setup --install-system-deps)',
  );
}

/**
 * The prebuilt addons when one matches this machine and torch (docs/guide/install.md):
 * 'up to date' or 'prebuilt'; else why not (a string), and the caller builds. A build made
 * here that is still current is kept, as is one asked for (--rebuild, --build-from-source).
 */
function tryPrebuilt(torch, glooRoot) {
  if (FROM_SOURCE || builtCurrent(ROOT, inputsHash(ROOT, torch, glooRoot))) return { why: null };
  const { entry, why } = selectPrebuilt(ROOT, torch);
  if (entry === undefined) return { why };
  if (prebuiltCurrent(ROOT, torch, entry)) {
    linkTorch(ROOT, torch); // the link may have gone since
    return { done: 'up to date', entry };
  }
  step = 'prebuilt';
  try {
    const reported = installPrebuilt(ROOT, torch, entry);
    log(`using the prebuilt addons ${entry.dir} (no compiler needed); they load, torch ${reported}`);
    return { done: 'prebuilt', entry };
  } catch (e) {
    if (!(e instanceof SetupError)) throw e;
    return { why: `the prebuilt addons ${entry.dir} cannot be used here (${e.message.trim()})` };
  }
}

async function main() {
  // In a checkout, npm ci runs this too: scripts/setup.mjs builds there.
  if (process.env.npm_lifecycle_event === 'install' && existsSync(join(ROOT, 'src', 'index.ts'))) return;
  step = 'libtorch';
  const version = process.env.TSDDP_TORCH_VERSION || DEFAULT_TORCH_VERSION;
  const venv = join(cacheDir(), `torch-${version}`);
  const torch = await findTorch({
    stamp: readStamp(ROOT),
    venv,
    venvSource: 'cache',
    log,
    allowApt: SYSTEM_DEPS,
    userEnvs: true,
  });
  validateTorch(torch);
  log(`torch ${torch.version} from ${torch.source} (${torch.dir})`);
  const glooRoot = glooIncludeRoot();
  const prebuilt = tryPrebuilt(torch, glooRoot);
  let addons;
  if (prebuilt.done !== undefined)
    addons = `prebuilt (${prebuilt.entry.dir})${prebuilt.done === 'up to date' ? ', up to date' : ''}`;
  if (addons === undefined) {
    if (prebuilt.why) log(`${prebuilt.why}: building the addons here`);
    step = 'build';
    const beforeBuild = () => {
      checkSystemDeps(glooRoot, prebuilt.why);
      step = 'build';
    };
    const { built } = ensureAddons(ROOT, torch, glooRoot, { rebuild: REBUILD, log, beforeBuild });
    addons = built ? 'built here' : 'built here, up to date';
  }
  if (addons.endsWith('up to date')) log('the addons are up to date');
  const seconds = ((Date.now() - started) / 1000).toFixed(0);
  log(`done in ${seconds} s: torch ${torch.version} from ${torch.source}; addons ${addons}`);
}

try {
  await main();
} catch (e) {
  console.error(`tsddp install: FAILED at step "${step}": ${e instanceof SetupError ? e.message : e.stack}`);
  process.exit(1);
}
