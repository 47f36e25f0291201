// Records the aten ops a forward calls: every generated op goes through native.call
// (src/core/ops.generated.ts), so for the time of one forward that function is wrapped and
// each call is written down by its schema: tensor arguments as the values they are
// (graph inputs, parameters, constants or earlier results), everything else as given.
// The ONNX exporter (export.ts) turns the record into a graph. A tensor freed during the
// forward (its handle slot may then be reused) is forgotten at its dispose.
import { dtypeFromCode } from '../core/dtype.ts';
import { native, type OpSchema } from '../core/native.ts';
import type { Tensor } from '../core/tensor.ts';

/** A tensor in the record: a graph input, a parameter or buffer, a constant, or an op's result. */
export type ValueSource =
  | { kind: 'input'; index: number }
  | { kind: 'param'; name: string; tensor: Tensor }
  | { kind: 'const'; bytes: Uint8Array }
  | { kind: 'node'; node: number; output: number };

export interface TracedValue {
  id: number;
  source: ValueSource;
  shape: number[];
  dtype: string;
}

/** An op argument: a traced value, a list of them, or a literal (number, boolean, string, list, null). */
export type TracedArg = { value: number } | { values: (number | null)[] } | { literal: unknown };

export interface TracedNode {
  /** 'aten::conv2d' or 'aten::add.Tensor'. */
  op: string;
  schema: OpSchema;
  args: TracedArg[];
  outputs: number[];
}

export interface Trace {
  values: TracedValue[];
  nodes: TracedNode[];
  inputs: number[];
  /** The value of each output tensor of the forward, in order. */
  outputs: number[];
}

const qualified = (s: OpSchema): string => (s.overload ? `${s.name}.${s.overload}` : s.name);

/**
 * Runs `forward` with the ops recorded. `inputs` are the graph inputs; `params` names the
 * model's parameters and buffers; `forward` returns the output tensors.
 */
export function traceOps(inputs: Tensor[], params: Map<Tensor, string>, forward: () => Tensor[]): Trace {
  const values: TracedValue[] = [];
  const nodes: TracedNode[] = [];
  const byHandle = new Map<number, number>();
  const schemas = new Map<number, OpSchema>();

  const addValue = (handle: number, source: ValueSource): number => {
    const id = values.length;
    values.push({ id, source, shape: [...native.shape(handle)], dtype: dtypeFromCode(native.dtype(handle)) });
    byHandle.set(handle, id);
    return id;
  };
  const paramOf = new Map<number, string>();
  const paramTensor = new Map<number, Tensor>();
  for (const [tensor, name] of params) {
    paramOf.set(tensor.h, name);
    paramTensor.set(tensor.h, tensor);
  }
  const valueFor = (handle: number): number => {
    const known = byHandle.get(handle);
    if (known !== undefined) return known;
    const name = paramOf.get(handle);
    if (name !== undefined)
      return addValue(handle, { kind: 'param', name, tensor: paramTensor.get(handle) as Tensor });
    // A tensor made outside the ops (from JS data): its bytes now, while the handle is alive.
    return addValue(handle, { kind: 'const', bytes: new Uint8Array(native.toBytes(handle, true)[0]) });
  };
  for (const [index, x] of inputs.entries()) addValue(x.h, { kind: 'input', index });

  const call = native.call;
  const dispose = native.dispose;
  const recorder = (id: number, ...args: unknown[]): unknown => {
    let schema = schemas.get(id);
    if (schema === undefined) {
      schema = native.opSchema(id);
      schemas.set(id, schema);
    }
    const traced: TracedArg[] = args.map((a, i) => {
      const type = schema.args[i]?.type ?? '';
      if (type.startsWith('Tensor[]') || type.startsWith('Tensor?[]'))
        return { values: (a as (number | null)[]).map((h) => (h === null ? null : valueFor(h))) };
      if (type.startsWith('Tensor') && typeof a === 'number') return { value: valueFor(a) };
      return { literal: a };
    });
    const result = call(id, ...args);
    const node = nodes.length;
    const outputs: number[] = [];
    const handles = Array.isArray(result) ? result : [result];
    handles.forEach((h, output) => {
      if (typeof h === 'number') outputs.push(addValue(h, { kind: 'node', node, output }));
    });
    // An in-place op (relu_, add_) returns nothing: the tensor it wrote is its result.
    if (outputs.length === 0 && schema.returns.length === 1) {
      const written = schema.args.findIndex((a) => a.writes);
      if (written >= 0) outputs.push(addValue(args[written] as number, { kind: 'node', node, output: 0 }));
    }
    nodes.push({ op: qualified(schema), schema, args: traced, outputs });
    return result;
  };
  const forget = (handle: number, ...rest: unknown[]): unknown => {
    byHandle.delete(handle);
    return (dispose as (...a: unknown[]) => unknown)(handle, ...rest);
  };
  const n = native as { call: typeof native.call; dispose: typeof native.dispose };
  n.call = recorder as typeof native.call;
  n.dispose = forget as typeof native.dispose;
  let outs: Tensor[];
  try {
    outs = forward();
  } finally {
    n.call = call;
    n.dispose = dispose;
  }
  return {
    values,
    nodes,
    inputs: inputs.map((x) => byHandle.get(x.h) as number),
    outputs: outs.map((o) => valueFor(o.h)),
  };
}
