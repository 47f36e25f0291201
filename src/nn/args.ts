// How every nn module constructor and nn.functional function takes its arguments, one
// rule for the whole of nn (docs/guide/library.md, "Arguments"): PyTorch's parameters in
// PyTorch's positional order, and any of them by name (camelCase) in a trailing options
// object. An argument tsddp cannot honour is refused with a TypeError that names it: too
// many positional arguments, an unknown option (with the nearest names), the same
// argument given twice, or a value of a parameter tsddp does not implement. None is ever
// ignored, so code ported from PyTorch (`nn.Conv2d(1, 32, 3, 1)`) either means what it
// meant there or fails loudly.
//
// A callable declares its signature once (signature()), binds its arguments with bind()
// and types its parameter list with Args<>: the TypeScript overloads come from the same
// names as the runtime binding, so the two cannot disagree about positions.

import { isPlainObject, unknownOption as unknownOptionNamed } from '../core/options.ts';

/** A list of parameter names, in order. */
type Names = readonly string[];

/** What signature() is given: the parameter names in PyTorch's order, and what tsddp does with them. */
export interface SignatureSpec<R extends Names, P extends Names, K extends Names> {
  /** The leading parameters every call gives (tsddp's required ones; PyTorch may default some). */
  readonly required?: R;
  /** The other positional parameters, in PyTorch's order. */
  readonly optional?: P;
  /** PyTorch's keyword-only parameters (after its `*`): by name only. */
  readonly keywordOnly?: K;
  /** tsddp's own options that PyTorch's signature lacks: by name only, after PyTorch's. */
  readonly extra?: Names;
  /**
   * Parameters tsddp does not implement, each with the one value it accepts (PyTorch's
   * default, which is what tsddp does); any other value is refused by name.
   */
  readonly unsupported?: Readonly<Record<string, unknown>>;
  /** Why an unsupported parameter is refused, or what to use instead (appended to the error). */
  readonly hints?: Readonly<Record<string, string>>;
  /**
   * Parameters that have no effect in PyTorch either (a deprecated no-op, a warning's stack
   * level): accepted with any value, so PyTorch's calls run unchanged.
   */
  readonly inert?: Names;
  /** tsddp's own option names for PyTorch's parameters: alias → parameter. */
  readonly aliases?: Readonly<Record<string, string>>;
  /** The arguments are the value itself (a container's entries): no trailing options object. */
  readonly noOptions?: boolean;
}

/** A declared signature: the spec, with the lookups bind() needs. */
export interface Signature<R extends Names = Names, P extends Names = Names, K extends Names = Names> {
  readonly required: R;
  readonly optional: P;
  readonly keywordOnly: K;
  readonly extra: Names;
  /** Every parameter: required, optional (these two are the positional ones), keyword-only, extra. */
  readonly params: readonly string[];
  /** How many arguments may be given positionally. */
  readonly positional: number;
  readonly unsupported: Readonly<Record<string, unknown>>;
  /** The keys of `unsupported`, for bind's loop on every call. */
  readonly unsupportedNames: readonly string[];
  readonly hints: Readonly<Record<string, string>>;
  readonly inert: Names;
  readonly aliases: Readonly<Record<string, string>>;
  readonly noOptions: boolean;
  /** Parameter (or alias) name → its parameter's index in `params`. */
  readonly index: ReadonlyMap<string, number>;
}

const REGISTRY = new Map<string, Signature>();

/**
 * Declares the signature of the callables `names` (a module class's name, an F function's
 * name; a family such as the dropouts shares one) and records it, so the tests can compare
 * every signature with PyTorch's (test/nn-args.test.ts).
 */
export function signature<const R extends Names = [], const P extends Names = [], const K extends Names = []>(
  names: string | readonly string[],
  spec: SignatureSpec<R, P, K>,
): Signature<R, P, K> {
  const required = (spec.required ?? []) as R;
  const optional = (spec.optional ?? []) as P;
  const keywordOnly = (spec.keywordOnly ?? []) as K;
  const extra = spec.extra ?? [];
  const params = [...required, ...optional, ...keywordOnly, ...extra];
  const index = new Map(params.map((p, i) => [p, i]));
  for (const [alias, target] of Object.entries(spec.aliases ?? {})) {
    const i = index.get(target);
    if (i === undefined) throw new Error(`signature: alias '${alias}' of unknown parameter '${target}'`);
    index.set(alias, i);
  }
  for (const p of [...Object.keys(spec.unsupported ?? {}), ...(spec.inert ?? [])]) {
    if (!index.has(p)) throw new Error(`signature: '${p}' is not a parameter`);
  }
  const sig: Signature<R, P, K> = {
    required,
    optional,
    keywordOnly,
    extra,
    params,
    positional: required.length + optional.length,
    unsupported: spec.unsupported ?? {},
    unsupportedNames: Object.keys(spec.unsupported ?? {}),
    hints: spec.hints ?? {},
    inert: spec.inert ?? [],
    aliases: spec.aliases ?? {},
    noOptions: spec.noOptions ?? false,
    index,
  };
  for (const name of typeof names === 'string' ? [names] : names) REGISTRY.set(name, sig);
  return sig;
}

/** The signature declared for a module class or F function name (tests and tools). */
export function signatureOf(name: string): Signature | undefined {
  return REGISTRY.get(name);
}

/** Every declared name and its signature. */
export function signatures(): ReadonlyMap<string, Signature> {
  return REGISTRY;
}

/** Whether `v` is an options object: a plain object (not a tensor, array, module, function...). */
export const isOptionsObject = isPlainObject;

/**
 * The options object of a forward() whose optional arguments are taken by name only
 * (MultiheadAttention, the Transformer layers): a tensor or anything else in its place
 * (PyTorch's positional key_padding_mask, say) and a name it does not know are refused,
 * naming them, rather than read as empty options.
 */
export function forwardOptions<O extends object>(
  opts: O | undefined,
  fn: string,
  names: readonly string[],
): O {
  if (opts === undefined) return {} as O;
  if (!isOptionsObject(opts))
    throw new TypeError(
      `${fn}: its optional arguments are given by name in an options object ({ ${names.join(', ')} }), ` +
        `got ${opts instanceof Object ? opts.constructor.name : typeof opts} in their place`,
    );
  for (const k of Object.keys(opts))
    if (!names.includes(k))
      throw new TypeError(`${fn}: unknown option '${k}' (it takes ${names.join(', ')})`);
  return opts;
}

/**
 * Binds the arguments of a call to the signature's parameter names, as Python binds a
 * call: positional arguments by position, then the trailing options object by name
 * (aliases resolved to the parameter). `undefined` counts as not given. Throws a
 * TypeError naming the argument for too many positional arguments, an unknown option, an
 * argument given twice, a missing required one, or an unsupported parameter's value.
 * `fn` names the callable in the messages ('Conv2d', 'logSoftmax').
 */
export function bind<T>(sig: Signature, args: ArrayLike<unknown>, fn: string): T {
  let n = args.length;
  let opts: Record<string, unknown> | undefined;
  if (!sig.noOptions && n > 0 && isOptionsObject(args[n - 1])) opts = args[--n] as Record<string, unknown>;
  if (n > sig.positional) throw tooManyPositional(sig, fn, n);
  const out: Record<string, unknown> = {};
  for (let i = 0; i < n; i++) if (args[i] !== undefined) out[sig.params[i]] = args[i];
  if (opts !== undefined) {
    for (const key of Object.keys(opts)) {
      const value = opts[key];
      if (value === undefined) continue;
      const i = sig.index.get(key);
      if (i === undefined) throw unknownOption(sig, fn, key);
      const param = sig.params[i];
      if (out[param] !== undefined) {
        throw new TypeError(`${fn}() got multiple values for argument '${param}'`);
      }
      out[param] = value;
    }
  }
  for (const r of sig.required) {
    if (out[r] === undefined) throw new TypeError(`${fn}() missing required argument '${r}'`);
  }
  for (const p of sig.unsupportedNames) {
    const only = sig.unsupported[p];
    if (out[p] !== undefined && !Object.is(out[p], only)) throw unsupported(sig, fn, p, out[p], only);
  }
  return out as T;
}

function tooManyPositional(sig: Signature, fn: string, given: number): TypeError {
  const names = sig.params.slice(0, sig.positional).join(', ');
  const kw = sig.keywordOnly.length
    ? `; ${sig.keywordOnly.join(', ')} ${sig.keywordOnly.length > 1 ? 'are' : 'is'} keyword-only (give ${sig.keywordOnly.length > 1 ? 'them' : 'it'} in the options object)`
    : '';
  return new TypeError(
    `${fn}() takes at most ${sig.positional} positional argument${sig.positional === 1 ? '' : 's'} (${names || 'none'}) but ${given} ${given === 1 ? 'was' : 'were'} given${kw}`,
  );
}

function unknownOption(sig: Signature, fn: string, key: string): TypeError {
  return unknownOptionNamed(
    fn,
    key,
    [...sig.index.keys()].filter((k) => !sig.required.includes(k)),
  );
}

function unsupported(sig: Signature, fn: string, p: string, value: unknown, only: unknown): TypeError {
  const hint = sig.hints[p] ? `: ${sig.hints[p]}` : '';
  return new TypeError(
    `${fn}(): ${p}=${show(value)} is not supported by tsddp (only ${show(only)}, PyTorch's default)${hint}`,
  );
}

function show(v: unknown): string {
  if (typeof v === 'string') return `'${v}'`;
  if (typeof v === 'object' && v !== null) return v.constructor?.name ?? 'object';
  return String(v);
}

/**
 * An nn.functional function over its signature: declares `spec` under `name` and returns
 * the function that binds its arguments and calls `impl` with them by name. `T` (the type
 * of every parameter by name) is read from `impl`'s parameter.
 */
export function define<
  const R extends Names = [],
  const P extends Names = [],
  const K extends Names = [],
  T = never,
  Ret = never,
>(name: string, spec: SignatureSpec<R, P, K>, impl: (a: T) => Ret): PyFunction<Signature<R, P, K>, T, Ret> {
  const sig = signature(name, spec);
  const fn: PyFunction<Signature<R, P, K>, T, Ret> = (...args) => impl(bind<T>(sig, args, name));
  // Named as the function it is (stack traces, fn.name), not as the arrow here.
  return Object.defineProperty(fn, 'name', { value: name });
}

/**
 * (size_average, reduce, reduction): PyTorch's deprecated reduction arguments and the one
 * that replaced them, one after the other in most loss signatures (modules and functions).
 */
export const LEGACY_REDUCTION = ['sizeAverage', 'reduce', 'reduction'] as const;

/**
 * PyTorch's deprecated `size_average` and `reduce` as a reduction
 * (torch.nn._reduction.legacy_get_string); `reduction` when neither is given.
 */
export function legacyReduction<R extends string>(
  sizeAverage: boolean | null | undefined,
  reduce: boolean | null | undefined,
  reduction: R | undefined,
): R | 'mean' | 'sum' | 'none' | undefined {
  if ((sizeAverage ?? null) === null && (reduce ?? null) === null) return reduction;
  const avg = sizeAverage ?? true;
  const red = reduce ?? true;
  return avg && red ? 'mean' : red ? 'sum' : 'none';
}

// --- the TypeScript side: a signature's parameter lists as one union of tuples ------------------

/** The types of the names `K` in `T`, as a tuple. */
type TypesOf<T, K extends Names> = { -readonly [I in keyof K]: K[I] extends keyof T ? T[K[I]] : never };

/** Every prefix of the tuple `P`, the empty one included. */
type Prefixes<P extends readonly unknown[]> = P extends readonly [...infer H, unknown] ? Prefixes<H> | P : [];

/** The options object of a signature: every parameter of `T` but the required ones, by name, optional. */
export type OptionsOf<S extends Signature, T> = {
  [Key in Exclude<keyof T, S['required'][number]>]?: T[Key];
};

/**
 * The parameter lists a signature `S` accepts, for `T` the type of each parameter by name
 * (tsddp's aliases too): the required parameters, then any prefix of the optional ones in
 * PyTorch's order, then an optional options object naming the rest. A rest parameter of
 * this union type is how a constructor or function gets all of PyTorch's call forms:
 * `new Conv2d(1, 32, 3, 1)`, `new Conv2d(1, 32, 3, { stride: 1 })`, `new Conv2d(1, 32, 3, 2, { padding: 1 })`.
 */
export type Args<S extends Signature, T> =
  Prefixes<TypesOf<Required<T>, S['optional']>> extends infer X
    ? X extends readonly unknown[]
      ? [...TypesOf<T, S['required']>, ...X, OptionsOf<S, T>?]
      : never
    : never;

/**
 * A function taking the argument lists of signature `S` (parameter types `T`) and
 * returning `Ret`: define()'s return type, so declarations and hovers show this name
 * instead of spelling out every argument list.
 */
export type PyFunction<S extends Signature, T, Ret> = (...args: Args<S, T>) => Ret;
