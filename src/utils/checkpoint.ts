// torch.utils.checkpoint: activation checkpointing. A checkpointed region runs its forward
// without grad, keeping only its inputs; in backward it is run again with grad (with the
// RNG and autocast state of the first run, so dropout draws the same masks) and a backward
// through it gives its inputs' gradients and accumulates its parameters'. The autograd node
// that does this is native/src/checkpoint.cc; the recomputation is here. Memory falls from
// every activation of the region to its inputs and outputs, for one more forward.
import { backward } from '../autograd/grad.ts';
import { enableGrad, isGradEnabled, noGrad } from '../autograd/grad-mode.ts';
import { isFloatingPoint } from '../core/dtype.ts';
import { getRngState, setRngState } from '../core/introspection.ts';
import { native } from '../core/native.ts';
import { releaseHandle, tidy } from '../core/scope.ts';
import { Tensor, wrap } from '../core/tensor.ts';
import type { Module } from '../nn/module.ts';

export interface CheckpointOptions {
  /**
   * PyTorch's use_reentrant. Both recompute the region in a backward of its own (PyTorch's
   * reentrant variant, here for both); true keeps PyTorch's reentrant rules (no gradient
   * when no input requires one), false attaches the region whenever grad is enabled, as
   * PyTorch's default variant does. Neither supports autograd.grad() or backward's
   * `inputs` through a region (refused). Not passing it warns, as PyTorch does, and means true.
   */
  useReentrant?: boolean;
  /** Replay the region's forward with the RNG state it started with (dropout masks). Default true. */
  preserveRngState?: boolean;
  /**
   * 'default' (with useReentrant false): the recomputed outputs must have the forward's
   * shapes and dtypes, or the backward fails naming them; 'none' skips the check.
   */
  determinismCheck?: 'default' | 'none';
}

const OPTION_KEYS = new Set(['useReentrant', 'preserveRngState', 'determinismCheck']);

/** A region waiting for its backward: what is needed to run it again. */
interface Region {
  fn: (...args: unknown[]) => unknown;
  args: unknown[];
  /** The tensor arguments (the node's inputs), in order. */
  inputs: Tensor[];
  rngState: Tensor | null;
  autocast: [boolean, number];
  /** Shape and dtype of each differentiable output of the forward, for the determinism check. */
  outputs: { shape: number[]; dtype: string }[] | null;
}

const regions = new Map<number, Region>();
let nextId = 0;
let phase: CheckpointPhase = null;

/**
 * Where the code running now stands in a checkpointed region: 'forward' (its first run,
 * without grad, so autograd keeps nothing), 'recompute' (its run again inside backward, whose
 * own backward follows at once) or null (outside any region). Fully sharded modules read it
 * (distributed/fsdp/fully-shard.ts): a region's forward is a training forward even though grad
 * is off, and its recomputation is where that module's backward begins.
 */
export type CheckpointPhase = 'forward' | 'recompute' | null;

export function checkpointPhase(): CheckpointPhase {
  return phase;
}

/** Runs `fn` in `p` (checkpointPhase), restoring the phase it was called in. */
function inPhase<T>(p: CheckpointPhase, fn: () => T): T {
  const before = phase;
  phase = p;
  try {
    return fn();
  } finally {
    phase = before;
  }
}
let installed = false;
let warnedReentrant = false;

function forgetDeadRegions(): void {
  for (const id of native.drainDeadCheckpoints()) regions.delete(id);
}

/** Regions kept (for tests: it must not grow with regions whose graphs are gone). */
export function keptRegions(): number {
  forgetDeadRegions();
  return regions.size;
}

/** The tensors of a region's output (a tensor, or an array of values), in order. */
function outputTensors(out: unknown): Tensor[] {
  if (out instanceof Tensor) return [out];
  if (Array.isArray(out)) return out.filter((x): x is Tensor => x instanceof Tensor);
  throw new TypeError('checkpoint(): the function must return a Tensor or an array of values');
}

const differentiable = (x: Tensor) => isFloatingPoint(x.dtype) || x.dtype.startsWith('complex');

/** The recomputation: called by the node's backward with the outputs' gradients. */
function recompute(id: number, gradHandles: (number | null)[]): (number | null)[] {
  const region = regions.get(id);
  if (region === undefined) throw new Error('checkpoint: the region was already freed');
  return tidy(() => {
    const grads = gradHandles.map((h) => (h === null ? null : wrap(h)));
    const detached = region.inputs.map((x) => x.detach().requiresGrad_(x.requiresGrad));
    let k = 0;
    const args = region.args.map((a) => (a instanceof Tensor ? detached[k++] : a));
    const rngNow = region.rngState ? getRngState() : null;
    const autocastNow = native.getAutocast('cpu');
    let out: unknown;
    try {
      if (region.rngState) setRngState(region.rngState);
      native.setAutocast('cpu', region.autocast[0], region.autocast[1]);
      out = inPhase('recompute', () => enableGrad(() => region.fn(...args)));
    } finally {
      if (rngNow) setRngState(rngNow);
      native.setAutocast('cpu', autocastNow[0], autocastNow[1]);
    }
    const outs = outputTensors(out).filter(differentiable);
    if (region.outputs) checkDeterminism(region.outputs, outs);
    const withGrad: Tensor[] = [];
    const gradsWithGrad: Tensor[] = [];
    outs.forEach((o, i) => {
      const g = grads[i];
      if (o.requiresGrad && g !== null && g !== undefined) {
        withGrad.push(o);
        gradsWithGrad.push(g);
      }
    });
    if (withGrad.length === 0)
      throw new Error('none of output has requires_grad=True, this checkpoint() is not necessary');
    backward(withGrad, gradsWithGrad);
    // The input gradients' handles go to the node, which releases them once autograd holds
    // the tensors: kept here, each would live to the end of the caller's scope (a whole
    // logits-sized gradient through the rest of backward).
    const inputGrads = detached.map((d) => (d.requiresGrad ? d.grad : null));
    return inputGrads.map((g) => (g === null ? null : releaseHandle(g)));
  });
}

function checkDeterminism(want: { shape: number[]; dtype: string }[], got: Tensor[]): void {
  const bad = want
    .map((w, i) => ({ w, g: got[i] }))
    .filter(({ w, g }) => g === undefined || g.dtype !== w.dtype || g.shape.join() !== w.shape.join());
  if (bad.length === 0 && got.length === want.length) return;
  const say = (x?: { shape: number[]; dtype: string }) => (x ? `${x.dtype}[${x.shape.join(', ')}]` : 'none');
  throw new Error(
    'torch.utils.checkpoint: Recomputed values for the following tensors have different metadata than during the forward pass: ' +
      bad.map(({ w, g }, i) => `output ${i}: ${say(w)} in forward, ${say(g)} recomputed`).join('; '),
  );
}

/** Splits checkpoint's trailing options object from the function's arguments. */
function splitOptions(rest: unknown[]): { args: unknown[]; opts: CheckpointOptions } {
  const last = rest[rest.length - 1];
  if (
    last !== null &&
    typeof last === 'object' &&
    Object.getPrototypeOf(last) === Object.prototype &&
    Object.keys(last).length > 0 &&
    Object.keys(last).every((k) => OPTION_KEYS.has(k))
  )
    return { args: rest.slice(0, -1), opts: last as CheckpointOptions };
  return { args: rest, opts: {} };
}

function resolveReentrant(opts: CheckpointOptions, what: string): boolean {
  if (opts.useReentrant !== undefined) return opts.useReentrant;
  if (!warnedReentrant) {
    warnedReentrant = true;
    process.emitWarning(
      `${what}: pass useReentrant explicitly, as PyTorch asks; without it, it means true (useReentrant: false is recommended)`,
    );
  }
  return true;
}

/**
 * Runs `fn(...args)` as a checkpointed region (torch.utils.checkpoint.checkpoint): its
 * activations are not kept, and backward recomputes them. Options go last:
 * `checkpoint(block, x, { useReentrant: false })`. CPU tensors only (the recomputation
 * runs JavaScript inside backward, which only a CPU backward runs on the JS thread).
 */
export function checkpoint<R>(fn: (...args: never[]) => R, ...rest: unknown[]): R {
  if (typeof fn !== 'function') throw new TypeError('checkpoint(): the first argument must be a function');
  const { args, opts } = splitOptions(rest);
  const useReentrant = resolveReentrant(opts, 'checkpoint()');
  const preserve = opts.preserveRngState ?? true;
  const check = opts.determinismCheck ?? 'default';
  if (check !== 'default' && check !== 'none')
    throw new TypeError(`checkpoint(): determinismCheck must be 'default' or 'none', got '${check}'`);
  const call = fn as (...a: unknown[]) => R;
  const inputs = args.filter((a): a is Tensor => a instanceof Tensor);
  if (!isGradEnabled()) return call(...args);
  if (useReentrant && !inputs.some((x) => x.requiresGrad)) {
    process.emitWarning('checkpoint(): None of the inputs have requires_grad=True. Gradients will be None');
    return noGrad(() => call(...args));
  }
  if (!installed) {
    native.setCheckpointDispatcher(recompute);
    installed = true;
  }
  forgetDeadRegions();
  const rngState = preserve ? getRngState() : null;
  const autocast = native.getAutocast('cpu');
  // In a scope of its own: the region's intermediates go as soon as it returns (kept
  // until the caller's scope ends, they would cost what checkpointing saves).
  const out = tidy(() => inPhase('forward', () => noGrad(() => call(...args))));
  const outs = outputTensors(out).filter(differentiable);
  const id = nextId++;
  const attached = native.checkpointAttach(
    inputs.map((x) => x.h),
    outs.map((x) => x.h),
    id,
  );
  regions.set(id, {
    fn: call as (...a: unknown[]) => unknown,
    args,
    inputs,
    rngState,
    autocast,
    outputs:
      !useReentrant && check === 'default'
        ? outs.map((o) => ({ shape: [...o.shape], dtype: o.dtype }))
        : null,
  });
  const replaced = new Map(outs.map((o, i) => [o, wrap(attached[i])]));
  // The attached outputs share the storage; the no-grad ones go (never an argument).
  for (const o of new Set(outs)) if (!inputs.includes(o)) o.dispose();
  if (out instanceof Tensor) return replaced.get(out) as R;
  return (out as unknown[]).map((x) => (x instanceof Tensor ? (replaced.get(x) ?? x) : x)) as R;
}

/**
 * Runs `functions` (modules or functions, or a Sequential's children) one after the other
 * on `input`, checkpointing each of `segments` - 1 equal segments; the last runs plainly
 * (torch.utils.checkpoint.checkpoint_sequential).
 */
export function checkpointSequential(
  functions: Module | (Module | ((x: Tensor) => Tensor))[],
  segments: number,
  input: Tensor,
  opts: Pick<CheckpointOptions, 'useReentrant' | 'preserveRngState'> = {},
): Tensor {
  const list = Array.isArray(functions) ? functions : functions.children();
  if (!Number.isInteger(segments) || segments < 1)
    throw new RangeError(`checkpointSequential(): segments must be a positive integer, got ${segments}`);
  const useReentrant = resolveReentrant(opts, 'checkpointSequential()');
  const run = (f: Module | ((x: Tensor) => Tensor), x: Tensor): Tensor =>
    typeof f === 'function' ? f(x) : (f.forward(x) as Tensor);
  const runRange = (start: number, end: number) => (x: Tensor) => {
    let y = x;
    for (let j = start; j <= end; j++) y = run(list[j], y);
    return y;
  };
  const size = Math.floor(list.length / segments);
  let end = -1;
  let x = input;
  for (let start = 0; start < size * (segments - 1); start += size) {
    end = start + size - 1;
    x = checkpoint(runRange(start, end), x, {
      useReentrant,
      preserveRngState: opts.preserveRngState ?? true,
    });
  }
  return runRange(end + 1, list.length - 1)(x);
}

/**
 * Runs `blocks` one after the other on `x`, each as its own checkpointed region when
 * `enabled` and grad is on (useReentrant: false): the models' `activationCheckpointing`.
 * Either way each block runs in its own memory scope: the tensors it made that autograd did
 * not save (a projection's output before the residual add, ...) go when it returns, as
 * PyTorch frees them when their last reference drops, not at the end of the step.
 */
export function runBlocks(blocks: Iterable<Module>, x: Tensor, enabled: boolean): Tensor {
  let y = x;
  const checkpointing = enabled && isGradEnabled();
  for (const b of blocks) {
    const z = y;
    y = checkpointing
      ? checkpoint((input: Tensor) => b.forward(input) as Tensor, z, { useReentrant: false })
      : tidy(() => b.forward(z) as Tensor);
  }
  return y;
}
