// The PyTorch (Python) side of the benchmarks: an interpreter that can import torch, the
// reference scripts in bench/reference/ (ddp.py ships with the package for `tsddp bench
// --reference`; the others are in a checkout only) and running one for its JSON answer.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { BenchOptionError } from './cases.ts';

/**
 * The repository root of a checkout (this module is src/benchmark/reference.ts), or the
 * package root when installed (dist/benchmark/reference.js): two levels up either way.
 * Ends with a slash.
 */
export const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** The path of bench/reference/`name` (e.g. 'train_step.py'). */
export function referenceScript(name: string): string {
  return `${REPO_ROOT}bench/reference/${name}`;
}

/** The PyTorch side of `tsddp bench --reference` and bench/ddp.ts. */
export const REFERENCE_SCRIPT = referenceScript('ddp.py');

export interface TorchPython {
  python: string;
  torchVersion: string;
}

/** What probeTorchPython tries, in order: `explicit` alone, else .venv/bin/python (if there) and python3. */
function candidates(explicit?: string): string[] {
  if (explicit) return [explicit];
  const venv = `${REPO_ROOT}.venv/bin/python`;
  return [...(existsSync(venv) ? [venv] : []), 'python3'];
}

/**
 * The first interpreter that can import torch: `explicit` if given, else the
 * repository's .venv/bin/python, else python3 on PATH. Null when none can (the bench/
 * scripts then measure tsddp alone).
 */
export function probeTorchPython(
  explicit?: string,
  env: NodeJS.ProcessEnv = process.env,
): TorchPython | null {
  for (const python of candidates(explicit)) {
    const r = spawnSync(python, ['-c', 'import torch; print(torch.__version__)'], { encoding: 'utf8', env });
    if (r.status === 0) return { python, torchVersion: r.stdout.trim() };
  }
  return null;
}

/**
 * probeTorchPython for `tsddp bench --reference`, which needs one: throws a
 * BenchOptionError naming what was tried, or the missing reference script.
 */
export function findTorchPython(explicit?: string, env: NodeJS.ProcessEnv = process.env): TorchPython {
  if (!existsSync(REFERENCE_SCRIPT)) {
    throw new BenchOptionError(`--reference: the PyTorch script ${REFERENCE_SCRIPT} is missing`);
  }
  const found = probeTorchPython(explicit, env);
  if (found) return found;
  throw new BenchOptionError(
    `--reference: no Python that can import torch (tried ${candidates(explicit).join(', ')}); pass --python PATH`,
  );
}

/**
 * Runs a Python script that prints one JSON object as its last stdout line and returns
 * it. Throws with the script's stderr when it fails.
 */
export function runPythonJson<T>(python: string, script: string, args: string[], env: NodeJS.ProcessEnv): T {
  const r = spawnSync(python, [script, ...args], { encoding: 'utf8', env, maxBuffer: 64 << 20 });
  const last = r.stdout?.trim().split('\n').pop() ?? '';
  if (r.status !== 0 || !last.startsWith('{')) {
    const err = r.error ? String(r.error) : (r.stderr ?? '').trim().split('\n').slice(-20).join('\n');
    throw new Error(`${python} ${script} failed (exit ${r.status}):\n${err}`);
  }
  return JSON.parse(last) as T;
}
