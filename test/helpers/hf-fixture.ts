// The Hugging Face folders of test/hf-gpt2.test.ts and test/hf-vit.test.ts: made live by
// their generator (test/fixtures/hf/*.py) where .venv has transformers and the torch tsddp
// is built against, else the committed ones (TSDDP_FIXTURES=stored forces those, as in
// test/helpers/live-fixture.ts).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { cpSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT } from '../../src/benchmark/reference.ts';
import * as t from '../../src/index.ts';

export const PYTHON = join(REPO_ROOT, '.venv', 'bin', 'python');

/** null where the folders can be made live; otherwise why not. */
export function transformersMissing(): string | null {
  if (process.env.TSDDP_FIXTURES === 'stored') return 'TSDDP_FIXTURES=stored';
  const r = spawnSync(PYTHON, ['-c', 'import torch, transformers; print(torch.__version__.split("+")[0])'], {
    encoding: 'utf8',
  });
  if (r.status !== 0) return `${PYTHON} cannot import torch and transformers`;
  const ours = t.buildInfo().torchVersion;
  return r.stdout.trim() === ours ? null : `.venv's torch is ${r.stdout.trim()}, tsddp's ${ours}`;
}

/** The folder of fixture `name` (test/fixtures/hf/<name>.py): generated into `tmp`, or the committed one. */
export function hfFixture(name: string, tmp: string, missing: string | null): string {
  if (missing !== null) {
    console.log(`hf/${name}: the committed folder (${missing})`);
    return join(REPO_ROOT, 'test/fixtures/hf', name);
  }
  const out = join(tmp, `fixture-${name}`);
  const r = spawnSync(PYTHON, [join(REPO_ROOT, `test/fixtures/hf/${name}.py`), out], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  console.log(`hf/${name}: generated live by .venv's transformers`);
  return out;
}

/** A copy of the model folder `from` at `to`, its config.json changed by `change`. */
export function withConfig(from: string, to: string, change: (c: Record<string, unknown>) => void): string {
  cpSync(from, to, { recursive: true });
  const c = JSON.parse(readFileSync(join(to, 'config.json'), 'utf8'));
  change(c);
  writeFileSync(join(to, 'config.json'), JSON.stringify(c));
  return to;
}
