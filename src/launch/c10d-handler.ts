// The elastic (c10d) rendezvous as a handler of the agent's loop (torchrun's
// `--rdzv-backend c10d`): launchers meet in numbered rounds with the members of the moment
// (elastic.ts). Anything that happens in the next round ends this one (a new node, a node
// whose workers failed) and so does a member whose keep-alives stop: a change of
// membership, which the loop restarts from without counting, as torchrun does. Failures
// here count against --max-restarts on this node only; when they run out, this node leaves
// and the others go on. Keep-alives go out on a timer, and a guard thread ends the launcher
// when a store call never returns (stuck-guard.ts).
import { randomUUID } from 'node:crypto';
import { isIP } from 'node:net';
import { hostname, networkInterfaces } from 'node:os';
import { isLoopback } from '../distributed/env.ts';
import type { Store } from '../distributed/store.ts';
import { ElasticRendezvous, type NodeInfo, type Round } from './elastic.ts';
import { log } from './log.ts';
import type { ElasticSettings, LaunchConfig } from './options.ts';
import { connectStore, hostStore, RendezvousError } from './rendezvous.ts';
import type { Placement, RendezvousEvent, RendezvousHandler, Wording } from './rendezvous-handler.ts';
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

/** Opens the store and starts the keep-alives; the handler is shut down if they cannot start. */
export async function openC10dRendezvous(
  cfg: LaunchConfig,
  e: ElasticSettings,
  stopped: () => boolean,
): Promise<RendezvousHandler> {
  const { store, serves } = await openStore(e, cfg.rdzvTimeoutMs, stopped);
  const handler = new C10dRendezvousHandler(cfg, e, store, serves, stopped);
  try {
    handler.startKeepAlive();
  } catch (err) {
    await handler.shutdown();
    throw err;
  }
  return handler;
}

class C10dRendezvousHandler implements RendezvousHandler {
  readonly endpoint: { host: string; port: number };
  readonly maxNodes: number;
  readonly description: string;
  readonly wording: Wording;
  private readonly rdzv: ElasticRendezvous;
  private readonly guard: StuckGuard;
  private beat: NodeJS.Timeout | undefined;
  /** The last round joined: null before the first, and when the job had finished without this node. */
  private round: Round | null = null;

  constructor(
    private readonly cfg: LaunchConfig,
    e: ElasticSettings,
    private readonly store: Store,
    private readonly serves: boolean,
    private readonly stopped: () => boolean,
  ) {
    const self: NodeInfo = {
      id: `${hostname()}-${process.pid}-${randomUUID().slice(0, 8)}`,
      host: hostname(),
      pid: process.pid,
      nproc: cfg.nprocPerNode,
    };
    this.rdzv = new ElasticRendezvous(
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
    this.endpoint = { host: e.host, port: store.port };
    this.maxNodes = e.maxNodes;
    this.guard = new StuckGuard(
      e.keepAliveMs * e.keepAliveMaxMissed + STUCK_MARGIN_MS,
      `${e.host}:${store.port}`,
    );
    this.description =
      `run id ${cfg.runId}: elastic rendezvous (c10d) on ${e.host}:${store.port}` +
      `${serves ? ' (served here)' : ''}, ${e.minNodes}..${e.maxNodes} nodes, ${cfg.nprocPerNode} worker(s) here`;
    const max = cfg.maxRestarts;
    this.wording = {
      unit: 'round',
      done: '; the job is done',
      restart: (failures) => `re-rendezvous (failure ${failures}; --max-restarts ${max})`,
      // Only this node's failures are counted, and only this node leaves.
      giveUp: (failures) => `job failed here (${failures} failure(s), --max-restarts ${max}); last failure`,
    };
  }

  /** The first keep-alive at once (it may throw: the store is gone), then one per interval. */
  startKeepAlive(): void {
    this.rdzv.keepAlive();
    this.beat = setInterval(() => {
      try {
        this.rdzv.keepAlive();
      } catch {
        // The store is gone: the loop's next poll reports it.
      }
    }, this.rdzv.cfg.keepAliveMs);
  }

  /** The round the workers run in (nextRendezvous, which the loop calls first, set it). */
  private get current(): Round {
    return this.round as Round;
  }

  async nextRendezvous(): Promise<Placement | null> {
    const joined = await this.rdzv.join(this.round === null ? 0 : this.round.round + 1, this.stopped);
    if (joined === 'finished') return null;
    const r = joined;
    this.round = r;
    log(
      `round ${r.round}: node ${r.nodeRank} of ${r.members.length} (${r.members.map((m) => m.host).join(', ')}), ` +
        `world size ${r.worldSize}, ranks ${r.rankBase}..${r.rankBase + this.cfg.nprocPerNode - 1} here`,
    );
    return {
      attempt: r.round,
      nodeRank: r.nodeRank,
      nnodes: r.members.length,
      rankBase: r.rankBase,
      worldSize: r.worldSize,
      masterAddr: this.endpoint.host,
      masterPort: this.endpoint.port,
      elastic: true,
    };
  }

  /** Never: a node whose workers failed joins the next round, which membershipChanged sees. */
  async peerFailed(): Promise<boolean> {
    return false;
  }

  membershipChanged(): Promise<string | null> {
    return this.rdzv.changed(this.current);
  }

  async exitBarrier(): Promise<'done' | RendezvousEvent> {
    if ((await this.rdzv.finish(this.current, this.stopped)) === 'done') return 'done';
    return { kind: 'changed', reason: (await this.rdzv.changed(this.current)) ?? 'the round ended' };
  }

  /** Unguarded: a store that is gone ends this node (the loop's caller reports the error). */
  async reportFailure(summary: () => Promise<string>): Promise<void> {
    this.rdzv.reportFailure(this.current.round, await summary());
  }

  async failureSummary(local: string | null): Promise<string> {
    if (local !== null) return local;
    const first = await this.rdzv.firstFailure(this.current.round);
    return first ? first.summary : 'another node reported a failure';
  }

  /** Nothing more than shutdown does on every way out: this node leaves, the others go on. */
  async giveUp(): Promise<void> {}

  async shutdown(): Promise<void> {
    clearInterval(this.beat);
    this.guard.stop();
    try {
      await this.rdzv.depart(this.round, this.serves);
    } catch {
      // The store is gone: nobody is left to tell.
    }
    this.store.close();
  }
}
