// Finds the libtorch that the addons are built against (docs/architecture.md §3): LIBTORCH
// (a libtorch or torch package folder) wins; else, for the installed package, a torch
// >= 2.4 in the Python environments the user already has (the project's .venv or venv,
// $VIRTUAL_ENV, $CONDA_PREFIX, then python3, then where `pip show torch` says); for the
// checkout, python3's; else the official torch wheel, pip-installed once into a virtual
// environment (the checkout's .venv for scripts/setup.mjs, a per-user cache for the
// installed package).
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { torchFolderVersion } from '../../src/core/torch-version.mjs';
import { aptInstall, capture, fail, isRoot, run } from './proc.mjs';

export const MIN_TORCH = [2, 4];
export const DEFAULT_TORCH_VERSION = '2.13.0';

export const atLeastMin = (v) => {
  const [maj, min] = v.split(/[.+]/).map(Number);
  return maj > MIN_TORCH[0] || (maj === MIN_TORCH[0] && min >= MIN_TORCH[1]);
};

// A pre-cxx11-ABI libc10 has no std::__cxx11 symbols (mangled "B5cxx11").
function folderAbi(dir) {
  if (process.env.TORCH_CXX11_ABI) return Number(process.env.TORCH_CXX11_ABI);
  const lib = join(dir, 'lib', 'libc10.so');
  return existsSync(lib) && readFileSync(lib).includes('B5cxx11') ? 1 : 0;
}

export function probePython(python) {
  const code =
    'import torch,os;print(os.path.dirname(torch.__file__), torch.__version__, int(torch._C._GLIBCXX_USE_CXX11_ABI))';
  const r = capture(python, ['-c', code]);
  if (!r.ok) return undefined; // no python, or no torch: not an error, try the next source
  const [dir, version, abi] = r.out.trim().split('\n').pop().split(' ');
  return { dir, version, cxx11Abi: Number(abi) };
}

/**
 * The Python environments a user may already have torch in, in the order they are tried:
 * the project's own (.venv, venv: npm runs install scripts with INIT_CWD, the folder
 * `npm install` ran in), the active virtual environment, the active conda environment,
 * then python3 on PATH. Each is { python, source }.
 */
export function userPythons(env = process.env) {
  const out = [];
  if (env.INIT_CWD)
    for (const d of ['.venv', 'venv'])
      out.push({ python: join(env.INIT_CWD, d, 'bin', 'python'), source: `the project's ${d}` });
  if (env.VIRTUAL_ENV) out.push({ python: join(env.VIRTUAL_ENV, 'bin', 'python'), source: '$VIRTUAL_ENV' });
  if (env.CONDA_PREFIX)
    out.push({ python: join(env.CONDA_PREFIX, 'bin', 'python'), source: '$CONDA_PREFIX' });
  out.push({ python: 'python3', source: 'python3' });
  return out;
}

/** torch where `pip show torch` (pip3, then pip) says it is installed, or undefined. */
export function pipShowTorch() {
  for (const pip of ['pip3', 'pip']) {
    const r = capture(pip, ['show', 'torch']);
    const location = r.ok ? /^Location: (.+)$/m.exec(r.out)?.[1]?.trim() : undefined;
    if (location === undefined) continue;
    const dir = join(location, 'torch');
    const version = existsSync(join(dir, 'include', 'torch')) ? torchFolderVersion(dir) : undefined;
    if (version) return { dir, version, cxx11Abi: folderAbi(dir) };
  }
  return undefined;
}

/**
 * What `pip install spec` would download with `python`, in bytes: pip's dry-run report
 * names every wheel; a local one is measured on disk, a remote one by its Content-Length.
 * undefined when pip or the index cannot tell (the download then goes ahead unmeasured).
 */
export async function downloadSize(python, spec, pipArgs = []) {
  const dir = mkdtempSync(join(tmpdir(), 'tsddp-pip-report-'));
  try {
    const report = join(dir, 'report.json');
    const args = [
      '-m',
      'pip',
      'install',
      '--dry-run',
      '--ignore-installed',
      '--quiet',
      '--report',
      report,
      ...pipArgs,
      spec,
    ];
    if (!capture(python, args).ok || !existsSync(report)) return undefined;
    let total = 0;
    for (const item of JSON.parse(readFileSync(report, 'utf8')).install ?? []) {
      const url = item.download_info?.url;
      if (typeof url !== 'string') return undefined;
      if (url.startsWith('file:')) total += statSync(fileURLToPath(url)).size;
      else {
        const r = await fetch(url, { method: 'HEAD', redirect: 'follow' });
        const n = Number(r.headers.get('content-length'));
        if (!r.ok || !(n > 0)) return undefined;
        total += n;
      }
    }
    return total;
  } catch {
    return undefined;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * pip install torch==version into the virtual environment `venv` (created if missing).
 * `allowApt`: may install python3-venv with apt-get (root) when venv lacks ensurepip.
 */
export async function pipInstallTorch(venv, log, allowApt) {
  const version = process.env.TSDDP_TORCH_VERSION || DEFAULT_TORCH_VERSION;
  const py = join(venv, 'bin', 'python');
  if (!existsSync(py)) {
    log(`creating the virtual environment ${venv}`);
    const r = capture('python3', ['-m', 'venv', venv]);
    if (/ENOENT/.test(r.err))
      fail(
        'no torch was found, and there is no python3 on PATH to pip-install one with: install ' +
          'python3 (sudo apt-get install -y python3 python3-venv) and run npx tsddp setup again, ' +
          'or set LIBTORCH to a libtorch or torch package folder',
      );
    if (!r.ok) {
      // Debian's python3 ships venv without ensurepip; python3-venv adds it.
      if (!allowApt || !isRoot())
        fail(`\`python3 -m venv\` failed (${r.err.trim()}); run: sudo apt-get install -y python3-venv`);
      aptInstall(['python3-venv']);
      run('python3', ['-m', 'venv', venv]);
    }
  }
  // TSDDP_TORCH_INDEX: the index to take torch from (https://download.pytorch.org/whl/cpu
  // gives the CPU wheel the prebuilt addons match; PyPI's Linux x64 torch is the CUDA build).
  const index = process.env.TSDDP_TORCH_INDEX ? ['--index-url', process.env.TSDDP_TORCH_INDEX] : [];
  const bytes = await downloadSize(py, `torch==${version}`, index);
  const size = bytes === undefined ? 'size unknown' : `${(bytes / 1e6).toFixed(0)} MB to download`;
  const from = index.length ? ` from ${index[1]}` : '';
  log(`pip install torch==${version}${from} into ${venv} (${size}; one-time, a few minutes)`);
  const quiet = process.env.CI ? ['--progress-bar', 'off'] : [];
  run(py, ['-m', 'pip', 'install', '--disable-pip-version-check', ...quiet, ...index, `torch==${version}`]);
  return probePython(py) ?? fail(`torch is still not importable from ${py} after pip install`);
}

/**
 * The torch to build against: { dir, version, cxx11Abi, source }. `stamp` is the previous
 * build's record (reused so python is not spawned again), `venv` the pip fallback's folder.
 */
export async function findTorch({ stamp, venv, venvSource, log, allowApt = false, userEnvs = false }) {
  if (process.env.LIBTORCH) {
    const dir = resolve(process.env.LIBTORCH);
    return { dir, version: torchFolderVersion(dir), source: 'LIBTORCH', cxx11Abi: folderAbi(dir) };
  }
  // Reuse python's cached answer: spawning python costs ~1 s and the answer only
  // changes when the folder goes away (the version is re-read from files anyway).
  if (stamp.torchDir && stamp.torchSource !== 'LIBTORCH' && existsSync(stamp.torchDir)) {
    const version = torchFolderVersion(stamp.torchDir) ?? stamp.torchVersion;
    return { dir: stamp.torchDir, version, source: stamp.torchSource, cxx11Abi: stamp.cxx11Abi };
  }
  const pythons = userEnvs ? userPythons() : [{ python: 'python3', source: 'python3' }];
  for (const { python, source } of pythons) {
    if (python !== 'python3' && !existsSync(python)) continue; // no such environment: nothing to spawn
    const found = probePython(python);
    if (found && atLeastMin(found.version)) return { ...found, source };
    if (found) log(`${source} has torch ${found.version} (< ${MIN_TORCH.join('.')}), not using it`);
  }
  if (userEnvs) {
    const shown = pipShowTorch();
    if (shown && atLeastMin(shown.version)) return { ...shown, source: 'pip show torch' };
  }
  const cached = probePython(join(venv, 'bin', 'python'));
  if (cached && atLeastMin(cached.version)) return { ...cached, source: venvSource };
  const looked = pythons.map((p) => p.source).concat(userEnvs ? ['pip show torch'] : []);
  log(`no torch >= ${MIN_TORCH.join('.')} in ${looked.join(', ')}: installing one`);
  return { ...(await pipInstallTorch(venv, log, allowApt)), source: venvSource };
}

export function validateTorch(t) {
  if (!existsSync(join(t.dir, 'include', 'torch')) || !existsSync(join(t.dir, 'lib', 'libtorch_cpu.so')))
    fail(`${t.dir} (from ${t.source}) is not a libtorch: it needs include/torch and lib/libtorch_cpu.so`);
  if (!t.version) fail(`cannot tell the torch version of ${t.dir}`);
  if (!atLeastMin(t.version)) fail(`torch ${t.version} in ${t.dir} is older than ${MIN_TORCH.join('.')}`);
}
