// Name mapping between tsddp's camelCase and PyTorch's snake_case for optimizer and
// scheduler state dicts, so checkpoints can be exchanged with PyTorch:
//   optimizer groups: weightDecay <-> weight_decay, initialLr <-> initial_lr, maxLr <-> max_lr,
//     decoupledWeightDecay <-> decoupled_weight_decay, ... (state keys such as momentum_buffer,
//     exp_avg, exp_avg_sq, max_exp_avg_sq, step are PyTorch's already and are left as they are);
//   schedulers: lastEpoch <-> last_epoch, baseLrs <-> base_lrs, _stepCount <-> _step_count,
//     _lastLr <-> _last_lr, stepSize <-> step_size, tMax <-> T_max, etaMin <-> eta_min,
//     t0 / tI / tMult / tCur <-> T_0 / T_i / T_mult / T_cur, ...;
//     OneCycleLR's phases name group keys in their values too (start_lr: 'initial_lr').

import type { SchedulerStateDict } from './lr-scheduler/base.ts';
import type { OptimizerStateDict, ParamState } from './optimizer.ts';

const TO_PYTORCH: Record<string, string> = {
  tMax: 'T_max',
  t0: 'T_0',
  tI: 'T_i',
  tMult: 'T_mult',
  tCur: 'T_cur',
  paramGroups: 'param_groups',
};
const FROM_PYTORCH: Record<string, string> = Object.fromEntries(
  Object.entries(TO_PYTORCH).map(([a, b]) => [b, a]),
);

/** camelCase -> PyTorch's snake_case (leading underscores kept: _stepCount -> _step_count). */
export function toPyTorchName(name: string): string {
  return TO_PYTORCH[name] ?? name.replace(/(?<=[^_])([A-Z])/g, (c) => `_${c.toLowerCase()}`);
}

/** PyTorch's snake_case -> camelCase (leading underscores kept: _last_lr -> _lastLr). */
export function fromPyTorchName(name: string): string {
  return FROM_PYTORCH[name] ?? name.replace(/(?<=[^_])_([a-z0-9])/g, (_, c: string) => c.toUpperCase());
}

/** The state dict of a PyTorch optimizer: `{state, param_groups}` with snake_case group keys. */
export interface PyTorchOptimizerStateDict {
  state: Record<number, ParamState>;
  param_groups: Array<{ params: number[]; [hyper: string]: unknown }>;
}

function renameKeys(o: Record<string, unknown>, rename: (k: string) => string): Record<string, unknown> {
  return Object.fromEntries(Object.entries(o).map(([k, v]) => [rename(k), v]));
}

// Param-group keys whose PyTorch name is not the scheduler one: ASGD's `t0` is `t0` in its
// param groups, where CosineAnnealingWarmRestarts' `t0` is `T_0`.
const GROUP_TO_PYTORCH: Record<string, string> = { t0: 't0' };

/** An optimizer state dict with PyTorch's key names (tensors shared, not copied). */
export function optimizerStateDictToPyTorch(sd: OptimizerStateDict): PyTorchOptimizerStateDict {
  return {
    state: sd.state,
    param_groups: sd.paramGroups.map(
      (g) =>
        renameKeys(
          g,
          (k) => GROUP_TO_PYTORCH[k] ?? toPyTorchName(k),
        ) as PyTorchOptimizerStateDict['param_groups'][0],
    ),
  };
}

/** A PyTorch optimizer state dict with tsddp's key names, for loadStateDict (tensors shared). */
export function optimizerStateDictFromPyTorch(sd: PyTorchOptimizerStateDict): OptimizerStateDict {
  return {
    state: sd.state,
    paramGroups: sd.param_groups.map(
      (g) => renameKeys(g, fromPyTorchName) as OptimizerStateDict['paramGroups'][0],
    ),
  };
}

// OneCycleLR's phases name param-group keys in their values (start_lr: 'initial_lr'),
// so those values are renamed too.
const PHASE_NAME_KEYS = new Set(['startLr', 'endLr', 'startMomentum', 'endMomentum']);
const PHASE_NAME_KEYS_PT = new Set(['start_lr', 'end_lr', 'start_momentum', 'end_momentum']);

function renameDeep(v: unknown, rename: (k: string) => string, inPhases = false): unknown {
  if (Array.isArray(v)) return v.map((x) => renameDeep(x, rename, inPhases));
  if (v !== null && typeof v === 'object' && Object.getPrototypeOf(v) === Object.prototype) {
    return Object.fromEntries(
      Object.entries(v).map(([k, x]) => {
        if (inPhases && typeof x === 'string' && (PHASE_NAME_KEYS.has(k) || PHASE_NAME_KEYS_PT.has(k))) {
          return [rename(k), rename(x)];
        }
        const phases = k === '_schedulePhases' || k === '_schedule_phases';
        return [rename(k), renameDeep(x, rename, phases)];
      }),
    );
  }
  return v;
}

/** A scheduler state dict (nested ones included, as in SequentialLR) with PyTorch's key names. */
export function schedulerStateDictToPyTorch(sd: SchedulerStateDict): Record<string, unknown> {
  return renameDeep(sd, toPyTorchName) as Record<string, unknown>;
}

/** A PyTorch scheduler state dict with tsddp's key names, for loadStateDict. */
export function schedulerStateDictFromPyTorch(sd: Record<string, unknown>): SchedulerStateDict {
  return renameDeep(sd, fromPyTorchName) as SchedulerStateDict;
}
