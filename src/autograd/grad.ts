// autograd.grad and autograd.backward, like torch.autograd.
import { native } from '../core/native.ts';
import { checkOptions, optionNames } from '../core/options.ts';
import { type Tensor, wrap } from '../core/tensor.ts';

export interface GradOptions {
  gradOutputs?: (Tensor | null)[];
  retainGraph?: boolean;
  createGraph?: boolean;
  allowUnused?: boolean;
}

const OPTIONS = optionNames<GradOptions>({
  gradOutputs: true,
  retainGraph: true,
  createGraph: true,
  allowUnused: true,
});

/** Gradients of `outputs` with respect to `inputs` (null for unused inputs when allowed). */
export function grad(
  outputs: Tensor | Tensor[],
  inputs: Tensor | Tensor[],
  options?: GradOptions,
): (Tensor | null)[] {
  const opts = checkOptions('grad', options, OPTIONS);
  const outs = Array.isArray(outputs) ? outputs : [outputs];
  const ins = Array.isArray(inputs) ? inputs : [inputs];
  const gradOutputs = (opts.gradOutputs ?? outs.map(() => null)).map((g) => (g === null ? null : g.h));
  const hs = native.grad(
    outs.map((t) => t.h),
    ins.map((t) => t.h),
    gradOutputs,
    opts.retainGraph,
    opts.createGraph,
    opts.allowUnused,
  );
  return hs.map((h) => (h === null ? null : wrap(h)));
}

/** Accumulates gradients of `tensors` into the leaves' `.grad`. */
export function backward(
  tensors: Tensor | Tensor[],
  gradTensors?: (Tensor | null)[],
  opts: { retainGraph?: boolean; createGraph?: boolean; inputs?: Tensor[] } = {},
): void {
  const ts = Array.isArray(tensors) ? tensors : [tensors];
  native.backward(
    ts.map((t) => t.h),
    (gradTensors ?? ts.map(() => null)).map((g) => (g === null ? null : g.h)),
    opts.retainGraph,
    opts.createGraph,
    opts.inputs?.map((t) => t.h),
  );
}
