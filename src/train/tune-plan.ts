// --tune as a change of the run plan: the choice kept in the tune file when it fits this
// run, else a trial here (tune.ts, with each worker's share of the threads), written to the
// file. The plan comes back with the choice applied and `tune` off, so the workers that
// receive it do not tune again. A worker of another launcher (torchrun) cannot tune alone:
// every rank must choose the same, so it needs a tune file made beforehand (`tsddp tune`).
import { cuda, getNumThreads, setNumThreads } from '../core/index.ts';
import { ConfigError, type TrainConfig } from './config.ts';
import { type RunPlan, withOptions } from './plan.ts';
import {
  describeResult,
  readTuneFile,
  type TuneResult,
  tune,
  tuneKey,
  workerThreads,
  writeTuneFile,
} from './tune.ts';

export interface TunePlanOptions {
  /** Workers this process will launch; undefined: this process is a worker of a launcher. */
  nproc: number | undefined;
  /** The options the user named (flags, config file): those are kept, not tuned. */
  given: readonly string[];
  /** Where the lines about the choice go. */
  say: (line: string) => void;
}

/** The options --tune changes: the chosen format, dtype and optimizer, and what it tuned of threads, workers and buckets. */
export function tunedOptions(r: TuneResult): Partial<TrainConfig> {
  const { channelsLast, amp, optimizerImpl, threads, workers, bucketCapMb } = r.choice;
  return {
    tune: false,
    channelsLast,
    amp,
    optimizerImpl,
    ...(threads === undefined ? {} : { threads }),
    ...(workers === undefined ? {} : { workers }),
    ...(bucketCapMb === undefined ? {} : { bucketCapMb }),
  };
}

/**
 * The plan with --tune's choice applied. Throws a ConfigError when a launcher's worker has
 * no tune file for this run, a TuneError when the file or the trial fails.
 */
export async function tunePlan(plan: RunPlan, o: TunePlanOptions): Promise<RunPlan> {
  const file = plan.launch.tuneFile;
  const key = (ranks: number) => tuneKey(plan, cuda.isAvailable() ? 'cuda' : 'cpu', ranks);
  const before = getNumThreads();
  try {
    let result: TuneResult | null;
    if (o.nproc === undefined) {
      const ranks = Number(process.env.LOCAL_WORLD_SIZE ?? 1);
      result = file === undefined ? null : readTuneFile(file, key(ranks));
      if (result === null) {
        const message =
          `--tune under a launcher needs a tune file made for this run (${file ?? 'give --tune-file'}): ` +
          'run `tsddp tune` with the same options first, or start the run with tsddp train --nproc-per-node';
        throw new ConfigError(message, [message]);
      }
    } else {
      const threadsGiven = Boolean(process.env.OMP_NUM_THREADS);
      setNumThreads(threadsGiven ? Number(process.env.OMP_NUM_THREADS) : workerThreads(o.nproc));
      result = file === undefined ? null : readTuneFile(file, key(o.nproc));
      if (result !== null) o.say(`tune: reusing ${file}`);
      else {
        result = await tune(plan, { log: o.say, ranks: o.nproc, given: o.given, threadsGiven });
        if (file !== undefined) writeTuneFile(file, result);
      }
      for (const line of describeResult(result)) o.say(line);
    }
    // Across nodes the links decide the comm hook and buckets: the workers time them in the
    // group (tune-comm.ts), unless the run names either, or --tune-comm itself.
    const named = ['tuneComm', 'commHook', 'bucketCapMb'].some((k) => o.given.includes(k));
    const comm = named ? {} : { tuneComm: 'nodes' as const };
    return withOptions(plan, { ...tunedOptions(result), ...comm });
  } finally {
    setNumThreads(before);
  }
}
