// LR schedulers against PyTorch 2.13, from test/fixtures/optim/lr_scheduler.json (made by
// test/fixtures/optim/lr_scheduler.py): the lr of each param group after construction
// and after each of 30 steps, OneCycleLR's momentum / beta1, state dicts (PyTorch's
// keys and values), and resuming from a state dict mid-schedule.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import * as t from '../src/index.ts';
import {
  AdamW,
  lrScheduler,
  type Optimizer,
  optimizerStateDictFromPyTorch,
  optimizerStateDictToPyTorch,
  SGD,
  schedulerStateDictFromPyTorch,
  schedulerStateDictToPyTorch,
} from '../src/optim/index.ts';
import { assertClose } from './helpers/fixtures.ts';

const { CosineAnnealingLR, LinearLR, MultiStepLR, OneCycleLR, SequentialLR, StepLR } = lrScheduler;

// PyTorch computes in double precision; only libm rounding (cos) may differ.
const RTOL = 1e-12;
const ATOL = 1e-18;

interface Spec {
  type: string;
  kwargs: Record<string, unknown>;
}
interface Case {
  optimizer: 'SGD' | 'AdamW';
  base_lrs: number[];
  scheduler: Spec;
  steps: number;
  lrs: number[][];
  group_lrs: number[][];
  state_dict_at: number;
  state_dict: Record<string, unknown>;
  momentum?: number[][];
}
const cases = JSON.parse(
  readFileSync(new URL('./fixtures/optim/lr_scheduler.json', import.meta.url), 'utf8'),
) as Record<string, Case>;

function makeOptimizer(c: Case): Optimizer {
  const groups = c.base_lrs.map((lr, i) => ({ params: [t.zeros([i + 2]).requiresGrad_(true)], lr }));
  return c.optimizer === 'SGD' ? new SGD(groups, { momentum: 0.9 }) : new AdamW(groups);
}

const n = (v: unknown): number | undefined => v as number | undefined;

function build(opt: Optimizer, spec: Spec): lrScheduler.LRScheduler {
  const k = spec.kwargs;
  switch (spec.type) {
    case 'StepLR':
      return new StepLR(opt, k.step_size as number, { gamma: n(k.gamma) });
    case 'MultiStepLR':
      return new MultiStepLR(opt, k.milestones as number[], { gamma: n(k.gamma) });
    case 'CosineAnnealingLR':
      return new CosineAnnealingLR(opt, k.T_max as number, { etaMin: n(k.eta_min) });
    case 'LinearLR':
      return new LinearLR(opt, {
        startFactor: n(k.start_factor),
        endFactor: n(k.end_factor),
        totalIters: n(k.total_iters),
      });
    case 'SequentialLR':
      return new SequentialLR(
        opt,
        (k.schedulers as Spec[]).map((s) => build(opt, s)),
        k.milestones as number[],
      );
    case 'OneCycleLR':
      return new OneCycleLR(opt, k.max_lr as number | number[], {
        totalSteps: n(k.total_steps),
        epochs: n(k.epochs),
        stepsPerEpoch: n(k.steps_per_epoch),
        pctStart: n(k.pct_start),
        annealStrategy: k.anneal_strategy as 'cos' | 'linear' | undefined,
        threePhase: k.three_phase as boolean | undefined,
        divFactor: n(k.div_factor),
      });
    default:
      throw new Error(`unknown scheduler ${spec.type}`);
  }
}

function momenta(opt: Optimizer): number[] {
  return opt.paramGroups.map((g) =>
    Array.isArray(g.betas) ? (g.betas[0] as number) : (g.momentum as number),
  );
}

function check(name: string, c: Case, opt: Optimizer, sched: lrScheduler.LRScheduler, k: number): void {
  assertClose(sched.getLastLr(), c.lrs[k], RTOL, ATOL, `${name} step ${k} getLastLr`);
  assertClose(
    opt.paramGroups.map((g) => g.lr),
    c.group_lrs[k],
    RTOL,
    ATOL,
    `${name} step ${k} group lrs`,
  );
  if (c.momentum) assertClose(momenta(opt), c.momentum[k], RTOL, ATOL, `${name} step ${k} momentum`);
}

/** Compares a PyTorch-named state dict with PyTorch's, numbers with tolerance. */
function assertStateMatches(ours: unknown, theirs: unknown, label: string): void {
  if (typeof theirs === 'number') {
    assert.equal(typeof ours, 'number', `${label}: number`);
    assertClose([ours as number], [theirs], RTOL, ATOL, label);
  } else if (Array.isArray(theirs)) {
    assert.ok(Array.isArray(ours), `${label}: array`);
    assert.equal(ours.length, theirs.length, `${label}: length`);
    theirs.forEach((v, i) => {
      assertStateMatches(ours[i], v, `${label}[${i}]`);
    });
  } else if (theirs !== null && typeof theirs === 'object') {
    assert.ok(ours !== null && typeof ours === 'object', `${label}: object`);
    const o = ours as Record<string, unknown>;
    for (const [k, v] of Object.entries(theirs)) {
      // The phases are rebuilt by OneCycleLR's constructor and are not part of its state.
      if (k === '_schedule_phases') {
        assert.ok(!(k in o), `${label}: ${k} is left out`);
        continue;
      }
      assert.ok(k in o, `${label}: has ${k}`);
      assertStateMatches(o[k], v, `${label}.${k}`);
    }
    const extra = Object.keys(o).filter((k) => !(k in (theirs as object)));
    assert.deepEqual(extra, [], `${label}: keys PyTorch does not have`);
  } else {
    assert.equal(ours, theirs, label);
  }
}

for (const [name, c] of Object.entries(cases)) {
  test(`${name}: lr sequence matches PyTorch`, () => {
    const opt = makeOptimizer(c);
    const sched = build(opt, c.scheduler);
    check(name, c, opt, sched, 0);
    for (let k = 1; k <= c.steps; k++) {
      opt.step();
      sched.step();
      check(name, c, opt, sched, k);
      if (k === c.state_dict_at) {
        assertStateMatches(
          schedulerStateDictToPyTorch(sched.stateDict()),
          c.state_dict,
          `${name} state_dict`,
        );
      }
    }
  });

  test(`${name}: resuming from state dicts continues the same sequence`, () => {
    const opt = makeOptimizer(c);
    const sched = build(opt, c.scheduler);
    for (let k = 1; k <= c.state_dict_at; k++) {
      opt.step();
      sched.step();
    }
    // Through PyTorch's names and JSON, as a checkpoint would carry them.
    const optSd = JSON.parse(JSON.stringify(optimizerStateDictToPyTorch(opt.stateDict())));
    const schedSd = JSON.parse(JSON.stringify(schedulerStateDictToPyTorch(sched.stateDict())));
    // As PyTorch advises: build the scheduler first, then load the optimizer's state.
    const opt2 = makeOptimizer(c);
    const sched2 = build(opt2, c.scheduler);
    opt2.loadStateDict(optimizerStateDictFromPyTorch(optSd));
    sched2.loadStateDict(schedulerStateDictFromPyTorch(schedSd));
    check(`${name} resumed`, c, opt2, sched2, c.state_dict_at);
    for (let k = c.state_dict_at + 1; k <= c.steps; k++) {
      opt2.step();
      sched2.step();
      check(`${name} resumed`, c, opt2, sched2, k);
    }
  });
}

test('schedulers check their arguments', () => {
  const opt = new SGD([t.zeros([2]).requiresGrad_(true)], { lr: 0.1 });
  assert.throws(() => new LinearLR(opt, { startFactor: 0 }), /Starting multiplicative factor/);
  assert.throws(() => new LinearLR(opt, { endFactor: 1.5 }), /Ending multiplicative factor/);
  assert.throws(
    () => new SequentialLR(opt, [new StepLR(opt, 2)], [3]),
    /one more than the number of milestone/,
  );
  const other = new SGD([t.zeros([2]).requiresGrad_(true)], { lr: 0.1 });
  assert.throws(() => new SequentialLR(opt, [new StepLR(other, 2)], []), /same optimizer/);
  assert.throws(() => new OneCycleLR(opt, 1.0), /totalSteps OR/);
  assert.throws(() => new OneCycleLR(opt, [1.0, 2.0], { totalSteps: 10 }), /expected 1 values for maxLr/);
  const fresh = new SGD([t.zeros([2]).requiresGrad_(true)], { lr: 0.1 });
  assert.throws(() => new StepLR(fresh, 3, { lastEpoch: 5 }), /initialLr/);
  const oc = new OneCycleLR(fresh, 1.0, { totalSteps: 2 });
  oc.step();
  oc.step();
  assert.throws(() => oc.step(), /Tried to step 3 times/);
});

test('closed forms agree with the chainable forms', () => {
  const make = (): Optimizer => new SGD([t.zeros([2]).requiresGrad_(true)], { lr: 0.1 });
  const scheds = [
    new StepLR(make(), 4, { gamma: 0.5 }),
    new MultiStepLR(make(), [3, 7, 7], { gamma: 0.5 }),
    new LinearLR(make(), { startFactor: 0.25, totalIters: 6 }),
    new CosineAnnealingLR(make(), 9, { etaMin: 0.01 }),
  ];
  for (const s of scheds) {
    for (let k = 1; k <= 12; k++) {
      s.step();
      assertClose(s.getClosedFormLr!(), s.getLastLr(), 1e-12, 1e-15, `${s.constructor.name} step ${k}`);
    }
  }
});
