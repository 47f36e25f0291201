// Elastic rendezvous (torchrun's `--rdzv-backend c10d`, after torch's
// DynamicRendezvousHandler): launchers meet in numbered rounds on one TCPStore. A round
// closes when `maxNodes` have joined, or `lastCallMs` after `minNodes` have; its members,
// in join order, are node ranks 0..n-1. While a round runs, anything that happens in the
// next round ends it: a late node joins round r+1 and waits; a launcher whose workers
// failed reports it and joins round r+1; a launcher that sees a member's keep-alive
// counter stop joins round r+1. The members of round r then stop their workers and join
// round r+1 too, and training resumes from its last checkpoint with the new world.
//
// Every wait polls with short store calls (signals stay handled) and ends at a deadline.
// Keep-alives are counters, not clock times, so the nodes' clocks need not agree.

import type { Store } from '../distributed/store.ts';
import { RendezvousError } from './rendezvous.ts';

/** Set for the workers of an elastic job: a resume may meet another world size (train/resume.ts). */
export const ELASTIC_ENV = 'TSDDP_ELASTIC';

export interface ElasticRendezvousConfig {
  runId: string;
  minNodes: number;
  maxNodes: number;
  lastCallMs: number;
  /** Deadline for a round to reach `minNodes` (--rdzv-conf join_timeout). */
  joinTimeoutMs: number;
  keepAliveMs: number;
  keepAliveMaxMissed: number;
}

/** What one launcher tells the others about itself. */
export interface NodeInfo {
  /** Unique per launcher process (host, pid and a random part). */
  id: string;
  host: string;
  pid: number;
  /** Its local workers. */
  nproc: number;
}

/** A closed round, as this launcher sees it. */
export interface Round {
  round: number;
  nodeRank: number;
  members: NodeInfo[];
  /** The first global rank of this node's workers. */
  rankBase: number;
  worldSize: number;
}

const POLL_MS = 100;
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
const fmtS = (ms: number) => `${Number((ms / 1000).toFixed(3))} s`;

export class ElasticRendezvous {
  /** Member id -> its keep-alive count and when this launcher saw it change. */
  private readonly alive = new Map<string, { count: number; since: number }>();

  constructor(
    readonly store: Store,
    readonly cfg: ElasticRendezvousConfig,
    readonly self: NodeInfo,
  ) {}

  private key(name: string): string {
    return `tsrun/${this.cfg.runId}/elastic/${name}`;
  }

  private count(name: string): number {
    return this.store.add(this.key(name), 0);
  }

  /** Tells the others this launcher is alive (called every keepAliveMs). */
  keepAlive(): void {
    this.store.add(this.key(`alive/${this.self.id}`), 1);
  }

  /** Whether the job has finished (a round's members all succeeded). */
  finished(): boolean {
    return this.store.check(this.key('done'));
  }

  /** Keys written once (members, node infos, failures): fetched once. */
  private readonly cache = new Map<string, string>();

  /** Fetches keys that exist into the cache (a TCPStore get waits for its key). */
  private async fetch(keys: string[]): Promise<void> {
    for (const k of keys) if (!this.cache.has(k)) this.cache.set(k, await this.store.get(k, 10_000));
  }

  /** The first round that has not closed yet. */
  private openRound(from: number): number {
    let r = from;
    while (this.store.check(this.key(`r${r}/members`))) r++;
    return r;
  }

  /**
   * Joins the first open round from `from` on and waits for it to close with this node in
   * it; resolves 'finished' when the job is already done.
   */
  async join(from: number, stopped: () => boolean): Promise<Round | 'finished'> {
    const deadline = Date.now() + this.cfg.joinTimeoutMs;
    let round = this.openRound(from);
    for (;;) {
      if (this.finished()) return 'finished';
      const index = this.store.add(this.key(`r${round}/joined`), 1) - 1;
      this.store.set(this.key(`r${round}/node${index}`), JSON.stringify(this.self));
      const result = await this.awaitClose(round, index, deadline, stopped);
      if (result !== 'late') return result;
      // The round closed without this node (it was full): wait for the next to open.
      round = await this.awaitNextRound(round, deadline, stopped);
    }
  }

  private async awaitClose(
    round: number,
    index: number,
    deadline: number,
    stopped: () => boolean,
  ): Promise<Round | 'finished' | 'late'> {
    const { minNodes, maxNodes, lastCallMs } = this.cfg;
    let lastCallFrom: number | null = null;
    for (;;) {
      const members = await this.readMembers(round);
      if (members) {
        const nodeRank = members.indexOf(index);
        return nodeRank < 0 ? 'late' : this.describe(round, members, nodeRank);
      }
      if (this.finished()) return 'finished';
      const joined = this.count(`r${round}/joined`);
      if (joined >= minNodes) lastCallFrom ??= Date.now();
      if (joined >= maxNodes || (lastCallFrom !== null && Date.now() - lastCallFrom >= lastCallMs)) {
        this.close(round, Math.min(joined, maxNodes));
        continue;
      }
      if (stopped()) throw new RendezvousError('stopped during rendezvous');
      if (Date.now() >= deadline)
        throw new RendezvousError(
          `rendezvous timed out: ${joined}/${minNodes} nodes (the --nnodes minimum) joined round ${round} ` +
            `within ${fmtS(this.cfg.joinTimeoutMs)} (run id '${this.cfg.runId}'); start more nodes with the same ` +
            '--rdzv-endpoint and --rdzv-id',
        );
      await sleep(POLL_MS);
    }
  }

  /** The first launcher to claim the round writes its members: the first `n` joiners. */
  private close(round: number, n: number): void {
    if (this.store.add(this.key(`r${round}/closing`), 1) !== 1) return;
    const members = Array.from({ length: n }, (_, i) => i);
    this.store.set(this.key(`r${round}/members`), JSON.stringify(members));
  }

  private async readMembers(round: number): Promise<number[] | null> {
    const k = this.key(`r${round}/members`);
    if (!this.store.check(k)) return null;
    await this.fetch([k]);
    return JSON.parse(this.cache.get(k) as string) as number[];
  }

  private async awaitNextRound(round: number, deadline: number, stopped: () => boolean): Promise<number> {
    for (;;) {
      if (this.count(`r${round + 1}/joined`) > 0 || this.finished()) return round + 1;
      if (stopped()) throw new RendezvousError('stopped while waiting for a place in the job');
      if (Date.now() >= deadline)
        throw new RendezvousError(
          `round ${round} is full (--nnodes maximum ${this.cfg.maxNodes}) and no new round opened within ` +
            `${fmtS(this.cfg.joinTimeoutMs)}`,
        );
      await sleep(POLL_MS);
    }
  }

  private async describe(round: number, members: number[], nodeRank: number): Promise<Round> {
    const keys = members.map((i) => this.key(`r${round}/node${i}`));
    // A joiner writes its info right after taking its index: allow it that moment.
    const until = Date.now() + 10_000;
    while (!keys.every((k) => this.store.check(k)) && Date.now() < until) await sleep(POLL_MS / 4);
    await this.fetch(keys);
    const infos = keys.map((k) => JSON.parse(this.cache.get(k) as string) as NodeInfo);
    const rankBase = infos.slice(0, nodeRank).reduce((s, m) => s + m.nproc, 0);
    const worldSize = infos.reduce((s, m) => s + m.nproc, 0);
    this.alive.clear();
    return { round, nodeRank, members: infos, rankBase, worldSize };
  }

  /** Publishes this node's failure in `round` (the first report of a round is kept). */
  reportFailure(round: number, summary: string): void {
    if (this.store.add(this.key(`r${round}/failures`), 1) === 1)
      this.store.set(this.key(`r${round}/first_failure`), JSON.stringify({ host: this.self.host, summary }));
  }

  /** The first failure reported in `round`, if any has been written. */
  async firstFailure(round: number): Promise<{ host: string; summary: string } | null> {
    const k = this.key(`r${round}/first_failure`);
    if (!this.store.check(k)) return null;
    await this.fetch([k]);
    return JSON.parse(this.cache.get(k) as string) as { host: string; summary: string };
  }

  /**
   * Polled while the workers of `r` run: why the round must end, or null. Someone in the
   * next round (a failure, a new node), or a member whose keep-alives stopped.
   */
  async changed(r: Round): Promise<string | null> {
    if (this.count(`r${r.round + 1}/joined`) > 0) {
      const failure = await this.firstFailure(r.round);
      return failure
        ? `a node failed (on ${failure.host}): ${failure.summary.split('\n')[0]}`
        : 'a new node is waiting to join';
    }
    const lost = this.lostMember(r);
    return lost
      ? `node ${lost.host} (launcher pid ${lost.pid}) sent no keep-alive for ` +
          `${fmtS(this.cfg.keepAliveMs * this.cfg.keepAliveMaxMissed)}: it is lost`
      : null;
  }

  private lostMember(r: Round): NodeInfo | null {
    const now = Date.now();
    const limit = this.cfg.keepAliveMs * this.cfg.keepAliveMaxMissed;
    for (const m of r.members) {
      if (m.id === this.self.id) continue;
      const count = this.count(`alive/${m.id}`);
      const seen = this.alive.get(m.id);
      if (seen === undefined || seen.count !== count) this.alive.set(m.id, { count, since: now });
      else if (now - seen.since >= limit) return m;
    }
    return null;
  }

  /**
   * Exit barrier after local success: 'done' when every member of the round finished (the
   * job is over), 'changed' when the round ended first (a failure or a new node).
   */
  async finish(r: Round, stopped: () => boolean): Promise<'done' | 'changed'> {
    this.store.add(this.key(`r${r.round}/finished`), 1);
    for (;;) {
      if (this.count(`r${r.round}/finished`) >= r.members.length) {
        this.store.set(this.key('done'), String(r.round));
        return 'done';
      }
      if ((await this.changed(r)) !== null) return 'changed';
      if (stopped()) throw new RendezvousError('stopped while waiting for the other nodes to finish');
      await sleep(POLL_MS);
    }
  }

  /**
   * Leaving the job: the launcher that serves the store waits a little for the others to
   * leave first (they may still be reading it).
   */
  async depart(r: Round | null, servesStore: boolean): Promise<void> {
    if (r === null || r.members.length === 1) return;
    if (!servesStore) {
      this.store.add(this.key(`r${r.round}/left`), 1);
      return;
    }
    const others = r.members.filter((m) => m.id !== this.self.id).length;
    const until = Date.now() + 5000;
    while (this.count(`r${r.round}/left`) < others && Date.now() < until) await sleep(POLL_MS / 2);
  }
}
