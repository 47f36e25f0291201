/** A collective, rendezvous or DDP failure, naming the operation and this rank. */
export class DistributedError extends Error {
  override name = 'DistributedError';
  constructor(
    message: string,
    readonly op: string,
    readonly rank: number,
  ) {
    super(message);
  }
}
