// The Optimizer base class, mirroring torch/optim/optimizer.py: parameter groups with
// per-group hyperparameters, per-parameter state, zeroGrad, and a state dict laid out
// exactly like PyTorch's (parameters numbered across groups in order).
//
// Hyperparameter names are camelCase here; PyTorch's are snake_case (weightDecay ->
// weight_decay, initialLr -> initial_lr, ...). State keys are PyTorch's own
// (momentum_buffer, step, exp_avg, exp_avg_sq, max_exp_avg_sq). pytorch-names.ts
// converts whole state dicts both ways for checkpoints.

import { enableGrad, noGrad } from '../autograd/index.ts';
import { isFloatingPoint } from '../core/dtype.ts';
import type { Tensor } from '../core/index.ts';
import * as t from '../core/index.ts';
import { camelCase, checkOptions, setToNoneArg } from '../core/options.ts';

/**
 * An optimizer's options after checkOptions: PyTorch's `capturable` and `differentiable`
 * are taken only as false, their default (tsddp has neither CUDA-graph capture nor
 * differentiation through a step), so ported code that spells them out runs.
 */
export function optimizerOptions<O extends object>(
  fn: string,
  options: O | undefined,
  names: readonly string[],
): O {
  return checkOptions(fn, options, names, { only: { capturable: false, differentiable: false } });
}

/** One parameter group: its parameters and hyperparameters (lr, momentum, betas, ...). */
export type ParamGroup = { params: Tensor[]; lr: number; [hyper: string]: unknown };

/**
 * One entry of an optimizer's state: a tensor or a number, or (LBFGS's history) a list
 * of them, null for an empty slot.
 */
export type StateValue = Tensor | number | null | StateValue[];

/** Per-parameter optimizer state, keyed by PyTorch's names (momentum_buffer, step, exp_avg, ...). */
export type ParamState = Record<string, StateValue>;

/**
 * Optimizer state in PyTorch's layout: `state[i]` belongs to parameter i, counting the
 * parameters of all groups in order; each group lists the indices of its parameters.
 */
export interface OptimizerStateDict {
  state: Record<number, ParamState>;
  paramGroups: Array<{ params: number[]; [hyper: string]: unknown }>;
}

/** A parameter group as the constructor accepts it: parameters plus overrides of the defaults. */
export type ParamGroupInput<O> = { params: Tensor[] } & O;

/** What an optimizer constructor accepts: parameters, or groups of parameters with overrides. */
export type ParamsInput<O> = Tensor[] | ParamGroupInput<O>[];

export abstract class Optimizer {
  paramGroups: ParamGroup[] = [];
  state: Map<Tensor, ParamState> = new Map();
  /** The constructor's hyperparameters: what a group that does not override them gets. */
  readonly defaults: Record<string, unknown>;
  /**
   * Set by a gradient scaler (AMP) before step() when `stepSupportsAmpScaling`: the
   * fused kernels then unscale the gradients themselves and skip the update when
   * `foundInf` is nonzero, as PyTorch's GradScaler does with `optimizer.grad_scale`.
   */
  gradScale: Tensor | null = null;
  foundInf: Tensor | null = null;

  constructor(params: ParamsInput<object>, defaults: Record<string, unknown>) {
    this.defaults = defaults;
    if (!Array.isArray(params)) {
      throw new TypeError(
        'params argument given to the optimizer should be an array of Tensors or of groups',
      );
    }
    if (params.length === 0) throw new RangeError('optimizer got an empty parameter list');
    const groups = params[0] instanceof t.Tensor ? [{ params: params as Tensor[] }] : params;
    for (const g of groups as ParamGroupInput<object>[]) this.addParamGroup(g);
  }

  /** Adds a group of parameters; hyperparameters it does not set come from `defaults`. */
  addParamGroup(group: ParamGroupInput<object>): void {
    if (group === null || typeof group !== 'object' || !Array.isArray(group.params)) {
      throw new TypeError('a param group must be an object with a `params` array of Tensors');
    }
    const params = [...group.params];
    for (const p of params) {
      if (!(p instanceof t.Tensor)) throw new TypeError('optimizer can only optimize Tensors');
      if (!p.isLeaf) throw new TypeError("can't optimize a non-leaf Tensor");
    }
    if (new Set(params).size !== params.length) {
      throw new RangeError('optimizer contains a parameter group with duplicate parameters');
    }
    const full: Record<string, unknown> = { params };
    for (const [k, v] of Object.entries(group)) {
      if (k === 'params' || v === undefined) continue;
      // A group may carry keys of its own (PyTorch keeps them too), but PyTorch's spelling
      // of a hyperparameter would be one of those, and the group would run on the default.
      const camel = camelCase(k);
      if (camel !== k && Object.hasOwn(this.defaults, camel))
        throw new TypeError(
          `${this.constructor.name} param group: '${k}' is PyTorch's spelling of the hyperparameter '${camel}'; use '${camel}' (a group's other keys are kept as they are)`,
        );
      full[k] = v;
    }
    for (const [k, v] of Object.entries(this.defaults)) {
      if (full[k] === undefined) full[k] = Array.isArray(v) ? [...v] : v;
    }
    if (typeof full.lr !== 'number') throw new TypeError('a param group needs a numeric lr');
    this.validateGroup(full as ParamGroup);
    const seen = new Set<Tensor>();
    for (const g of this.paramGroups) for (const p of g.params) seen.add(p);
    if (params.some((p) => seen.has(p))) {
      throw new RangeError('some parameters appear in more than one parameter group');
    }
    this.paramGroups.push(full as ParamGroup);
  }

  /** Checks a group's hyperparameters (called for every group added). */
  protected validateGroup(_group: ParamGroup): void {}

  /**
   * Performs one optimization step (no autograd recording, no leaked temporaries). A
   * `closure` (PyTorch's optional argument) runs first, with gradients enabled, to
   * reevaluate the model: it typically zeroes the gradients, computes the loss, calls
   * backward() and returns the loss, which step() returns (undefined without a closure).
   * The loss belongs to the caller's scope, as any tensor the closure makes.
   */
  step<L = unknown>(closure?: () => L): L | undefined {
    const loss = closure === undefined ? undefined : enableGrad(closure);
    noGrad(() =>
      t.tidy(() => {
        for (const group of this.paramGroups) this.stepGroup(group);
      }),
    );
    return loss;
  }

  /** Updates the parameters of one group that have a gradient. */
  protected abstract stepGroup(group: ParamGroup): void;

  /** True when every group runs a fused kernel, which accepts gradScale/foundInf. */
  get stepSupportsAmpScaling(): boolean {
    return this.paramGroups.every((g) => g.fused === true);
  }

  /**
   * Resets the gradients: to null (the default, as PyTorch 2.x), or to zeros in place
   * when `setToNone` is false.
   */
  zeroGrad(setToNoneOrOptions?: boolean | { setToNone?: boolean }): void {
    const setToNone = setToNoneArg('zeroGrad', setToNoneOrOptions);
    noGrad(() =>
      t.tidy(() => {
        const buckets = new Map<string, Tensor[]>();
        for (const group of this.paramGroups) {
          for (const p of group.params) {
            if (setToNone) {
              p.grad = null;
              continue;
            }
            const g = p.grad;
            if (g === null) continue;
            if (g.gradFn !== null) t.ops.call('aten::detach_', g);
            else g.requiresGrad_(false);
            const key = `${g.device}|${g.dtype}`;
            const list = buckets.get(key);
            if (list) list.push(g);
            else buckets.set(key, [g]);
          }
        }
        for (const list of buckets.values()) t._foreachZero_(list);
      }),
    );
  }

  /**
   * The optimizer's state in PyTorch's layout. The tensors are the optimizer's own
   * (not copies), as in PyTorch: do not dispose them, and clone them to keep a
   * snapshot across later steps.
   */
  stateDict(): OptimizerStateDict {
    const index = new Map<Tensor, number>();
    const paramGroups = this.paramGroups.map((group) => {
      const packed: { params: number[]; [hyper: string]: unknown } = { params: [] };
      for (const [k, v] of Object.entries(group)) {
        if (k !== 'params') packed[k] = Array.isArray(v) ? [...v] : v;
      }
      packed.params = group.params.map((p) => {
        let i = index.get(p);
        if (i === undefined) {
          i = index.size;
          index.set(p, i);
        }
        return i;
      });
      return packed;
    });
    const state: Record<number, ParamState> = {};
    for (const [p, s] of this.state) {
      const i = index.get(p);
      if (i !== undefined) state[i] = { ...s };
    }
    return { state, paramGroups };
  }

  /**
   * Loads a state dict (from stateDict() or a converted PyTorch checkpoint). Group
   * hyperparameters are replaced by the saved ones, as in PyTorch. State tensors are
   * copied (cast to the parameter's dtype and device, except `step`), so the caller
   * keeps ownership of `sd`'s tensors.
   */
  loadStateDict(sd: OptimizerStateDict): void {
    const saved = sd.paramGroups;
    if (saved === undefined && 'param_groups' in sd)
      throw new TypeError(
        "loadStateDict: this state dict is in PyTorch's layout (param_groups, snake_case); convert it with optimizerStateDictFromPyTorch first",
      );
    if (!Array.isArray(saved) || saved.length !== this.paramGroups.length) {
      throw new RangeError('loaded state dict has a different number of parameter groups');
    }
    saved.forEach((g, i) => {
      if (g.params.length !== this.paramGroups[i].params.length) {
        throw new RangeError(
          "loaded state dict contains a parameter group that doesn't match the size of optimizer's group",
        );
      }
    });
    const idMap = new Map<number, { param: Tensor; group: Record<string, unknown> }>();
    saved.forEach((g, gi) => {
      g.params.forEach((id, j) => {
        idMap.set(Number(id), { param: this.paramGroups[gi].params[j], group: g });
      });
    });
    // Build everything first so a bad entry leaves the optimizer unchanged.
    const newState = new Map<Tensor, ParamState>();
    try {
      noGrad(() => {
        for (const [k, s] of Object.entries(sd.state)) {
          const target = idMap.get(Number(k));
          if (target === undefined) continue;
          const out: ParamState = {};
          for (const [key, v] of Object.entries(s)) {
            out[key] = this.castState(target.param, key, v, target.group);
          }
          newState.set(target.param, out);
        }
      });
    } catch (e) {
      for (const s of newState.values()) disposeState(s);
      throw e;
    }
    const newGroups = saved.map((g, gi) => {
      const group: Record<string, unknown> = {};
      for (const [k, v] of Object.entries(g)) {
        if (k !== 'params') group[k] = Array.isArray(v) ? [...v] : v;
      }
      group.params = this.paramGroups[gi].params;
      for (const [k, v] of Object.entries(this.defaults)) if (group[k] === undefined) group[k] = v;
      return group as ParamGroup;
    });
    for (const s of this.state.values()) disposeState(s);
    this.state = newState;
    this.paramGroups = newGroups;
  }

  /**
   * A loaded state value for `param`: a kept copy for tensors, numbers as they are, a
   * list entry by entry (as PyTorch's `_cast`, which casts list entries as any tensor).
   */
  protected castState(
    param: Tensor,
    key: string,
    value: StateValue,
    group: Record<string, unknown>,
  ): StateValue {
    if (Array.isArray(value)) return value.map((v) => this.castState(param, '', v, group));
    if (key === 'step' && typeof value === 'number') {
      // A `step` saved as a plain number (older PyTorch checkpoints) becomes the tensor
      // PyTorch's __setstate__ makes of it: float32, on the CPU unless fused/capturable.
      const onDevice = group.fused === true || group.capturable === true;
      return t.full([], value, { dtype: 'float32', device: onDevice ? param.device : 'cpu' }).keep();
    }
    if (!(value instanceof t.Tensor)) return value;
    if (key === 'step') {
      if (group.fused === true || group.capturable === true) {
        return value.to({ dtype: 'float32', device: param.device, copy: true }).keep();
      }
      return value.clone().keep();
    }
    const dtype = isFloatingPoint(param.dtype) ? param.dtype : value.dtype;
    return value.to({ dtype, device: param.device, copy: true }).keep();
  }

  /** The state of `p`, created empty on first use. */
  protected stateOf(p: Tensor): ParamState {
    let s = this.state.get(p);
    if (s === undefined) {
      s = {};
      this.state.set(p, s);
    }
    return s;
  }
}

/** Frees the tensors of one parameter's state (those in lists too). */
export function disposeState(s: ParamState): void {
  const free = (v: StateValue): void => {
    if (v instanceof t.Tensor) v.dispose();
    else if (Array.isArray(v)) for (const x of v) free(x);
  };
  for (const v of Object.values(s)) free(v);
}

/**
 * The multi-tensor paths cannot unscale gradients or skip a step (PyTorch asserts the
 * same): a gradient scaler must unscale them itself unless every group is fused.
 */
export function checkNoAmpScaling(opt: Optimizer): void {
  if (opt.gradScale !== null || opt.foundInf !== null) {
    throw new TypeError(
      'gradScale/foundInf are only supported with `fused: true` (see stepSupportsAmpScaling)',
    );
  }
}

/** A group's numeric hyperparameter, checked. */
export function hyper(group: ParamGroup, key: string): number {
  const v = group[key];
  if (typeof v !== 'number')
    throw new TypeError(`param group hyperparameter '${key}' must be a number, got ${typeof v}`);
  return v;
}

/** A group's boolean hyperparameter (null/undefined read as false). */
export function flag(group: ParamGroup, key: string): boolean {
  const v = group[key];
  if (v === null || v === undefined) return false;
  if (typeof v !== 'boolean')
    throw new TypeError(`param group hyperparameter '${key}' must be a boolean, got ${typeof v}`);
  return v;
}
