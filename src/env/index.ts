// The environment a launcher (torchrun, tsrun) gives each worker: RANK, WORLD_SIZE,
// LOCAL_RANK, ..., read by one rule everywhere (the process group's env:// rendezvous,
// DistributedSampler's defaults, a checkpoint's world size): a variable is an integer
// written in decimal digits, at least `min`; anything else is a TypeError naming it. And
// the one debug switch, TSDDP_DEBUG=1 (stack traces of the errors the commands report).
// A floor module: it imports nothing of tsddp, so data and checkpoint may use it.

/**
 * The integer in environment variable `name`. Unset or empty: `fallback`, else a TypeError
 * whose message is `missing` (what to do about it).
 */
export function envInt(
  name: string,
  opts: { env?: NodeJS.ProcessEnv; fallback?: number; min?: number; missing?: string } = {},
): number {
  const raw = (opts.env ?? process.env)[name];
  if (raw === undefined || raw === '') {
    if (opts.fallback !== undefined) return opts.fallback;
    throw new TypeError(opts.missing ?? `the environment variable ${name} is not set`);
  }
  const min = opts.min ?? 0;
  const v = Number(raw);
  if (!/^\d+$/.test(raw.trim()) || !Number.isSafeInteger(v) || v < min)
    throw new TypeError(
      `environment variable ${name}='${raw}' is not ${min === 0 ? 'a non-negative integer' : `an integer >= ${min}`}`,
    );
  return v;
}

/** Whether TSDDP_DEBUG=1 asks for stack traces (docs/development.md). */
export function debugEnabled(env: NodeJS.ProcessEnv = process.env): boolean {
  return env.TSDDP_DEBUG === '1';
}
