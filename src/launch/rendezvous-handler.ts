// How the agent's one loop (agent.ts) meets the other nodes, after torchelastic's
// RendezvousHandler: the static rendezvous (static-handler.ts: a fixed --nnodes, node 0
// serves the store, every gang restart is a new attempt on every node) and the c10d one
// (c10d-handler.ts: elastic rounds with the members of the moment) behind one interface, so
// that the loop has no case of its own for either. What only one backend can tell is still
// asked of both: the other answers "nothing" (no peer failure under c10d, where a failed
// node shows as a change of membership; no change of membership under static).

/** Where this node's workers sit in the job for one attempt (static) or round (c10d). */
export interface Placement {
  /** TORCHELASTIC_RESTART_COUNT: the static attempt, or the c10d round (job-wide). */
  attempt: number;
  nodeRank: number;
  nnodes: number;
  /** Global rank of local rank 0. */
  rankBase: number;
  worldSize: number;
  masterAddr: string;
  masterPort: number;
  /** c10d rounds: the world may differ from the last checkpoint's (ELASTIC_ENV). */
  elastic?: boolean;
}

/** How a round ended elsewhere, as the rendezvous tells it. */
export type RendezvousEvent =
  /** Another node's workers failed: a failure of this round here too (it counts against --max-restarts). */
  | { kind: 'peerFailed' }
  /** The members changed (a node waits to join, a failed node went on to the next round, a member was lost): restarts without counting. */
  | { kind: 'changed'; reason: string };

/**
 * The loop's lines in the backend's terms. They differ because a static restart is the
 * whole job's (every node restarts, or the job fails), a c10d one this node's (it joins the
 * next round, or leaves while the others go on).
 */
export interface Wording {
  /** What one gang of workers is called: 'attempt' (static) or 'round' (c10d). */
  unit: string;
  /** Added to the line that says every worker finished. */
  done: string;
  /** The line after this node's `failures`-th failure, when it restarts. */
  restart(failures: number): string;
  /** The line that precedes the failure summary when this node stops for good. */
  giveUp(failures: number): string;
}

/**
 * One rendezvous backend, as the agent's loop drives it: a round (nextRendezvous), polls
 * while the workers run (peerFailed, membershipChanged), the exit barrier after a success,
 * the failure report after a failure, and the way out.
 */
export interface RendezvousHandler {
  readonly wording: Wording;
  /** Where the store is served (for messages and the workers' Gloo address). */
  readonly endpoint: { host: string; port: number };
  /** The most nodes the job may have (one: the workers need no Gloo address found). */
  readonly maxNodes: number;
  /** The line that says where the job meets, logged once before the first round. */
  readonly description: string;
  /**
   * Joins the next round (torchelastic's next_rendezvous) and waits for it to close; this
   * node's placement in it, or null when the job has already finished without it.
   */
  nextRendezvous(): Promise<Placement | null>;
  /** Polled while the workers run: whether another node reported a failure of this round. */
  peerFailed(): Promise<boolean>;
  /**
   * Polled while the workers run: why the members changed, or null (torchelastic's
   * num_nodes_waiting, with the reason; a lost member counts too).
   */
  membershipChanged(): Promise<string | null>;
  /** After this node's workers succeeded: 'done' when every node's did, else how the round ended first. */
  exitBarrier(): Promise<'done' | RendezvousEvent>;
  /** Tells the other nodes of a failure here; `summary` is asked for only if someone listens. */
  reportFailure(summary: () => Promise<string>): Promise<void>;
  /** The summary to log for this round's failure: this node's (`local`), with what the job knows. */
  failureSummary(local: string | null): Promise<string>;
  /** This node stops for good after a failure (torchelastic's set_closed). */
  giveUp(): Promise<void>;
  /** Leaves the rendezvous on every way out, after the workers were stopped: never throws. */
  shutdown(): Promise<void>;
}
