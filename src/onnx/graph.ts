// Builds an ONNX graph: nodes, initializers, and the integer expressions that make sizes
// follow the dynamic axes (a view's shape that is the batch size, a slice that ends at the
// sequence length). Names: `v<id>` for traced values, `c<n>` for constants, `t<n>` for
// the intermediate results of one op's nodes.
import { TsddpError } from '../errors/index.ts';
import { ONNX_DTYPES } from './schema.ts';

/** A dynamic axis: dimension `axis` of graph input `input`. */
export interface Axis {
  input: number;
  axis: number;
}

/** An integer that follows the dynamic axes: constant + sum of coef x size(axis). */
export type Sym = number | { constant: number; terms: { axis: Axis; coef: number }[] };

export const isConstant = (s: Sym): s is number => typeof s === 'number';

type AttrValue =
  | number
  | number[]
  | string
  | { float: number }
  | { floats: number[] }
  | { tensor: Record<string, unknown> };

/** What t.onnx.export cannot write: an op with no ONNX mapping (named), a size it cannot follow. */
export class OnnxExportError extends TsddpError {
  override name = 'OnnxExportError';
  readonly code = 'ONNX_EXPORT';
}

export class GraphBuilder {
  readonly nodes: Record<string, unknown>[] = [];
  readonly initializers: Record<string, unknown>[] = [];
  private counter = 0;
  private dims = new Map<string, string>();

  /** `inputNames[i]`: the graph input names, for Shape nodes of dynamic axes. */
  constructor(private readonly inputNames: string[]) {}

  temp(): string {
    return `t${this.counter++}`;
  }

  /** Adds a node; returns its output names (`outputs`, or new temps). */
  node(
    opType: string,
    inputs: (string | null)[],
    attrs: Record<string, AttrValue> = {},
    outputs?: string[],
  ): string[] {
    const outs = outputs ?? [this.temp()];
    const attribute = Object.entries(attrs).map(([name, v]) => attr(name, v));
    // ONNX marks an omitted optional input with the empty name.
    this.nodes.push({
      op_type: opType,
      input: inputs.map((i) => i ?? ''),
      output: outs,
      attribute,
      name: `${opType}_${this.nodes.length}`,
    });
    return outs;
  }

  /** A constant tensor of `dtype` ('float32', 'int64', ...), as an initializer. */
  constant(values: number[] | bigint[], dtype: string, dims: number[] = [values.length]): string {
    const name = `c${this.initializers.length}`;
    this.initializers.push(tensorProto(name, values, dtype, dims));
    return name;
  }

  /** An initializer from raw little-endian bytes (parameters). */
  raw(name: string, bytes: Uint8Array, dtype: string, dims: number[]): string {
    this.initializers.push({ name, data_type: onnxDtype(dtype), dims, raw_data: bytes });
    return name;
  }

  /** Size of a dynamic axis as an int64 tensor of shape [1]. */
  private dim(a: Axis): string {
    const key = `${a.input}:${a.axis}`;
    let name = this.dims.get(key);
    if (name === undefined) {
      [name] = this.node('Shape', [this.inputNames[a.input]], { start: a.axis, end: a.axis + 1 });
      this.dims.set(key, name);
    }
    return name;
  }

  /** An integer as an int64 tensor of shape [1]. */
  private int1(s: Sym): string {
    if (isConstant(s)) return this.constant([s], 'int64');
    let acc: string | null = null;
    for (const { axis, coef } of s.terms) {
      let term = this.dim(axis);
      if (coef !== 1) [term] = this.node('Mul', [term, this.constant([coef], 'int64')]);
      acc = acc === null ? term : this.node('Add', [acc, term])[0];
    }
    if (acc === null) return this.constant([s.constant], 'int64');
    return s.constant === 0 ? acc : this.node('Add', [acc, this.constant([s.constant], 'int64')])[0];
  }

  /** A list of integers as a 1-D int64 tensor (a constant when none follows an axis). */
  ints(list: Sym[]): string {
    if (list.every(isConstant)) return this.constant(list as number[], 'int64');
    return this.node(
      'Concat',
      list.map((s) => this.int1(s)),
      { axis: 0 },
    )[0];
  }

  /** An integer as a 0-D int64 tensor (Range's bounds). */
  scalar(s: Sym): string {
    if (isConstant(s)) return this.constant([s], 'int64', []);
    return this.node('Squeeze', [this.int1(s), this.constant([0], 'int64')])[0];
  }
}

export function onnxDtype(dtype: string): number {
  const code = ONNX_DTYPES[dtype];
  if (code === undefined) throw new OnnxExportError(`a ${dtype} tensor has no ONNX type tsddp writes`);
  return code;
}

function tensorProto(
  name: string,
  values: number[] | bigint[],
  dtype: string,
  dims: number[],
): Record<string, unknown> {
  const n = values.length;
  let bytes: Uint8Array;
  // Past 2^63 - 1 (PyTorch's "to the end", 9223372036854775807, arrives as 2^63): int64's largest.
  const int64 = (v: number | bigint): bigint => (BigInt(v) >= 2n ** 63n ? 2n ** 63n - 1n : BigInt(v));
  if (dtype === 'int64') bytes = new Uint8Array(BigInt64Array.from(values as number[], int64).buffer);
  else if (dtype === 'float32') bytes = new Uint8Array(Float32Array.from(values as number[]).buffer);
  else if (dtype === 'float64') bytes = new Uint8Array(Float64Array.from(values as number[]).buffer);
  else if (dtype === 'bool' || dtype === 'uint8') bytes = Uint8Array.from(values as number[]);
  else if (dtype === 'int32') bytes = new Uint8Array(Int32Array.from(values as number[]).buffer);
  else throw new OnnxExportError(`a ${dtype} constant of ${n} values cannot be written`);
  return { name, data_type: onnxDtype(dtype), dims, raw_data: bytes };
}

function attr(name: string, v: AttrValue): Record<string, unknown> {
  if (typeof v === 'number') return { name, type: 'INT', i: v };
  if (typeof v === 'string') return { name, type: 'STRING', s: Buffer.from(v) };
  if (Array.isArray(v)) return { name, type: 'INTS', ints: v };
  if ('float' in v) return { name, type: 'FLOAT', f: v.float };
  if ('floats' in v) return { name, type: 'FLOATS', floats: v.floats };
  return { name, type: 'TENSOR', t: v.tensor };
}
