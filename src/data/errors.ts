// The DataLoader's errors: each names the worker and the samples involved, so a bad file
// or a crashed worker is found from the message alone (docs/reliability.md R15).
import { TsddpError } from '../errors/index.ts';

/** Base class of every DataLoader failure. */
export class DataLoaderError extends TsddpError {
  override name = 'DataLoaderError';
  readonly code: string = 'DATALOADER';
}

/** A dataset's get() (or collate) threw: re-raised in the main thread. */
export class DataLoaderWorkerError extends DataLoaderError {
  override name = 'DataLoaderWorkerError';
  override readonly code = 'DATALOADER_WORKER';
  constructor(
    /** The worker that loaded the sample (0 with numWorkers = 0: the main thread). */
    readonly workerId: number,
    /** The sample's dataset index (-1: a sample of an iterable dataset, which has none). */
    readonly index: number,
    readonly path: string | undefined,
    readonly causeName: string,
    readonly causeMessage: string,
    readonly causeStack: string | undefined,
    inMainThread: boolean,
  ) {
    const where = inMainThread ? 'the main thread (numWorkers = 0)' : `DataLoader worker ${workerId}`;
    const file = path === undefined ? '' : ` (file ${path})`;
    const what = index < 0 ? 'while iterating the dataset' : `on sample ${index}`;
    super(
      `${where} failed ${what}${file}: ${causeName}: ${causeMessage}` +
        (causeStack ? `\n\nOriginal traceback:\n${causeStack}` : ''),
    );
  }
}

/** A worker thread ended (process.exit, an uncaught error, out of memory) while it had work. */
export class DataLoaderWorkerExitError extends DataLoaderError {
  override name = 'DataLoaderWorkerExitError';
  override readonly code = 'DATALOADER_WORKER_EXIT';
  constructor(
    readonly workerId: number,
    readonly exitCode: number,
    readonly indices: number[] | undefined,
    reason: string | undefined,
  ) {
    const batch = indices === undefined ? '' : ` while loading samples [${shortList(indices)}]`;
    super(
      `DataLoader worker ${workerId} exited unexpectedly with code ${exitCode}${batch}` +
        (reason ? `: ${reason}` : ''),
    );
  }
}

/** No batch arrived within timeoutMs. */
export class DataLoaderTimeoutError extends DataLoaderError {
  override name = 'DataLoaderTimeoutError';
  override readonly code = 'DATALOADER_TIMEOUT';
  constructor(
    readonly timeoutMs: number,
    readonly workerId: number,
    readonly batchNumber: number,
    readonly indices: number[],
  ) {
    // An iterable dataset's batch has no indices to name.
    const samples = indices.length === 0 ? '' : `(samples [${shortList(indices)}]) `;
    super(
      `DataLoader timed out after ${timeoutMs} ms waiting for batch ${batchNumber} ${samples}from worker ${workerId}`,
    );
  }
}

export function shortList(xs: number[]): string {
  return xs.length <= 8 ? xs.join(', ') : `${xs.slice(0, 8).join(', ')}, ... (${xs.length} samples)`;
}
