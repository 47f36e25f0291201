// The data worker as one pre-built JavaScript file, so a worker thread starts without a
// TypeScript loader: registering tsx in a worker costs ~0.25 s (its hooks thread and
// esbuild), several times a bare worker's start, and a non-persistent DataLoader pays it
// at every epoch (bench/dataloader.ts). Built with esbuild on first use and rebuilt when
// a source file changes (checked by mtime and size at every pool start: a few stat calls),
// under node_modules/.cache/tsddp so the bundle's package imports (sharp, tsx) resolve.
// When it cannot be built, the pool falls back to loading the TypeScript sources with tsx.
// The published package ships the bundle ready-made (dist/data/data-worker.bundle.mjs,
// built by scripts/build.mjs at `npm pack`), so library users never need esbuild or tsx.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { isCompiled } from '../core/module-url.ts';
import { writeFileAtomicSync } from '../files/index.ts';

/** The bundle's file name in the published package, next to this module (dist/data/). */
export const PACKAGED_BUNDLE = 'data-worker.bundle.mjs';
const root = fileURLToPath(new URL('../../', import.meta.url));
const entry = fileURLToPath(new URL('./worker-entry.ts', import.meta.url));
const builder = fileURLToPath(new URL('./worker-bundle-build.mjs', import.meta.url));
const cacheDir = join(root, 'node_modules', '.cache', 'tsddp');
const manifestPath = join(cacheDir, 'data-worker.json');

interface Manifest {
  bundle: string;
  /** Absolute path -> [mtimeMs, size] of every file the bundle was built from. */
  inputs: Record<string, [number, number]>;
}

function fingerprint(path: string): [number, number] | null {
  try {
    const st = statSync(path);
    return [st.mtimeMs, st.size];
  } catch {
    return null;
  }
}

function readManifest(): Manifest | null {
  try {
    return JSON.parse(readFileSync(manifestPath, 'utf8')) as Manifest;
  } catch {
    return null;
  }
}

function isFresh(m: Manifest): boolean {
  if (fingerprint(join(cacheDir, m.bundle)) === null) return false;
  return Object.entries(m.inputs).every(([p, fp]) => {
    const now = fingerprint(p);
    return now !== null && now[0] === fp[0] && now[1] === fp[1];
  });
}

function build(): Manifest {
  const r = spawnSync(process.execPath, [builder, entry, root, cacheDir], {
    encoding: 'utf8',
    maxBuffer: 64 << 20,
  });
  if (r.status !== 0)
    throw new Error(r.error?.message ?? (r.stderr.trim() || `exit ${r.status ?? r.signal}`));
  const { code, inputs } = JSON.parse(r.stdout) as { code: string; inputs: string[] };
  mkdirSync(cacheDir, { recursive: true });
  const bundle = `data-worker-${createHash('sha256').update(code).digest('hex').slice(0, 16)}.mjs`;
  writeFileAtomicSync(join(cacheDir, bundle), code);
  const manifest: Manifest = { bundle, inputs: {} };
  for (const p of [...inputs.map((i) => resolve(root, i)), builder]) {
    const fp = fingerprint(p);
    if (fp) manifest.inputs[p] = fp;
  }
  writeFileAtomicSync(manifestPath, JSON.stringify(manifest));
  for (const f of readdirSync(cacheDir)) {
    if (/^data-worker-.*\.mjs$/.test(f) && f !== bundle) rmSync(join(cacheDir, f), { force: true });
  }
  return manifest;
}

let failure: string | undefined;

/**
 * The pre-built worker's file URL (building it if missing or stale), or null when it
 * cannot be built here — then the reason is in `dataWorkerBundleFailure()`.
 */
export function dataWorkerBundle(): { url: URL; built: boolean } | null {
  if (isCompiled(import.meta.url)) {
    const packaged = new URL(`./${PACKAGED_BUNDLE}`, import.meta.url);
    return fingerprint(fileURLToPath(packaged)) === null ? null : { url: packaged, built: false };
  }
  if (failure !== undefined) return null;
  const cached = readManifest();
  if (cached !== null && isFresh(cached))
    return { url: pathToFileURL(join(cacheDir, cached.bundle)), built: false };
  try {
    const m = build();
    return { url: pathToFileURL(join(cacheDir, m.bundle)), built: true };
  } catch (e) {
    failure = (e as Error).message;
    console.warn(
      `DataLoader: cannot pre-build the data worker in ${cacheDir} (${failure}); ` +
        'workers load the TypeScript sources through tsx instead, which starts them ~0.25 s slower',
    );
    return null;
  }
}

export function dataWorkerBundleFailure(): string | undefined {
  return failure;
}
