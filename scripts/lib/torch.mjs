// Finds the libtorch that the addons are built against (docs/architecture.md §3): LIBTORCH
// (a libtorch or torch package folder) wins; else an importable torch >= 2.4 from python3;
// else the official torch wheel, pip-installed once into a virtual environment (the
// checkout's .venv for scripts/setup.mjs, a per-user cache for the installed package).
import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
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
 * pip install torch==version into the virtual environment `venv` (created if missing).
 * `allowApt`: may install python3-venv with apt-get (root) when venv lacks ensurepip.
 */
export function pipInstallTorch(venv, log, allowApt) {
  const version = process.env.TSDDP_TORCH_VERSION || DEFAULT_TORCH_VERSION;
  const py = join(venv, 'bin', 'python');
  if (!existsSync(py)) {
    log(`creating the virtual environment ${venv}`);
    const r = capture('python3', ['-m', 'venv', venv]);
    if (!r.ok) {
      // Debian's python3 ships venv without ensurepip; python3-venv adds it.
      if (!allowApt || !isRoot())
        fail(`\`python3 -m venv\` failed (${r.err.trim()}); run: sudo apt-get install -y python3-venv`);
      aptInstall(['python3-venv']);
      run('python3', ['-m', 'venv', venv]);
    }
  }
  log(`pip install torch==${version} into ${venv} (one-time, a few minutes)`);
  const quiet = process.env.CI ? ['--progress-bar', 'off'] : [];
  run(py, ['-m', 'pip', 'install', '--disable-pip-version-check', ...quiet, `torch==${version}`]);
  return probePython(py) ?? fail(`torch is still not importable from ${py} after pip install`);
}

/**
 * The torch to build against: { dir, version, cxx11Abi, source }. `stamp` is the previous
 * build's record (reused so python is not spawned again), `venv` the pip fallback's folder.
 */
export function findTorch({ stamp, venv, venvSource, log, allowApt = false }) {
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
  const sys = probePython('python3');
  if (sys && atLeastMin(sys.version)) return { ...sys, source: 'python3' };
  if (sys) log(`python3 has torch ${sys.version} (< ${MIN_TORCH.join('.')}), not using it`);
  const cached = probePython(join(venv, 'bin', 'python'));
  if (cached && atLeastMin(cached.version)) return { ...cached, source: venvSource };
  return { ...pipInstallTorch(venv, log, allowApt), source: venvSource };
}

export function validateTorch(t) {
  if (!existsSync(join(t.dir, 'include', 'torch')) || !existsSync(join(t.dir, 'lib', 'libtorch_cpu.so')))
    fail(`${t.dir} (from ${t.source}) is not a libtorch: it needs include/torch and lib/libtorch_cpu.so`);
  if (!t.version) fail(`cannot tell the torch version of ${t.dir}`);
  if (!atLeastMin(t.version)) fail(`torch ${t.version} in ${t.dir} is older than ${MIN_TORCH.join('.')}`);
}
