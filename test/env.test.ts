// One reading of the launcher's environment (src/env): RANK, WORLD_SIZE and the rest are
// decimal integers by one rule wherever they are read (the process group's env://, the
// samplers' defaults, a checkpoint's world size), and TSDDP_DEBUG=1 is the one debug switch.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { envWorldSize } from '../src/checkpoint/stateful.ts';
import { DistributedSampler } from '../src/data/index.ts';
import { readDistEnv } from '../src/distributed/index.ts';
import { debugEnabled, envInt } from '../src/env/index.ts';

test('envInt: decimal digits only, at least min; unset takes the fallback or names what to do', () => {
  const env = { A: '3', B: ' 7 ', C: '1.5', D: '-1', E: '1e3', F: '', G: '0x10', H: '0' };
  assert.equal(envInt('A', { env }), 3);
  assert.equal(envInt('B', { env }), 7);
  for (const bad of ['C', 'D', 'E', 'G'])
    assert.throws(
      () => envInt(bad, { env }),
      new RegExp(`environment variable ${bad}='.*' is not a non-negative integer`),
    );
  assert.throws(() => envInt('H', { env, min: 1 }), /H='0' is not an integer >= 1/);
  assert.equal(envInt('F', { env, fallback: 5 }), 5, 'empty counts as unset');
  assert.throws(() => envInt('NOPE', { env, missing: 'set NOPE' }), /^TypeError: set NOPE$/);
});

test('the same rule in every reader: env:// rendezvous, DistributedSampler, checkpoints', () => {
  const saved = { RANK: process.env.RANK, WORLD_SIZE: process.env.WORLD_SIZE };
  try {
    const base = { RANK: '0', WORLD_SIZE: '2', MASTER_PORT: '29500' };
    assert.throws(() => readDistEnv({ ...base, RANK: '1.0' }), /RANK='1\.0' is not a non-negative integer/);
    process.env.WORLD_SIZE = '2.5';
    process.env.RANK = '0';
    assert.throws(
      () => new DistributedSampler({ length: 8 }),
      /WORLD_SIZE='2\.5' is not a non-negative integer/,
    );
    assert.throws(() => envWorldSize(), /WORLD_SIZE='2\.5' is not an integer >= 1/);
    process.env.WORLD_SIZE = '2';
    assert.equal(new DistributedSampler({ length: 8 }).numReplicas, 2);
    assert.equal(envWorldSize(), 2);
  } finally {
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  }
});

test('TSDDP_DEBUG=1 is the debug switch', () => {
  assert.equal(debugEnabled({ TSDDP_DEBUG: '1' }), true);
  assert.equal(debugEnabled({}), false);
  assert.equal(debugEnabled({ TSDDP_DEBUG: '0' }), false);
});
