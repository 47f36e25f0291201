// `tsddp train`: the classic DDP recipe (ResNets, ViTs) as a command. As a worker (alone, or under
// tsrun/torchrun, which set RANK/WORLD_SIZE/...) it trains; given --nproc-per-node outside
// a launcher, it becomes the launcher: the workers it starts run `tsddp train` with the
// run plan it resolved (train/plan.ts PLAN_ENV).

import { availableParallelism } from 'node:os';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Command } from 'commander';
import { siblingModule } from '../core/module-url.ts';
import { debugEnabled } from '../env/index.ts';
// Only the light parts of the recipe are imported up front (argument parsing, help):
// libtorch loads when training or launching starts, so `tsddp --help` stays quick.
import { METRICS_FILE_ENV } from '../metrics/index.ts';
import { ConfigError } from '../train/config.ts';
import { launchedPlan, PLAN_ENV, type RunPlan, withOptions } from '../train/plan.ts';
import { parseTrainArgs, type TrainArgs, trainHelp } from './train-flags.ts';

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
    args = parseTrainArgs(argv, launchedPlan());
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
  if (args.plan.launch.tune) {
    const nproc = underLauncher ? undefined : nprocOf(args.launch.nprocPerNode);
    const tuned = await applyTune(args.plan, nproc, args.given);
    if (typeof tuned === 'number') return tuned;
    args = { ...args, plan: tuned };
  }
  if (!underLauncher && args.launch.nprocPerNode !== undefined) return launchWorkers(args);
  if (!underLauncher && Object.keys(args.launch).length > 0) {
    process.stderr.write(
      `tsddp train: warning: launcher options (${Object.keys(args.launch).join(', ')}) apply only with --nproc-per-node; ignored\n`,
    );
  }
  const { io } = args.plan;
  if (io.dashboard !== undefined && !underLauncher) return trainWithDashboard(args.plan);
  // A launcher with --dashboard tells its workers where to write metrics; one without does not serve it.
  if (io.dashboard !== undefined && !process.env[METRICS_FILE_ENV] && process.env.RANK === '0') {
    process.stderr.write(
      'tsddp train: warning: under a launcher, the launcher serves the dashboard: give --dashboard to tsrun; ignored here\n',
    );
  }
  return runTrain(args.plan);
}

/**
 * --tune: the plan with the tune file's choice, or a trial's (train/tune-plan.ts).
 * Resolves with the plan, or with an exit code after saying why it failed.
 */
export async function applyTune(
  plan: RunPlan,
  nproc: number | undefined,
  given: readonly string[],
  who = 'tsddp train',
): Promise<RunPlan | number> {
  const [{ tunePlan }, { TuneError }] = await Promise.all([
    import('../train/tune-plan.ts'),
    import('../train/tune.ts'),
  ]);
  const say = (line: string) => process.stderr.write(`${who}: ${line}\n`);
  try {
    return await tunePlan(plan, { nproc, given, say });
  } catch (e) {
    if (!(e instanceof TuneError) && !(e instanceof ConfigError)) throw e;
    say(`error: ${e.message}`);
    return e instanceof ConfigError ? 2 : 1;
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

async function runTrain(plan: RunPlan): Promise<number> {
  try {
    const { train } = await import('../train/trainer.ts');
    await train(plan);
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
  const { dashboard, metricsFile } = args.plan.io;
  if (dashboard !== undefined)
    cfg.dashboard = { port: dashboard, metricsFile: metricsFile && resolve(metricsFile) };
  // The workers train with the plan resolved here: no second parse of flags, no second validation.
  const code = await launchJob(cfg, { [PLAN_ENV]: JSON.stringify(args.plan) });
  // Rank 0 merges the rank files when the run succeeds; after a failure (or a rank 0 that
  // was killed), the launcher merges what the ranks wrote, so the metrics file is there.
  if (metricsFile !== undefined) await mergeAfterLaunch(resolve(metricsFile), code);
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
async function trainWithDashboard(plan: RunPlan): Promise<number> {
  const { defaultMetricsFile, runWithDashboard } = await import('../dashboard/index.ts');
  const metricsFile = resolve(plan.io.metricsFile ?? defaultMetricsFile('local'));
  const spec = { port: plan.io.dashboard ?? 0, metricsFile, runId: 'local', worldSize: 1, maxRestarts: 0 };
  const log = (line: string) => process.stderr.write(`tsddp train: ${line}\n`);
  return runWithDashboard(spec, log, (report) => {
    report.attempt(0);
    return runTrain(withOptions(plan, { metricsFile }));
  });
}
