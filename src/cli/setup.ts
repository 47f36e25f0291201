// `tsddp setup`: installs the native addons of the installed package — the prebuilt ones
// when they match the torch found, else built here — what npm's install step does
// (scripts/install.mjs), for `npm install --ignore-scripts`, a new torch, or a machine
// where the build tools were missing at install time.
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { Command } from 'commander';

const INSTALL_SCRIPT = fileURLToPath(new URL('../../scripts/install.mjs', import.meta.url));

export function registerSetupCommand(program: Command): void {
  program
    .command('setup')
    .description('install the native addons for the torch found (what `npm install tsddp` runs)')
    .option('--rebuild', 'a clean build here, even when the addons are up to date or prebuilt')
    .option('--build-from-source', 'build here even where a prebuilt addon matches')
    .option('--install-system-deps', 'install missing build packages with apt-get (needs root)')
    .action((opts: { rebuild?: boolean; buildFromSource?: boolean; installSystemDeps?: boolean }) => {
      const args = [
        INSTALL_SCRIPT,
        ...(opts.rebuild ? ['--rebuild'] : []),
        ...(opts.buildFromSource ? ['--build-from-source'] : []),
        ...(opts.installSystemDeps ? ['--install-system-deps'] : []),
      ];
      const r = spawnSync(process.execPath, args, { stdio: 'inherit' });
      process.exitCode = r.status ?? 1;
    });
}
