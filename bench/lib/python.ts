// Finding and running the Python (PyTorch) side of a benchmark.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/** The repository root (bench/lib/ is two levels down). */
export const repoRoot = fileURLToPath(new URL('../../', import.meta.url));

export interface TorchPython {
  python: string;
  torchVersion: string;
}

/**
 * The first interpreter that can import torch: `explicit` if given, else the
 * repository's .venv/bin/python, else python3 on PATH. Null when none can.
 */
export function findTorchPython(explicit?: string, env: NodeJS.ProcessEnv = process.env): TorchPython | null {
  const venv = `${repoRoot}.venv/bin/python`;
  const candidates = explicit ? [explicit] : [...(existsSync(venv) ? [venv] : []), 'python3'];
  for (const python of candidates) {
    const r = spawnSync(python, ['-c', 'import torch; print(torch.__version__)'], {
      encoding: 'utf8',
      env,
    });
    if (r.status === 0) return { python, torchVersion: r.stdout.trim() };
  }
  return null;
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
