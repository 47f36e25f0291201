// GradScaler: dynamic loss scaling, a port of torch.amp.GradScaler with the same
// semantics, defaults and error messages. The scale and the growth tracker live on the
// device as tensors, and the two kernels that do the work (the fused inf/NaN check +
// unscale, and the scale update) are libtorch's own `_amp_*` ops, so nothing syncs with
// the host except where PyTorch syncs too (the found-inf check in step(), getScale()).
import { noGrad } from '../autograd/grad-mode.ts';
import type { DType } from '../core/dtype.ts';
import { _ampForeachNonFiniteCheckAndUnscale_, _ampUpdateScale_, full } from '../core/ops.ts';
import { checkOptions, optionNames } from '../core/options.ts';
import { cuda } from '../core/runtime.ts';
import { tidy } from '../core/scope.ts';
import { Tensor } from '../core/tensor.ts';

/**
 * What GradScaler needs from an optimizer: its parameter groups and step(). An
 * optimizer whose step can unscale and skip by itself (tsddp's fused SGD/Adam/AdamW;
 * PyTorch's `_step_supports_amp_scaling`) says so with `stepSupportsAmpScaling` and
 * takes the scale and the found-inf flag through `gradScale` and `foundInf`.
 */
export interface ScalableOptimizer<R = unknown> {
  paramGroups: { params: Tensor[] }[];
  step(): R;
  readonly stepSupportsAmpScaling?: boolean;
  gradScale?: Tensor | null;
  foundInf?: Tensor | null;
}

export interface GradScalerOptions {
  /** Device type the scaler is meant for, as in PyTorch (default 'cuda'; disabled with a warning if CUDA is missing). */
  device?: string;
  initScale?: number;
  growthFactor?: number;
  backoffFactor?: number;
  growthInterval?: number;
  enabled?: boolean;
}

const OPTIONS = optionNames<GradScalerOptions>({
  device: true,
  initScale: true,
  growthFactor: true,
  backoffFactor: true,
  growthInterval: true,
  enabled: true,
});

/** GradScaler.stateDict(), with PyTorch's keys so checkpoints interoperate. */
export interface GradScalerState {
  scale: number;
  growth_factor: number;
  backoff_factor: number;
  growth_interval: number;
  _growth_tracker: number;
}

/** Where an optimizer is in the current iteration (PyTorch's OptState). */
export const OptState = { READY: 'ready', UNSCALED: 'unscaled', STEPPED: 'stepped' } as const;
export type OptState = (typeof OptState)[keyof typeof OptState];

interface OptimizerState {
  stage: OptState;
  /** One float32 flag tensor per device the optimizer's grads live on; nonzero = inf/NaN seen. */
  foundInfPerDevice: Map<string, Tensor>;
}

/**
 * Copies of one master tensor, one per device, made on first use (PyTorch's
 * _MultiDeviceReplicator). The master itself is never handed out, so an optimizer
 * without any gradient records no inf check at all, as in PyTorch.
 */
class MultiDeviceReplicator {
  readonly perDevice = new Map<string, Tensor>();
  constructor(readonly master: Tensor) {}
  get(device: string): Tensor {
    let t = this.perDevice.get(device);
    if (t === undefined) {
      t = this.master.to({ device, nonBlocking: true, copy: true });
      this.perDevice.set(device, t);
    }
    return t;
  }
}

let warnedNoCuda = false;

export class GradScaler {
  private readonly device: string;
  private enabled: boolean;
  private initScale = 2 ** 16;
  private growthFactor = 2;
  private backoffFactor = 0.5;
  private growthInterval = 2000;
  private initGrowthTracker = 0;
  // Created lazily by the first scale(), on the device of the tensor being scaled.
  private scaleTensor: Tensor | null = null;
  private growthTracker: Tensor | null = null;
  private perOptimizerStates = new Map<ScalableOptimizer, OptimizerState>();

  /**
   * `new GradScaler({ device: 'cpu', initScale })`, or PyTorch's positional form
   * `new GradScaler('cpu')` (its first parameter is the device), with options after it.
   */
  constructor(options?: GradScalerOptions);
  constructor(device: string, options?: Omit<GradScalerOptions, 'device'>);
  constructor(first?: string | GradScalerOptions, second?: Omit<GradScalerOptions, 'device'>) {
    let opts: GradScalerOptions;
    if (typeof first === 'string') {
      opts = {
        ...checkOptions(
          'GradScaler',
          second,
          OPTIONS.filter((k) => k !== 'device'),
        ),
        device: first,
      };
    } else {
      if (second !== undefined) throw new TypeError('GradScaler(): options come once, after the device');
      opts = checkOptions('GradScaler', first, OPTIONS);
    }
    this.device = opts.device ?? 'cuda';
    this.enabled = opts.enabled ?? true;
    if (this.device === 'cuda' && this.enabled && !cuda.isAvailable()) {
      if (!warnedNoCuda) {
        warnedNoCuda = true;
        process.emitWarning('GradScaler is enabled, but CUDA is not available.  Disabling.', 'TsddpWarning');
      }
      this.enabled = false;
    }
    if (!this.enabled) return;
    const growthFactor = opts.growthFactor ?? 2;
    const backoffFactor = opts.backoffFactor ?? 0.5;
    const growthInterval = opts.growthInterval ?? 2000;
    if (!(growthFactor > 1)) throw new RangeError('The growth factor must be > 1.0.');
    if (!(backoffFactor < 1)) throw new RangeError('The backoff factor must be < 1.0.');
    // PyTorch checks only the factors: any integer interval is taken (0 or less: the
    // scale never grows, since the tracker never counts up to it).
    if (!Number.isInteger(growthInterval)) {
      throw new TypeError(`The growth interval must be an integer, got ${growthInterval}.`);
    }
    this.initScale = opts.initScale ?? 2 ** 16;
    this.growthFactor = growthFactor;
    this.backoffFactor = backoffFactor;
    this.growthInterval = growthInterval;
  }

  private stateOf(optimizer: ScalableOptimizer): OptimizerState {
    let s = this.perOptimizerStates.get(optimizer);
    if (s === undefined) {
      s = { stage: OptState.READY, foundInfPerDevice: new Map() };
      this.perOptimizerStates.set(optimizer, s);
    }
    return s;
  }

  private checkScaleGrowthTracker(funcname: string): [Tensor, Tensor] {
    const fix =
      'This may indicate your script did not use scaler.scale(loss or outputs) earlier in the iteration.';
    if (this.scaleTensor === null) throw new Error(`Attempted ${funcname} but _scale is None.  ${fix}`);
    if (this.growthTracker === null)
      throw new Error(`Attempted ${funcname} but _growth_tracker is None.  ${fix}`);
    return [this.scaleTensor, this.growthTracker];
  }

  private lazyInitScaleGrowthTracker(device: string): Tensor {
    this.scaleTensor = full([], this.initScale, { dtype: 'float32', device }).keep();
    this.growthTracker = full([], this.initGrowthTracker, { dtype: 'int32', device }).keep();
    return this.scaleTensor;
  }

  /**
   * Multiplies a tensor (or each tensor of a possibly nested array) by the scale factor.
   * Returns its input unchanged when the scaler is disabled.
   */
  scale(outputs: Tensor): Tensor;
  scale(outputs: Tensor[]): Tensor[];
  scale(outputs: Tensor[][]): Tensor[][];
  scale(outputs: Tensor | Tensor[] | Tensor[][]): Tensor | Tensor[] | Tensor[][] {
    if (!this.enabled) return outputs;
    const apply = (val: unknown): unknown => {
      if (val instanceof Tensor) {
        const s = this.scaleTensor ?? this.lazyInitScaleGrowthTracker(val.device);
        if (s.device === val.device) return val.mul(s);
        return tidy(() => val.mul(s.to({ device: val.device, nonBlocking: true })));
      }
      if (Array.isArray(val)) return val.map(apply);
      throw new TypeError('outputs must be a Tensor or an array of Tensors');
    };
    return apply(outputs) as Tensor | Tensor[] | Tensor[][];
  }

  /**
   * Checks every gradient of `optimizer` for inf/NaN and multiplies it by `invScale`,
   * one fused kernel per (device, dtype) group. Returns the found-inf flag per device
   * (kept: they live until update()).
   */
  private unscaleGrads(
    optimizer: ScalableOptimizer,
    invScale: Tensor,
    foundInf: Tensor,
    allowFp16: boolean,
  ): Map<string, Tensor> {
    const perDeviceFoundInf = new MultiDeviceReplicator(foundInf);
    tidy(() =>
      noGrad(() => {
        const perDeviceInvScale = new MultiDeviceReplicator(invScale);
        const perDeviceAndDtype = new Map<string, Map<DType, Tensor[]>>();
        for (const group of optimizer.paramGroups) {
          for (const param of group.params) {
            if (!(param instanceof Tensor)) {
              throw new TypeError(`expected param to be a Tensor, got ${typeof param}`);
            }
            const grad = param.grad;
            if (grad === null) continue;
            if (!allowFp16 && grad.dtype === 'float16')
              throw new Error('Attempting to unscale FP16 gradients.');
            let byDtype = perDeviceAndDtype.get(grad.device);
            if (byDtype === undefined) {
              byDtype = new Map();
              perDeviceAndDtype.set(grad.device, byDtype);
            }
            const list = byDtype.get(grad.dtype);
            if (list === undefined) byDtype.set(grad.dtype, [grad]);
            else list.push(grad);
          }
        }
        for (const [device, byDtype] of perDeviceAndDtype) {
          for (const grads of byDtype.values()) {
            _ampForeachNonFiniteCheckAndUnscale_(
              grads,
              perDeviceFoundInf.get(device),
              perDeviceInvScale.get(device),
            );
          }
        }
        // The found-inf flags outlive this scope; the inv-scale copies do not.
        for (const t of perDeviceFoundInf.perDevice.values()) t.keep();
      }),
    );
    return perDeviceFoundInf.perDevice;
  }

  /**
   * Divides ("unscales") the optimizer's gradients by the scale, e.g. to clip them
   * before step(). At most once per optimizer per iteration, before step().
   */
  unscale_(optimizer: ScalableOptimizer): void {
    if (!this.enabled) return;
    const [scale] = this.checkScaleGrowthTracker('unscale_');
    const state = this.stateOf(optimizer);
    if (state.stage === OptState.UNSCALED) {
      throw new Error('unscale_() has already been called on this optimizer since the last update().');
    }
    if (state.stage === OptState.STEPPED) throw new Error('unscale_() is being called after step().');
    tidy(() => {
      // As PyTorch: the reciprocal in float64, because float32 division can be imprecise.
      const invScale = scale.double().reciprocal().float();
      const foundInf = full([], 0, { dtype: 'float32', device: scale.device });
      state.foundInfPerDevice = this.unscaleGrads(optimizer, invScale, foundInf, false);
    });
    state.stage = OptState.UNSCALED;
  }

  /**
   * Unscales the gradients (unless unscale_() already did) and runs `optimizer.step()`
   * only if none of them is inf/NaN. Returns what optimizer.step() returned, or
   * undefined when the step was skipped.
   */
  step<R>(optimizer: ScalableOptimizer<R>): R | undefined {
    if (!this.enabled) return optimizer.step();
    this.checkScaleGrowthTracker('step');
    const state = this.stateOf(optimizer);
    if (state.stage === OptState.STEPPED) {
      throw new Error('step() has already been called since the last update().');
    }
    if (optimizer.stepSupportsAmpScaling === true) return this.stepFused(optimizer, state);
    if (state.stage === OptState.READY) this.unscale_(optimizer);
    if (state.foundInfPerDevice.size === 0)
      throw new Error('No inf checks were recorded for this optimizer.');
    let found = 0;
    for (const f of state.foundInfPerDevice.values()) found += f.item();
    const retval = found === 0 ? optimizer.step() : undefined;
    state.stage = OptState.STEPPED;
    return retval;
  }

  /**
   * PyTorch's path for an optimizer with `_step_supports_amp_scaling`: the gradients
   * are only checked for inf/NaN here; the optimizer gets the scale (times any
   * gradScale it already has) and the found-inf flag, and its fused kernel unscales
   * and skips the update itself. So a skipped step leaves the gradients scaled, and
   * after unscale_() the gradients are not divided again.
   */
  private stepFused<R>(optimizer: ScalableOptimizer<R>, state: OptimizerState): R {
    const [scale] = this.checkScaleGrowthTracker('step');
    if (state.stage === OptState.READY) {
      tidy(() => {
        const one = full([], 1, { dtype: 'float32', device: scale.device });
        const foundInf = full([], 0, { dtype: 'float32', device: scale.device });
        state.foundInfPerDevice = this.unscaleGrads(optimizer, one, foundInf, true);
      });
    }
    const previous = optimizer.gradScale ?? null;
    const made: Tensor[] = [];
    try {
      tidy(() => {
        // PyTorch's sum() of the per-device flags: 0 + each, moved to the scale's device.
        let foundInf = full([], 0, { dtype: 'float32', device: scale.device });
        for (const f of state.foundInfPerDevice.values()) {
          foundInf = foundInf.add(f.device === scale.device ? f : f.to({ device: scale.device }));
        }
        made.push(foundInf.keep());
        optimizer.foundInf = foundInf;
        // After unscale_() the gradients are true ones: the optimizer keeps the gradScale
        // it has (none, unless its user set one); otherwise the scale times that one.
        if (state.stage !== OptState.UNSCALED) {
          const gradScale = previous === null ? scale.clone() : scale.mul(previous);
          made.push(gradScale.keep());
          optimizer.gradScale = gradScale;
        }
      });
      const retval = optimizer.step();
      state.stage = OptState.STEPPED;
      return retval;
    } finally {
      // As PyTorch's `del optimizer.grad_scale, optimizer.found_inf`.
      optimizer.gradScale = null;
      optimizer.foundInf = null;
      for (const x of made) x.dispose();
    }
  }

  /**
   * Updates the scale at the end of an iteration: multiplied by backoffFactor if any
   * optimizer step was skipped, by growthFactor after growthInterval consecutive good
   * iterations. `newScale` sets it directly instead: a number, or a one-element tensor
   * of the scale's shape (0-dim) on the scaler's device, as PyTorch takes it.
   */
  update(newScale?: number | Tensor): void {
    if (!this.enabled) return;
    const [scale, growthTracker] = this.checkScaleGrowthTracker('update');
    try {
      if (newScale !== undefined) {
        if (typeof newScale === 'number') {
          scale.fill_(newScale);
        } else {
          const reason =
            'newScale should be a number or a 1-element float32 Tensor on the scaler device with requiresGrad false.';
          if (!(newScale instanceof Tensor)) throw new TypeError(reason);
          if (newScale.device.split(':')[0] !== this.device) throw new Error(reason);
          if (newScale.numel() !== 1) throw new Error(reason);
          if (newScale.requiresGrad) throw new Error(reason);
          // PyTorch's copy_ as it is: a shape-[1] tensor does not broadcast into the
          // 0-dim scale, and libtorch says so ("output with shape [] doesn't match the
          // broadcast shape [1]").
          noGrad(() => scale.copy_(newScale));
        }
      } else {
        const foundInfs: Tensor[] = [];
        for (const s of this.perOptimizerStates.values()) foundInfs.push(...s.foundInfPerDevice.values());
        if (foundInfs.length === 0) throw new Error('No inf checks were recorded prior to update.');
        tidy(() => {
          const onScaleDevice = (f: Tensor) =>
            f.device === scale.device ? f : f.to({ device: scale.device, nonBlocking: true });
          let combined = onScaleDevice(foundInfs[0]);
          for (let i = 1; i < foundInfs.length; i++) combined = combined.add(onScaleDevice(foundInfs[i]));
          _ampUpdateScale_(
            scale,
            growthTracker,
            combined,
            this.growthFactor,
            this.backoffFactor,
            this.growthInterval,
          );
        });
      }
    } finally {
      // Prepare for the next iteration: drop what the optimizers recorded in this one.
      // (PyTorch resets only on success; here the flags are freed either way, since a
      // failed update leaves the iteration unusable.)
      this.resetOptimizerStates();
    }
  }

  private resetOptimizerStates(): void {
    for (const s of this.perOptimizerStates.values()) {
      for (const f of s.foundInfPerDevice.values()) f.dispose();
    }
    this.perOptimizerStates = new Map();
  }

  /** The current scale (a host sync), initScale before the first scale(), 1 when disabled. */
  getScale(): number {
    if (!this.enabled) return 1;
    return this.scaleTensor === null ? this.initScale : this.scaleTensor.item();
  }

  getGrowthFactor(): number {
    return this.growthFactor;
  }
  setGrowthFactor(newFactor: number): void {
    this.growthFactor = newFactor;
  }
  getBackoffFactor(): number {
    return this.backoffFactor;
  }
  setBackoffFactor(newFactor: number): void {
    this.backoffFactor = newFactor;
  }
  getGrowthInterval(): number {
    return this.growthInterval;
  }
  setGrowthInterval(newInterval: number): void {
    this.growthInterval = newInterval;
  }

  private getGrowthTracker(): number {
    if (!this.enabled) return 0;
    return this.growthTracker === null ? this.initGrowthTracker : this.growthTracker.item();
  }

  isEnabled(): boolean {
    return this.enabled;
  }

  /**
   * The scaler's state with PyTorch's keys (`scale`, `growth_factor`, `backoff_factor`,
   * `growth_interval`, `_growth_tracker`); an empty object when disabled. Call it after
   * update() to checkpoint a finished iteration.
   */
  stateDict(): GradScalerState | Record<string, never> {
    if (!this.enabled) return {};
    return {
      scale: this.getScale(),
      growth_factor: this.growthFactor,
      backoff_factor: this.backoffFactor,
      growth_interval: this.growthInterval,
      _growth_tracker: this.getGrowthTracker(),
    };
  }

  /** Restores a stateDict() (a no-op when this scaler is disabled). */
  loadStateDict(stateDict: Partial<GradScalerState>): void {
    if (!this.enabled) return;
    if (stateDict === null || typeof stateDict !== 'object' || Object.keys(stateDict).length === 0) {
      throw new Error(
        'The source state dict is empty, possibly because it was saved from a disabled instance of GradScaler.',
      );
    }
    const keys = ['scale', 'growth_factor', 'backoff_factor', 'growth_interval', '_growth_tracker'] as const;
    for (const k of keys) {
      if (typeof stateDict[k] !== 'number' || !Number.isFinite(stateDict[k])) {
        throw new TypeError(
          `GradScaler.loadStateDict(): '${k}' must be a finite number, got ${String(stateDict[k])}`,
        );
      }
    }
    const s = stateDict as GradScalerState;
    this.initScale = s.scale;
    this.scaleTensor?.fill_(s.scale);
    this.growthFactor = s.growth_factor;
    this.backoffFactor = s.backoff_factor;
    this.growthInterval = s.growth_interval;
    this.initGrowthTracker = s._growth_tracker;
    this.growthTracker?.fill_(s._growth_tracker);
  }

  /**
   * Frees the scale and growth-tracker tensors now. Their values are remembered (as
   * PyTorch's pickling does), so a later scale() starts again from where this left off.
   */
  dispose(): void {
    if (this.enabled) {
      this.initScale = this.getScale();
      this.initGrowthTracker = this.getGrowthTracker();
    }
    this.resetOptimizerStates();
    this.scaleTensor?.dispose();
    this.growthTracker?.dispose();
    this.scaleTensor = null;
    this.growthTracker = null;
  }
}
