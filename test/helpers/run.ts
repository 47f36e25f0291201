// Runs a command to its end with OMP_NUM_THREADS=1 and `env` over this process's
// environment, collecting stdout and stderr together; SIGKILLed after `timeoutMs`.
import { spawn } from 'node:child_process';

export interface CommandRun {
  code: number | null;
  out: string;
}

export function runCommand(
  argv: string[],
  opts: { env?: NodeJS.ProcessEnv; cwd?: string; timeoutMs?: number } = {},
): Promise<CommandRun> {
  return new Promise((resolve) => {
    const child = spawn(argv[0], argv.slice(1), {
      cwd: opts.cwd,
      env: { ...process.env, OMP_NUM_THREADS: '1', ...opts.env },
    });
    let out = '';
    const collect = (d: Buffer) => {
      out += d;
    };
    child.stdout.on('data', collect);
    child.stderr.on('data', collect);
    const timer = setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs ?? 120_000);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, out });
    });
  });
}
