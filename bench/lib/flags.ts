// Numeric command-line flags of the bench scripts: a wrong value stops the script with the
// flag's name instead of running a meaningless benchmark (NaN rounds run nothing).

/** `--name`'s integer value (`dflt` when absent); a TypeError naming the flag unless an integer >= min. */
export function intFlag(name: string, raw: string | undefined, min = 1, dflt?: number): number {
  const n = raw === undefined ? dflt : Number(raw);
  if (!(n !== undefined && Number.isInteger(n) && n >= min))
    throw new TypeError(`--${name} ${raw}: expected an integer >= ${min}`);
  return n;
}

/** `--name`'s value as a finite number > 0; a TypeError naming the flag otherwise. */
export function positiveFlag(name: string, raw: string | undefined): number {
  const n = Number(raw);
  if (!(Number.isFinite(n) && n > 0)) throw new TypeError(`--${name} ${raw}: expected a number > 0`);
  return n;
}
