// Runs one gang of benchmark workers (one process per rank, env://, one thread each) to
// the end and returns rank 0's last stdout line, parsed as JSON. A rank that fails kills
// the others (they would wait in a collective), as does `timeoutMs`; the error carries
// every rank's stderr.
import { REPO_ROOT } from '../../src/benchmark/reference.ts';
import { freePort, spawnRanks } from '../../src/host/gang.ts';

export async function runGang<T>(
  command: string,
  args: string[],
  world: number,
  env: Record<string, string> = {},
  timeoutMs = 30 * 60_000,
): Promise<T> {
  const procs = spawnRanks({
    command,
    args,
    world,
    port: await freePort(),
    env: { ...process.env, OMP_NUM_THREADS: '1', ...env },
    cwd: REPO_ROOT,
  });
  let stdout = '';
  const stderr = procs.map(() => '');
  const killAll = () => {
    for (const p of procs) if (p.exitCode === null && p.signalCode === null) p.kill('SIGKILL');
  };
  const timer = setTimeout(killAll, timeoutMs);
  const codes = await Promise.all(
    procs.map((p, rank) => {
      p.stdout.setEncoding('utf8');
      p.stderr.setEncoding('utf8');
      p.stdout.on('data', (s: string) => {
        if (rank === 0) stdout += s;
      });
      p.stderr.on('data', (s: string) => {
        stderr[rank] = (stderr[rank] + s).slice(-3000);
      });
      return new Promise<number | null>((res) =>
        p.once('close', (code) => {
          if (code !== 0) killAll(); // its peers would wait in a collective
          res(code);
        }),
      );
    }),
  );
  clearTimeout(timer);
  const last = stdout.trim().split('\n').pop() ?? '';
  if (codes.some((c) => c !== 0) || !last.startsWith('{')) {
    const tails = stderr.map((s, r) => `rank ${r} (exit ${codes[r]}):\n${s.trim()}`).join('\n');
    throw new Error(`${command} ${args.slice(0, 3).join(' ')} (world ${world}) failed:\n${tails}`);
  }
  return JSON.parse(last) as T;
}
