// Installing tsddp into a project, measured: the tarball's size, the time of
// `npm install ./tsddp-X.tgz` into a fresh project — with torch in the project's .venv and
// no compiler on PATH (the prebuilt addons); --build-from-source with a warm torch, and
// again into a second project where ccache has the objects; with --cold from an empty
// per-user torch cache, which pip-installs torch first — and the time to `import('tsddp')`
// next to `python -c "import torch"`, alternating (ABAB), medians over --rounds.
//   npm run bench:install -- [--rounds 9] [--cold] [--python PATH]
import { spawnSync } from 'node:child_process';
import {
  mkdirSync,
  mkdtempSync,
  readFileSync,
  realpathSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { parseArgs } from 'node:util';
import { probeTorchPython, REPO_ROOT } from '../src/benchmark/reference.ts';
import { median } from '../src/benchmark/stats.ts';
import { runAbab } from './lib/abab.ts';

const { values: opts } = parseArgs({
  options: {
    rounds: { type: 'string', default: '9' },
    cold: { type: 'boolean', default: false },
    python: { type: 'string' },
  },
});
const rounds = Number(opts.rounds);
const log = (msg: string) => console.error(`bench:install: ${msg}`);
const env = Object.fromEntries(
  Object.entries(process.env).filter(([k]) => !/^npm_/i.test(k) && k !== 'INIT_CWD'),
) as NodeJS.ProcessEnv;
const tmp = mkdtempSync(join(tmpdir(), 'tsddp-bench-install-'));

function run(cmd: string, args: string[], cwd: string, extra: NodeJS.ProcessEnv = {}): number {
  const t0 = performance.now();
  const r = spawnSync(cmd, args, { cwd, env: { ...env, ...extra }, encoding: 'utf8', maxBuffer: 256 << 20 });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} failed:\n${r.stdout}\n${r.stderr}`);
  return (performance.now() - t0) / 1000;
}

/** A folder with node, npm and sh only: a PATH without a compiler, cmake or python. */
function bareBin(): string {
  const bin = join(tmp, 'bare-bin');
  mkdirSync(bin);
  for (const tool of ['node', 'npm', 'npx', 'sh'])
    symlinkSync(
      spawnSync('sh', ['-c', `command -v ${tool}`], { encoding: 'utf8' }).stdout.trim(),
      join(bin, tool),
    );
  return bin;
}

/** The python3 that pip-installs torch into the cache (its folder goes on the bare PATH). */
function probePython3(): string {
  // The interpreter itself, not a shim (pyenv's are bash scripts, and bash is not on PATH).
  const r = spawnSync('python3', ['-c', 'import sys; print(sys.executable)'], { encoding: 'utf8' });
  return realpathSync(r.stdout.trim());
}

function freshProject(name: string): string {
  const dir = join(tmp, name);
  mkdirSync(dir);
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name, private: true, type: 'module' }));
  return dir;
}

try {
  const pack = spawnSync('npm', ['pack', '--json', '--pack-destination', tmp], {
    cwd: REPO_ROOT,
    env,
    encoding: 'utf8',
  });
  const packed = JSON.parse(pack.stdout.slice(pack.stdout.search(/^\[/m)))[0];
  const tarball = join(tmp, packed.filename);
  const stamp = JSON.parse(readFileSync(join(REPO_ROOT, '.tsddp', 'setup.json'), 'utf8'));
  const ccache = spawnSync('ccache', ['--version']).status === 0 ? 'ccache present' : 'no ccache';
  log(`${packed.filename}: ${(statSync(tarball).size / 1024).toFixed(0)} kB; installing (${ccache})`);

  const install = ['install', tarball, '--no-audit', '--no-fund', '--prefer-offline'];
  const fromSource = [...install, '--build-from-source'];
  // The common case: torch already in the project's .venv, and no compiler at all (PATH
  // holds node, npm and sh only): the prebuilt addons.
  const bare = bareBin();
  const prebuiltDir = freshProject('prebuilt');
  symlinkSync(join(REPO_ROOT, '.venv'), join(prebuiltDir, '.venv'));
  const prebuilt = run('npm', install, prebuiltDir, { PATH: bare });
  log(`install, torch in the project's .venv, prebuilt addons, no compiler: ${prebuilt.toFixed(1)} s`);
  // The full C++ build (ccache off), then a second project whose build ccache has seen.
  const warmDir = freshProject('warm');
  const warm = run('npm', fromSource, warmDir, { LIBTORCH: stamp.torchDir, CCACHE_DISABLE: '1' });
  log(`install --build-from-source with a warm torch (LIBTORCH), ccache off: ${warm.toFixed(1)} s`);
  run('npm', fromSource, freshProject('seed'), { LIBTORCH: stamp.torchDir }); // fills ccache
  const again = run('npm', fromSource, freshProject('again'), { LIBTORCH: stamp.torchDir });
  log(`install --build-from-source into a second project: ${again.toFixed(1)} s`);
  let cold: number | null = null;
  if (opts.cold) {
    // An empty per-user cache and no torch on python3: pip installs torch (the default
    // 2.13.0, which the prebuilt addons match), no compiler on PATH.
    const coldDir = freshProject('cold');
    cold = run('npm', install, coldDir, {
      TSDDP_CACHE_DIR: join(tmp, 'cache'),
      LIBTORCH: '',
      PATH: `${bare}:${dirname(probePython3())}`,
    });
    log(`install from an empty torch cache: ${cold.toFixed(1)} s`);
  }

  const py = probeTorchPython(opts.python);
  const importTs = ['--input-type=module', '-e', "await import('tsddp')"];
  const values = runAbab(
    [
      { name: 'tsddp', run: () => ({ import: run(process.execPath, importTs, warmDir) }) },
      ...(py
        ? [{ name: 'torch', run: () => ({ import: run(py.python, ['-c', 'import torch'], warmDir) }) }]
        : []),
    ],
    rounds,
  );
  const ts = median(values.tsddp.import);
  const lines = [
    `| measure | value |`,
    `| --- | --- |`,
    `| package (npm pack) | ${(packed.size / 1024).toFixed(0)} kB, ${(packed.unpackedSize / 1024 / 1024).toFixed(1)} MB unpacked, ${packed.entryCount} files |`,
    `| npm install, torch in the project's .venv, no compiler on PATH (prebuilt addons) | ${prebuilt.toFixed(1)} s |`,
    `| npm install --build-from-source, torch found (LIBTORCH), ccache off | ${warm.toFixed(0)} s |`,
    `| npm install --build-from-source into another project (${ccache}) | ${again.toFixed(0)} s |`,
    ...(cold === null
      ? []
      : [`| npm install, empty torch cache (pip installs torch), prebuilt addons | ${cold.toFixed(0)} s |`]),
    `| \`import('tsddp')\` (node process, median of ${rounds}) | ${(ts * 1000).toFixed(0)} ms |`,
  ];
  if (py) {
    const torch = median(values.torch.import);
    lines.push(
      `| \`import torch\` (python ${py.torchVersion}, median of ${rounds}) | ${(torch * 1000).toFixed(0)} ms |`,
    );
    lines.push(`| ratio tsddp / torch | ${(ts / torch).toFixed(2)}x |`);
  }
  console.log(lines.join('\n'));
} finally {
  rmSync(tmp, { recursive: true, force: true });
}
