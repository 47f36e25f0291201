// Where the PyTorch-written .pt fixtures come from (test/fixtures/pt/make.py): the
// committed folder always, and, when .venv has the torch tsddp is built against
// (test/helpers/live-fixture.ts decides), a folder make.py fills now, so that today's
// PyTorch's files are read too. Loading is exact (bytes in, the same bytes out), so the
// committed files need no per-CPU allowance.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { fixtureSource } from './live-fixture.ts';

export const PT_FIXTURES = fileURLToPath(new URL('../fixtures/pt/', import.meta.url));
export const PYTHON = fileURLToPath(new URL('../../.venv/bin/python', import.meta.url));

/** Runs test/fixtures/pt/<script> with `args`; throws with its stderr when it fails. */
export function runPython(script: string, args: string[]): void {
  const r = spawnSync(PYTHON, [join(PT_FIXTURES, script), ...args], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`${script} failed (exit ${r.status}):\n${r.stderr ?? r.error}`);
}

/** The fixture folders to read: [committed] or [committed, generated now]; `cleanup` removes the latter. */
export function ptFixtureDirs(): { dirs: { dir: string; why: string }[]; cleanup: () => void } {
  const dirs = [{ dir: PT_FIXTURES, why: 'committed' }];
  const { live, why } = fixtureSource();
  console.log(`pt fixtures: committed; ${live ? 'and made now by make.py' : `not made now: ${why}`}`);
  if (!live) return { dirs, cleanup: () => {} };
  const fresh = mkdtempSync(join(tmpdir(), 'tsddp-pt-'));
  runPython('make.py', [fresh]);
  dirs.push({ dir: `${fresh}/`, why: 'made now by make.py' });
  return { dirs, cleanup: () => rmSync(fresh, { recursive: true, force: true }) };
}

/** Every tensor in a loaded value (for disposing it). */
export function tensorsIn(v: unknown, out = new Set<object>()): Set<object> {
  if (v === null || typeof v !== 'object' || out.has(v)) return out;
  out.add(v);
  const values = v instanceof Map ? [...v.values()] : Array.isArray(v) ? v : Object.values(v);
  for (const x of values) tensorsIn(x, out);
  return out;
}
