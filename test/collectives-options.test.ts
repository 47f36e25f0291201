// The options of torch.distributed's calls are checked before anything else: a misspelt
// option (a `grop` for `group`) would otherwise run the collective on the whole world.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as t from '../src/index.ts';

const d = t.distributed;
const x = t.zeros([2]);

test('a collective refuses an option it does not take, naming it and the ones it takes', () => {
  assert.throws(
    () => d.allReduce(x, 'sum', { grop: null } as never),
    /allReduce\(\): unknown option 'grop' \(did you mean 'group'\?\); allReduce takes group, asyncOp, timeoutMs$/,
  );
  assert.throws(
    () => d.broadcast(x, 0, { groupSrc: 1 } as never),
    /broadcast\(\): unknown option 'groupSrc'; broadcast takes .*groupRank/,
  );
  assert.throws(
    () => d.isend(x, 1, { dst: 1 } as never),
    /isend\(\): unknown option 'dst'; isend takes group, tag, groupPeer/,
  );
  assert.throws(
    () => d.monitoredBarrier({ timeout: 5 } as never),
    /monitoredBarrier\(\): unknown option 'timeout' \(did you mean 'timeoutMs'\?\)/,
  );
});

test('object collectives and newGroup refuse unknown options before any rank waits', async () => {
  await assert.rejects(
    d.allGatherObject([], 1, { device: 'cpu' } as never),
    /allGatherObject\(\): unknown option 'device'/,
  );
  assert.throws(
    () => d.newGroup([0], { useLocalSynchronization: true } as never),
    /newGroup\(\): unknown option\(s\) useLocalSynchronization/,
  );
});

test('with the right options and no process group, the error says to initialize one', () => {
  assert.throws(() => d.allReduce(x, 'sum', { timeoutMs: 5 }), /call initProcessGroup\(\) first/);
});
