// Every LR scheduler's constructor takes PyTorch's positional arguments, an options
// object in camelCase or in PyTorch's spelling, or a mix (src/optim/lr-scheduler/args.ts).
// Each case of test/fixtures/optim/lr_scheduler.py is built in every form and must give
// the same lrs, to the bit, and PyTorch's; PyTorch's own signatures
// (test/fixtures/optim/lr_scheduler_signatures.py: names, order, defaults) decide the
// positional order and the defaults given explicitly. What Python refuses is refused
// with a TypeError naming the option.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as t from '../src/index.ts';
import { AdamW, lrScheduler, type Optimizer, SGD } from '../src/optim/index.ts';
import { assertUlps } from './helpers/fixtures.ts';
import { fixtureJson } from './helpers/live-fixture.ts';

interface Spec {
  type: string;
  kwargs: Record<string, unknown>;
  metrics?: number[];
  step_epochs?: number[];
}
interface Case {
  optimizer: 'SGD' | 'AdamW';
  base_lrs: number[];
  scheduler: Spec;
  steps: number;
  lrs: number[][];
}
interface Param {
  name: string;
  required: boolean;
  default: unknown;
}

const { data: cases } = fixtureJson<Record<string, Case>>('optim/lr_scheduler.py', 'optim/lr_scheduler.json');
const { data: sigs } = fixtureJson<{ torch: string; signatures: Record<string, Param[]> }>(
  'optim/lr_scheduler_signatures.py',
  'optim/lr_scheduler_signatures.json',
);
const SIGNATURES = sigs.signatures;

/** The functions lr_scheduler.py names in FUNCTIONS (as test/lr-scheduler.test.ts has them). */
const FUNCTIONS: Record<string, (x: number) => number> = {
  warmup: (e) => Math.min(1.0, (e + 1) / 6),
  inverse: (e) => 1.0 / (1.0 + 0.1 * e),
  shrink: (e) => (e % 3 ? 0.9 : 1.05),
  flat: () => 0.97,
  half_per_cycle: (x) => 1.0 / x,
};

/** tsddp's name of a PyTorch parameter: camelCase, with T_max / T_0 / T_mult as tMax / t0 / tMult. */
function tsName(torch: string): string {
  const special: Record<string, string> = { T_max: 'tMax', T_0: 't0', T_mult: 'tMult' };
  return special[torch] ?? torch.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase());
}

/**
 * The ways to call a constructor: 'tsddp' (the required arguments positional, the rest in
 * a camelCase options object), 'positional' (everything positional, PyTorch's order),
 * 'camel' / 'torch' (one options object in either spelling), 'defaults' ('torch' with
 * every omitted parameter given PyTorch's default explicitly).
 */
type Form = 'tsddp' | 'positional' | 'camel' | 'torch' | 'defaults';
const FORMS: Form[] = ['tsddp', 'positional', 'camel', 'torch', 'defaults'];

type Ctor = new (...args: unknown[]) => lrScheduler.LRScheduler;
const ctor = (type: string) => (lrScheduler as unknown as Record<string, Ctor>)[type];

/** The spec's arguments under PyTorch's names: functions resolved, child schedulers built (in `form`). */
function resolved(opt: Optimizer, spec: Spec, form: Form): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(spec.kwargs)) {
    if (k === 'schedulers') out[k] = (v as Spec[]).map((s) => build(opt, s, form));
    else if (k === 'lr_lambda' || k === 'scale_fn')
      out[k] = Array.isArray(v) ? v.map((f) => FUNCTIONS[f]) : FUNCTIONS[v as string];
    else out[k] = v;
  }
  return out;
}

function build(opt: Optimizer, spec: Spec, form: Form): lrScheduler.LRScheduler {
  const Cls = ctor(spec.type);
  const sig = SIGNATURES[spec.type];
  const kw: Record<string, unknown> = { ...resolved(opt, spec, form), optimizer: opt };
  if (form === 'defaults') {
    for (const p of sig) if (!p.required && !(p.name in kw)) kw[p.name] = p.default;
  }
  const optimizerFirst = sig[0].name === 'optimizer';
  const camel = (o: Record<string, unknown>) =>
    Object.fromEntries(Object.entries(o).map(([k, v]) => [tsName(k), v]));
  /** The arguments in PyTorch's order up to the last one given, optimizer included. */
  const positional = () => {
    const last = Math.max(...sig.map((p, i) => (p.name in kw ? i : -1)));
    return sig.slice(0, last + 1).map((p) => kw[p.name]);
  };
  /** kw as one options object (the optimizer apart, except for ChainedScheduler). */
  const asOptions = (o: Record<string, unknown>) => {
    if (!optimizerFirst) return new Cls(o);
    const { optimizer, ...rest } = o;
    return new Cls(optimizer, rest);
  };
  switch (form) {
    case 'positional':
      return new Cls(...positional());
    case 'torch':
    case 'defaults':
      return asOptions(kw);
    case 'camel':
      return asOptions(camel(kw));
    case 'tsddp': {
      const req = sig.filter((p) => p.required).map((p) => kw[p.name]);
      const rest = Object.fromEntries(
        Object.entries(kw).filter(([k]) => !sig.find((p) => p.name === k)?.required),
      );
      return new Cls(...req, camel(rest));
    }
  }
}

function makeOptimizer(c: Case): Optimizer {
  const groups = c.base_lrs.map((lr, i) => ({ params: [t.zeros([i + 2]).requiresGrad_(true)], lr }));
  return c.optimizer === 'SGD' ? new SGD(groups, { momentum: 0.9 }) : new AdamW(groups);
}

/** getLastLr(), the group lrs and momenta after construction and after each step. */
function run(c: Case, form: Form): number[][][] {
  const opt = makeOptimizer(c);
  const sched = build(opt, c.scheduler, form);
  const snap = () => [
    sched.getLastLr(),
    opt.paramGroups.map((g) => g.lr),
    opt.paramGroups.map((g) => (Array.isArray(g.betas) ? (g.betas[0] as number) : (g.momentum as number))),
  ];
  const out = [snap()];
  for (let k = 1; k <= c.steps; k++) {
    opt.step();
    const s = c.scheduler;
    if (s.metrics) sched.step(s.metrics[k - 1]);
    else if (s.step_epochs) sched.step(s.step_epochs[k - 1]);
    else sched.step();
    out.push(snap());
  }
  return out;
}

test("PyTorch's signatures list every scheduler tsddp has", () => {
  assert.equal(sigs.torch, t.buildInfo().torchVersion.split('+')[0]);
  const ours = Object.keys(lrScheduler).filter((k) => k !== 'LRScheduler');
  assert.deepEqual(Object.keys(SIGNATURES).sort(), ours.sort());
  const covered = new Set<string>();
  const walk = (s: Spec) => {
    covered.add(s.type);
    for (const c of (s.kwargs.schedulers as Spec[] | undefined) ?? []) walk(c);
  };
  for (const c of Object.values(cases)) walk(c.scheduler);
  assert.deepEqual([...covered].sort(), ours.sort(), 'every scheduler has a fixture case');
});

for (const [name, c] of Object.entries(cases)) {
  test(`${name}: every argument form gives the same lrs, PyTorch's`, () => {
    const reference = run(c, 'tsddp');
    assertUlps(
      reference.flatMap((r) => r[0]),
      c.lrs.flat(),
      0,
      `${name} lrs against PyTorch`,
      'float64',
    );
    for (const form of FORMS.slice(1)) assert.deepEqual(run(c, form), reference, `${name}: ${form} form`);
  });
}

/** A fresh optimizer and values for each scheduler's required parameters (PyTorch's names). */
function required(type: string): { opt: Optimizer; kw: Record<string, unknown> } {
  const opt = new SGD([t.zeros([2]).requiresGrad_(true)], { lr: 0.1, momentum: 0.9 });
  const child = () => new lrScheduler.ExponentialLR(opt, 0.9);
  const values: Record<string, unknown> = {
    step_size: 3,
    milestones: type === 'SequentialLR' ? [2] : [2, 4],
    gamma: 0.9,
    T_max: 10,
    T_0: 5,
    base_lr: 0.01,
    max_lr: 0.1,
    lr_lambda: FUNCTIONS.flat,
    schedulers: type === 'SequentialLR' ? [child(), child()] : [child()],
  };
  const kw: Record<string, unknown> = {};
  for (const p of SIGNATURES[type]) if (p.required && p.name !== 'optimizer') kw[p.name] = values[p.name];
  // OneCycleLR needs a length too, which PyTorch checks past its signature.
  if (type === 'OneCycleLR') kw.total_steps = 10;
  return { opt, kw };
}

/** `new type(...)` with the required values and `extra` in one options object. */
function withOptions(type: string, extra: Record<string, unknown>): () => unknown {
  const { opt, kw } = required(type);
  const Cls = ctor(type);
  return SIGNATURES[type][0].name === 'optimizer'
    ? () => new Cls(opt, { ...kw, ...extra })
    : () => new Cls({ ...kw, ...extra });
}

const typeError = (re: RegExp) => (e: unknown) => e instanceof TypeError && re.test(e.message);

for (const type of Object.keys(SIGNATURES)) {
  test(`${type}: an unknown, doubled or missing option is a TypeError naming it`, () => {
    withOptions(type, {})(); // the required options alone construct it
    assert.throws(
      withOptions(type, { bogus: 1 }),
      typeError(new RegExp(`^${type}: unknown option 'bogus'; it takes `)),
    );
    const sig = SIGNATURES[type].filter((p) => p.name !== 'optimizer' || type === 'ChainedScheduler');
    // Every parameter is named in the refusal under both spellings.
    try {
      withOptions(type, { bogus: 1 })();
    } catch (e) {
      for (const p of sig) assert.ok((e as Error).message.includes(p.name), `${type}: lists ${p.name}`);
      for (const p of sig)
        assert.ok((e as Error).message.includes(tsName(p.name)), `${type}: lists ${tsName(p.name)}`);
    }
    for (const p of sig.filter((q) => q.required)) {
      const { kw } = required(type);
      const missing = Object.fromEntries(Object.entries(kw).filter(([k]) => k !== p.name));
      const Cls = ctor(type);
      const { opt } = required(type);
      const call = type === 'ChainedScheduler' ? () => new Cls(missing) : () => new Cls(opt, missing);
      assert.throws(
        call,
        typeError(new RegExp(`missing required option '${tsName(p.name)}'`)),
        `${type} ${p.name}`,
      );
    }
    const renamed = sig.find((p) => tsName(p.name) !== p.name && !p.required);
    if (renamed !== undefined) {
      const v = renamed.default ?? 1;
      assert.throws(
        withOptions(type, { [renamed.name]: v, [tsName(renamed.name)]: v }),
        typeError(new RegExp(`got ${tsName(renamed.name)} twice`)),
      );
    }
  });
}

test('positional and option refusals: twice, too many, options not last, near misses', () => {
  const opt = new SGD([t.zeros([2]).requiresGrad_(true)], { lr: 0.1, momentum: 0.9 });
  const { StepLR, CosineAnnealingWarmRestarts, CosineAnnealingLR, CyclicLR } = lrScheduler;
  assert.throws(
    () => new StepLR(opt, 3, { stepSize: 3 } as never),
    typeError(/^StepLR: got stepSize twice \(as argument 2, and as option 'stepSize'\)$/),
  );
  assert.throws(
    () => new (StepLR as unknown as Ctor)(opt, 3, 0.5, -1, 7),
    typeError(
      /^StepLR: takes at most 3 arguments after the optimizer \(stepSize, gamma, lastEpoch\), got 4$/,
    ),
  );
  assert.throws(
    () => new (StepLR as unknown as Ctor)(opt, { stepSize: 3 }, 0.5),
    typeError(/options object must be the last argument \(it is argument 2\)/),
  );
  assert.throws(
    () => new CosineAnnealingWarmRestarts(opt, { T0: 10 } as never),
    typeError(/unknown option 'T0' \(did you mean 't0'\?\)/),
  );
  assert.throws(() => new CosineAnnealingLR(opt, { TMax: 10 } as never), typeError(/did you mean 'tMax'/));
  assert.throws(
    () => new CosineAnnealingLR(opt, { tMax: 10, T_max: 10 } as never),
    typeError(/got tMax twice/),
  );
  // The forms the scheduler docs show, which used to throw or give NaN.
  const a = new CosineAnnealingWarmRestarts(opt, { T_0: 10 });
  const b = new CosineAnnealingWarmRestarts(opt, { t0: 10, tMult: 1, etaMin: 0 });
  assert.equal(a.t0, 10);
  assert.deepEqual(b.getLastLr(), a.getLastLr());
  const cyc = new CyclicLR(opt, { baseLr: 0.01, maxLr: 0.1, stepSizeUp: 4 });
  cyc.step();
  assert.deepEqual(cyc.getLastLr(), [0.01 + (0.1 - 0.01) * 0.25]);
  assert.equal(new StepLR(opt, { stepSize: 30 }).stepSize, 30);
  // undefined and null leave an option to its default (Python's None for OneCycleLR's total_steps).
  const oc = new lrScheduler.OneCycleLR(opt, {
    maxLr: 1,
    totalSteps: null,
    epochs: 2,
    stepsPerEpoch: 5,
  } as never);
  assert.equal(oc.totalSteps, 10);
});
