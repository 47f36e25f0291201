// PyTorch's reference numbers for the fixture-driven tests, computed live when this
// machine can. A committed fixture is PyTorch's answer on the CPU that generated it, and
// another CPU's PyTorch may round a kernel's last bit differently (issue: Adam's fixture
// is 1 ulp off on an Intel Xeon). So when .venv's python has the torch tsddp is built
// against, the fixture's generator runs here, into a private temp folder, and both sides
// compute on this CPU: a zero-ulp comparison is then right. Otherwise the committed file
// is read, and the tests allow the per-case ulps they state. TSDDP_FIXTURES=stored forces
// the committed files (to test that path on a machine with torch); TSDDP_FIXTURES=live
// fails instead of falling back (for CI, which must compare live).
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as t from '../../src/index.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const FIXTURES = join(ROOT, 'test', 'fixtures');
const PYTHON = join(ROOT, '.venv', 'bin', 'python');

export interface FixtureSource {
  live: boolean;
  /** One line for the test log: where the numbers come from, and why. */
  why: string;
}

let source: FixtureSource | undefined;

/** How this process reads fixtures (decided once: the probe costs a python start, not a torch import). */
export function fixtureSource(): FixtureSource {
  source ??= decideSource();
  return source;
}

function decideSource(): FixtureSource {
  const mode = process.env.TSDDP_FIXTURES ?? '';
  if (!['', 'live', 'stored'].includes(mode)) {
    throw new Error(`TSDDP_FIXTURES must be 'live' or 'stored', not '${mode}'`);
  }
  if (mode === 'stored') return { live: false, why: 'committed fixtures (TSDDP_FIXTURES=stored)' };
  const ours = t.buildInfo().torchVersion;
  const theirs = venvTorchVersion();
  if (theirs === ours) return { live: true, why: `generated live by .venv's PyTorch ${ours} on this CPU` };
  const missing =
    theirs === null ? `${PYTHON} has no torch` : `.venv has torch ${theirs}, tsddp is built against ${ours}`;
  if (mode === 'live') throw new Error(`TSDDP_FIXTURES=live, but ${missing}`);
  return { live: false, why: `committed fixtures (${missing})` };
}

/** The version of torch installed in .venv (without a +local suffix), or null; torch is not imported. */
function venvTorchVersion(): string | null {
  if (!existsSync(PYTHON)) return null;
  const r = spawnSync(PYTHON, ['-c', "import importlib.metadata as m; print(m.version('torch'))"], {
    encoding: 'utf8',
  });
  return r.status === 0 ? r.stdout.trim().split('+')[0] : null;
}

const cache = new Map<string, Buffer>();

/**
 * The bytes of the fixture `output` (a path under test/fixtures), made by `script` (its
 * generator, under test/fixtures, which takes the output path as its one argument):
 * generated now when fixtureSource() is live, else the committed file. A generator that
 * fails throws (with its stderr): a broken live path must not pass as a stored one.
 */
export function fixtureBytes(script: string, output: string): { bytes: Buffer; live: boolean } {
  const { live, why } = fixtureSource();
  const key = `${script}\0${output}`;
  let bytes = cache.get(key);
  if (bytes === undefined) {
    if (live) {
      const started = Date.now();
      bytes = generate(script, output);
      const seconds = ((Date.now() - started) / 1000).toFixed(1);
      console.log(`fixture ${output}: ${why} (${script} took ${seconds} s)`);
    } else {
      bytes = readFileSync(join(FIXTURES, output));
      console.log(`fixture ${output}: ${why}`);
    }
    cache.set(key, bytes);
  }
  return { bytes, live };
}

/** fixtureBytes for a JSON fixture, parsed (key order is kept, as the tests rely on). */
export function fixtureJson<T>(script: string, output: string): { data: T; live: boolean } {
  const { bytes, live } = fixtureBytes(script, output);
  return { data: JSON.parse(bytes.toString('utf8')) as T, live };
}

function generate(script: string, output: string): Buffer {
  const dir = mkdtempSync(join(tmpdir(), 'tsddp-fixture-'));
  try {
    const out = join(dir, basename(output));
    const r = spawnSync(PYTHON, [join(FIXTURES, script), out], {
      cwd: ROOT,
      encoding: 'utf8',
      maxBuffer: 64 << 20,
    });
    if (r.status !== 0 || !existsSync(out)) {
      const err = r.error ? String(r.error) : (r.stderr ?? '').trim().split('\n').slice(-20).join('\n');
      throw new Error(
        `live fixture: ${PYTHON} test/fixtures/${script} ${out} failed (exit ${r.status}):\n${err}`,
      );
    }
    return readFileSync(out);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
