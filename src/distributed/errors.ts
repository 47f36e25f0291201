import { TsddpError } from '../errors/index.ts';
/** A collective, rendezvous or DDP failure, naming the operation and this rank. */
export class DistributedError extends TsddpError {
  override name = 'DistributedError';
  readonly code = 'DISTRIBUTED';
  constructor(
    message: string,
    readonly op: string,
    readonly rank: number,
  ) {
    super(message);
  }
}

// What Gloo and the store say when a peer stops answering: the transport's words, which
// do not tell a user that the fault is on another rank.
const PEER_FAULT =
  /timed out|timeout|Connection closed by peer|Connection reset by peer|Broken pipe|Socket closed|ECONNRESET/i;

/**
 * `e`, or, when it is a transport error of a collective (a peer that died, stopped or
 * hangs), a DistributedError that says so, names this rank and the limit, and keeps the
 * transport's message as its cause. `op` names what this rank was doing.
 */
export function explainPeerFault(e: unknown, op: string, rank: number, timeoutS: number): unknown {
  if (!(e instanceof Error) || e instanceof DistributedError || !PEER_FAULT.test(e.message)) return e;
  const detail = e.message.replace(/\[[^\]]*\.(cc|cpp|h):\d+\]\s*/g, '');
  const err = new DistributedError(
    `rank ${rank}: another rank stopped answering during ${op} (${detail}). It failed, was stopped or ` +
      `hangs: its own error, or the launcher's summary, says which and why. Peers wait up to --timeout ` +
      `(${timeoutS} s) before giving up`,
    op,
    rank,
  );
  err.cause = e;
  return err;
}
