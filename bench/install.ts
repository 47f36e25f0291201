// Installing tsddp into a project, measured: the tarball's size, the time of
// `npm install ./tsddp-X.tgz` into a fresh project (the install step builds both addons;
// with a warm torch, again into a second project where ccache has the objects, and with
// --cold from an empty per-user torch cache, which pip-installs torch first), and the time to `import('tsddp')` next to `python -c "import torch"`,
// alternating (ABAB), medians over --rounds.
//   npm run bench:install -- [--rounds 9] [--cold] [--python PATH]
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
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
  const warmDir = freshProject('warm');
  // The full C++ build (ccache off), then a second project whose build ccache has seen.
  const warm = run('npm', install, warmDir, { LIBTORCH: stamp.torchDir, CCACHE_DISABLE: '1' });
  log(`install with a warm torch (LIBTORCH), ccache off: ${warm.toFixed(1)} s`);
  run('npm', install, freshProject('seed'), { LIBTORCH: stamp.torchDir }); // fills ccache
  const again = run('npm', install, freshProject('again'), { LIBTORCH: stamp.torchDir });
  log(`install into a second project: ${again.toFixed(1)} s`);
  let cold: number | null = null;
  if (opts.cold) {
    // An empty per-user cache and no torch on python3: pip installs torch, then the build.
    const coldDir = freshProject('cold');
    cold = run('npm', install, coldDir, {
      TSDDP_CACHE_DIR: join(tmp, 'cache'),
      LIBTORCH: '',
      CCACHE_DISABLE: '1',
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
    `| npm install, warm torch, full C++ build (ccache off) | ${warm.toFixed(0)} s |`,
    `| npm install into another project, warm torch (${ccache}) | ${again.toFixed(0)} s |`,
    ...(cold === null ? [] : [`| npm install, empty torch cache (pip), ccache off | ${cold.toFixed(0)} s |`]),
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
