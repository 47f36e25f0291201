import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));

test('tsddp info reports the torch version, its source, CUDA, NCCL, Gloo and threads', () => {
  const out = execFileSync(process.execPath, ['bin/tsddp.mjs', 'info', '--json'], {
    cwd: root,
    env: { ...process.env, OMP_NUM_THREADS: '1' },
    encoding: 'utf8',
  });
  const info = JSON.parse(out) as Record<string, unknown>;
  assert.match(String(info.torchVersion), /^2\.\d+\.\d+/);
  assert.match(String(info.libtorchSource), /LIBTORCH|python3|\.venv|pip-installed|cache/);
  assert.equal(typeof info.cuda, 'string');
  assert.equal(typeof info.nccl, 'string');
  assert.match(String(info.gloo), /ProcessGroupGloo/);
  assert.equal(info.threads, 1);
  assert.match(String(info.buildFlags), /Release -O2/);
});

test('the committed op wrappers are what the installed libtorch generates', () => {
  // Exits non-zero (throwing here) when src/core/ops.generated.ts is stale.
  const out = execFileSync(process.execPath, ['--import', 'tsx', 'scripts/gen-ops.ts', '--check'], {
    cwd: root,
    encoding: 'utf8',
  });
  assert.match(out, /up to date/);
});
