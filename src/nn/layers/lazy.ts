// torch.nn.modules.lazy: LazyModuleMixin, what every lazy module (LazyLinear, LazyConv*,
// LazyBatchNorm*, LazyInstanceNorm*, each beside its eager class) adds to that class. The
// input size (in_features, in_channels, num_features) is read from the first input. Until
// then the size-dependent parameters and buffers are placeholders marked uninitialized
// (PyTorch's UninitializedParameter); the first forward materializes them in place
// (aten::set_data, so an optimizer built earlier keeps the same tensors), runs
// resetParameters() and turns the module into its eager class (PyTorch's cls_to_become),
// as does nothing else. Loading a state dict into an uninitialized module materializes
// the placeholders to the checkpoint's shapes first.
import { noGrad } from '../../autograd/index.ts';
import * as t from '../../core/index.ts';
import type { Module } from '../module.ts';

const UNINITIALIZED = new WeakSet<t.Tensor>();

/** Whether `x` is a lazy module's placeholder not materialized yet. */
export function isUninitialized(x: t.Tensor): boolean {
  return UNINITIALIZED.has(x);
}

/** The module's own parameters and buffers, by name (null entries left out). */
export function ownTensors(m: Module): [string, t.Tensor][] {
  const out: [string, t.Tensor][] = [];
  for (const map of [m._parameters, m._buffers]) for (const [k, v] of map) if (v !== null) out.push([k, v]);
  return out;
}

function hasUninitialized(m: Module): boolean {
  return ownTensors(m).some(([, v]) => UNINITIALIZED.has(v));
}

/** Gives the placeholder `x` its real shape, in place. */
export function materialize(x: t.Tensor, shape: number[]): void {
  noGrad(() =>
    t.tidy(() => {
      t.ops.call('aten::set_data', x, t.empty(shape, { dtype: x.dtype, device: x.device }));
    }),
  );
  UNINITIALIZED.delete(x);
}

/** Sets a property declared readonly: the size a lazy module learns from its first input. */
export function setInferredSize(m: Module, key: string, value: number): void {
  (m as unknown as Record<string, unknown>)[key] = value;
}

/** What a lazy class infers from its first input, and which of its state waits for it. */
export interface LazySpec<M extends Module> {
  /** The inferred size (in_features, in_channels, num_features): 0 until the first input. */
  size(m: M): number;
  /** The names of the size-dependent parameters and buffers: placeholders until then. */
  placeholders: readonly string[];
  /** Reads the size from the first input and materializes the placeholders (PyTorch's initialize_parameters). */
  initialize(m: M, input: t.Tensor): void;
  /** The first forward after loadStateDict materialized the placeholders (LazyLinear reads its size then). */
  initializeLoaded?(m: M, input: t.Tensor): void;
}

/** What a lazy class extends: an eager module class with PyTorch's resetParameters. */
interface ResettableModule extends Module {
  resetParameters(): void;
}

// biome-ignore lint/suspicious/noExplicitAny: a mixin's base takes its own constructor arguments
type EagerClass = new (...args: any[]) => ResettableModule;

/**
 * PyTorch's LazyModuleMixin, for `class LazyConv2d extends LazyModuleMixin(Conv2d, spec)`:
 * a subclass of the eager class whose placeholders wait for the first forward. TypeScript
 * has no multiple inheritance, and a lazy module must be an instance of its eager class
 * (as in PyTorch), so the shared behaviour is this one mixin; the class it returns is
 * typed as its eager base, so the lazy classes' declarations stay plain classes.
 */
export function LazyModuleMixin<B extends EagerClass>(Base: B, spec: LazySpec<InstanceType<B>>): B {
  // The module as the instance of the eager class it is (TypeScript cannot see through a mixin).
  const eager = (m: ResettableModule) => m as InstanceType<B>;
  return class LazyModule extends Base {
    // biome-ignore lint/suspicious/noExplicitAny: a mixin's constructor passes its base's arguments on
    constructor(...args: any[]) {
      super(...args);
      for (const [k, v] of ownTensors(this)) if (spec.placeholders.includes(k)) UNINITIALIZED.add(v);
    }

    /** The eager init, once the placeholders have their shapes and the size is known. */
    override resetParameters(): void {
      if (!hasUninitialized(this) && spec.size(eager(this)) !== 0) super.resetParameters();
    }

    /** PyTorch's _lazy_load_hook: placeholders take the checkpoint's shapes. */
    protected override upgradeStateDict(stateDict: Map<string, t.Tensor>, prefix: string): void {
      for (const [k, v] of ownTensors(this)) {
        const input = stateDict.get(prefix + k);
        if (UNINITIALIZED.has(v) && input instanceof t.Tensor) materialize(v, input.shape);
      }
      super.upgradeStateDict(stateDict, prefix);
    }

    // The first forward (PyTorch's _infer_parameters): infer, materialize, reset, become
    // the eager class; then the eager forward.
    // biome-ignore lint/suspicious/noExplicitAny: each lazy class keeps its eager forward's signature
    override forward(...args: any[]): any {
      const input = args[0] as t.Tensor;
      if (hasUninitialized(this)) {
        spec.initialize(eager(this), input);
        this.resetParameters();
        if (hasUninitialized(this)) {
          throw new Error(`module ${this.constructor.name} has not been fully initialized`);
        }
      } else {
        spec.initializeLoaded?.(eager(this), input);
      }
      Object.setPrototypeOf(this, Base.prototype);
      return super.forward(...args);
    }
  };
}
