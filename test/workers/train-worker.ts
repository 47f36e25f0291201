// One training worker for the multi-process trainer tests, started with RANK, WORLD_SIZE,
// MASTER_ADDR and MASTER_PORT like tsrun starts workers. The job (a JSON file named by
// argv[2]) says what to train, whether to kill this process after a step (a crash), and
// where to write the result.
import { readFileSync, writeFileSync } from 'node:fs';
import { train } from '../../src/train/index.ts';
import { MODELS } from './train-models.ts';

interface Job {
  config: Record<string, unknown>;
  /** A model from train-models.ts instead of the config's ResNet. */
  model?: string;
  /**
   * SIGKILL this process right after this step (and its checkpoint) on the given ranks
   * (default: every rank), in the given launcher attempt only (TORCHELASTIC_RESTART_COUNT;
   * default: any).
   */
  crash?: { atStep: number; ranks?: number[]; attempt?: number };
  /** Each rank writes its TrainResult to `<result>.rank<N>`. */
  result?: string;
}

const job = JSON.parse(readFileSync(process.argv[2], 'utf8')) as Job;
const rank = Number(process.env.RANK ?? 0);
const crash = job.crash;
const result = await train(job.config, {
  model: job.model === undefined ? undefined : MODELS[job.model],
  progress: rank === 0,
  onStep: ({ step }) => {
    const attempt = Number(process.env.TORCHELASTIC_RESTART_COUNT ?? 0);
    if (
      crash !== undefined &&
      step === crash.atStep &&
      (crash.ranks ?? [rank]).includes(rank) &&
      (crash.attempt === undefined || crash.attempt === attempt)
    ) {
      process.kill(process.pid, 'SIGKILL');
    }
  },
});
if (job.result !== undefined) writeFileSync(`${job.result}.rank${rank}`, JSON.stringify(result));
