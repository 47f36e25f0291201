// The agent's loop under elastic rendezvous (`--rdzv-backend c10d`, elastic.ts): join a
// round, run this node's workers with the round's ranks, and when the round ends (a
// failure here or elsewhere, a lost node, a new node) stop them and join the next one.
// Worker failures count against --max-restarts, as in torchrun; membership changes do not.
import { randomUUID } from 'node:crypto';
import { isIP } from 'node:net';
import { hostname, networkInterfaces } from 'node:os';
import { isLoopback } from '../distributed/env.ts';
import type { Store } from '../distributed/store.ts';
import { type Agent, type AgentHooks, log, type Outcome, signalExitCode } from './agent.ts';
import { ElasticRendezvous, type NodeInfo, type Round } from './elastic.ts';
import type { ElasticSettings, LaunchConfig } from './options.ts';
import { connectStore, hostStore, RendezvousError } from './rendezvous.ts';
import { StuckGuard } from './stuck-guard.ts';

// How long past the keep-alive limit the launcher's main thread may be stuck in a store call.
const STUCK_MARGIN_MS = 5000;

/** Whether `host` names this machine (then its launcher serves the store, as torchrun's does). */
function isThisMachine(host: string): boolean {
  if (isLoopback(host) || host === hostname()) return true;
  if (!isIP(host)) return false;
  return Object.values(networkInterfaces()).some((list) => list?.some((a) => a.address === host));
}

/**
 * The rendezvous store: served here when the endpoint is this machine and its port is free,
 * else (another launcher on this machine serves it, or another host) joined as a client.
 */
async function openStore(
  e: ElasticSettings,
  timeoutMs: number,
  stopped: () => boolean,
): Promise<{ store: Store; serves: boolean }> {
  if (isThisMachine(e.host)) {
    try {
      return { store: hostStore(e.host, e.port), serves: true };
    } catch (err) {
      if (!(err instanceof RendezvousError) || !/already in use/.test(err.message)) throw err;
    }
  }
  return { store: await connectStore(e.host, e.port, timeoutMs, stopped), serves: false };
}

export async function runElastic(
  agent: Agent,
  cfg: LaunchConfig,
  e: ElasticSettings,
  hooks: AgentHooks,
): Promise<number> {
  const stopped = () => agent.stopped();
  const { store, serves } = await openStore(e, cfg.rdzvTimeoutMs, stopped);
  const self: NodeInfo = {
    id: `${hostname()}-${process.pid}-${randomUUID().slice(0, 8)}`,
    host: hostname(),
    pid: process.pid,
    nproc: cfg.nprocPerNode,
  };
  const rdzv = new ElasticRendezvous(
    store,
    {
      runId: cfg.runId,
      minNodes: e.minNodes,
      maxNodes: e.maxNodes,
      lastCallMs: e.lastCallMs,
      joinTimeoutMs: cfg.rdzvTimeoutMs,
      keepAliveMs: e.keepAliveMs,
      keepAliveMaxMissed: e.keepAliveMaxMissed,
    },
    self,
  );
  const guard = new StuckGuard(
    e.keepAliveMs * e.keepAliveMaxMissed + STUCK_MARGIN_MS,
    `${e.host}:${store.port}`,
  );
  rdzv.keepAlive();
  const beat = setInterval(() => {
    try {
      rdzv.keepAlive();
    } catch {
      // The store is gone: the monitor reports it.
    }
  }, e.keepAliveMs);
  log(
    `run id ${cfg.runId}: elastic rendezvous (c10d) on ${e.host}:${store.port}` +
      `${serves ? ' (served here)' : ''}, ${e.minNodes}..${e.maxNodes} nodes, ${cfg.nprocPerNode} worker(s) here`,
  );
  await agent.findGlooHostname(e.host, store.port, e.maxNodes);
  let round: Round | null = null;
  try {
    let failures = 0;
    for (let from = 0; ; from = (round as Round).round + 1) {
      const joined = await rdzv.join(from, stopped);
      if (joined === 'finished') {
        log('the job has already finished: nothing to do');
        return 0;
      }
      round = joined;
      const r = joined;
      log(
        `round ${r.round}: node ${r.nodeRank} of ${r.members.length} (${r.members.map((m) => m.host).join(', ')}), ` +
          `world size ${r.worldSize}, ranks ${r.rankBase}..${r.rankBase + cfg.nprocPerNode - 1} here`,
      );
      agent.spawnWorkers({
        attempt: r.round,
        nodeRank: r.nodeRank,
        nnodes: r.members.length,
        rankBase: r.rankBase,
        worldSize: r.worldSize,
        masterAddr: e.host,
        masterPort: store.port,
        elastic: true,
      });
      let outcome: Outcome = await agent.monitor(r.round, async () => {
        const reason = await rdzv.changed(r);
        return reason === null ? null : { kind: 'changed', reason };
      });
      if (outcome.kind === 'succeeded') {
        if ((await rdzv.finish(r, stopped)) === 'done') {
          log(`all ${cfg.nprocPerNode} worker(s) finished successfully; the job is done`);
          return 0;
        }
        outcome = { kind: 'changed', reason: (await rdzv.changed(r)) ?? 'the round ended' };
      }
      switch (outcome.kind) {
        case 'signal':
          await agent.stopWorkers(outcome.signal);
          return signalExitCode(outcome.signal);
        case 'storeLost':
          log(`error: lost the rendezvous store at ${e.host}:${store.port}: ${outcome.error}`);
          return 1;
        case 'remote':
          throw new Error('internal: elastic rounds report changes, not remote failures');
        case 'changed':
          log(`round ${r.round} ends: ${outcome.reason}; stopping the workers to re-rendezvous`);
          break;
        default: {
          if (outcome.kind === 'failed') await outcome.worker.closed;
          const summary = agent.summaryOf(outcome);
          rdzv.reportFailure(r.round, summary);
          failures++;
          log(`round ${r.round} failed: ${summary.split('\n')[0]}`);
          hooks.onFailure?.(r.round, summary);
          if (failures > cfg.maxRestarts) {
            await agent.stopWorkers('SIGTERM');
            log(
              `job failed here (${failures} failure(s), --max-restarts ${cfg.maxRestarts}); last failure:\n${summary}`,
            );
            return 1;
          }
          log(`re-rendezvous (failure ${failures}; --max-restarts ${cfg.maxRestarts})`);
        }
      }
      await agent.stopWorkers('SIGTERM');
    }
  } finally {
    clearInterval(beat);
    guard.stop();
    await agent.stopWorkers('SIGTERM');
    try {
      await rdzv.depart(round, serves);
    } catch {}
    store.close();
  }
}
