// Runtime helpers for the generated op wrappers: lazy op ids, argument conversion and
// overload matching. Kept apart so ops.generated.ts stays pure output.
import { dtypeCode, type MemoryFormat, memoryFormatCode, toDType } from './dtype.ts';
import { named } from './errors.ts';
import { native } from './native.ts';
import { Generator } from './random.ts';
import { Tensor, wrap } from './tensor.ts';

/** Op ids by position in `names`, looked up in the dispatcher on first use. */
export function makeOpTable(names: string[]): (k: number) => number {
  const ids = new Int32Array(names.length).fill(-2);
  return (k) => {
    const id = ids[k];
    if (id >= 0) return id;
    const q = names[k];
    const dot = q.indexOf('.', 6);
    const found = native.findOp(dot < 0 ? q : q.slice(0, dot), dot < 0 ? '' : q.slice(dot + 1));
    if (found < 0) throw new TypeError(`${q} is not available in this libtorch`);
    ids[k] = found;
    return found;
  };
}

/** A value's kind for an error message; `keys` also names a plain object's keys (options). */
function describe(v: unknown, keys = false): string {
  if (v === null) return 'null';
  if (v instanceof Tensor) return v.h < 0 ? 'a disposed Tensor' : 'Tensor';
  if (Array.isArray(v)) return `[${v.map((x) => describe(x)).join(', ')}]`;
  if (typeof v === 'object') return keys ? `{ ${Object.keys(v).join(', ')} }` : 'object';
  return typeof v;
}

export function th(v: unknown, op: string, arg: string): number {
  if (v instanceof Tensor) return v.h;
  if (v === undefined) return undefined as unknown as number; // the schema default applies
  throw new TypeError(`${op}: argument '${arg}' expected a Tensor, got ${describe(v)}`);
}

export function oth(v: unknown, op: string, arg: string): number | null {
  return v === null ? null : th(v, op, arg);
}

export function ths(v: unknown, op: string, arg: string): number[] {
  if (!Array.isArray(v))
    throw new TypeError(`${op}: argument '${arg}' expected Tensor[], got ${describe(v)}`);
  return v.map((t) => th(t, op, arg));
}

export function oths(v: unknown, op: string, arg: string): (number | null)[] {
  if (!Array.isArray(v))
    throw new TypeError(`${op}: argument '${arg}' expected (Tensor | null)[], got ${describe(v)}`);
  return v.map((t) => (t == null ? null : th(t, op, arg)));
}

export function gh(v: Generator | null | undefined): number | null | undefined {
  return v == null ? v : v.h;
}

export function dc(v: string | null | undefined, op: string): number | null | undefined {
  // the one alias table (core/dtype.ts): 'double', 'short', 'char', ... are accepted
  return v == null ? v : dtypeCode(toDType(v, op));
}

export function mfc(v: MemoryFormat | null | undefined, op: string): number | null | undefined {
  return v == null ? v : named(op, () => memoryFormatCode(v));
}

export function owrap(h: unknown): Tensor | null {
  return h === null ? null : wrap(h as number);
}

/** Applies a factory's `requiresGrad` option. */
export function rg(t: Tensor, opts: { requiresGrad?: boolean } | undefined): Tensor {
  if (opts?.requiresGrad) t.requiresGrad_(true);
  return t;
}

export const isScalar = (v: unknown): boolean => typeof v === 'number' || typeof v === 'boolean';
export const isTensorList = (v: unknown): boolean =>
  Array.isArray(v) && (v.length === 0 || v[0] instanceof Tensor);
export const isIntList = (v: unknown): boolean =>
  Array.isArray(v) && (v.length === 0 || typeof v[0] === 'number');
export const isIntListOrInt = (v: unknown): boolean => typeof v === 'number' || isIntList(v);

function isOptions(v: unknown): boolean {
  return (
    typeof v === 'object' &&
    v !== null &&
    !Array.isArray(v) &&
    !(v instanceof Tensor) &&
    !(v instanceof Generator)
  );
}

/**
 * Number of positional arguments: a trailing plain object holds options. When taking it
 * so would leave fewer than `required` positional arguments (the fewest any overload
 * needs), it must name only parameters (`names`): `cumsum(x, { dim: 0 })` names one,
 * `cat({ length: 2 })` is a misplaced argument, and the conversion error says so.
 */
/**
 * PyTorch's varargs sizes (torch.zeros(2, 3), torch.rand(20)): the leading numbers of `a`
 * as one size list, followed by what came after them (the options).
 */
export function leadingSizes(a: unknown[]): unknown[] {
  let k = 0;
  while (k < a.length && typeof a[k] === 'number') k++;
  return [a.slice(0, k), ...a.slice(k)];
}

export function positionalCount(a: unknown[], required = 0, names?: readonly string[]): number {
  const last = a[a.length - 1];
  if (a.length === 0 || !isOptions(last)) return a.length;
  if (a.length > required || names === undefined) return a.length - 1;
  for (const k in last as object) if (!names.includes(k)) return a.length;
  return a.length - 1;
}

/**
 * Whether an options object names only parameters of this overload that were not given
 * positionally: `names` are its parameters in schema order (keyword-only ones last), `n`
 * the positional count. An unknown or doubly given name rules the overload out, as
 * Python's argument parser does.
 */
export function optionsFit(o: Record<string, unknown>, names: readonly string[], n: number): boolean {
  for (const k in o) {
    if (o[k] === undefined) continue;
    if (names.indexOf(k) < n) return false;
  }
  return true;
}

/**
 * The error when no overload fits. An options object naming something no overload
 * takes (a typo, a Python-only name) is named first: that is the usual cause.
 */
export function noOverload(fn: string, a: unknown[], params?: readonly string[]): TypeError {
  const last = a[a.length - 1];
  if (params && isOptions(last)) {
    const unknown = Object.keys(last as object).filter((k) => !params.includes(k) || k === 'self');
    if (unknown.length) {
      const known = params.filter((k) => k !== 'self').join(', ');
      return new TypeError(
        `${fn}(): unknown option${unknown.length > 1 ? 's' : ''} ${unknown.map((k) => `'${k}'`).join(', ')}; ${fn} takes ${known}`,
      );
    }
  }
  return new TypeError(
    `${fn}(): no overload accepts (${a.map((x) => describe(x, true)).join(', ')}); see its signatures in ops.generated.ts`,
  );
}
