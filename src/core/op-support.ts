// Runtime helpers for the generated op wrappers: lazy op ids, argument conversion and
// overload matching. Kept apart so ops.generated.ts stays pure output.
import { dtypeCode, type MemoryFormat, memoryFormatCode } from './dtype.ts';
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

function describe(v: unknown): string {
  if (v === null) return 'null';
  if (v instanceof Tensor) return v.h < 0 ? 'a disposed Tensor' : 'Tensor';
  if (Array.isArray(v)) return `[${v.map(describe).join(', ')}]`;
  if (typeof v === 'object') return 'object';
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
  return v == null ? v : named(op, () => dtypeCode(v));
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

/** Number of positional arguments: a trailing plain object holds keyword-only options. */
export function positionalCount(a: unknown[]): number {
  return a.length > 0 && isOptions(a[a.length - 1]) ? a.length - 1 : a.length;
}

export function noOverload(fn: string, a: unknown[]): TypeError {
  return new TypeError(
    `${fn}(): no overload accepts (${a.map(describe).join(', ')}); see its signatures in ops.generated.ts`,
  );
}
