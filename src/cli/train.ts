// `tsddp train`: the classic DDP recipe (ResNets, ViTs) as a command. As a worker (alone, or under
// tsrun/torchrun, which set RANK/WORLD_SIZE/...) it trains; given --nproc-per-node outside
// a launcher, it becomes the launcher: the workers it starts run `tsddp train` with the
// config it validated (TRAIN_CONFIG_ENV).

import { availableParallelism } from 'node:os';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Command } from 'commander';
import { siblingModule } from '../core/module-url.ts';
import { debugEnabled } from '../env/index.ts';
// Only the light parts of the recipe are imported up front (argument parsing, help):
// libtorch loads when training or launching starts, so `tsddp --help` stays quick.
import { METRICS_FILE_ENV } from '../metrics/index.ts';
import { ConfigError, type TrainConfig } from '../train/config.ts';
import { parseTrainArgs, TRAIN_CONFIG_ENV, type TrainArgs, trainHelp } from './train-flags.ts';

export function registerTrainCommand(program: Command): void {
  program
    .command('train')
    .description(
      'train a ResNet or a ViT with DDP: the classic PyTorch recipe (tsddp train --help lists the options)',
    )
    .helpOption(false)
    .allowUnknownOption()
    .allowExcessArguments()
    .argument('[options...]')
    .action(async (args: string[]) => {
      process.exitCode = await trainCommand(args);
    });
}

function rankLabel(): string {
  return process.env.RANK === undefined ? '' : ` (rank ${process.env.RANK})`;
}

/** Runs `tsddp train <argv>`; resolves with the exit code. */
export async function trainCommand(argv: string[]): Promise<number> {
  let args: TrainArgs;
  try {
    args = parseTrainArgs(argv, launchedConfig());
  } catch (e) {
    if (!(e instanceof ConfigError)) throw e;
    process.stderr.write(`tsddp train: error: ${e.message}\n(tsddp train --help lists the options)\n`);
    return 2;
  }
  if (args.help) {
    process.stdout.write(`${trainHelp()}\n`);
    return 0;
  }
  const underLauncher = process.env.RANK !== undefined;
  if (!underLauncher && args.launch.nprocPerNode === undefined && (await cudaDeviceCount()) > 1) {
    // Several GPUs: one process per GPU, as the DDP recipe runs (torchrun --nproc-per-node gpu).
    args = { ...args, launch: { ...args.launch, nprocPerNode: 'gpu' } };
  }
  if (args.config.tune) {
    const nproc = underLauncher ? undefined : nprocOf(args.launch.nprocPerNode);
    const tuned = await applyTune(args.config, nproc, args.given);
    if (typeof tuned === 'number') return tuned;
    args = { ...args, config: tuned };
  }
  if (!underLauncher && args.launch.nprocPerNode !== undefined) return launchWorkers(args);
  if (!underLauncher && Object.keys(args.launch).length > 0) {
    process.stderr.write(
      `tsddp train: warning: launcher options (${Object.keys(args.launch).join(', ')}) apply only with --nproc-per-node; ignored\n`,
    );
  }
  if (args.config.dashboard !== undefined && !underLauncher) return trainWithDashboard(args.config);
  // A launcher with --dashboard tells its workers where to write metrics; one without does not serve it.
  if (args.config.dashboard !== undefined && !process.env[METRICS_FILE_ENV] && process.env.RANK === '0') {
    process.stderr.write(
      'tsddp train: warning: under a launcher, the launcher serves the dashboard: give --dashboard to tsrun; ignored here\n',
    );
  }
  return runTrain(args.config);
}

/**
 * --tune: the choice in the tune file when it fits this run, else a trial run here (in the
 * launching process, with each worker's share of the threads) written to the file; the
 * config comes back with the choice applied and `tune` off (so workers do not tune again).
 * A worker of another launcher (torchrun) cannot tune alone: every rank must choose the
 * same, so it needs a tune file made beforehand. Resolves with an exit code on failure.
 */
export async function applyTune(
  config: TrainConfig,
  nproc: number | undefined,
  given: readonly string[],
  who = 'tsddp train',
): Promise<TrainConfig | number> {
  const tuneMod = await import('../train/tune.ts');
  const { cuda, getNumThreads, setNumThreads } = await import('../core/runtime.ts');
  const file = tuneFileOf(config);
  const key = (ranks: number) => tuneMod.tuneKey(config, cuda.isAvailable() ? 'cuda' : 'cpu', ranks);
  const say = (line: string) => process.stderr.write(`${who}: ${line}\n`);
  const before = getNumThreads();
  try {
    let result: ReturnType<typeof tuneMod.readTuneFile>;
    if (nproc === undefined) {
      const ranks = Number(process.env.LOCAL_WORLD_SIZE ?? 1);
      result = file === undefined ? null : tuneMod.readTuneFile(file, key(ranks));
      if (result === null) {
        say(
          `error: --tune under a launcher needs a tune file made for this run (${file ?? 'give --tune-file'}): ` +
            'run `tsddp tune` with the same options first, or start the run with tsddp train --nproc-per-node',
        );
        return 2;
      }
    } else {
      const threads = process.env.OMP_NUM_THREADS
        ? Number(process.env.OMP_NUM_THREADS)
        : tuneMod.workerThreads(nproc);
      setNumThreads(threads);
      result = file === undefined ? null : tuneMod.readTuneFile(file, key(nproc));
      if (result !== null) say(`tune: reusing ${file}`);
      else {
        const threadsGiven = Boolean(process.env.OMP_NUM_THREADS);
        result = await tuneMod.tune(config, { log: say, ranks: nproc, given, threadsGiven });
        if (file !== undefined) tuneMod.writeTuneFile(file, result);
      }
      for (const line of tuneMod.describeResult(result)) say(line);
    }
    const { channelsLast, amp, optimizerImpl, threads, workers, bucketCapMb } = result.choice;
    return {
      ...config,
      tune: false,
      channelsLast,
      amp,
      optimizerImpl,
      ...(threads === undefined ? {} : { threads }),
      ...(workers === undefined ? {} : { workers }),
      ...(bucketCapMb === undefined ? {} : { bucketCapMb }),
    };
  } catch (e) {
    if (!(e instanceof tuneMod.TuneError)) throw e;
    say(`error: ${e.message}`);
    return 1;
  } finally {
    setNumThreads(before);
  }
}

async function cudaDeviceCount(): Promise<number> {
  const { cuda } = await import('../core/runtime.ts');
  return cuda.isAvailable() ? cuda.deviceCount() : 0;
}

/** --nproc-per-node as a count: a number, or 'cpu'/'auto' (one per core on a CPU machine). */
export function nprocOf(flag: string | number | undefined): number {
  const n = Number(flag ?? 1);
  return Number.isInteger(n) && n > 0 ? n : availableParallelism();
}

/** --tune-file, else tune.json in the checkpoint folder, else none (the choice is not kept). */
export function tuneFileOf(config: TrainConfig): string | undefined {
  if (config.tuneFile !== undefined) return resolve(config.tuneFile);
  return config.checkpointDir === undefined ? undefined : resolve(config.checkpointDir, 'tune.json');
}

/** The config a launching `tsddp train` gave this worker, if any. */
function launchedConfig(): Record<string, unknown> {
  const json = process.env[TRAIN_CONFIG_ENV];
  if (json === undefined || json === '') return {};
  try {
    return JSON.parse(json) as Record<string, unknown>;
  } catch (e) {
    throw new ConfigError(`${TRAIN_CONFIG_ENV} is not valid JSON: ${(e as Error).message}`, []);
  }
}

async function runTrain(config: TrainConfig): Promise<number> {
  try {
    const { train } = await import('../train/trainer.ts');
    await train(config);
    return 0;
  } catch (e) {
    const err = e as Error;
    process.stderr.write(`tsddp train${rankLabel()}: ${err.name ?? 'Error'}: ${err.message}\n`);
    if (debugEnabled()) process.stderr.write(`${err.stack}\n`);
    return 1;
  }
}

/** Starts --nproc-per-node workers with the launcher (tsrun's agent), each running this command. */
async function launchWorkers(args: TrainArgs): Promise<number> {
  const [{ LaunchConfigError, resolveLaunchConfig }, { launchJob }, { cuda }] = await Promise.all([
    import('../launch/index.ts'),
    import('./launch-job.ts'),
    import('../core/runtime.ts'),
  ]);
  const entry = fileURLToPath(siblingModule('./main.ts', import.meta.url));
  let cfg: ReturnType<typeof resolveLaunchConfig>;
  try {
    cfg = resolveLaunchConfig(entry, ['train'], args.launch, process.env, () => cuda.deviceCount());
  } catch (e) {
    if (!(e instanceof LaunchConfigError)) throw e;
    process.stderr.write(`tsddp train: error: ${e.message}\n`);
    return 2;
  }
  if (args.config.dashboard !== undefined) {
    const { metricsFile } = args.config;
    cfg.dashboard = { port: args.config.dashboard, metricsFile: metricsFile && resolve(metricsFile) };
  }
  // The workers train with the config validated here, not a second parse of the flags.
  const code = await launchJob(cfg, { [TRAIN_CONFIG_ENV]: JSON.stringify(args.config) });
  // Rank 0 merges the rank files when the run succeeds; after a failure (or a rank 0 that
  // was killed), the launcher merges what the ranks wrote, so the metrics file is there.
  if (args.config.metricsFile !== undefined) await mergeAfterLaunch(resolve(args.config.metricsFile), code);
  return code;
}

/**
 * The launcher's merge of the ranks' metrics files. A file system that refuses it (full,
 * read-only) costs the merged file only: the rank files stay, `tsddp report` reads them, and
 * the launcher says so in one line (the temp file is removed by writeFileAtomicSync).
 */
export async function mergeAfterLaunch(file: string, code: number): Promise<void> {
  const { mergeRankFiles } = await import('../metrics/index.ts');
  try {
    const n = mergeRankFiles(file);
    if (code !== 0 && n !== null)
      process.stderr.write(`tsddp train: merged ${n} metric records of the failed run into ${file}\n`);
  } catch (e) {
    process.stderr.write(
      `tsddp train: could not merge the ranks' metrics into ${file}: ${(e as Error).message}; ` +
        `the rank files ${file}.rank<N> keep them (tsddp report reads them)\n`,
    );
  }
}

/** One process, no launcher: it serves the dashboard itself. */
async function trainWithDashboard(config: TrainConfig): Promise<number> {
  const { defaultMetricsFile, runWithDashboard } = await import('../dashboard/index.ts');
  const metricsFile = resolve(config.metricsFile ?? defaultMetricsFile('local'));
  const spec = { port: config.dashboard ?? 0, metricsFile, runId: 'local', worldSize: 1, maxRestarts: 0 };
  const log = (line: string) => process.stderr.write(`tsddp train: ${line}\n`);
  return runWithDashboard(spec, log, (report) => {
    report.attempt(0);
    return runTrain({ ...config, metricsFile });
  });
}
