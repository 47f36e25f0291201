// L-BFGS, as torch.optim.LBFGS: one parameter group, a closure that reevaluates the
// model (required), a history of `historySize` updates, and optionally PyTorch's
// strong-Wolfe line search (_strong_wolfe with _cubic_interpolate). The algorithm's
// scalars are, as in PyTorch, sometimes Python floats (losses, the initial step) and
// sometimes 0-dim tensors (dot products, the step after a line search, H_diag); each
// keeps its kind here (a number or a Tensor) and every operation between them is the one
// PyTorch runs (`float / tensor` is reciprocal() * float, a comparison with a float
// rounds the float to the tensor's dtype, min/max are Python's builtins), so the
// trajectory and the state are PyTorch's to the bit.
//
// The state is PyTorch's, under the first parameter: func_evals, n_iter, d, t, old_dirs,
// old_stps, ro, H_diag, prev_flat_grad, prev_loss, al.

import { enableGrad, noGrad } from '../autograd/index.ts';
import type { Tensor } from '../core/index.ts';
import * as t from '../core/index.ts';
import { optionNames } from '../core/options.ts';
import { cPow } from './c-math.ts';
import {
  hyper,
  Optimizer,
  optimizerOptions,
  type ParamGroup,
  type ParamState,
  type ParamsInput,
  type StateValue,
} from './optimizer.ts';

export interface LBFGSOptions {
  /** Learning rate (default 1). */
  lr?: number;
  /** Iterations per step() (PyTorch: max_iter; default 20). */
  maxIter?: number;
  /** Closure evaluations per step() (PyTorch: max_eval; default floor(maxIter * 5 / 4)). */
  maxEval?: number | null;
  /** Stop when every |gradient| is at most this (PyTorch: tolerance_grad; default 1e-7). */
  toleranceGrad?: number;
  /** Stop when the loss or the parameters change less (PyTorch: tolerance_change; default 1e-9). */
  toleranceChange?: number;
  /** Updates kept (PyTorch: history_size; default 100). */
  historySize?: number;
  /** 'strong_wolfe' for PyTorch's line search, or null for fixed steps (PyTorch: line_search_fn). */
  lineSearchFn?: 'strong_wolfe' | null;
}

const OPTIONS = optionNames<LBFGSOptions>({
  lr: true,
  maxIter: true,
  maxEval: true,
  toleranceGrad: true,
  toleranceChange: true,
  historySize: true,
  lineSearchFn: true,
});

/** A scalar of PyTorch's LBFGS: a Python float (a number) or a 0-dim tensor. */
type Scalar = number | Tensor;

const isT = (x: Scalar): x is Tensor => x instanceof t.Tensor;

/** a + b, as Python evaluates it (float + tensor is tensor.add(float)). */
function add(a: Scalar, b: Scalar): Scalar {
  if (isT(a)) return a.add(b as Tensor);
  if (isT(b)) return b.add(a);
  return a + b;
}

/** a - b (float - tensor is PyTorch's rsub: -tensor + float, the same bits). */
function sub(a: Scalar, b: Scalar): Scalar {
  if (isT(a)) return a.sub(b as Tensor);
  if (isT(b)) return b.neg().add(a);
  return a - b;
}

function mul(a: Scalar, b: Scalar): Scalar {
  if (isT(a)) return a.mul(b as Tensor);
  if (isT(b)) return b.mul(a);
  return a * b;
}

/** a / b (float / tensor is tensor.reciprocal() * float, as torch.Tensor.__rdiv__). */
function div(a: Scalar, b: Scalar): Scalar {
  if (isT(a)) return a.div(b as Tensor);
  if (isT(b)) return b.reciprocal().mul(a);
  return a / b;
}

function abs(a: Scalar): Scalar {
  return isT(a) ? a.abs() : Math.abs(a);
}

/** a > b: a float against a tensor compares in the tensor's dtype (the float rounded), as PyTorch. */
function gt(a: Scalar, b: Scalar): boolean {
  if (isT(a)) return a.gt(b as Tensor).item() !== 0;
  if (isT(b)) return b.lt(a).item() !== 0;
  return a > b;
}

function ge(a: Scalar, b: Scalar): boolean {
  if (isT(a)) return a.ge(b as Tensor).item() !== 0;
  if (isT(b)) return b.le(a).item() !== 0;
  return a >= b;
}

const lt = (a: Scalar, b: Scalar): boolean => gt(b, a);
const le = (a: Scalar, b: Scalar): boolean => ge(b, a);

/** Python's max(a, b): a unless b > a. */
const pyMax = (a: Scalar, b: Scalar): Scalar => (gt(b, a) ? b : a);
/** Python's min(a, b): a unless b < a. */
const pyMin = (a: Scalar, b: Scalar): Scalar => (lt(b, a) ? b : a);

/** x * s for a tensor x (mul.Tensor with a 0-dim tensor, mul.Scalar with a float). */
const mulBy = (x: Tensor, s: Scalar): Tensor => (isT(s) ? x.mul(s) : x.mul(s));

/** A Scalar as a Scalar argument of an op (`alpha=t`): a tensor's value. */
const value = (a: Scalar): number => (isT(a) ? a.item() : a);

/** The closure's loss as Python's float(loss). */
function lossValue(loss: unknown): number {
  if (loss instanceof t.Tensor) return loss.item();
  if (typeof loss === 'number') return loss;
  throw new TypeError('the LBFGS closure must return the loss, a Tensor or a number');
}

/** PyTorch's _cubic_interpolate: the minimiser of the cubic through two points and slopes. */
function cubicInterpolate(
  x1: Scalar,
  f1: Scalar,
  g1: Scalar,
  x2: Scalar,
  f2: Scalar,
  g2: Scalar,
  bounds?: [Scalar, Scalar],
): Scalar {
  const [xminBound, xmaxBound] = bounds ?? (le(x1, x2) ? [x1, x2] : [x2, x1]);
  const d1 = sub(add(g1, g2), div(mul(3, sub(f1, f2)), sub(x1, x2)));
  const d2Square = sub(isT(d1) ? d1.pow(2) : cPow(d1, 2), mul(g1, g2));
  if (ge(d2Square, 0)) {
    if (!isT(d2Square)) throw new TypeError('LBFGS: the interpolation expects tensor slopes');
    const d2 = d2Square.sqrt();
    let minPos: Scalar;
    if (le(x1, x2)) {
      minPos = sub(x2, mul(sub(x2, x1), div(sub(add(g2, d2), d1), add(sub(g2, g1), mul(2, d2)))));
    } else {
      minPos = sub(x1, mul(sub(x1, x2), div(sub(add(g1, d2), d1), add(sub(g1, g2), mul(2, d2)))));
    }
    return pyMin(pyMax(minPos, xminBound), xmaxBound);
  }
  return div(add(xminBound, xmaxBound), 2.0);
}

type ObjFunc = (x: Tensor[], step: Scalar, d: Tensor) => [number, Tensor];

/** What the line search is given and never changes: f along d from x, with its tolerances. */
interface WolfeProblem {
  objFunc: ObjFunc;
  x: Tensor[];
  d: Tensor;
  /** The loss at step 0. */
  f: number;
  /** The directional derivative at step 0 (negative: d descends). */
  gtd: Tensor;
  maxLs: number;
  c1: number;
  c2: number;
  toleranceChange: number;
}

/**
 * The line search's moving parts, shared by its bracketing and zoom phases: the latest
 * trial step with its loss, gradient and directional derivative; the bracket (PyTorch's
 * bracket, bracket_f, bracket_g, bracket_gtd: one point once the strong Wolfe conditions
 * hold, else the two ends of an interval); and the counts of iterations and evaluations.
 */
interface WolfeSearch {
  step: Scalar;
  fNew: number;
  gNew: Tensor;
  gtdNew: Tensor;
  lsIter: number;
  lsFuncEvals: number;
  done: boolean;
  bracket: Scalar[];
  bracketF: number[];
  bracketG: Tensor[];
  bracketGtd: Scalar[];
}

/** The bracketing phase's previous trial point (PyTorch's t_prev, f_prev, g_prev, gtd_prev). */
interface TrialPoint {
  step: Scalar;
  f: number;
  g: Tensor;
  gtd: Scalar;
}

/** Armijo's sufficient-decrease condition fails: f(step) > f + c1 * step * gtd. */
function armijoFails(p: WolfeProblem, step: Scalar, fNew: number): boolean {
  return gt(fNew, add(p.f, mul(mul(p.c1, step), p.gtd)));
}

/** The strong curvature condition holds: |gtd(step)| <= -c2 * gtd. */
function curvatureHolds(p: WolfeProblem, gtdNew: Tensor): boolean {
  return le(abs(gtdNew), mul(-p.c2, p.gtd));
}

/** Evaluates f and its gradient at the trial step, counting the evaluation and the iteration. */
function evaluateTrial(p: WolfeProblem, s: WolfeSearch): void {
  [s.fNew, s.gNew] = p.objFunc(p.x, s.step, p.d);
  s.lsFuncEvals += 1;
  s.gtdNew = s.gNew.dot(p.d);
  s.lsIter += 1;
}

/** The bracket becomes the interval from the previous trial point to the latest one. */
function bracketFromPrevious(s: WolfeSearch, prev: TrialPoint): void {
  s.bracket = [prev.step, s.step];
  s.bracketF = [prev.f, s.fNew];
  s.bracketG = [prev.g, s.gNew.clone('contiguousFormat')];
  s.bracketGtd = [prev.gtd, s.gtdNew];
}

/**
 * The bracketing phase: extrapolates the step (a cubic step within [step + 0.01 * (step -
 * prev), 10 * step]) until an interval surely holds a point satisfying the strong Wolfe
 * conditions (f rose, or the slope turned non-negative), or the trial point satisfies
 * them itself (done). Out of iterations, the bracket is [0, step].
 */
function bracketPhase(p: WolfeProblem, s: WolfeSearch, g: Tensor): void {
  let prev: TrialPoint = { step: 0, f: p.f, g, gtd: p.gtd };
  while (s.lsIter < p.maxLs) {
    if (armijoFails(p, s.step, s.fNew) || (s.lsIter > 1 && s.fNew >= prev.f)) {
      bracketFromPrevious(s, prev);
      break;
    }
    if (curvatureHolds(p, s.gtdNew)) {
      s.bracket = [s.step];
      s.bracketF = [s.fNew];
      s.bracketG = [s.gNew];
      s.done = true;
      break;
    }
    if (ge(s.gtdNew, 0)) {
      bracketFromPrevious(s, prev);
      break;
    }
    // Interpolate.
    const minStep = add(s.step, mul(0.01, sub(s.step, prev.step)));
    const maxStep = mul(s.step, 10);
    const tmp = s.step;
    s.step = cubicInterpolate(prev.step, prev.f, prev.gtd, s.step, s.fNew, s.gtdNew, [minStep, maxStep]);
    // Next step.
    prev = { step: tmp, f: s.fNew, g: s.gNew.clone('contiguousFormat'), gtd: s.gtdNew };
    evaluateTrial(p, s);
  }
  // Reached the maximum number of iterations?
  if (s.lsIter === p.maxLs) {
    s.bracket = [0, s.step];
    s.bracketF = [p.f, s.fNew];
    s.bracketG = [g, s.gNew];
  }
}

/**
 * The zoom phase's safeguard against an interpolated step too close to a bracket end,
 * where progress would stall: such a step moves 0.1 * the bracket's length inside, unless
 * the previous step made progress and this one is inside the bracket; then it is kept
 * once, and the returned flag (PyTorch's insuf_progress) remembers that.
 */
function safeguardStep(step: Scalar, bracket: Scalar[], insufProgress: boolean): [Scalar, boolean] {
  const bMax = pyMax(bracket[0], bracket[1]);
  const bMin = pyMin(bracket[0], bracket[1]);
  const eps = mul(0.1, sub(bMax, bMin));
  if (lt(pyMin(sub(bMax, step), sub(step, bMin)), eps)) {
    if (insufProgress || ge(step, bMax) || le(step, bMin)) {
      const moved = lt(abs(sub(step, bMax)), abs(sub(step, bMin))) ? sub(bMax, eps) : add(bMin, eps);
      return [moved, false];
    }
    return [step, true];
  }
  return [step, false];
}

/** One end of the bracket becomes the latest trial point. */
function setBracketEnd(s: WolfeSearch, pos: number): void {
  s.bracket[pos] = s.step;
  s.bracketF[pos] = s.fNew;
  s.bracketG[pos] = s.gNew.clone('contiguousFormat');
  s.bracketGtd[pos] = s.gtdNew;
}

/**
 * The zoom phase: shrinks the bracket by cubic interpolation between its ends until a
 * point satisfies the strong Wolfe conditions, the bracket is too small, or the
 * iterations run out. Returns the position of the bracket's low end (the lower loss).
 */
function zoomPhase(p: WolfeProblem, s: WolfeSearch, dNorm: Tensor): number {
  let insufProgress = false;
  let [lowPos, highPos] = s.bracketF[0] <= (s.bracketF.at(-1) as number) ? [0, 1] : [1, 0];
  while (!s.done && s.lsIter < p.maxLs) {
    const { bracket, bracketF, bracketG, bracketGtd } = s;
    // The bracket is too small.
    if (lt(mul(abs(sub(bracket[1], bracket[0])), dNorm), p.toleranceChange)) break;
    s.step = cubicInterpolate(bracket[0], bracketF[0], bracketGtd[0], bracket[1], bracketF[1], bracketGtd[1]);
    [s.step, insufProgress] = safeguardStep(s.step, bracket, insufProgress);
    // Evaluate the new point.
    evaluateTrial(p, s);
    if (armijoFails(p, s.step, s.fNew) || s.fNew >= bracketF[lowPos]) {
      // Armijo's condition fails, or not below the lowest point: the new high end.
      setBracketEnd(s, highPos);
      [lowPos, highPos] = bracketF[0] <= bracketF[1] ? [0, 1] : [1, 0];
    } else {
      if (curvatureHolds(p, s.gtdNew)) {
        // The Wolfe conditions hold.
        s.done = true;
      } else if (ge(mul(s.gtdNew, sub(bracket[highPos], bracket[lowPos])), 0)) {
        // The old high becomes the new low.
        bracket[highPos] = bracket[lowPos];
        bracketF[highPos] = bracketF[lowPos];
        bracketG[highPos] = bracketG[lowPos];
        bracketGtd[highPos] = bracketGtd[lowPos];
      }
      // The new point becomes the new low.
      setBracketEnd(s, lowPos);
    }
  }
  return lowPos;
}

/**
 * PyTorch's _strong_wolfe line search (ported there from minFunc's lswolfe.lua): a
 * bracketing phase, then a zoom phase. Returns the loss, flat gradient and step of the
 * point found, and the closure evaluations it took.
 */
function strongWolfe(
  objFunc: ObjFunc,
  x: Tensor[],
  tIn: Scalar,
  d: Tensor,
  f: number,
  gIn: Tensor,
  gtd: Tensor,
  maxLs: number,
  c1 = 1e-4,
  c2 = 0.9,
  toleranceChange = 1e-9,
): [number, Tensor, Scalar, number] {
  const dNorm = d.abs().max();
  const g = gIn.clone('contiguousFormat');
  const [fNew, gNew] = objFunc(x, tIn, d);
  const p: WolfeProblem = { objFunc, x, d, f, gtd, maxLs, c1, c2, toleranceChange };
  const s: WolfeSearch = {
    step: tIn,
    fNew,
    gNew,
    gtdNew: gNew.dot(d),
    lsIter: 0,
    lsFuncEvals: 1,
    done: false,
    bracket: [],
    bracketF: [],
    bracketG: [],
    bracketGtd: [],
  };
  bracketPhase(p, s, g);
  const lowPos = zoomPhase(p, s, dNorm);
  return [s.bracketF[lowPos], s.bracketG[lowPos], s.bracket[lowPos], s.lsFuncEvals];
}

/** The group's hyperparameters, read once at the start of step(). */
interface LbfgsHyper {
  lr: number;
  maxIter: number;
  maxEval: number;
  toleranceGrad: number;
  toleranceChange: number;
  historySize: number;
  lineSearchFn: unknown;
}

/**
 * What L-BFGS remembers between iterations and steps (the state's d, t, old_dirs,
 * old_stps, ro, H_diag, prev_flat_grad, prev_loss), as step()'s working copy: read from
 * the state before the first iteration, written back after the last.
 */
interface LbfgsMemory {
  /** d: the search direction. */
  d?: Tensor;
  /** t: the step length along d. */
  t?: Scalar;
  /** old_dirs: the gradient changes y of the curvature pairs kept. */
  oldDirs?: Tensor[];
  /** old_stps: the parameter changes s of the curvature pairs kept. */
  oldStps?: Tensor[];
  /** ro: 1 / (y·s) of each pair. */
  ro?: Tensor[];
  /** H_diag: the scale of the initial inverse Hessian approximation, (y·s) / (y·y). */
  hDiag?: Scalar;
  prevFlatGrad?: Tensor;
  prevLoss?: number;
}

/** The memory of an iteration after the first: all of it but prev_loss is there. */
type LbfgsHistory = LbfgsMemory & Required<Omit<LbfgsMemory, 'prevLoss'>>;

/** Where one step() stands: the latest loss and flat gradient, iterations and evaluations. */
interface StepProgress {
  loss: number;
  flatGrad: Tensor;
  /** PyTorch's opt_cond: the gradient is within toleranceGrad of zero. */
  optCond: boolean;
  nIter: number;
  currentEvals: number;
}

function loadMemory(state: ParamState): LbfgsMemory {
  return {
    d: state.d as Tensor | undefined,
    t: state.t as Scalar | undefined,
    oldDirs: state.old_dirs as Tensor[] | undefined,
    oldStps: state.old_stps as Tensor[] | undefined,
    ro: state.ro as Tensor[] | undefined,
    hDiag: state.H_diag as Scalar | undefined,
    prevFlatGrad: state.prev_flat_grad as Tensor | undefined,
    prevLoss: state.prev_loss as number | undefined,
  };
}

function saveMemory(state: ParamState, mem: LbfgsMemory): void {
  state.d = mem.d as Tensor;
  state.t = mem.t as Scalar;
  state.old_dirs = mem.oldDirs as Tensor[];
  state.old_stps = mem.oldStps as Tensor[];
  state.ro = mem.ro as Tensor[];
  state.H_diag = mem.hDiag as Scalar;
  state.prev_flat_grad = mem.prevFlatGrad as Tensor;
  state.prev_loss = mem.prevLoss as number;
}

/** First-order optimality (PyTorch's opt_cond): every |gradient| is at most toleranceGrad. */
function isOptimal(flatGrad: Tensor, toleranceGrad: number): boolean {
  return flatGrad.abs().max().le(toleranceGrad).item() !== 0;
}

function assertHistory(mem: LbfgsMemory): asserts mem is LbfgsHistory {
  if (mem.d === undefined || mem.t === undefined || mem.oldDirs === undefined || mem.oldStps === undefined) {
    throw new TypeError('LBFGS state is missing its direction or history');
  }
  if (mem.ro === undefined || mem.hDiag === undefined || mem.prevFlatGrad === undefined) {
    throw new TypeError('LBFGS state is missing its history');
  }
}

/**
 * The history update: the last iteration's curvature pair, y (the gradient's change) and
 * s = t * d (the parameters'), is kept only when y·s > 1e-10, which keeps the inverse
 * Hessian approximation positive definite; past historySize pairs the oldest goes
 * (limited memory). A kept pair rescales the initial approximation: H_diag = y·s / y·y.
 */
function updateHistory(mem: LbfgsHistory, flatGrad: Tensor, historySize: number): void {
  const y = flatGrad.sub(mem.prevFlatGrad);
  const s = mulBy(mem.d, mem.t);
  const ys = y.dot(s);
  if (ys.gt(1e-10).item() !== 0) {
    if (mem.oldDirs.length === historySize) {
      // Shift the history by one (limited memory).
      mem.oldDirs.shift();
      mem.oldStps.shift();
      mem.ro.shift();
    }
    mem.oldDirs.push(y);
    mem.oldStps.push(s);
    mem.ro.push(ys.reciprocal().mul(1.0));
    // The scale of the initial Hessian approximation.
    mem.hDiag = ys.div(y.dot(y));
  }
}

/**
 * The two-loop recursion: the L-BFGS inverse Hessian approximation times -flatGrad, the
 * new direction. As PyTorch, in one buffer (q, scaled by H_diag into r, updated in place);
 * `al` is the state's al, the first loop's coefficients, which the second loop reads.
 */
function twoLoopDirection(mem: LbfgsHistory, flatGrad: Tensor, al: (Tensor | null)[]): Tensor {
  const { oldDirs, oldStps, ro } = mem;
  const numOld = oldDirs.length;
  const q = flatGrad.neg();
  for (let i = numOld - 1; i >= 0; i--) {
    const a = oldStps[i].dot(q).mul(ro[i]);
    al[i] = a;
    q.add_(oldDirs[i], { alpha: -a.item() });
  }
  // Multiply by the initial Hessian: r (= d) is the final direction.
  const r = mulBy(q, mem.hDiag);
  for (let i = 0; i < numOld; i++) {
    const beI = oldDirs[i].dot(r).mul(ro[i]);
    r.add_(oldStps[i], { alpha: (al[i] as Tensor).sub(beI).item() });
  }
  return r;
}

/**
 * The descent direction: steepest descent, with an empty history, on the state's first
 * iteration; later, the history update, then the two-loop recursion.
 */
function updateDirection(state: ParamState, mem: LbfgsMemory, flatGrad: Tensor, historySize: number): void {
  if (state.n_iter === 1) {
    mem.d = flatGrad.neg();
    mem.oldDirs = [];
    mem.oldStps = [];
    mem.ro = [];
    mem.hDiag = 1;
    return;
  }
  assertHistory(mem);
  updateHistory(mem, flatGrad, historySize);
  if (state.al === undefined) state.al = new Array(historySize).fill(null);
  mem.d = twoLoopDirection(mem, flatGrad, state.al as (Tensor | null)[]);
}

/**
 * The first guess of the step length: lr, but on the state's first iteration, whose
 * direction is the raw negative gradient, min(1, 1 / sum|g|) * lr, so that the first step
 * moves the parameters by at most lr in all.
 */
function initialStepLength(firstIteration: boolean, flatGrad: Tensor, lr: number): Scalar {
  return firstIteration ? mul(pyMin(1.0, div(1.0, flatGrad.abs().sum())), lr) : lr;
}

/** PyTorch's termination checks after an iteration, in its order. */
function shouldStop(pr: StepProgress, mem: LbfgsMemory, hp: LbfgsHyper): boolean {
  if (pr.nIter === hp.maxIter) return true;
  if (pr.currentEvals >= hp.maxEval) return true;
  if (pr.optCond) return true;
  // Lack of progress: no parameter moved by more than toleranceChange, or the loss barely changed.
  if (
    mulBy(mem.d as Tensor, mem.t as Scalar)
      .abs()
      .max()
      .le(hp.toleranceChange)
      .item() !== 0
  ) {
    return true;
  }
  return Math.abs(pr.loss - (mem.prevLoss as number)) < hp.toleranceChange;
}

export class LBFGS extends Optimizer {
  constructor(params: ParamsInput<LBFGSOptions>, options?: LBFGSOptions) {
    const opts = optimizerOptions('LBFGS', options, OPTIONS);
    const maxIter = opts.maxIter ?? 20;
    super(params, {
      lr: opts.lr ?? 1,
      maxIter,
      maxEval: opts.maxEval ?? Math.floor((maxIter * 5) / 4),
      toleranceGrad: opts.toleranceGrad ?? 1e-7,
      toleranceChange: opts.toleranceChange ?? 1e-9,
      historySize: opts.historySize ?? 100,
      lineSearchFn: opts.lineSearchFn ?? null,
    });
    if (this.paramGroups.length !== 1) {
      throw new RangeError("LBFGS doesn't support per-parameter options (parameter groups)");
    }
  }

  protected override validateGroup(g: ParamGroup): void {
    const lr = hyper(g, 'lr');
    if (!(lr >= 0)) throw new RangeError(`Invalid learning rate: ${lr}`);
    for (const k of ['maxIter', 'maxEval', 'toleranceGrad', 'toleranceChange', 'historySize']) hyper(g, k);
    const ls = g.lineSearchFn;
    if (ls !== null && ls !== undefined && ls !== 'strong_wolfe') {
      throw new RangeError(`LBFGS: only 'strong_wolfe' is supported as lineSearchFn, got ${String(ls)}`);
    }
  }

  /** LBFGS keeps one group: adding another is refused, as PyTorch's constructor refuses two. */
  override addParamGroup(group: Parameters<Optimizer['addParamGroup']>[0]): void {
    if (this.paramGroups.length >= 1) {
      throw new RangeError("LBFGS doesn't support per-parameter options (parameter groups)");
    }
    super.addParamGroup(group);
  }

  protected stepGroup(): void {
    throw new TypeError('LBFGS.step() needs a closure');
  }

  private get params(): Tensor[] {
    return this.paramGroups[0].params;
  }

  /** The gradients of all parameters as one flat tensor (zeros for a missing gradient). */
  private gatherFlatGrad(): Tensor {
    const views = this.params.map((p) => {
      const g = p.grad;
      return g === null ? t.zeros([p.numel()], { dtype: p.dtype, device: p.device }) : g.view([-1]);
    });
    return t.cat(views, 0);
  }

  /** p += stepSize * update (each parameter's slice of the flat update). */
  private addGrad(stepSize: Scalar, update: Tensor): void {
    const alpha = value(stepSize);
    let offset = 0;
    for (const p of this.params) {
      const numel = p.numel();
      p.add_(update.slice(0, offset, offset + numel).viewAs(p), { alpha });
      offset += numel;
    }
  }

  private directionalEvaluate(
    closure: () => unknown,
    x: Tensor[],
    step: Scalar,
    d: Tensor,
  ): [number, Tensor] {
    this.addGrad(step, d);
    const loss = lossValue(enableGrad(closure));
    const flatGrad = this.gatherFlatGrad();
    this.params.forEach((p, i) => {
      p.copy_(x[i]);
    });
    return [loss, flatGrad];
  }

  /**
   * One L-BFGS step: up to maxIter iterations, calling `closure` (with grad enabled) to
   * reevaluate the loss and gradients. Returns the loss of the first evaluation, as
   * PyTorch. That first loss belongs to the caller's scope; what later evaluations make
   * is freed when step() returns.
   */
  override step<L = unknown>(closure?: () => L): L | undefined {
    if (closure === undefined) throw new TypeError('LBFGS.step() needs a closure that returns the loss');
    const hp = this.hyperparameters();
    const state = this.stateOf(this.params[0]);
    state.func_evals ??= 0;
    state.n_iter ??= 0;

    // Evaluate the initial f(x) and df/dx, in the caller's scope (the loss is returned).
    const origLoss = enableGrad(closure);
    noGrad(() => t.tidy(() => this.runIterations(closure, origLoss, state, hp)));
    return origLoss;
  }

  /**
   * The group's hyperparameters, read once per step() as PyTorch does: a closure that
   * changes them affects the next step, not this one.
   */
  private hyperparameters(): LbfgsHyper {
    const group = this.paramGroups[0];
    return {
      lr: hyper(group, 'lr'),
      maxIter: hyper(group, 'maxIter'),
      maxEval: hyper(group, 'maxEval'),
      toleranceGrad: hyper(group, 'toleranceGrad'),
      toleranceChange: hyper(group, 'toleranceChange'),
      historySize: hyper(group, 'historySize'),
      lineSearchFn: group.lineSearchFn ?? null,
    };
  }

  /**
   * step()'s iterations, inside its tidy scope, from the first evaluation's loss; none if
   * the gradient is already optimal. Then the memory goes back into the state, which alone
   * outlives the scope.
   */
  private runIterations(closure: () => unknown, origLoss: unknown, state: ParamState, hp: LbfgsHyper): void {
    const loss = lossValue(origLoss);
    state.func_evals = (state.func_evals as number) + 1;
    const flatGrad = this.gatherFlatGrad();
    const optCond = isOptimal(flatGrad, hp.toleranceGrad);
    if (optCond) return;
    const pr: StepProgress = { loss, flatGrad, optCond, nIter: 0, currentEvals: 1 };

    const before = new Set(stateTensors(state));
    const mem = loadMemory(state);
    while (pr.nIter < hp.maxIter) {
      if (!this.iteration(closure, state, mem, pr, hp)) break;
    }
    saveMemory(state, mem);
    // What the state holds now outlives this scope; what it held and no longer does is freed.
    const after = stateTensors(state);
    for (const x of after) x.keep();
    const kept = new Set(after);
    for (const x of before) if (!kept.has(x)) x.dispose();
  }

  /**
   * One L-BFGS iteration: the direction, the step length's first guess, then the move
   * (by the line search, or a fixed step). Returns whether to go on.
   */
  private iteration(
    closure: () => unknown,
    state: ParamState,
    mem: LbfgsMemory,
    pr: StepProgress,
    hp: LbfgsHyper,
  ): boolean {
    pr.nIter += 1;
    state.n_iter = (state.n_iter as number) + 1;

    // The descent direction.
    updateDirection(state, mem, pr.flatGrad, hp.historySize);
    if (mem.prevFlatGrad === undefined) mem.prevFlatGrad = pr.flatGrad.clone('contiguousFormat');
    else mem.prevFlatGrad.copy_(pr.flatGrad);
    mem.prevLoss = pr.loss;

    // The step length: a first guess.
    mem.t = initialStepLength(state.n_iter === 1, pr.flatGrad, hp.lr);
    // The directional derivative; below tolerance, stop.
    const gtd = pr.flatGrad.dot(mem.d as Tensor);
    if (gtd.gt(-hp.toleranceChange).item() !== 0) return false;

    const lsFuncEvals =
      hp.lineSearchFn !== null
        ? this.lineSearchMove(closure, mem, pr, gtd, hp)
        : this.fixedStepMove(closure, mem, pr, hp);
    pr.currentEvals += lsFuncEvals;
    state.func_evals = (state.func_evals as number) + lsFuncEvals;

    // Check the conditions.
    return !shouldStop(pr, mem, hp);
  }

  /**
   * The strong-Wolfe move: the line search chooses t (and leaves the parameters where they
   * were), then the parameters move by t * d. Returns the closure evaluations it took.
   */
  private lineSearchMove(
    closure: () => unknown,
    mem: LbfgsMemory,
    pr: StepProgress,
    gtd: Tensor,
    hp: LbfgsHyper,
  ): number {
    const xInit = this.params.map((p) => p.clone('contiguousFormat'));
    const dir = mem.d as Tensor;
    const objFunc: ObjFunc = (x, s, dd) => this.directionalEvaluate(closure, x, s, dd);
    let lsFuncEvals: number;
    [pr.loss, pr.flatGrad, mem.t, lsFuncEvals] = strongWolfe(
      objFunc,
      xInit,
      mem.t as Scalar,
      dir,
      pr.loss,
      pr.flatGrad,
      gtd,
      hp.maxEval - pr.currentEvals,
    );
    this.addGrad(mem.t, dir);
    pr.optCond = isOptimal(pr.flatGrad, hp.toleranceGrad);
    return lsFuncEvals;
  }

  /**
   * No line search: the parameters move by the fixed step t * d, and the closure
   * reevaluates the loss and gradient, but not after the last iteration (in a stochastic
   * setting there is no use for it). Returns the closure evaluations it took.
   */
  private fixedStepMove(closure: () => unknown, mem: LbfgsMemory, pr: StepProgress, hp: LbfgsHyper): number {
    this.addGrad(mem.t as Scalar, mem.d as Tensor);
    if (pr.nIter === hp.maxIter) return 0;
    pr.loss = lossValue(enableGrad(closure));
    pr.flatGrad = this.gatherFlatGrad();
    pr.optCond = isOptimal(pr.flatGrad, hp.toleranceGrad);
    return 1;
  }
}

/** The tensors of one state, lists included. */
function stateTensors(s: Record<string, StateValue>): Tensor[] {
  const out: Tensor[] = [];
  const visit = (v: StateValue): void => {
    if (v instanceof t.Tensor) out.push(v);
    else if (Array.isArray(v)) for (const x of v) visit(x);
  };
  for (const v of Object.values(s)) visit(v);
  return out;
}
