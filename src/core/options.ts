// The options-object half of tsddp's argument rule (docs/guide/library.md, "Arguments"):
// an option a callable does not take is refused with a TypeError that names it and the
// nearest names it does take, never ignored. Ported code that keeps PyTorch's spelling
// (`batch_size`, `weight_decay`) or has a typo would otherwise run, silently, with the
// default. nn's positional binding (src/nn/args.ts) shares the spelling hints.

/**
 * The option names of an options type, listed once for the runtime check. The record
 * must name every key of `O` (the compiler says which is missing or extra), so the
 * check cannot fall behind the type.
 */
export function optionNames<O extends object>(
  names: { readonly [K in keyof Required<O>]: true },
): readonly string[] {
  return Object.keys(names);
}

/**
 * `opts` (or `{}` when undefined) after refusing anything that is not an options object
 * and every key `fn` does not take. A key whose value is undefined counts as not given.
 * `fn` names the callable in the message ('DataLoader', 'SGD').
 */
export function checkOptions<O extends object>(
  fn: string,
  opts: O | undefined,
  names: readonly string[],
  more: MoreOptions = {},
): O {
  if (opts === undefined) return {} as O;
  if (!isPlainObject(opts))
    throw new TypeError(
      `${fn}(): its options are given by name in an object ({ ${names.join(', ')} }), got ${describe(opts)}`,
    );
  for (const [key, value] of Object.entries(opts)) {
    if (value === undefined || names.includes(key)) continue;
    if (more.only !== undefined && Object.hasOwn(more.only, key)) {
      if (Object.is(value, more.only[key])) continue;
      throw new TypeError(
        `${fn}(): ${key}=${describe(value)} is not supported by tsddp (only ${describe(more.only[key])}, PyTorch's default)`,
      );
    }
    throw unknownOption(fn, key, names, more.hints?.[key]);
  }
  return opts;
}

/** What checkOptions takes besides the names. */
export interface MoreOptions {
  /**
   * PyTorch's parameters tsddp does not implement, each with the one value it accepts
   * (PyTorch's default, which is what tsddp does): a ported `capturable: false` runs.
   */
  only?: Readonly<Record<string, unknown>>;
  /** What to say of a name that is not taken, instead of the nearest names (PyTorch's `timeout`, in seconds). */
  hints?: Readonly<Record<string, string>>;
}

/** "fn(): unknown option 'key' (did you mean 'x'?); fn takes a, b, c". */
export function unknownOption(fn: string, key: string, names: readonly string[], hint?: string): TypeError {
  const near = nearest(key, names);
  const why =
    hint !== undefined
      ? ` (${hint})`
      : near.length > 0
        ? ` (did you mean ${near.map((k) => `'${k}'`).join(' or ')}?)`
        : '';
  const takes = names.length > 0 ? `; ${fn} takes ${names.join(', ')}` : `; ${fn} takes no options`;
  return new TypeError(`${fn}(): unknown option '${key}'${why}${takes}`);
}

/** A plain object literal (an options object), not a class instance, array or function. */
export function isPlainObject(v: unknown): v is Record<string, unknown> {
  if (typeof v !== 'object' || v === null) return false;
  const proto = Object.getPrototypeOf(v);
  return proto === Object.prototype || proto === null;
}

/** camelCase of a snake_case name (PyTorch's spelling of an option). */
export function camelCase(name: string): string {
  const lead = /^_*/.exec(name)?.[0] ?? '';
  return lead + name.slice(lead.length).replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase());
}

/** The names closest to `key`: its camelCase spelling, or within a third of its length in edits. */
export function nearest(key: string, names: readonly string[]): string[] {
  const camel = camelCase(key);
  if (camel !== key && names.includes(camel)) return [camel];
  const lower = key.toLowerCase();
  const scored = names
    .map((n) => [n, editDistance(lower, n.toLowerCase())] as const)
    .filter(([n, d]) => d <= Math.max(1, Math.floor(Math.max(key.length, n.length) / 3)))
    .sort((a, b) => a[1] - b[1]);
  return scored.filter(([, d]) => d === scored[0]?.[1]).map(([n]) => n);
}

function editDistance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const cur = [i];
    for (let j = 1; j <= b.length; j++) {
      cur[j] = Math.min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    prev = cur;
  }
  return prev[b.length];
}

function describe(v: unknown): string {
  if (Array.isArray(v)) return 'an array';
  if (typeof v === 'string') return `'${v}'`;
  if (typeof v === 'function') return 'a function';
  if (typeof v === 'object' && v !== null) return `a ${v.constructor?.name ?? 'object'}`;
  return String(v);
}

/**
 * zero_grad's one argument, `set_to_none` (default true): PyTorch's positional boolean
 * (`zeroGrad(false)`) or by name (`zeroGrad({ setToNone: false })`).
 */
export function setToNoneArg(fn: string, arg: boolean | { setToNone?: boolean } | undefined): boolean {
  if (typeof arg === 'boolean') return arg;
  const setToNone = checkOptions(fn, arg, ['setToNone']).setToNone ?? true;
  if (typeof setToNone !== 'boolean')
    throw new TypeError(`${fn}(): setToNone must be a boolean, got ${describe(setToNone)}`);
  return setToNone;
}
