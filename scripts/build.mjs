#!/usr/bin/env node
// Compiles the published package (`npm run build`; `npm pack` runs it as prepack):
//   1. src/ → dist/: ESM JavaScript, .d.ts and source maps (tsconfig.build.json);
//   2. the .d.ts files' relative imports rewritten from .ts to .js (tsc rewrites them in
//      the JavaScript only), so a user's `tsc --strict` resolves them without our flags;
//   3. the dashboard's static files, and src/'s plain .mjs modules, copied beside the
//      JavaScript that uses them;
//   4. the data worker pre-built into one file (dist/data/data-worker.bundle.mjs), so data
//      workers start without esbuild or tsx (see src/data/worker-bundle.ts);
//   5. prebuilds/: the checkout's addons, when built against the default torch, for
//      installs without a compiler (scripts/prebuild.mjs).
import { spawnSync } from 'node:child_process';
import { cpSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { makePrebuilds } from './prebuild.mjs';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const DIST = join(ROOT, 'dist');
const require = createRequire(import.meta.url);
const t0 = Date.now();

function run(args, what) {
  const r = spawnSync(process.execPath, args, {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'inherit'],
    encoding: 'utf8',
    maxBuffer: 64 << 20,
  });
  if (r.status !== 0) {
    process.stdout.write(r.stdout ?? '');
    console.error(`build: ${what} failed (exit ${r.status ?? r.signal})`);
    process.exit(1);
  }
  return r.stdout;
}

const walk = (dir) =>
  readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? walk(join(dir, e.name)) : [join(dir, e.name)],
  );

rmSync(DIST, { recursive: true, force: true });
run([require.resolve('typescript/bin/tsc'), '-p', 'tsconfig.build.json'], 'tsc');

// import/export ... from './x.ts', import './x.ts', import('./x.ts'), declare module './x.ts'
const relativeTs = /((?:from|import|module)\s*\(?\s*)(['"])(\.\.?\/[^'"]*?)\.ts\2/g;
for (const f of walk(DIST).filter((p) => p.endsWith('.d.ts'))) {
  const text = readFileSync(f, 'utf8');
  const fixed = text.replace(relativeTs, (_m, kw, q, path) => `${kw}${q}${path}.js${q}`);
  if (fixed !== text) writeFileSync(f, fixed);
}

cpSync(join(ROOT, 'src', 'dashboard', 'public'), join(DIST, 'dashboard', 'public'), { recursive: true });
// tsc emits no .mjs: the plain modules of src/ (imported by the setup and install scripts
// too, before anything is compiled) are copied as they are, with their declarations.
for (const f of ['core/torch-version.mjs', 'core/torch-version.d.mts'])
  cpSync(join(ROOT, 'src', f), join(DIST, f));

const bundleDir = join(DIST, 'data');
const out = run(
  [join(ROOT, 'src', 'data', 'worker-bundle-build.mjs'), join(bundleDir, 'worker-entry.js'), ROOT, bundleDir],
  'the data worker bundle',
);
writeFileSync(join(bundleDir, 'data-worker.bundle.mjs'), JSON.parse(out).code);
const prebuilt = makePrebuilds(ROOT);
if (prebuilt.why === undefined)
  console.log(`build: prebuilds/${prebuilt.dir} (${Object.keys(prebuilt.hashes).join(', ')})`);
else if (process.env.npm_lifecycle_event === 'prepack' && process.env.TSDDP_ALLOW_NO_PREBUILDS !== '1') {
  // A package without them makes every user compile: refuse, unless asked for one.
  console.error(`build: no prebuilt addons: ${prebuilt.why} (TSDDP_ALLOW_NO_PREBUILDS=1 packs without them)`);
  process.exit(1);
} else console.log(`build: no prebuilt addons in the package: ${prebuilt.why}`);
console.log(`build: dist/ in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
