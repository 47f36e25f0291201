// `tsddp` command line: subcommands are added by the issues that build them. Heavy
// modules (libtorch through src/core) are imported inside the actions, so `--help` is quick.
import { readFileSync } from 'node:fs';
import { Command } from 'commander';
import { registerBenchCommand } from './bench.ts';
import { registerDemoCommand } from './demo.ts';
import { registerReportCommand } from './report.ts';
import { registerRunCommand } from './run.ts';
import { registerSetupCommand } from './setup.ts';
import { registerTrainCommand } from './train.ts';
import { registerTuneCommand } from './tune.ts';

const program = new Command('tsddp')
  .description('PyTorch-grade distributed data-parallel training for TypeScript')
  .version(packageVersion());

function packageVersion(): string {
  const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8'));
  return String(pkg.version);
}

program
  .command('info')
  .description('torch version, where libtorch came from, CUDA/NCCL/Gloo, threads, build flags')
  .option('--json', 'print JSON')
  .action(async (opts: { json?: boolean }) => (await import('./info.ts')).infoCommand(opts));

registerRunCommand(program);
registerTrainCommand(program);
registerTuneCommand(program);
registerDemoCommand(program);
registerBenchCommand(program);
registerReportCommand(program);
registerSetupCommand(program);

await program.parseAsync(process.argv);
