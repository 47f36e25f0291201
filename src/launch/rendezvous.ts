// Static rendezvous between launchers (torchrun's default for a fixed --nnodes): node 0's
// launcher serves a TCPStore on MASTER_ADDR:MASTER_PORT, every launcher joins a barrier on
// it for each attempt, and the store carries the job-wide failure flag and exit barrier.
// Workers use the same store (TSDDP_USE_AGENT_STORE=1), so a restarted gang finds it.
//
// The launcher never blocks on a store wait: it polls with short, non-blocking calls, so
// signals are handled and every wait ends at its deadline.
import { isIP } from 'node:net';
import { networkInterfaces } from 'node:os';
import { isLoopback } from '../distributed/env.ts';
import { Store } from '../distributed/store.ts';
import { cppStacktracesShown, probeStore } from '../distributed/store-probe.ts';
import { TsddpError } from '../errors/index.ts';

/** Joining, or waiting for the other nodes, failed; the message says how far it got. */
export class RendezvousError extends TsddpError {
  override name = 'RendezvousError';
  readonly code = 'RENDEZVOUS';
}

export interface RendezvousConfig {
  masterAddr: string;
  masterPort: number;
  nnodes: number;
  nodeRank: number;
  runId: string;
  timeoutMs: number;
}

/** What the first failing node publishes for the others. */
export interface FailureReport {
  node: number;
  summary: string;
}

const POLL_MS = 100;
// Per-call timeout of the launcher's own store calls (set/add/check are quick).
const STORE_CALL_TIMEOUT_MS = 10_000;

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

function errorText(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

/** Hosts the store on node 0. A busy port is reported with the address and port. */
export function hostStore(addr: string, port: number): Store {
  try {
    return Store.tcp({ host: addr, port, isServer: true, timeoutMs: STORE_CALL_TIMEOUT_MS });
  } catch (e) {
    const msg = errorText(e);
    if (/EADDRINUSE|address already in use/i.test(msg)) {
      throw new RendezvousError(
        `cannot serve the rendezvous store on ${addr}:${port}: port ${port} is already in use ` +
          '(another job or program listens there); choose another --master-port, or use ' +
          '--standalone / --master-port 0 to pick a free one',
      );
    }
    throw new RendezvousError(
      `cannot serve the rendezvous store on ${addr}:${port}: ${firstLine(msg)}${notLocalHint(addr)}`,
    );
  }
}

// The store binds every interface, but its own client connects through `addr`: on node 0
// that must name this machine. (Only checked for IP literals; names may map anywhere.)
function notLocalHint(addr: string): string {
  if (!isIP(addr) || isLoopback(addr)) return '';
  const local = Object.values(networkInterfaces()).some((list) => list?.some((a) => a.address === addr));
  return local
    ? ''
    : ` (${addr} is not an address of this machine: on node 0, --master-addr must name this machine)`;
}

/**
 * Connects to node 0's store, retrying until `timeoutMs` (node 0 may start later).
 * `stopped` is polled between tries so a signal ends the wait. Each try is first a plain
 * TCP connect: libtorch's client would log every failed try with its C++ stack on the
 * launcher's own stderr, which no sink filters (TORCH_SHOW_CPP_STACKTRACES=1 lets it).
 */
export async function connectStore(
  addr: string,
  port: number,
  timeoutMs: number,
  stopped: () => boolean,
): Promise<Store> {
  const deadline = Date.now() + timeoutMs;
  let last = '';
  for (;;) {
    if (stopped()) throw new RendezvousError('stopped while connecting to the rendezvous store');
    const tryMs = Math.max(200, Math.min(2000, deadline - Date.now()));
    const why = cppStacktracesShown() ? null : await probeStore(addr, port, tryMs);
    if (why !== null) last = why;
    else {
      try {
        // Each try blocks the event loop for at most ~2 s.
        return Store.tcp({ host: addr, port, isServer: false, timeoutMs: tryMs });
      } catch (e) {
        last = firstLine(errorText(e));
      }
    }
    if (Date.now() >= deadline) {
      throw new RendezvousError(
        `could not reach the rendezvous store at ${addr}:${port} within ${fmtSeconds(timeoutMs)} ` +
          `(is the node-rank 0 launcher running with the same --master-addr and --master-port?): ${last}`,
      );
    }
    await sleep(250);
  }
}

function firstLine(s: string): string {
  return s.split('\n')[0];
}

function fmtSeconds(ms: number): string {
  return `${Number((ms / 1000).toFixed(3))}s`;
}

/** The store keys of one attempt, shared by all launchers of the job. */
export class Rendezvous {
  constructor(
    readonly store: Store,
    readonly cfg: RendezvousConfig,
  ) {}

  private key(attempt: number, name: string): string {
    return `tsrun/${this.cfg.runId}/attempt${attempt}/${name}`;
  }

  private count(key: string): number {
    return this.store.add(key, 0);
  }

  /** Where the store is, for messages. */
  where(): string {
    return `${this.cfg.masterAddr}:${this.store.port || this.cfg.masterPort}`;
  }

  /**
   * Joins attempt `attempt` and waits until all `nnodes` launchers have joined. Fails after
   * the join timeout with "rendezvous timed out: k/n nodes joined".
   */
  async join(attempt: number, stopped: () => boolean): Promise<void> {
    const { nnodes, nodeRank, timeoutMs, runId } = this.cfg;
    if (this.store.add(this.key(attempt, `node${nodeRank}`), 1) > 1) {
      throw new RendezvousError(
        `node rank ${nodeRank} joined attempt ${attempt} twice: two launchers were started with --node-rank ${nodeRank}`,
      );
    }
    this.store.add(this.key(attempt, 'joined'), 1);
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const joined = this.count(this.key(attempt, 'joined'));
      if (joined >= nnodes) return;
      if (stopped()) throw new RendezvousError('stopped during rendezvous');
      if (Date.now() >= deadline) {
        throw new RendezvousError(
          `rendezvous timed out: ${joined}/${nnodes} nodes joined within ${fmtSeconds(timeoutMs)} ` +
            `(run id '${runId}', store ${this.where()}, attempt ${attempt}); ` +
            'start the missing nodes with the same --nnodes, --master-addr, --master-port and --run-id',
        );
      }
      await sleep(POLL_MS);
    }
  }

  /** Publishes this node's failure; the first report of an attempt is the one kept. */
  reportFailure(attempt: number, summary: string): void {
    if (this.store.add(this.key(attempt, 'failures'), 1) === 1) {
      const report: FailureReport = { node: this.cfg.nodeRank, summary };
      this.store.set(this.key(attempt, 'first_failure'), JSON.stringify(report));
    }
  }

  /** Whether any node reported a failure in this attempt (cheap; polled while workers run). */
  failed(attempt: number): boolean {
    return this.count(this.key(attempt, 'failures')) > 0;
  }

  /** The first failure report of the attempt, when it has been written. */
  async firstFailure(attempt: number): Promise<FailureReport | null> {
    const key = this.key(attempt, 'first_failure');
    // The count is raised just before the report is written: allow it a moment.
    const until = Date.now() + 1000;
    try {
      while (!this.store.check(key)) {
        if (Date.now() >= until) return null;
        await sleep(POLL_MS / 4);
      }
      // The key exists, so the get returns at once.
      return JSON.parse(await this.store.get(key, 2000)) as FailureReport;
    } catch {
      return null;
    }
  }

  /**
   * Exit barrier after local success: waits for every node to finish the attempt, so node
   * 0 keeps serving the store until the others are done. Returns 'failed' when another
   * node failed meanwhile (the gang restarts), 'done' when all finished.
   */
  async finish(attempt: number, stopped: () => boolean): Promise<'done' | 'failed'> {
    const { nnodes, timeoutMs } = this.cfg;
    this.store.add(this.key(attempt, 'finished'), 1);
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const finished = this.count(this.key(attempt, 'finished'));
      if (finished >= nnodes) break;
      if (this.failed(attempt)) return 'failed';
      if (stopped()) throw new RendezvousError('stopped while waiting for the other nodes to finish');
      if (Date.now() >= deadline) {
        throw new RendezvousError(
          `exit barrier timed out: ${finished}/${nnodes} nodes finished within ${fmtSeconds(timeoutMs)} ` +
            `(store ${this.where()}, attempt ${attempt})`,
        );
      }
      await sleep(POLL_MS);
    }
    await this.depart(attempt);
    return 'done';
  }

  /**
   * Leaving the job (done, or failed for good): node 0 serves the store, so it waits a
   * little for the others to leave first and see the outcome, rather than vanish under them.
   */
  async depart(attempt: number): Promise<void> {
    const { nnodes, nodeRank } = this.cfg;
    if (nnodes === 1) return;
    if (nodeRank !== 0) {
      this.store.add(this.key(attempt, 'left'), 1);
      return;
    }
    const leaveBy = Date.now() + 5000;
    while (this.count(this.key(attempt, 'left')) < nnodes - 1 && Date.now() < leaveBy)
      await sleep(POLL_MS / 2);
  }
}
