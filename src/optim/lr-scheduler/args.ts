// How a scheduler's constructor reads its arguments, the same way for every scheduler:
// PyTorch's positional arguments in PyTorch's order (`new StepLR(opt, 30, 0.5)`), any of
// them given instead in an options object that comes last (`new StepLR(opt, 30, { gamma:
// 0.5 })`, `new StepLR(opt, { stepSize: 30 })`), as Python mixes positional and keyword
// arguments. An option is spelled in camelCase or as PyTorch spells it (`etaMin` or
// `eta_min`, `t0` or `T_0`). What Python refuses is refused here, as a TypeError naming
// the option: one it does not know, one given twice, a required one missing, too many
// positional arguments. `undefined` and `null` count as not given: the TypeScript way to
// leave an option to its default, and Python's None where PyTorch's default is None
// (OneCycleLR's total_steps, CyclicLR's step_size_down).

/** A constructor parameter after the optimizer: tsddp's (camelCase) name and PyTorch's. */
export type Param = readonly [name: string, torch: string];

/** `T` whose options may also be spelled as PyTorch spells them (`eta_min` beside `etaMin`). */
export type TorchSpelled<T, P extends readonly Param[]> = T & {
  [E in P[number] as E[0] extends keyof T ? (E[1] extends E[0] ? never : E[1]) : never]?: E[0] extends keyof T
    ? T[E[0]]
    : never;
};

const LAST_EPOCH = [['lastEpoch', 'last_epoch']] as const;

/** The `lastEpoch` option (PyTorch: last_epoch) of the schedulers that have no other optional one. */
export type LastEpochOption = TorchSpelled<
  {
    /** The step to resume at (default -1: a new schedule). */
    lastEpoch?: number;
  },
  typeof LAST_EPOCH
>;

/** A required option, under tsddp's name or PyTorch's. */
export type RequiredOption<N extends string, T extends string, V> = N extends T
  ? { [K in N]: V }
  : { [K in N]: V } | { [K in T]: V };

/** Only an object literal (or a null-prototype object) is an options object: no parameter is one. */
function isOptions(v: unknown): v is Record<string, unknown> {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) return false;
  const proto = Object.getPrototypeOf(v);
  return proto === Object.prototype || proto === null;
}

/** `stepSize (step_size)`, or `gamma` where both spellings agree. */
function spelled([name, torch]: Param): string {
  return name === torch ? name : `${name} (${torch})`;
}

/** The parameter a key names, under either spelling. */
function paramOf(params: readonly Param[], key: string): Param | undefined {
  return params.find(([name, torch]) => key === name || key === torch);
}

/** A hint for a near miss: `T0` or `TMax` for `t0` / `tMax`, `stepsize` for `stepSize`. */
function nearMiss(params: readonly Param[], key: string): string {
  const fold = (s: string) => s.replaceAll('_', '').toLowerCase();
  const p = params.find(([name, torch]) => fold(name) === fold(key) || fold(torch) === fold(key));
  return p === undefined ? '' : ` (did you mean '${p[0]}'?)`;
}

/**
 * The arguments after the optimizer, by tsddp's name (a name not given is absent).
 * `params` lists every parameter in PyTorch's order; the first `required` are required.
 * `afterOptimizer` false: the arguments are all the constructor's (ChainedScheduler's
 * optimizer comes second).
 */
export function schedulerArgs<T>(
  scheduler: string,
  params: readonly Param[],
  required: number,
  args: readonly unknown[],
  afterOptimizer = true,
): T {
  const first = afterOptimizer ? 2 : 1;
  const out: Record<string, unknown> = {};
  const given = new Map<string, string>();
  const set = (p: Param, how: string, v: unknown) => {
    if (v === undefined || v === null) return;
    const before = given.get(p[0]);
    if (before !== undefined) {
      throw new TypeError(`${scheduler}: got ${p[0]} twice (${before}, and ${how})`);
    }
    given.set(p[0], how);
    out[p[0]] = v;
  };
  for (let i = 0; i < args.length; i++) {
    const a = args[i];
    if (isOptions(a)) {
      if (i !== args.length - 1) {
        throw new TypeError(
          `${scheduler}: the options object must be the last argument (it is argument ${i + first})`,
        );
      }
      for (const [key, v] of Object.entries(a)) {
        const p = paramOf(params, key);
        if (p === undefined) {
          throw new TypeError(
            `${scheduler}: unknown option '${key}'${nearMiss(params, key)}; it takes ${params.map(spelled).join(', ')}`,
          );
        }
        set(p, `as option '${key}'`, v);
      }
    } else {
      if (i >= params.length) {
        throw new TypeError(
          `${scheduler}: takes at most ${params.length} arguments${afterOptimizer ? ' after the optimizer' : ''} ` +
            `(${params.map(([n]) => n).join(', ')}), got ${args.filter((x) => !isOptions(x)).length}`,
        );
      }
      set(params[i], `as argument ${i + first}`, a);
    }
  }
  for (const p of params.slice(0, required)) {
    if (out[p[0]] === undefined) {
      const torch = p[1] === p[0] ? '' : ` (PyTorch: ${p[1]})`;
      throw new TypeError(`${scheduler}: missing required option '${p[0]}'${torch}`);
    }
  }
  return out as T;
}
