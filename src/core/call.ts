// ops.call('aten::name.overload', ...args): any dispatcher op, converted by its schema.
import { dtypeCode, type MemoryFormat, memoryFormatCode } from './dtype.ts';
import { native, type OpSchema } from './native.ts';
import { Generator } from './random.ts';
import { Tensor, wrap } from './tensor.ts';

interface Entry {
  id: number;
  schema: OpSchema;
}
const cache = new Map<string, Entry>();

function lookup(qualified: string): Entry {
  let e = cache.get(qualified);
  if (e) return e;
  const m = /^([a-z_0-9]+::[A-Za-z_0-9]+)(?:\.([A-Za-z_0-9]+))?$/.exec(qualified);
  if (!m) throw new TypeError(`ops.call(): '${qualified}' is not an op name like 'aten::add.Tensor'`);
  const id = native.findOp(m[1], m[2] ?? '');
  if (id < 0) throw new TypeError(`ops.call(): no operator '${qualified}' in this libtorch`);
  e = { id, schema: native.opSchema(id) };
  cache.set(qualified, e);
  return e;
}

function convertArg(v: unknown, type: string): unknown {
  if (v instanceof Tensor) return v.h;
  if (v instanceof Generator) return v.h;
  if (Array.isArray(v)) return v.map((x) => (x instanceof Tensor ? x.h : x));
  if (typeof v === 'string') {
    if (type.startsWith('ScalarType')) return dtypeCode(v);
    if (type.startsWith('MemoryFormat')) return memoryFormatCode(v as MemoryFormat);
  }
  return v;
}

function convertResult(
  v: unknown,
  kind: string,
  writes: boolean,
  args: unknown[],
  schema: OpSchema,
): unknown {
  if (v === null) return null;
  if (kind === 'Tensor') {
    if (writes && v === undefined) return args[schema.args.findIndex((a) => a.writes)];
    return wrap(v as number);
  }
  if (kind === 'Tensor[]') return (v as number[]).map(wrap);
  return v;
}

/**
 * Calls any registered op by its qualified name with positional arguments in schema
 * order (undefined takes the schema default). Tensors in the result are owned by the
 * current scope, like every other op's.
 */
export function call(qualified: string, ...args: unknown[]): unknown {
  const { id, schema } = lookup(qualified);
  const converted = args.map((a, i) => convertArg(a, schema.args[i]?.type ?? ''));
  const r = native.call(id, ...converted);
  const rets = schema.returns;
  if (rets.length === 0) return undefined;
  if (rets.length === 1) return convertResult(r, rets[0].kind, rets[0].writes, args, schema);
  return (r as unknown[]).map((x, i) => convertResult(x, rets[i].kind, rets[i].writes, args, schema));
}
