// The published package, as a user gets it: `npm pack` (which compiles dist/),
// the tarball's file list, `npm install ./tsddp-X.tgz` into a fresh project (its install
// step builds both addons against the torch this checkout uses, passed as LIBTORCH), a
// 2-rank DDP training with `npx tsrun` under plain node (compiled JavaScript), the clear
// refusal of a .ts script while tsx is missing, `tsc --strict` on a user script, and the
// same training as TypeScript once tsx is installed. Several minutes: the C++ build.
import assert from 'node:assert/strict';
import { type SpawnSyncOptions, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, before, test } from 'node:test';

const ROOT = resolve(import.meta.dirname, '..');
const tmp = mkdtempSync(join(tmpdir(), 'tsddp-package-'));
const project = join(tmp, 'project');
after(() => rmSync(tmp, { recursive: true, force: true }));

// The outer `npm test` sets npm_* variables (prefix, lifecycle event, ...) that must not
// steer the npm commands run here.
const env: NodeJS.ProcessEnv = Object.fromEntries(
  Object.entries(process.env).filter(([k]) => !/^npm_/i.test(k) && k !== 'INIT_CWD'),
);

function sh(cmd: string, args: string[], opts: SpawnSyncOptions = {}) {
  const r = spawnSync(cmd, args, { cwd: project, env, encoding: 'utf8', timeout: 600_000, ...opts });
  const out = `${r.stdout ?? ''}\n${r.stderr ?? ''}`;
  return { status: r.status, out, stdout: String(r.stdout ?? '') };
}
function ok(cmd: string, args: string[], opts: SpawnSyncOptions = {}) {
  const r = sh(cmd, args, opts);
  assert.equal(r.status, 0, `${cmd} ${args.join(' ')} failed:\n${r.out.slice(-6000)}`);
  return r;
}
const devVersion = (name: string) =>
  JSON.parse(readFileSync(join(ROOT, 'node_modules', name, 'package.json'), 'utf8')).version as string;

interface PackedFile {
  path: string;
  size: number;
}
let packed: { filename: string; size: number; unpackedSize: number; files: PackedFile[] };

before(() => {
  // prepack (scripts/build.mjs) may print before npm's JSON, which starts a line with '['.
  const { stdout } = ok('npm', ['pack', '--json', '--pack-destination', tmp], { cwd: ROOT });
  packed = JSON.parse(stdout.slice(stdout.search(/^\[/m)))[0];
  ok('mkdir', ['-p', project], { cwd: tmp });
  // A user's ESM project (npm init's default is CommonJS, which has no top-level await).
  writeFileSync(
    join(project, 'package.json'),
    JSON.stringify({ name: 'user-project', private: true, type: 'module' }),
  );
});

test('the tarball holds the compiled package and no tests, fixtures or benchmarks', (t) => {
  const paths = packed.files.map((f) => f.path);
  for (const needed of [
    'dist/index.js',
    'dist/index.d.ts',
    'dist/cli/main.js',
    'dist/data/data-worker.bundle.mjs',
    'dist/dashboard/public/index.html',
    'bin/tsddp.mjs',
    'scripts/install.mjs',
    'native/CMakeLists.txt',
    'native/src/addon.cc',
    'native/image/jpeg.cc',
    'LICENSE',
  ])
    assert.ok(paths.includes(needed), `${needed} is missing from the tarball`);
  // The README's links into docs/ resolve inside the package (the generated API pages,
  // docs/api, are left out: the .d.ts files carry the same text).
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  const linked = [...readme.matchAll(/\]\((docs\/[^)#]+)/g)].map((m) => m[1]);
  assert.ok(linked.includes('docs/guide/porting.md'));
  for (const doc of new Set(linked))
    if (!doc.startsWith('docs/api/'))
      assert.ok(paths.includes(doc), `README links ${doc}, which is not in the tarball`);
  // src/ stays out but for the torch version reader the install script imports before
  // anything is compiled (src/core/torch-version.mjs; dist/ has its copy for the library).
  const unwanted = paths.filter(
    (p) =>
      (/^(test|src|examples|\.ci|native\/build)\//.test(p) && p !== 'src/core/torch-version.mjs') ||
      /^docs\/(api|.*\.png$)/.test(p) ||
      /fixture/i.test(p) ||
      // The reference side of `tsddp bench --reference`: ddp.py and the ResNet it imports.
      (p.startsWith('bench/') && !['bench/reference/ddp.py', 'bench/reference/train_step.py'].includes(p)) ||
      p.endsWith('.test.ts'),
  );
  assert.deepEqual(unwanted, []);
  t.diagnostic(
    `${packed.filename}: ${(packed.size / 1024).toFixed(0)} kB packed, ` +
      `${(packed.unpackedSize / 1024 / 1024).toFixed(1)} MB unpacked, ${paths.length} files`,
  );
});

/**
 * Where the installed package finds torch: the project's .venv, a link to the checkout's
 * (as a user who pip-installed torch there has it), when the checkout's torch is there
 * (scripts/setup.mjs puts it there unless python3 has one); else LIBTORCH.
 */
const checkoutStamp = JSON.parse(readFileSync(join(ROOT, '.tsddp', 'setup.json'), 'utf8'));
const torchInVenv = checkoutStamp.torchSource === '.venv';
const torchFrom = torchInVenv ? "the project's \\.venv" : 'LIBTORCH';

/** A PATH with node, npm, npx and sh and nothing else: no compiler, no cmake, no python3. */
function bareMachine(): NodeJS.ProcessEnv {
  const bin = join(tmp, 'bare-bin');
  mkdirSync(bin, { recursive: true });
  for (const tool of ['node', 'npm', 'npx', 'sh']) {
    const found = spawnSync('sh', ['-c', `command -v ${tool}`], { encoding: 'utf8' }).stdout.trim();
    assert.ok(found, `${tool} is not on PATH`);
    if (!existsSync(join(bin, tool))) symlinkSync(found, join(bin, tool));
  }
  return { ...env, PATH: bin, ...(torchInVenv ? {} : { LIBTORCH: checkoutStamp.torchDir }) };
}

test('npm install without a compiler takes the prebuilt addons; a 2-rank DDP script runs with npx tsrun on plain node', (t) => {
  const paths = packed.files.map((f) => f.path);
  const manifest = JSON.parse(readFileSync(join(ROOT, 'prebuilds', 'manifest.json'), 'utf8'));
  const [prebuild] = manifest.prebuilds;
  for (const name of Object.keys(prebuild.files))
    assert.ok(paths.includes(`prebuilds/${prebuild.dir}/${name}`), `${name} is not in the tarball`);
  if (torchInVenv) symlinkSync(join(ROOT, '.venv'), join(project, '.venv'));
  const t0 = Date.now();
  const { out } = ok(
    'npm',
    [
      'install',
      join(tmp, packed.filename),
      '--no-audit',
      '--no-fund',
      '--prefer-offline',
      '--foreground-scripts',
    ],
    { env: bareMachine() },
  );
  const seconds = (Date.now() - t0) / 1000;
  t.diagnostic(
    `npm install of the tarball, torch in the project's .venv, no compiler: ${seconds.toFixed(1)} s`,
  );
  assert.doesNotMatch(out, /tsddp install: FAILED/);
  assert.match(out, new RegExp(`tsddp install: torch 2\\.13\\.0\\S* from ${torchFrom}`));
  assert.match(
    out,
    new RegExp(`using the prebuilt addons ${prebuild.dir.replace(/[.+]/g, '\\$&')} \\(no compiler needed\\)`),
  );
  assert.match(
    out,
    new RegExp(`tsddp install: done in \\d+ s: torch .* from ${torchFrom}; addons prebuilt \\(linux-x64-`),
  );
  const installed = JSON.parse(
    readFileSync(join(project, 'node_modules', 'tsddp', '.tsddp', 'setup.json'), 'utf8'),
  );
  assert.equal(installed.addons, 'prebuilt');
  const info = ok('npx', ['tsddp', 'info', '--json'], { env: bareMachine() });
  assert.equal(JSON.parse(info.stdout).addons, `prebuilt (${prebuild.dir})`);
  // The JPEG addon decodes with the libjpeg shipped beside it (a bare machine has none).
  const release = join(project, 'node_modules', 'tsddp', 'native', 'build', 'Release');
  const decode = `import sharp from 'sharp'; import { createRequire } from 'node:module';
    const jpeg = await sharp({ create: { width: 8, height: 6, channels: 3, background: '#c81e1e' } }).jpeg().toBuffer();
    const img = createRequire(import.meta.url)(${JSON.stringify(join(release, 'tsddp_image.node'))}).decodeJpeg(jpeg);
    const maps = (await import('node:fs')).readFileSync('/proc/self/maps', 'utf8');
    console.log(JSON.stringify([img.width, img.height, maps.match(/\\S*libjpeg\\S*/g)]));`;
  const decoded = ok(process.execPath, ['--input-type=module', '-e', decode], { env: bareMachine() });
  const [width, height, jpegLibs] = JSON.parse(decoded.stdout);
  assert.deepEqual([width, height], [8, 6]);
  assert.deepEqual([...new Set(jpegLibs)], [join(release, 'libjpeg.so.62')]);

  copyFileSync(join(ROOT, 'test', 'package', 'user-train.ts'), join(project, 'train.mjs'));
  const prefix = join(project, 'js');
  ok('npx', ['tsrun', '--nproc-per-node', '2', '--standalone', 'train.mjs'], {
    env: { ...bareMachine(), RESULT_PREFIX: prefix, OMP_NUM_THREADS: '1' },
  });
  const ranks = [0, 1].map((r) => JSON.parse(readFileSync(`${prefix}.rank${r}.json`, 'utf8')));
  for (const r of ranks) {
    assert.equal(r.losses.length, 8); // 64 images, 2 ranks, batch 8, 2 epochs
    assert.ok(r.losses.every(Number.isFinite));
  }
  assert.equal(ranks[0].checksum, ranks[1].checksum, 'DDP replicas differ after training');
  // The installed package's SummaryWriter (protobufjs and all): rank 0's event file holds
  // the version event and one record per loss (TFRecord framing, 16 bytes around each).
  const [events] = readdirSync(`${prefix}.tb`);
  assert.match(events, /^events\.out\.tfevents\.\d{10}\./);
  const bytes = readFileSync(join(`${prefix}.tb`, events));
  let records = 0;
  for (let at = 0; at < bytes.length; at += 16 + Number(bytes.readBigUInt64LE(at))) records++;
  assert.equal(records, 1 + ranks[0].losses.length);
  // ONNX: a ModelProto whose producer is tsddp (field 2, "tsddp"); Hugging Face: the GPT-2
  // folder written and read back.
  assert.ok(readFileSync(`${prefix}.onnx`).includes(Buffer.from('tsddp')));
  const gpt = JSON.parse(readFileSync(`${prefix}.gpt2.json`, 'utf8'));
  assert.deepEqual([gpt.nLayer, gpt.nEmbd, gpt.vocabSize], [1, 8, 16]);
});

test('npx tsddp bench --reference runs the PyTorch side from the installed package', (t) => {
  const python = join(ROOT, '.venv', 'bin', 'python');
  if (!existsSync(python)) {
    t.skip(`no ${python} with torch (scripts/setup.mjs makes one where pip installs torch)`);
    return;
  }
  const out = join(project, 'bench');
  ok(
    'npx',
    [
      'tsddp',
      'bench',
      ...[
        '--model',
        'resnet18-cifar',
        '--width-multiplier',
        '0.125',
        '--image-size',
        '16',
        '--batch-size',
        '2',
      ],
      ...['--scenarios', 'scaling', '--max-world', '1', '--cores', '1', '--warmup', '1', '--steps', '1'],
      ...['--repeats', '1', '--reference', '--python', python, '--out', out],
    ],
    { env: { ...env, OMP_NUM_THREADS: '1' } },
  );
  assert.match(
    readFileSync(join(out, 'results.md'), 'utf8'),
    /\| world 1 x 1 thread\(s\) \|\s+[\d.]+ \|\s+[\d.]+ \| [\d.]+x/,
  );
});

test('a .ts script without tsx installed is refused with the command to fix it', () => {
  copyFileSync(join(ROOT, 'test', 'package', 'user-train.ts'), join(project, 'train.ts'));
  const r = sh('npx', ['tsrun', '--nproc-per-node', '1', 'train.ts']);
  assert.notEqual(r.status, 0);
  assert.match(r.out, /train\.ts is TypeScript.*tsx is not installed.*npm install --save-dev tsx/);
});

test('a user script and the README example type-check with tsc --strict; the script runs through tsx', () => {
  ok('npm', [
    'install',
    '--save-dev',
    `tsx@${devVersion('tsx')}`,
    `typescript@${devVersion('typescript')}`,
    `@types/node@${devVersion('@types/node')}`,
    `esbuild@${devVersion('esbuild')}`,
    '--no-audit',
    '--no-fund',
    '--prefer-offline',
  ]);
  const tsconfig = {
    compilerOptions: {
      target: 'ES2022',
      lib: ['ES2023', 'ESNext.Disposable'],
      module: 'NodeNext',
      moduleResolution: 'NodeNext',
      types: ['node'],
      strict: true,
      noEmit: true,
      skipLibCheck: false,
    },
    files: ['train.ts', 'readme.ts'],
  };
  writeFileSync(join(project, 'tsconfig.json'), JSON.stringify(tsconfig));
  // The README's example, as a user would paste it, is checked with the same settings.
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  const install = readme.slice(readme.indexOf('## Install in your project'));
  const example = /```ts\n([\s\S]*?)```/.exec(install)?.[1];
  assert.ok(example?.includes("from 'tsddp'"), 'no ts example in the README install section');
  writeFileSync(join(project, 'readme.ts'), String(example));
  ok('npx', ['tsc', '-p', '.']);

  const prefix = join(project, 'ts');
  ok('npx', ['tsrun', '--nproc-per-node', '2', '--standalone', 'train.ts'], {
    env: { ...env, RESULT_PREFIX: prefix, OMP_NUM_THREADS: '1' },
  });
  const ranks = [0, 1].map((r) => JSON.parse(readFileSync(`${prefix}.rank${r}.json`, 'utf8')));
  assert.equal(ranks[0].checksum, ranks[1].checksum, 'DDP replicas differ after training');
  // The same seed, data and code as the JavaScript run: the same training.
  const js = JSON.parse(readFileSync(join(project, 'js.rank0.json'), 'utf8'));
  assert.deepEqual(ranks[0].losses, js.losses);
});

test('the bundled script (esbuild, tsddp external) runs on plain node', () => {
  ok('npx', [
    'esbuild',
    'train.ts',
    '--bundle',
    '--platform=node',
    '--format=esm',
    '--external:tsddp',
    '--outfile=bundle/train.mjs',
  ]);
  const prefix = join(project, 'bundle');
  ok('npx', ['tsrun', '--nproc-per-node', '2', '--standalone', 'bundle/train.mjs'], {
    env: { ...env, RESULT_PREFIX: prefix, OMP_NUM_THREADS: '1' },
  });
  const js = JSON.parse(readFileSync(join(project, 'js.rank0.json'), 'utf8'));
  assert.deepEqual(JSON.parse(readFileSync(`${prefix}.rank0.json`, 'utf8')).losses, js.losses);
});

test('npx tsddp setup finds the addons up to date, and an addon built for another torch is refused', () => {
  const { out } = ok('npx', ['tsddp', 'setup'], { env: bareMachine() });
  assert.match(out, /the addons are up to date/);
  assert.match(
    out,
    new RegExp(
      `tsddp install: done in \\d+ s: torch [\\d.]+\\S* from ${torchFrom}; addons prebuilt \\(.*\\), up to date`,
    ),
  );

  // As after `pip install -U torch` in the folder the addon links to: the stamp is what
  // the folder held at build time, so claiming another version there is the same fault.
  const installed = join(project, 'node_modules', 'tsddp', '.tsddp', 'setup.json');
  const original = readFileSync(installed, 'utf8');
  writeFileSync(installed, JSON.stringify({ ...JSON.parse(original), torchVersion: '2.4.0' }));
  try {
    const r = sh(process.execPath, ['--input-type=module', '-e', "await import('tsddp')"]);
    assert.notEqual(r.status, 0);
    assert.match(r.out, /NativeAddonError: .*built against torch 2\.4\.0 in .*it now holds torch 2\.\d+/);
    assert.match(r.out, /run `npx tsddp setup` to install the addons for torch 2\.\d+/);
    // The commands say it in one message, without a stack trace.
    for (const cmd of [
      ['tsddp', 'info'],
      ['tsrun', '--nproc-per-node', '1', 'train.mjs'],
    ]) {
      const c = sh('npx', cmd, { env: bareMachine() });
      assert.equal(c.status, 1, `npx ${cmd.join(' ')}:\n${c.out}`);
      assert.match(c.out, /^tsddp: the native addon was built against torch 2\.4\.0 /m);
      assert.doesNotMatch(c.out, /^\s+at /m, `npx ${cmd.join(' ')} printed a stack trace`);
    }
  } finally {
    writeFileSync(installed, original);
  }
});

test('a machine without the build tools gets one message naming the packages to install', () => {
  const stamp = JSON.parse(readFileSync(join(ROOT, '.tsddp', 'setup.json'), 'utf8'));
  const script = join(project, 'node_modules', 'tsddp', 'scripts', 'install.mjs');
  // No cmake or compiler on PATH (node itself is started by its absolute path).
  const r = sh(process.execPath, [script, '--rebuild'], {
    env: { ...env, PATH: tmp, LIBTORCH: stamp.torchDir },
  });
  assert.equal(r.status, 1);
  assert.match(r.out, /needs these Debian\/Ubuntu packages, which are missing:/);
  assert.match(r.out, /cmake +the build system/);
  assert.match(r.out, /sudo apt-get install -y (.* )?cmake/);
  assert.match(r.out, /npx tsddp setup --install-system-deps/);

  // A torch no prebuilt is made for: the message says so first. The installed addons stay.
  const manifestPath = join(project, 'node_modules', 'tsddp', 'prebuilds', 'manifest.json');
  const manifest = readFileSync(manifestPath, 'utf8');
  const installedStamp = join(project, 'node_modules', 'tsddp', '.tsddp', 'setup.json');
  const before = readFileSync(installedStamp, 'utf8');
  writeFileSync(manifestPath, manifest.replaceAll('2.13.0', '2.99.0'));
  try {
    const other = sh(process.execPath, [script], { env: { ...env, PATH: tmp } });
    assert.equal(other.status, 1);
    assert.match(
      other.out,
      /no prebuilt addons for torch 2\.13\.0\S* \(C\+\+11 ABI \d\); there are: linux-x64-glibc-torch2\.99\.0.*, so the native build needs these Debian\/Ubuntu packages/,
    );
    assert.equal(readFileSync(installedStamp, 'utf8'), before);
  } finally {
    writeFileSync(manifestPath, manifest);
  }
});

test('npm install --ignore-scripts, then npx tsddp setup --build-from-source, builds the same package', (t) => {
  const stamp = JSON.parse(readFileSync(join(ROOT, '.tsddp', 'setup.json'), 'utf8'));
  const second = join(tmp, 'second');
  ok('mkdir', ['-p', second]);
  writeFileSync(
    join(second, 'package.json'),
    JSON.stringify({ name: 'second', private: true, type: 'module' }),
  );
  const install = ['install', join(tmp, packed.filename), '--ignore-scripts', '--no-audit', '--no-fund'];
  ok('npm', [...install, '--prefer-offline'], { cwd: second });
  const unbuilt = sh(process.execPath, ['--input-type=module', '-e', "await import('tsddp')"], {
    cwd: second,
  });
  assert.notEqual(unbuilt.status, 0);
  assert.match(unbuilt.out, /NativeAddonError: tsddp: the native addon is not built .*run `npx tsddp setup`/);

  const t0 = Date.now();
  const built = ok('npx', ['tsddp', 'setup', '--build-from-source'], {
    cwd: second,
    env: { ...env, LIBTORCH: stamp.torchDir },
  });
  assert.match(built.out, /building the addons/);
  assert.match(built.out, /done in \d+ s: torch .* from LIBTORCH; addons built here/);
  t.diagnostic(
    `npx tsddp setup --build-from-source in a second project: ${((Date.now() - t0) / 1000).toFixed(0)} s`,
  );
  const probe = "const t = await import('tsddp'); console.log(t.tensor([1, 2, 3]).sum().item())";
  const loaded = ok(process.execPath, ['--input-type=module', '-e', probe], { cwd: second });
  assert.match(loaded.stdout, /^6\n/);
  // Built in another folder against the same torch (reached by another path) with the same
  // compiler: the same bytes as the prebuilt ones (scripts/prebuild.mjs: reproducible).
  const manifest = JSON.parse(readFileSync(join(ROOT, 'prebuilds', 'manifest.json'), 'utf8'));
  const release = join(second, 'node_modules', 'tsddp', 'native', 'build', 'Release');
  for (const name of ['tsddp.node', 'tsddp_image.node']) {
    const hash = createHash('sha256')
      .update(readFileSync(join(release, name)))
      .digest('hex');
    assert.equal(hash, manifest.prebuilds[0].files[name], `${name} built here differs from the prebuilt one`);
  }
});
