// torch.optim.swa_utils against PyTorch (test/fixtures/swa/make.py): AveragedModel's weights
// after each update (SWA, EMA in both function forms, the SWA list form, with and without
// buffers) and its state-dict keys, SWALR's learning rates and state keys, and update_bn's
// running statistics.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as t from '../src/index.ts';
import { assertUlps } from './helpers/fixtures.ts';
import { fixtureJson } from './helpers/live-fixture.ts';

type State = Record<string, number[]>;
interface Fixture {
  states: State[];
  averaged: Record<string, State[]>;
  swalr: Record<string, { lrs: number[][]; state_keys: string[] }>;
  update_bn: { inputs: number[][]; state: State; training: boolean; momentum: number };
}
const { data: f, live } = fixtureJson<Fixture>('swa/make.py', 'swa/swa.json');
/** Zero when PyTorch ran on this CPU; a stored fixture may differ by a kernel's last bit. */
const ULPS = live ? 0 : 1;
const { swaUtils } = t.optim;

function net(): t.nn.Module {
  const { nn } = t;
  return new nn.Sequential(new nn.Linear(3, 4), new nn.BatchNorm1d(4), new nn.ReLU(), new nn.Linear(4, 2));
}

function load(m: t.nn.Module, s: State): void {
  const own = m.stateDict();
  const dict: Record<string, t.Tensor> = {};
  for (const [k, v] of Object.entries(s))
    dict[k] = t.tensor(v, { dtype: own[k].dtype }).reshape(own[k].shape);
  m.loadStateDict(dict);
}

function assertState(actual: t.nn.Module, expected: State, label: string): void {
  const sd = actual.stateDict();
  assert.deepEqual(Object.keys(sd), Object.keys(expected), `${label}: state-dict keys`);
  for (const [k, v] of Object.entries(expected)) {
    const got = sd[k].flatten().toArray() as number[];
    if (sd[k].dtype === 'int64') assert.deepEqual(got, v, `${label}: ${k}`);
    else assertUlps(got, v, ULPS, `${label}: ${k}`);
  }
}

const VARIANTS: Record<string, t.optim.swaUtils.AveragedModelOptions> = {
  swa: {},
  swa_buffers: { useBuffers: true },
  ema_multi: { multiAvgFn: swaUtils.getEmaMultiAvgFn(0.9) },
  ema_avg: { avgFn: swaUtils.getEmaAvgFn(0.9), useBuffers: true },
  swa_multi: { multiAvgFn: swaUtils.getSwaMultiAvgFn() },
};

test("AveragedModel: SWA and EMA averages are PyTorch's after every update, keys included", () => {
  for (const [name, opts] of Object.entries(VARIANTS)) {
    const m = net();
    load(m, f.states[0]);
    const avg = new swaUtils.AveragedModel(m, opts);
    f.states.forEach((s, i) => {
      load(m, s);
      avg.updateParameters(m);
      assertState(avg, f.averaged[name][i], `${name} after update ${i + 1}`);
    });
    // The average is a copy: the model's own weights are untouched by it.
    assert.notEqual(avg.module, m);
    assert.deepEqual(avg.forward(t.ones([2, 3])).shape, [2, 2], 'forward runs the averaged module');
  }
});

test('AveragedModel refuses an option it does not know', () => {
  assert.throws(() => new swaUtils.AveragedModel(net(), { decay: 0.9 } as never), /unknown option 'decay'/);
});

test("SWALR: PyTorch's learning rates (cos, linear; anneal over 0 or 3 epochs; two groups) and state keys", () => {
  for (const [key, want] of Object.entries(f.swalr)) {
    const [strategy, epochs] = key.split('_');
    const p1 = t.zeros([1]).requiresGrad_();
    const p2 = t.zeros([1]).requiresGrad_();
    const opt = new t.optim.SGD(
      [
        { params: [p1], lr: 0.1 },
        { params: [p2], lr: 0.4 },
      ],
      { lr: 0.1 },
    );
    const sched = new swaUtils.SWALR(opt, [0.05, 0.01], {
      annealEpochs: Number(epochs),
      annealStrategy: strategy as 'cos' | 'linear',
    });
    const lrs = [opt.paramGroups.map((g) => g.lr)];
    for (let i = 0; i < 6; i++) {
      opt.step();
      sched.step();
      lrs.push(opt.paramGroups.map((g) => g.lr));
    }
    assert.deepEqual(lrs, want.lrs, key);
    assert.deepEqual(
      Object.keys(t.optim.schedulerStateDictToPyTorch(sched.stateDict())),
      want.state_keys,
      key,
    );
  }
  const opt = new t.optim.SGD([t.zeros([1]).requiresGrad_()], { lr: 0.1 });
  assert.throws(
    () => new swaUtils.SWALR(opt, 0.05, { annealStrategy: 'exp' as never }),
    /one of 'cos' or 'linear'/,
  );
  assert.throws(() => new swaUtils.SWALR(opt, 0.05, { annealEpochs: -1 }), /equal or greater than 0/);
  assert.throws(
    () => new swaUtils.SWALR(opt, [0.05, 0.01]),
    /2 values for swaLr, but the optimizer has 1 groups/,
  );
});

test("updateBn: one pass recomputes BatchNorm's statistics as PyTorch's update_bn, then restores mode and momentum", async () => {
  const m = net();
  load(m, f.states[f.states.length - 1]);
  m.eval();
  const loader = f.update_bn.inputs.map((x) => [t.tensor(x).reshape([5, 3]), t.zeros([5])]);
  await swaUtils.updateBn(loader, m);
  assertState(m, f.update_bn.state, 'update_bn');
  assert.equal(m.training, f.update_bn.training);
  assert.equal(((m as t.nn.Sequential).get(1) as t.nn.BatchNorm1d).momentum, f.update_bn.momentum);
  await assert.rejects(swaUtils.updateBn([{ x: 1 }], m), /pass \{ input: \(batch\) => tensor \}/);
});
