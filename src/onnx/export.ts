// t.onnx.export: PyTorch's torch.onnx.export for tsddp's modules. The forward runs in eval
// mode with its aten ops recorded (trace.ts), each op becomes ONNX nodes (ops.ts), and the
// parameters become initializers. Dynamic axes: the forward is traced again with each
// dynamic axis one larger (or smaller), and once with all of them changed; an integer
// argument that changes with an axis (a view's batch dimension, a slice's end at the
// sequence length) becomes an expression of that axis's size at run time, and the
// all-changed trace checks that each is linear in the sizes. Structure that changes with
// the size (other ops) is refused.
import { noGrad } from '../autograd/grad-mode.ts';
import { zeros } from '../core/ops.generated.ts';
import { tidy } from '../core/scope.ts';
import { Tensor } from '../core/tensor.ts';
import { writeFileAtomicSync } from '../files/index.ts';
import type { Module } from '../nn/module.ts';
import { type Axis, GraphBuilder, OnnxExportError, onnxDtype, type Sym } from './graph.ts';
import { CONVERTERS, type OpContext } from './ops.ts';
import { onnxType } from './schema.ts';
import { type Trace, type TracedArg, type TracedNode, traceOps } from './trace.ts';

export interface ExportOptions {
  /** The ONNX opset, 17 (the default: LayerNormalization's first) to 21. */
  opsetVersion?: number;
  /** Names of the graph inputs (default `input`, or `input_0`, `input_1`, ...). */
  inputNames?: string[];
  /** Names of the graph outputs (default `output`, or `output_0`, ...). */
  outputNames?: string[];
  /** Axes whose size may change at run time, per input or output name: {axis: name} or [axis, ...]. */
  dynamicAxes?: Record<string, Record<number, string> | number[]>;
}

const OPTIONS = ['opsetVersion', 'inputNames', 'outputNames', 'dynamicAxes'];
/** The IR version each opset came with (ONNX's versioning table). */
const IR_VERSION: Record<number, number> = { 17: 8, 18: 8, 19: 9, 20: 9, 21: 10 };

/** What the forward returned, as its output tensors: a tensor, an array, or an object's tensor fields. */
function outputTensors(out: unknown): Tensor[] {
  if (out instanceof Tensor) return [out];
  if (Array.isArray(out)) return out.filter((x) => x instanceof Tensor);
  if (typeof out === 'object' && out !== null) return Object.values(out).filter((x) => x instanceof Tensor);
  throw new OnnxExportError(`the forward returned ${typeof out}, not tensors`);
}

function trace(model: Module, inputs: Tensor[], params: Map<Tensor, string>): Trace {
  return traceOps(inputs, params, () => outputTensors(model.forward(...inputs)));
}

/** Each dynamic input axis's names: the axes and the names of their sizes. */
function dynamicInputAxes(
  opts: ExportOptions,
  inputNames: string[],
  inputs: Tensor[],
): { axis: Axis; name: string }[] {
  const out: { axis: Axis; name: string }[] = [];
  for (const [key, spec] of Object.entries(opts.dynamicAxes ?? {})) {
    const input = inputNames.indexOf(key);
    if (input < 0) continue;
    const entries: [number, string][] = Array.isArray(spec)
      ? spec.map((a) => [a, `${key}_dynamic_axes_${a + 1}`])
      : Object.entries(spec).map(([a, n]) => [Number(a), n]);
    for (const [axis, name] of entries) {
      if (!Number.isInteger(axis) || axis < 0 || axis >= inputs[input].ndim)
        throw new OnnxExportError(`dynamicAxes['${key}']: axis ${axis} of a ${inputs[input].ndim}-D input`);
      out.push({ axis: { input, axis }, name });
    }
  }
  return out;
}

/** `x` with dimension `axis` changed by `delta` (zeros: only the structure of the forward matters). */
function resized(x: Tensor, axis: number, delta: number): Tensor {
  const shape = [...x.shape];
  shape[axis] += delta;
  return zeros(shape, { dtype: x.dtype });
}

/** Traces the forward with the axis changed by +1, else (it failed) by -1. */
function variant(
  model: Module,
  inputs: Tensor[],
  params: Map<Tensor, string>,
  axis: Axis,
): { trace: Trace; delta: number } {
  let first: unknown;
  for (const delta of [1, -1]) {
    if (inputs[axis.input].shape[axis.axis] + delta < 1) continue;
    const changed = inputs.map((x, i) => (i === axis.input ? resized(x, axis.axis, delta) : x));
    try {
      return { trace: trace(model, changed, params), delta };
    } catch (e) {
      first ??= e;
    }
  }
  throw new OnnxExportError(
    `the forward fails when dimension ${axis.axis} of input ${axis.input} changes: ${first}`,
  );
}

/** One node's arguments across the traces: literals become Syms, values must agree. */
function alignArg(
  node: TracedNode,
  i: number,
  base: TracedArg,
  others: TracedArg[],
  deltas: number[],
  all: TracedArg,
  axes: Axis[],
  sizes: number[],
): unknown {
  const where = `${node.op} argument ${node.schema.args[i]?.name ?? i}`;
  const lit = (a: TracedArg): unknown => ('literal' in a ? a.literal : undefined);
  if (!('literal' in base)) {
    for (const o of [...others, all])
      if (JSON.stringify(o) !== JSON.stringify(base))
        throw new OnnxExportError(`${where} changes with a dynamic axis`);
    return base;
  }
  const fit = (b: unknown, vs: unknown[], a: unknown): unknown => {
    if (typeof b === 'number' && vs.every((v) => typeof v === 'number') && typeof a === 'number') {
      const coefs = vs.map((v, k) => ((v as number) - b) / deltas[k]);
      if (coefs.every((c) => c === 0)) return b;
      const predicted = b + coefs.reduce((s, c, k) => s + c * deltas[k], 0);
      if (!coefs.every(Number.isInteger) || predicted !== a)
        throw new OnnxExportError(`${where} is not a linear function of the dynamic axes' sizes`);
      const terms = coefs.flatMap((coef, k) => (coef === 0 ? [] : [{ axis: axes[k], coef }]));
      return { constant: b - coefs.reduce((s, c, k) => s + c * sizes[k], 0), terms } satisfies Sym;
    }
    if (Array.isArray(b)) {
      if (
        !vs.every((v) => Array.isArray(v) && v.length === b.length) ||
        !Array.isArray(a) ||
        a.length !== b.length
      )
        throw new OnnxExportError(`${where}'s length changes with a dynamic axis`);
      return b.map((x, j) =>
        fit(
          x,
          vs.map((v) => (v as unknown[])[j]),
          a[j],
        ),
      );
    }
    if ([...vs, a].some((v) => JSON.stringify(v) !== JSON.stringify(b)))
      throw new OnnxExportError(`${where} changes with a dynamic axis`);
    return b;
  };
  return { literal: fit(lit(base), others.map(lit), lit(all)) };
}

/**
 * Exports `model` to the ONNX file `f`, tracing its forward on `args` (PyTorch's
 * torch.onnx.export with the TorchScript-era arguments). The model is traced in eval mode
 * and left in the mode it was in. Throws OnnxExportError naming an op with no ONNX mapping.
 */
export function exportModel(
  model: Module,
  args: Tensor | Tensor[],
  f: string,
  opts: ExportOptions = {},
): void {
  for (const k of Object.keys(opts))
    if (!OPTIONS.includes(k))
      throw new TypeError(`onnx.export(): unknown option '${k}' (it takes ${OPTIONS.join(', ')})`);
  const opset = opts.opsetVersion ?? 17;
  if (IR_VERSION[opset] === undefined)
    throw new OnnxExportError(`opsetVersion ${opset}: tsddp writes opsets 17 to 21`);
  const inputs = args instanceof Tensor ? [args] : args;
  const inputNames =
    opts.inputNames ?? (inputs.length === 1 ? ['input'] : inputs.map((_, i) => `input_${i}`));
  if (inputNames.length !== inputs.length)
    throw new OnnxExportError(`${inputNames.length} inputNames for ${inputs.length} inputs`);
  const params = new Map<Tensor, string>();
  for (const [name, p] of [...model.namedParameters(), ...model.namedBuffers()])
    if (!params.has(p)) params.set(p, name);

  const wasTraining = model.training;
  model.eval();
  try {
    const bytes = noGrad(() =>
      tidy(() => {
        const dynamic = dynamicInputAxes(opts, inputNames, inputs);
        const base = trace(model, inputs, params);
        const variants = dynamic.map((d) => variant(model, inputs, params, d.axis));
        const all =
          dynamic.length === 0
            ? base
            : trace(
                model,
                inputs.map((x, i) =>
                  dynamic.reduce(
                    (y, d, k) => (d.axis.input === i ? resized(y, d.axis.axis, variants[k].delta) : y),
                    x,
                  ),
                ),
                params,
              );
        return build(base, variants, all, dynamic, inputs, inputNames, opts, opset);
      }),
    );
    writeFileAtomicSync(f, bytes);
  } finally {
    model.train(wasTraining);
  }
}

/** The traces of one export: the base, one per dynamic axis (with its change), all axes changed. */
interface Traces {
  base: Trace;
  variants: { trace: Trace; delta: number }[];
  all: Trace;
  axes: Axis[];
  /** Each dynamic axis's size in the base trace. */
  sizes: number[];
}

/** Whether an aligned literal (a Sym, or a list of them) follows a dynamic axis. */
const followsAxis = (v: unknown): boolean =>
  Array.isArray(v) ? v.some(followsAxis) : typeof v === 'object' && v !== null && 'terms' in v;

/** What converter `node` (the n-th) sees: its arguments aligned across the traces, by ONNX name. */
function opContext(
  b: GraphBuilder,
  node: TracedNode,
  n: number,
  traces: Traces,
  nameOf: (id: number) => string,
): OpContext {
  const { base, variants, all, axes, sizes } = traces;
  const deltas = variants.map((v) => v.delta);
  const aligned = node.args.map((a, i) =>
    alignArg(
      node,
      i,
      a,
      variants.map((v) => v.trace.nodes[n].args[i]),
      deltas,
      all.nodes[n].args[i],
      axes,
      sizes,
    ),
  ) as TracedArg[];
  const argValue = (i: number): number | null => {
    const a = aligned[i];
    return a !== undefined && 'value' in a ? a.value : null;
  };
  const literal = (i: number): unknown => {
    const a = aligned[i];
    return a !== undefined && 'literal' in a ? a.literal : undefined;
  };
  return {
    b,
    op: node.op,
    input: (i) => {
      const id = argValue(i);
      if (id === null) throw new OnnxExportError(`${node.op}: argument ${i} is not a tensor`);
      return nameOf(id);
    },
    optInput: (i) => {
      const id = argValue(i);
      return id === null ? null : nameOf(id);
    },
    inputs: (i) => {
      const a = aligned[i];
      if (a === undefined || !('values' in a))
        throw new OnnxExportError(`${node.op}: argument ${i} is not a tensor list`);
      return a.values.map((id) => nameOf(id as number));
    },
    shape: (i) => base.values[argValue(i) as number].shape,
    dtype: (i) => base.values[argValue(i) as number].dtype,
    lit: <T>(i: number, fallback?: T): T => {
      const v = literal(i);
      if (v === undefined || v === null) return fallback as T;
      if (followsAxis(v))
        throw new OnnxExportError(
          `${node.op} argument ${node.schema.args[i]?.name}: follows a dynamic axis, which tsddp cannot export there`,
        );
      return v as T;
    },
    sym: (i, fallback) => {
      const v = literal(i);
      if ((v === undefined || v === null) && fallback !== undefined) return fallback;
      return v as Sym;
    },
    syms: (i) => literal(i) as Sym[],
    outputs: node.outputs.map((id) => nameOf(id)),
    outShape: (k) => base.values[node.outputs[k]].shape,
    outDtype: (k) => base.values[node.outputs[k]].dtype,
  };
}

/** A graph input's or output's ValueInfoProto: `dimName(axis)` names a symbolic dimension. */
function valueInfo(
  name: string,
  shape: number[],
  dtype: string,
  dimName: (axis: number) => string | undefined,
) {
  const dim = shape.map((s, a) => {
    const param = dimName(a);
    return param !== undefined ? { dim_param: param } : { dim_value: s };
  });
  return { name, type: { tensor_type: { elem_type: onnxDtype(dtype), shape: { dim } } } };
}

/** The graph outputs: an axis named in dynamicAxes, or one whose size changed in any trace, is symbolic. */
function outputInfos(traces: Traces, outputNames: string[], opts: ExportOptions) {
  const { base, variants, all } = traces;
  return base.outputs.map((id, i) => {
    const declared = opts.dynamicAxes?.[outputNames[i]];
    const named = (a: number): string | undefined => {
      if (Array.isArray(declared))
        return declared.includes(a) ? `${outputNames[i]}_dynamic_axes_${a + 1}` : undefined;
      if (declared?.[a] !== undefined) return declared[a];
      const changes = [...variants.map((v) => v.trace), all].some(
        (t) => t.values[t.outputs[i]].shape[a] !== base.values[id].shape[a],
      );
      return changes ? `${outputNames[i]}_dim_${a}` : undefined;
    };
    return valueInfo(outputNames[i], base.values[id].shape, base.values[id].dtype, named);
  });
}

function build(
  base: Trace,
  variants: { trace: Trace; delta: number }[],
  all: Trace,
  dynamic: { axis: Axis; name: string }[],
  inputs: Tensor[],
  inputNames: string[],
  opts: ExportOptions,
  opset: number,
): Uint8Array {
  const axes = dynamic.map((d) => d.axis);
  const traces: Traces = { base, variants, all, axes, sizes: axes.map((a) => inputs[a.input].shape[a.axis]) };
  for (const t of [...variants.map((v) => v.trace), all])
    if (t.nodes.length !== base.nodes.length || t.nodes.some((n, i) => n.op !== base.nodes[i].op))
      throw new OnnxExportError('the ops the forward calls change with a dynamic axis (a branch on a size?)');

  // Values are named on first use: a parameter or constant becomes an initializer then.
  const b = new GraphBuilder(inputNames);
  const names = new Map<number, string>();
  for (const [i, id] of base.inputs.entries()) names.set(id, inputNames[i]);
  const nameOf = (id: number): string => {
    let name = names.get(id);
    if (name !== undefined) return name;
    const v = base.values[id];
    if (v.source.kind === 'param') {
      name = v.source.name;
      b.raw(name, v.source.tensor.toBytes(), v.dtype, v.shape);
    } else if (v.source.kind === 'const') {
      name = `const_${id}`;
      b.raw(name, v.source.bytes, v.dtype, v.shape);
    } else name = `v${id}`;
    names.set(id, name);
    return name;
  };
  for (const [n, node] of base.nodes.entries()) {
    const convert = CONVERTERS[node.op];
    if (convert === undefined) throw new OnnxExportError(`${node.op} has no ONNX mapping in tsddp (ops.ts)`);
    convert(opContext(b, node, n, traces, nameOf));
  }

  const outputNames =
    opts.outputNames ?? (base.outputs.length === 1 ? ['output'] : base.outputs.map((_, i) => `output_${i}`));
  if (outputNames.length !== base.outputs.length)
    throw new OnnxExportError(
      `${outputNames.length} outputNames for the forward's ${base.outputs.length} outputs`,
    );
  for (const [i, id] of base.outputs.entries()) b.node('Identity', [nameOf(id)], {}, [outputNames[i]]);

  const dimNames = new Map(dynamic.map((d) => [`${d.axis.input}:${d.axis.axis}`, d.name]));
  const model = {
    ir_version: IR_VERSION[opset],
    opset_import: [{ domain: '', version: opset }],
    producer_name: 'tsddp',
    graph: {
      name: 'main_graph',
      node: b.nodes,
      initializer: b.initializers,
      input: inputs.map((x, i) =>
        valueInfo(inputNames[i], x.shape, x.dtype, (a) => dimNames.get(`${i}:${a}`)),
      ),
      output: outputInfos(traces, outputNames, opts),
    },
  };
  const type = onnxType('onnx.ModelProto');
  return type.encode(type.fromObject(model)).finish();
}
