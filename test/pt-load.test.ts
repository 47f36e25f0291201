// t.load against PyTorch's own files (test/fixtures/pt/make.py, PyTorch 2.13): a ResNet-18
// state dict in torchvision's layout, an SGD state dict and imagenet/main.py's checkpoint
// load into tsddp's model, optimizer and scheduler; every kind of value loads as
// PyTorch holds it (test/helpers/pt-describe.ts); views and tied weights share memory;
// the legacy format reads the same; tensors of uint16/32/64, float8 and complex load
// (test/dtypes-more.test.ts checks their values); globals outside the data set and other
// opcodes are refused with typed errors, before any tensor is made.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { SafetensorsError, safetensors } from '../src/checkpoint/index.ts';
import { native } from '../src/core/native.ts';
import * as t from '../src/index.ts';
import { asJavaScriptSees, describe as describeValue } from './helpers/pt-describe.ts';
import { PT_FIXTURES, ptFixtureDirs, tensorsIn } from './helpers/pt-fixtures.ts';

const { dirs, cleanup } = ptFixtureDirs();
after(cleanup);

type Obj = Record<string, unknown>;
const disposeValue = (v: unknown) => {
  for (const x of tensorsIn(v)) if (x instanceof t.Tensor && !x.isDisposed) x.dispose();
};
const bytes = (x: unknown) => Buffer.from((x as t.Tensor).toBytes()).toString('hex');
const tinyResNet = () => t.models.resnet18({ widthMultiplier: 1 / 16, numClasses: 10 });

for (const { dir, why } of dirs) {
  describe(`PyTorch's files (${why})`, () => {
    const expected = JSON.parse(readFileSync(join(dir, 'expected.json'), 'utf8')) as Obj;

    test('every file loads as PyTorch holds it: values, dtypes, shapes, strides, shared storages', async () => {
      assert.deepEqual(Object.keys(expected).sort(), [
        'imagenet_checkpoint',
        'resnet_state_dict',
        'sgd_state_dict',
        'tensor_root',
        'values',
        'values_legacy',
      ]);
      for (const [name, want] of Object.entries(expected)) {
        const before = t.memory().tensors;
        const v = await t.load(join(dir, `${name}.pt`));
        assert.deepEqual(describeValue(v), asJavaScriptSees(want), name);
        disposeValue(v);
        assert.equal(t.memory().tensors, before, `${name}: every tensor made was handed out`);
      }
    });

    test("a torchvision-layout ResNet-18 state dict, SGD's and imagenet/main.py's checkpoint load into tsddp", async () => {
      const ckpt = await t.load<Obj>(join(dir, 'imagenet_checkpoint.pt'));
      assert.equal(ckpt.epoch, 3);
      assert.equal(ckpt.arch, 'resnet18');
      const best = ckpt.best_acc1 as t.Tensor;
      assert.deepEqual([best.shape, best.item()], [[], 12.5]);
      const sd = ckpt.state_dict as Record<string, t.Tensor>;
      assert.ok(t.serialization.isOrderedDict(sd));
      const model = tinyResNet();
      model.loadStateDict(sd);
      const mine = model.stateDict();
      for (const k of [
        'conv1.weight',
        'layer2.0.downsample.1.running_var',
        'fc.bias',
        'bn1.num_batches_tracked',
      ])
        assert.equal(bytes(mine[k]), bytes(sd[k]), k);
      const opt = new t.optim.SGD(model.parameters(), { lr: 0.1, momentum: 0.9, weightDecay: 1e-4 });
      const pt = ckpt.optimizer as t.optim.PyTorchOptimizerStateDict;
      assert.deepEqual(Object.keys(pt.state).length, 62);
      opt.loadStateDict(t.optim.optimizerStateDictFromPyTorch(pt));
      const p0 = model.parameters()[0];
      assert.equal(bytes(opt.state.get(p0)?.momentum_buffer), bytes(pt.state[0].momentum_buffer));
      assert.deepEqual(opt.paramGroups[0].lr, 0.1);
      const sched = new t.optim.lrScheduler.StepLR(opt, { stepSize: 30, gamma: 0.1 });
      sched.loadStateDict(t.optim.schedulerStateDictFromPyTorch(ckpt.scheduler as Record<string, unknown>));
      assert.equal(sched.lastEpoch, 3);
      disposeValue(ckpt);
    });
  });
}

describe('which JavaScript value each Python value becomes (values.ts)', () => {
  const load = () => t.load<Obj>(join(PT_FIXTURES, 'values.pt'));

  test('views, tied weights and a repeated tensor share memory as in PyTorch', async () => {
    const v = await load();
    const views = v.views as Record<string, t.Tensor>;
    for (const k of ['slice', 'grid', 'transposed', 'strided', 'column'])
      assert.ok(native.sameStorage(views.base.h, views[k].h), k);
    views.base.add_(1);
    assert.deepEqual(views.slice.toArray(), [0.875, 1, 1.125, 1.25]);
    assert.deepEqual(views.expanded.stride(), [0, 0]);
    const tied = v.tied as Record<string, t.Tensor>;
    assert.ok(native.sameStorage(tied['embed.weight'].h, tied['head.weight'].h));
    assert.notEqual(tied['embed.weight'], tied['head.weight']);
    const same = v.same_object as t.Tensor[];
    assert.equal(same[0], same[1]);
    assert.equal((v.parameter as t.Tensor).requiresGrad, true);
    assert.equal((v.scalar as t.Tensor).item(), 2.5);
    assert.deepEqual((v.empty as t.Tensor).shape, [0, 3]);
    disposeValue(v);
  });

  test('dicts: a plain object where it keeps keys and order, else a Map; OrderedDicts are marked', async () => {
    const v = await load();
    assert.deepEqual(Object.entries(v.int_keys as Obj), [
      ['0', 'a'],
      ['1', 'b'],
      ['7', 'c'],
    ]);
    assert.ok(!(v.int_keys instanceof Map));
    assert.deepEqual(
      [...(v.unordered_int_keys as Map<unknown, unknown>)],
      [
        [2, 'x'],
        [1, 'y'],
      ],
    );
    assert.deepEqual(
      [...(v.index_str_keys as Map<unknown, unknown>)],
      [
        ['0', 'zero'],
        ['x', 1],
      ],
    );
    assert.deepEqual(
      [...(v.str_then_int as Map<unknown, unknown>)],
      [
        ['s', 1],
        [3, 2],
      ],
    );
    assert.deepEqual([...(v.other_keys as Map<unknown, unknown>).keys()], [1.5, true, null, -1, 2n ** 70n]);
    assert.equal(Object.getPrototypeOf(v), Object.prototype);
    assert.ok(Object.hasOwn(v, '__proto__'));
    const proto = Object.getOwnPropertyDescriptor(v, '__proto__')?.value as Obj;
    assert.deepEqual(Object.entries(proto), [['__proto__', 'a key, not a prototype']]);
    assert.ok(t.serialization.isOrderedDict(v.odict));
    assert.deepEqual(Object.keys(v.odict as Obj), ['b', 'a']);
    assert.deepEqual(t.serialization.orderedDictAttributes(v.odict), {});
    assert.deepEqual(t.serialization.orderedDictAttributes(v.odict_attrs), { note: 'attrs are kept' });
    assert.ok(!t.serialization.isOrderedDict(v.int_keys));
    disposeValue(v);
  });

  test('tuples and torch.Size are frozen arrays; ints past 2^53 are bigints; floats keep -0, NaN, ±inf', async () => {
    const v = await load();
    assert.ok(Object.isFrozen(v.tuple) && Object.isFrozen((v.tuple as unknown[])[2]));
    assert.deepEqual(v.size, [2, 3]);
    assert.ok(Object.isFrozen(v.size) && !Object.isFrozen(v.long_list));
    const ints = v.ints as unknown[];
    assert.equal(ints[10], 2 ** 53 - 1);
    assert.deepEqual(ints.slice(12), [2n ** 53n, -(2n ** 63n), 2n ** 100n, -(2n ** 100n)]);
    const floats = v.floats as number[];
    assert.ok(Object.is(floats[1], -0) && Number.isNaN(floats[6]) && floats[4] === Infinity);
    assert.deepEqual(v.strings, ['', 'ascii', 'ünïcödé ✓', '\u{1f600}', 'a\nb', '__proto__']);
    assert.equal((v.long_list as number[]).length, 2500);
    assert.equal(Object.keys(v.big_dict as Obj).length, 1500);
    disposeValue(v);
  });

  test('loads() reads bytes held in memory as load() reads the file', async () => {
    const file = join(PT_FIXTURES, 'tensor_root.pt');
    const a = await t.load<t.Tensor>(file);
    const b = t.serialization.loads<t.Tensor>(readFileSync(file));
    assert.deepEqual([a.toArray(), a.stride()], [[2, 4, 6], [2]]);
    assert.deepEqual(describeValue(b), describeValue(a));
    a.dispose();
    b.dispose();
  });
});

describe('uint16, uint32, uint64, float8_e4m3fn, float8_e5m2, complex64 and complex128 load', () => {
  // make.py saves {'ok': torch.ones(2), 'x': torch.zeros(3, dtype=torch.<dtype>)}: the
  // first five by _rebuild_tensor_v3 of an UntypedStorage, complex by its typed storage.
  for (const dtype of [
    'uint16',
    'uint32',
    'uint64',
    'float8_e4m3fn',
    'float8_e5m2',
    'complex64',
    'complex128',
  ] as const)
    test(`a tensor of torch.${dtype}`, async () => {
      const v = await t.load<Record<string, t.Tensor>>(join(PT_FIXTURES, `dtype_${dtype}.pt`));
      assert.deepEqual(v.ok.toArray(), [1, 1]);
      assert.equal(v.x.dtype, dtype);
      assert.deepEqual(v.x.shape, [3]);
      assert.equal(bytes(v.x), '00'.repeat(3 * v.x.elementSize()));
      disposeValue(v);
    });
});

describe('refused, with a typed error naming what is at fault, before any tensor is made', () => {
  const refused = async (file: string, code: string, message: RegExp) => {
    const before = t.memory().tensors;
    await assert.rejects(t.load(join(PT_FIXTURES, file)), (e: unknown) => {
      assert.ok(e instanceof t.SerializationError && e instanceof t.TsddpError, String(e));
      assert.equal(e.code, code, e.message);
      assert.match(e.message, message);
      assert.ok(e.message.startsWith(join(PT_FIXTURES, file)));
      return true;
    });
    assert.equal(t.memory().tensors, before);
  };

  test('a whole module (torch.save(model)): its class is a global outside the data set', () =>
    refused('refused_module.pt', 'PICKLE_GLOBAL', /global torch\.nn\.modules\.linear\.Linear;.*state_dict/));
  test('bytes and sets (their constructors are globals)', async () => {
    await refused('refused_bytes.pt', 'PICKLE_GLOBAL', /global _codecs\.encode\b/);
    await refused('refused_set.pt', 'PICKLE_GLOBAL', /global builtins\.set\b/);
  });
  test('pickle protocol 4 (its FRAME opcode is outside the set)', () =>
    refused('refused_protocol4.pt', 'PICKLE_OPCODE', /opcode FRAME \(0x95\)/));

  test('the safetensors and checkpoint readers, offered a .pt, point to t.load', async () => {
    await assert.rejects(safetensors.loadFile(join(PT_FIXTURES, 'values.pt')), (e: unknown) => {
      assert.ok(e instanceof SafetensorsError && e.code === 'PICKLE');
      assert.match(e.message, /never unpickles.*`await t\.load\(path\)` reads the tensors/);
      return true;
    });
  });
});
