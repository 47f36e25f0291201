// The static rendezvous as a handler of the agent's loop (torchrun's default for a fixed
// --nnodes, after torch's static TCP rendezvous): node 0's launcher serves the store, every
// launcher joins one barrier per attempt (rendezvous.ts), and the members never change. A
// failure anywhere fails the attempt on every node, so each node counts it against
// --max-restarts, and a gang restart is the next attempt on every node.
import { join } from 'node:path';
import type { Store } from '../distributed/store.ts';
import type { LaunchConfig } from './options.ts';
import { connectStore, hostStore, Rendezvous } from './rendezvous.ts';
import type { Placement, RendezvousEvent, RendezvousHandler, Wording } from './rendezvous-handler.ts';

/** Serves the store (node 0) or connects to it (node 0 may start later, until --rdzv-timeout). */
export async function openStaticRendezvous(
  cfg: LaunchConfig,
  stopped: () => boolean,
): Promise<RendezvousHandler> {
  const store =
    cfg.nodeRank === 0
      ? hostStore(cfg.masterAddr, cfg.masterPort)
      : await connectStore(cfg.masterAddr, cfg.masterPort, cfg.rdzvTimeoutMs, stopped);
  return new StaticRendezvousHandler(cfg, store, stopped);
}

class StaticRendezvousHandler implements RendezvousHandler {
  readonly endpoint: { host: string; port: number };
  readonly maxNodes: number;
  readonly description: string;
  readonly wording: Wording;
  private readonly rdzv: Rendezvous;
  /** The attempt the workers run in; nextRendezvous moves to the next. */
  private attempt = -1;

  constructor(
    private readonly cfg: LaunchConfig,
    store: Store,
    private readonly stopped: () => boolean,
  ) {
    // Node 0 may have asked for a free port (--master-port 0): the one it got.
    const port = cfg.nodeRank === 0 ? store.port : cfg.masterPort;
    this.rdzv = new Rendezvous(store, {
      masterAddr: cfg.masterAddr,
      masterPort: port,
      nnodes: cfg.nnodes,
      nodeRank: cfg.nodeRank,
      runId: cfg.runId,
      timeoutMs: cfg.rdzvTimeoutMs,
    });
    this.endpoint = { host: cfg.masterAddr, port };
    this.maxNodes = cfg.nnodes;
    this.description =
      `run id ${cfg.runId}: node ${cfg.nodeRank} of ${cfg.nnodes}, ${cfg.nprocPerNode} worker(s) here, ` +
      `world size ${cfg.nnodes * cfg.nprocPerNode}; rendezvous store on ${cfg.masterAddr}:${port}` +
      (cfg.logDir ? `; logs in ${join(cfg.logDir, cfg.runId)}` : '');
    const max = cfg.maxRestarts;
    this.wording = {
      unit: 'attempt',
      done: '',
      restart: (failures) => `restarting all workers (restart ${failures} of --max-restarts ${max})`,
      // Every attempt before the last one failed and was restarted.
      giveUp: (failures) =>
        `job failed (${max === 0 ? 'no restarts allowed' : `after ${failures - 1} restart(s)`}, ` +
        `--max-restarts ${max}); first failure`,
    };
  }

  async nextRendezvous(): Promise<Placement> {
    const { cfg } = this;
    this.attempt++;
    await this.rdzv.join(this.attempt, this.stopped);
    return {
      attempt: this.attempt,
      nodeRank: cfg.nodeRank,
      nnodes: cfg.nnodes,
      rankBase: cfg.nodeRank * cfg.nprocPerNode,
      worldSize: cfg.nnodes * cfg.nprocPerNode,
      masterAddr: cfg.masterAddr,
      masterPort: this.endpoint.port,
    };
  }

  /** Other nodes' failures arrive through the store; a single node has no one to ask. */
  async peerFailed(): Promise<boolean> {
    return this.cfg.nnodes > 1 && this.rdzv.failed(this.attempt);
  }

  /** The members of a static rendezvous never change (num_nodes_waiting is always 0). */
  async membershipChanged(): Promise<null> {
    return null;
  }

  /** Node 0 keeps serving the store until every node finished (Rendezvous.finish). */
  async exitBarrier(): Promise<'done' | RendezvousEvent> {
    if (this.cfg.nnodes === 1) return 'done';
    const result = await this.rdzv.finish(this.attempt, this.stopped);
    return result === 'done' ? 'done' : { kind: 'peerFailed' };
  }

  async reportFailure(summary: () => Promise<string>): Promise<void> {
    if (this.cfg.nnodes === 1) return;
    const text = await summary();
    try {
      this.rdzv.reportFailure(this.attempt, text);
    } catch {
      // The store is gone; the other nodes will notice that themselves.
    }
  }

  /** The job-wide first failure leads: the one that happened first explains the others. */
  async failureSummary(local: string | null): Promise<string> {
    if (local === null) {
      const report = await this.rdzv.firstFailure(this.attempt);
      return report ? report.summary : 'another node reported a failure';
    }
    const first = this.cfg.nnodes > 1 ? await this.rdzv.firstFailure(this.attempt) : null;
    if (!first || first.node === this.cfg.nodeRank) return local;
    return `${first.summary}\n  on this node, then: ${local.replaceAll('\n', '\n  ')}`;
  }

  /** Node 0 waits a little for the others to see the end before its store goes away. */
  async giveUp(): Promise<void> {
    try {
      await this.rdzv.depart(this.attempt);
    } catch {
      // The store is gone: nobody is left to tell.
    }
  }

  async shutdown(): Promise<void> {
    this.rdzv.store.close();
  }
}
