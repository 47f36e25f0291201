// Small process helpers for the setup and install scripts (node: builtins only: they run
// before node_modules exists).
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { delimiter, join } from 'node:path';

/** A failure the scripts report as one message, without a stack. */
export class SetupError extends Error {}

export const fail = (msg) => {
  throw new SetupError(msg);
};

export function run(cmd, args, opts = {}) {
  const r = spawnSync(cmd, args, { stdio: 'inherit', ...opts });
  if (r.error) fail(`cannot run ${cmd}: ${r.error.message}`);
  if (r.status !== 0) fail(`\`${[cmd, ...args].join(' ')}\` exited with ${r.status ?? r.signal}`);
}

export function capture(cmd, args, opts = {}) {
  const r = spawnSync(cmd, args, { encoding: 'utf8', ...opts });
  return { ok: !r.error && r.status === 0, out: r.stdout ?? '', err: r.stderr || r.error?.message || '' };
}

export const onPath = (name) =>
  (process.env.PATH ?? '').split(delimiter).some((d) => d && existsSync(join(d, name)));

export const isRoot = () => process.getuid?.() === 0;

let aptUpdated = false;
/** apt-get install (root only), with one `apt-get update` first. */
export function aptInstall(pkgs) {
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  if (!aptUpdated) run('apt-get', ['update'], { env });
  aptUpdated = true;
  run('apt-get', ['install', '-y', '--no-install-recommends', ...pkgs], { env });
}
