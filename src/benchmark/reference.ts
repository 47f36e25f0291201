// Where the PyTorch side of the DDP benchmark comes from: an interpreter that can import
// torch and the reference script bench/reference/ddp.py.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { BenchOptionError } from './cases.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
export const REFERENCE_SCRIPT = `${ROOT}bench/reference/ddp.py`;

export interface TorchPython {
  python: string;
  torchVersion: string;
}

/**
 * `explicit` if given, else the repository's .venv/bin/python, else python3 on PATH: the
 * first that imports torch. Throws a BenchOptionError naming what was tried.
 */
export function findTorchPython(explicit?: string, env: NodeJS.ProcessEnv = process.env): TorchPython {
  if (!existsSync(REFERENCE_SCRIPT)) {
    throw new BenchOptionError(`--reference: the PyTorch script ${REFERENCE_SCRIPT} is missing`);
  }
  const venv = `${ROOT}.venv/bin/python`;
  const candidates = explicit ? [explicit] : [...(existsSync(venv) ? [venv] : []), 'python3'];
  for (const python of candidates) {
    const r = spawnSync(python, ['-c', 'import torch; print(torch.__version__)'], { encoding: 'utf8', env });
    if (r.status === 0) return { python, torchVersion: r.stdout.trim() };
  }
  throw new BenchOptionError(
    `--reference: no Python that can import torch (tried ${candidates.join(', ')}); pass --python PATH`,
  );
}
