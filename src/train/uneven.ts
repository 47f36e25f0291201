// --uneven join (docs/guide/training.md): each sample is trained on once per epoch, so the
// ranks' shares differ by up to one batch, and each epoch runs inside
// torch.distributed.algorithms.Join: a rank that runs out first shadows the others' DDP
// collectives until they finish too. Join's post-hook gives every rank the model of the
// last rank to finish; this file gives them that rank's optimizer, schedule, loss scaler
// and step as well, so every rank goes on from one state, as padded epochs do. Under
// --strategy zero1 the ZeroRedundancyOptimizer joins too (PyTorch's _ZeROJoinHook): a
// rank that ran out keeps calling step(), so it broadcasts its shard of the parameters
// at every step of the others; each rank keeps its own shard's state, and only the
// hyperparameters (the schedule's learning rate) are taken from the last rank.
import * as t from '../core/index.ts';
import * as dist from '../distributed/index.ts';
import type { RunPosition } from './position.ts';
import type { RunParts } from './setup.ts';

/** Runs one epoch's loop in Join, then brings every rank to the state of the ranks that ran longest. */
export async function joinEpoch(parts: RunParts, at: RunPosition, loop: () => Promise<void>): Promise<void> {
  const { ddp, pg, optimizer, scheduler, scaler } = parts;
  const group = pg.group;
  if (ddp === null || group === null) return loop();
  const zero = optimizer instanceof dist.optim.ZeroRedundancyOptimizer ? optimizer : null;
  await new dist.algorithms.Join(zero ? [ddp, zero] : [ddp]).run(loop);
  const steps = t.tensor([at.step, -at.step], { dtype: 'int64' });
  await dist.allReduce(steps, 'max', { group });
  const [most, fewestNeg] = Array.from(steps.toTypedArray() as BigInt64Array, Number);
  steps.dispose();
  if (most === -fewestNeg) return; // no rank stopped early: the states are the same
  const src = dist.algorithms.Join.commonRank(group, at.step === most, ddp.joinDevice);
  const states: unknown[] =
    pg.rank === src
      ? [
          zero ? hyperparameters(zero) : optimizer.stateDict(),
          scheduler.stateDict(),
          scaler?.stateDict() ?? null,
        ]
      : [null, null, null];
  await dist.broadcastObjectList(states, src, { group });
  if (pg.rank !== src) {
    if (zero) setHyperparameters(zero, states[0] as Record<string, unknown>[]);
    else optimizer.loadStateDict(states[0] as Parameters<typeof optimizer.loadStateDict>[0]);
    scheduler.loadStateDict(states[1] as Parameters<typeof scheduler.loadStateDict>[0]);
    if (scaler) scaler.loadStateDict(states[2] as Parameters<typeof scaler.loadStateDict>[0]);
  }
  at.catchUp(most);
}

/** Each parameter group's options (lr, momentum, ...) without its parameters. */
function hyperparameters(optimizer: dist.optim.ZeroRedundancyOptimizer): Record<string, unknown>[] {
  return optimizer.paramGroups.map(({ params: _, ...options }) => options);
}

function setHyperparameters(
  optimizer: dist.optim.ZeroRedundancyOptimizer,
  groups: Record<string, unknown>[],
): void {
  for (const [i, g] of optimizer.paramGroups.entries()) Object.assign(g, groups[i]);
}
