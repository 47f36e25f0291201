// `tsddp tune`: the trial of `tsddp train --tune` on its own. It takes tsddp train's
// options (the model, data and batch to measure; --nproc-per-node for the threads each
// worker will have) and writes the choice to --tune-file (default: <checkpoint-dir>/tune.json,
// else ./tune.json), which `tsddp train --tune` and its workers reuse, also under torchrun.
import { resolve } from 'node:path';
import type { Command } from 'commander';
import { ConfigError } from '../train/config.ts';
import { withOptions } from '../train/plan.ts';
import { applyTune, nprocOf } from './train.ts';
import { parseTrainArgs, trainHelp } from './train-flags.ts';

export function registerTuneCommand(program: Command): void {
  program
    .command('tune')
    .description(
      'time the memory formats and autocast dtypes on this machine and keep the fastest for tsddp train --tune (takes the train options)',
    )
    .helpOption(false)
    .allowUnknownOption()
    .allowExcessArguments()
    .argument('[options...]')
    .action(async (args: string[]) => {
      process.exitCode = await tuneCommand(args);
    });
}

export async function tuneCommand(argv: string[]): Promise<number> {
  let args: ReturnType<typeof parseTrainArgs>;
  try {
    args = parseTrainArgs(argv);
  } catch (e) {
    if (!(e instanceof ConfigError)) throw e;
    process.stderr.write(`tsddp tune: error: ${e.message}\n(tsddp train --help lists the options)\n`);
    return 2;
  }
  if (args.help) {
    process.stdout.write(`usage: tsddp tune [tsddp train options]\n\n${trainHelp()}\n`);
    return 0;
  }
  const file = args.plan.launch.tuneFile ?? resolve('tune.json');
  const plan = withOptions(args.plan, { tuneFile: file });
  const tuned = await applyTune(plan, nprocOf(args.launch.nprocPerNode), args.given, 'tsddp tune');
  if (typeof tuned === 'number') return tuned;
  process.stderr.write(`tsddp tune: wrote ${file}\n`);
  return 0;
}
