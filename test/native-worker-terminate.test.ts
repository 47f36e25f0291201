// A worker thread that has loaded the addon can be terminated in the middle of a native
// call (a DataLoader ending its workers does this). The call then fails because the
// thread may no longer run JavaScript; the addon must let it go quietly, never abort the
// process (native/CMakeLists.txt: NODE_API_SWALLOW_UNTHROWABLE_EXCEPTIONS). Before that,
// about one run in eight of test/data-tensor-samples.test.ts died with SIGABRT.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const addonPath = fileURLToPath(new URL('../native/build/Release/tsddp.node', import.meta.url));

// Run in a child process: an abort must fail this test with its output, not end the runner.
const parent = `
import { Worker } from 'node:worker_threads';
const busy = \`
  const { workerData, parentPort } = require('node:worker_threads');
  const addon = require(workerData);
  const data = new Float32Array(4);
  parentPort.postMessage('loaded');
  for (;;) addon.dispose(addon.fromTyped(data, [4], 6, 6)); // from float32 (6) to float32 (6)
\`;
for (let round = 0; round < ROUNDS; round++) {
  const w = new Worker(busy, { eval: true, execArgv: [], workerData: process.argv[1] });
  await new Promise((loaded) => w.once('message', loaded));
  await new Promise((wait) => setTimeout(wait, round % 4));
  await w.terminate();
}
console.log('all workers ended');
`;

test('terminating worker threads in the middle of native calls never aborts the process', () => {
  const rounds = 60;
  const run = spawnSync(
    process.execPath,
    ['--input-type=module', '-e', parent.replace('ROUNDS', String(rounds)), addonPath],
    { encoding: 'utf8', timeout: 120_000 },
  );
  const output = `${run.stdout}${run.stderr}`;
  assert.doesNotMatch(output, /terminate called/);
  assert.equal(run.signal, null, `the child died with ${run.signal}:\n${output}`);
  assert.equal(run.status, 0, output);
  assert.match(run.stdout, /all workers ended/);
});
