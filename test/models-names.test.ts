// torchvision's builder names: PyTorch programs pick a model by name (imagenet/main.py:
// `models.__dict__[args.arch]`, and the `--arch` choices are the lowercase callables of
// torchvision.models), so every builder tsddp has answers to its snake_case name too.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as t from '../src/index.ts';

const models = t.models as unknown as Record<string, unknown>;

test('each ViT builder is also exported under its torchvision name', () => {
  const pairs: [string, unknown][] = [
    ['vit_b_16', t.models.vitB16],
    ['vit_b_32', t.models.vitB32],
    ['vit_l_16', t.models.vitL16],
    ['vit_l_32', t.models.vitL32],
    ['vit_h_14', t.models.vitH14],
    ['vit_tiny', t.models.vitTiny],
  ];
  for (const [name, builder] of pairs) assert.equal(models[name], builder, name);
});

test("imagenet/main.py's model_names: the lowercase callables are the builders", () => {
  // model_names = sorted(name for name in models.__dict__ if name.islower()
  //                      and not name.startswith("__") and callable(models.__dict__[name]))
  const names = Object.keys(t.models)
    .filter((n) => n === n.toLowerCase() && !n.startsWith('_') && typeof models[n] === 'function')
    .sort();
  assert.deepEqual(names, [
    'gpt',
    'resnet101',
    'resnet152',
    'resnet18',
    'resnet34',
    'resnet50',
    'vit_b_16',
    'vit_b_32',
    'vit_h_14',
    'vit_l_16',
    'vit_l_32',
    'vit_tiny',
  ]);
});

test('a builder picked by its torchvision name builds the model', () => {
  t.manualSeed(0);
  const arch = 'vit_tiny';
  const build = models[arch] as (o: { numClasses?: number }) => t.models.VisionTransformer;
  using _scope = t.scope();
  const model = build({ numClasses: 7 });
  assert.ok(model instanceof t.models.VisionTransformer);
  assert.equal(model.numClasses, 7);
  // vitTiny's 2,693,578 parameters, less 3 classes' head rows (192 weights and a bias each).
  const n = model.parameters().reduce((s, p) => s + p.numel(), 0);
  assert.equal(n, 2_693_578 - 3 * 193);
});
