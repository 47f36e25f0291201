// ZeroRedundancyOptimizer (src/distributed/optim/zero-redundancy-optimizer.ts) between
// real processes, against PyTorch's (test/fixtures/distributed/zero.py: the same model,
// batches and optimizers under DDP): at world 2 and 3, with SGD, AdamW, two parameter
// groups and parametersAsBucketView, the losses, the parameters after 4 steps, the shard
// each parameter's state lives on, and the state dict consolidated on rank 0 are
// PyTorch's; inside Join, a rank with fewer batches keeps stepping for the other.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { assertClose, type FixtureTensor } from './helpers/fixtures.ts';
import { okResults, runJob } from './helpers/multiproc.ts';

type Case = 'sgd' | 'adamw' | 'groups' | 'bucket' | 'join';
interface CaseResult {
  losses: number[];
  after: Record<string, number[]>;
  paramToRank: number[];
  localStates: number;
  stateDict?: {
    state: Record<string, Record<string, number[] | number>>;
    paramGroups: Record<string, unknown>[];
  };
  notConsolidated?: string | null;
  overlapRefused?: string;
}
interface CaseFixture {
  losses: number[];
  after: Record<string, FixtureTensor>;
  param_to_rank: number[];
  state_dict?: {
    state: Record<string, Record<string, FixtureTensor | number>>;
    param_groups: Record<string, unknown>[];
  };
}
const fx = JSON.parse(readFileSync(new URL('./fixtures/distributed/zero.json', import.meta.url), 'utf8')) as {
  worlds: Record<string, Record<Case, CaseFixture[]>>;
};

const camel = (k: string) => k.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase());

function check(world: number, cases: Case[], rs: Record<Case, CaseResult>[]): void {
  for (const c of cases)
    for (const [rank, r] of rs.entries()) {
      const want = fx.worlds[String(world)][c][rank];
      const at = `world ${world} ${c} rank ${rank}`;
      assertClose(r[c].losses, want.losses, 1e-5, 1e-6, `${at} losses`);
      for (const [k, v] of Object.entries(want.after))
        assertClose(r[c].after[k], v.data, 1e-5, 1e-6, `${at} ${k}`);
      assert.deepEqual(r[c].paramToRank, want.param_to_rank, `${at}: the partition`);
      // Over Gloo, PyTorch's hook_with_zero_step refuses the overlap, and so does tsddp.
      if (c === 'sgd')
        assert.match(
          r[c].overlapRefused ?? '',
          /overlapWithDdp is not offered: over Gloo PyTorch refuses it too/,
        );
      // The local optimizer holds state for this rank's shard only.
      assert.equal(
        r[c].localStates,
        want.param_to_rank.filter((o) => o === rank).length,
        `${at}: local state`,
      );
      if (rank === 0) {
        const sd = r[c].stateDict;
        const wantSd = want.state_dict;
        assert.ok(sd && wantSd, `${at}: a consolidated state dict`);
        assert.deepEqual(Object.keys(sd.state), Object.keys(wantSd.state), `${at}: state indices`);
        for (const [i, s] of Object.entries(wantSd.state))
          for (const [k, v] of Object.entries(s)) {
            const got: unknown = sd.state[i][k];
            if (typeof v === 'number') assert.equal(Number(got), v, `${at} state ${i}.${k}`);
            else assertClose(got as number[], v.data, 1e-5, 1e-6, `${at} state ${i}.${k}`);
          }
        wantSd.param_groups.forEach((g, gi) => {
          for (const [k, v] of Object.entries(g)) {
            if (['foreach', 'fused', 'differentiable', 'capturable', 'decoupled_weight_decay'].includes(k))
              continue;
            assert.deepEqual(sd.paramGroups[gi][camel(k)], v, `${at} param group ${gi} ${k}`);
          }
        });
      } else {
        assert.match(r[c].notConsolidated ?? '', /has not been consolidated on this rank/);
      }
    }
}

for (const world of [2, 3]) {
  test(`world ${world}: SGD, AdamW, two groups and bucket views end where PyTorch's ZeroRedundancyOptimizer does`, async () => {
    const cases: Case[] = ['sgd', 'adamw', 'groups', 'bucket'];
    check(
      world,
      cases,
      okResults(await runJob<Record<Case, CaseResult>>('zero', { worldSize: world, config: { cases } })),
    );
  });
}

test('in Join with DDP, rank 1 runs out after 2 batches and steps with rank 0 to its 4th, as PyTorch', async () => {
  const rs = okResults(
    await runJob<Record<Case, CaseResult>>('zero', { worldSize: 2, config: { cases: ['join'] } }),
  );
  check(2, ['join'], rs);
  assert.equal(rs[1].join.losses.length, 2);
});

test('what it cannot honour is refused, naming it', async () => {
  const t = await import('../src/index.ts');
  const Zero = t.distributed.optim.ZeroRedundancyOptimizer;
  const p = [t.zeros([2], { requiresGrad: true })];
  assert.throws(
    () => new Zero(p, { optimizerClass: Object as never, lr: 0.1 }),
    /optimizerClass must be an optimizer class/,
  );
  const mixed = [...p, t.zeros([2], { dtype: 'float64', requiresGrad: true })];
  assert.throws(() => new Zero(mixed, { optimizerClass: t.optim.SGD, lr: 0.1 }), /same dtype and device/);
  assert.throws(
    () => new Zero(p, { optimizerClass: t.optim.SGD, lr: 0.1 }),
    /call initProcessGroup\(\) first/,
  );
});
