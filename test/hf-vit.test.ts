// VisionTransformer.fromPretrained / savePretrained against transformers'
// ViTForImageClassification: a tiny random one (test/fixtures/hf/vit.py) made live where
// .venv has transformers and tsddp's torch, else the committed folder. tsddp computes
// attention with torchvision's stacked in_proj and transformers with three projections, so
// the logits agree to float rounding (1e-5), not to the bit. savePretrained's folder is
// loaded by transformers itself where it is installed. TSDDP_FIXTURES=stored forces the
// committed folder (test/helpers/live-fixture.ts).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { REPO_ROOT } from '../src/benchmark/reference.ts';
import * as t from '../src/index.ts';
import { hfFixture, PYTHON, transformersMissing, withConfig } from './helpers/hf-fixture.ts';

const { VisionTransformer, PretrainedError } = t.models;
const SCRIPT = join(REPO_ROOT, 'test/fixtures/hf/vit.py');
const tmp = mkdtempSync(join(tmpdir(), 'tsddp-hf-vit-'));
after(() => rmSync(tmp, { recursive: true, force: true }));

const missing = transformersMissing();
const FIXTURE = hfFixture('vit', tmp, missing);

function assertLogits(actual: t.Tensor, expected: t.Tensor, what: string): void {
  assert.deepEqual(actual.shape, expected.shape, what);
  const diff = actual.sub(expected).abs().max().item();
  assert.ok(diff <= 1e-5, `${what}: max |diff| ${diff}`);
}

const logitsOf = (m: InstanceType<typeof VisionTransformer>, x: t.Tensor): t.Tensor => {
  m.eval();
  return t.noGrad(() => m.forward(x));
};

test("fromPretrained: transformers' logits on a ViTForImageClassification folder", async () => {
  const { pixel_values, logits } = await t.safetensors.loadFile(join(FIXTURE, 'logits.safetensors'));
  const model = await VisionTransformer.fromPretrained(join(FIXTURE, 'model'));
  assert.deepEqual(
    [
      model.imageSize,
      model.patchSize,
      model.numLayers,
      model.numHeads,
      model.hiddenDim,
      model.mlpDim,
      model.numClasses,
    ],
    [32, 8, 2, 2, 16, 32, 5],
  );
  assert.equal(model.layerNormEps, 1e-12);
  assertLogits(logitsOf(model, pixel_values), logits, 'logits');
});

test('savePretrained: fromPretrained reads it back exactly, and transformers loads it to the same logits', async (tc) => {
  t.manualSeed(4);
  const model = new VisionTransformer({
    imageSize: 32,
    patchSize: 8,
    numLayers: 2,
    numHeads: 2,
    hiddenDim: 16,
    mlpDim: 24,
    numClasses: 3,
  });
  t.noGrad(() => t.nn.init.normal_((model.heads.get(-1) as t.nn.Linear).weight, 0, 0.2));
  const dir = join(tmp, 'saved');
  await model.savePretrained(dir);
  const back = await VisionTransformer.fromPretrained(dir);
  assert.equal(back.layerNormEps, 1e-6, "torchvision's epsilon travels in config.json");
  const mine = model.stateDict();
  for (const [k, v] of Object.entries(back.stateDict())) assert.ok(v.equal(mine[k]), k);
  const x = t.randn([2, 3, 32, 32]);
  const ours = logitsOf(model, x);
  if (missing !== null) {
    tc.diagnostic(`transformers' side not run: ${missing}`);
    return;
  }
  const io = join(tmp, 'io.safetensors');
  await t.safetensors.saveFile({ pixel_values: x }, io);
  const r = spawnSync(PYTHON, [SCRIPT, '--logits', dir, io], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  assertLogits(ours, (await t.safetensors.loadFile(io)).logits, 'transformers on the saved folder');
});

test('what the ViT cannot honour is a PretrainedError naming the file and the field', async () => {
  const edit = (name: string, change: (c: Record<string, unknown>) => void): string =>
    withConfig(join(FIXTURE, 'model'), join(tmp, name), change);
  const refused = async (dir: string, pattern: RegExp): Promise<void> => {
    await assert.rejects(
      VisionTransformer.fromPretrained(dir),
      (e) => e instanceof PretrainedError && pattern.test(e.message),
    );
  };
  await refused(
    edit('deit', (c) => (c.model_type = 'deit')),
    /model_type="deit"/,
  );
  await refused(
    edit('relu', (c) => (c.hidden_act = 'relu')),
    /hidden_act="relu": torchvision's ViT MLP uses the exact GELU/,
  );
  await refused(
    edit('grey', (c) => (c.num_channels = 1)),
    /num_channels=1/,
  );
  await refused(
    edit('noqkv', (c) => (c.qkv_bias = false)),
    /qkv_bias=false/,
  );
  await refused(
    edit('deeper', (c) => (c.num_hidden_layers = 3)),
    /no vit\.encoder\.layer\.2\.layernorm_before\.weight/,
  );
  const rep = new VisionTransformer({
    imageSize: 32,
    patchSize: 8,
    numLayers: 1,
    numHeads: 2,
    hiddenDim: 16,
    mlpDim: 16,
    representationSize: 8,
  });
  await assert.rejects(rep.savePretrained(join(tmp, 'rep')), /representationSize 8/);
});
