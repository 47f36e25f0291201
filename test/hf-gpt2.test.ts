// GPT.fromPretrained / savePretrained against transformers' GPT2LMHeadModel. The folders
// are made by test/fixtures/hf/gpt2.py (a tiny random GPT-2, saved whole, sharded and in
// the hub's original layout) with the logits transformers computes on them: live where
// .venv has transformers and tsddp's torch (then tsddp's logits must be the same to the
// bit: 'gelu_new' is computed op for op), else the committed folders, within 1e-5 (another
// CPU's kernels may round the last bits otherwise). savePretrained's folder is read back by
// transformers itself (test/fixtures/hf/gpt2_logits.py) where it is installed.
// TSDDP_FIXTURES=stored forces the committed folders (test/helpers/live-fixture.ts).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { REPO_ROOT } from '../src/benchmark/reference.ts';
import * as t from '../src/index.ts';
import { hfFixture, PYTHON, transformersMissing, withConfig } from './helpers/hf-fixture.ts';

const { GPT, PretrainedError } = t.models;
const tmp = mkdtempSync(join(tmpdir(), 'tsddp-hf-gpt2-'));
after(() => rmSync(tmp, { recursive: true, force: true }));

/** Whether .venv's python has transformers and the torch tsddp is built against. */
const missing = transformersMissing();
const live = missing === null;
const FIXTURE = hfFixture('gpt2', tmp, missing);

function assertLogits(actual: t.Tensor, expected: t.Tensor, what: string, exact: boolean): void {
  assert.deepEqual(actual.shape, expected.shape, what);
  const diff = actual.sub(expected).abs().max().item();
  if (exact) assert.equal(diff, 0, `${what}: max |diff| ${diff}`);
  else assert.ok(diff <= 1e-5, `${what}: max |diff| ${diff}`);
}

async function logitsOf(model: InstanceType<typeof GPT>, idx: t.Tensor): Promise<t.Tensor> {
  model.eval();
  return t.noGrad(() => model.forward(idx, idx).logits);
}

test("fromPretrained: transformers' logits, from a whole, a sharded and the hub's original layout", async () => {
  const { idx, logits } = await t.safetensors.loadFile(join(FIXTURE, 'logits.safetensors'));
  for (const layout of ['single', 'sharded', 'legacy']) {
    const model = await GPT.fromPretrained(join(FIXTURE, layout));
    assert.deepEqual(
      { ...model.config },
      {
        blockSize: 16,
        vocabSize: 64,
        nLayer: 2,
        nHead: 2,
        nEmbd: 16,
        dropout: 0.1,
        bias: true,
        activation: 'gelu_new',
      },
    );
    assertLogits(await logitsOf(model, idx), logits, layout, live);
  }
});

test('savePretrained: a folder fromPretrained reads back exactly, and transformers loads to the same logits', async (tc) => {
  t.manualSeed(3);
  const model = new GPT({
    blockSize: 16,
    vocabSize: 64,
    nLayer: 2,
    nHead: 2,
    nEmbd: 16,
    activation: 'gelu_new',
  });
  const dir = join(tmp, 'saved');
  await model.savePretrained(dir);
  const config = JSON.parse(readFileSync(join(dir, 'config.json'), 'utf8'));
  assert.equal(config.model_type, 'gpt2');
  assert.equal(config.activation_function, 'gelu_new');
  const back = await GPT.fromPretrained(dir);
  const mine = model.stateDict();
  for (const [k, v] of Object.entries(back.stateDict())) assert.ok(v.equal(mine[k]), k);
  const idx = t.randint(0, 64, [2, 10], { generator: new t.Generator().manualSeed(5) });
  const ours = await logitsOf(model, idx);
  if (!live) {
    tc.diagnostic(`transformers' side not run: ${missing}`);
    return;
  }
  const io = join(tmp, 'io.safetensors');
  await t.safetensors.saveFile({ idx }, io);
  const r = spawnSync(PYTHON, [join(REPO_ROOT, 'test/fixtures/hf/gpt2_logits.py'), dir, io], {
    encoding: 'utf8',
  });
  assert.equal(r.status, 0, r.stderr);
  const { logits } = await t.safetensors.loadFile(io);
  assertLogits(ours, logits, 'transformers on the saved folder', true);
});

test('what GPT cannot honour is a PretrainedError naming the file and the field', async () => {
  const edit = (name: string, change: (c: Record<string, unknown>) => void): string =>
    withConfig(join(FIXTURE, 'single'), join(tmp, name), change);
  const refused = async (dir: string, pattern: RegExp): Promise<void> => {
    await assert.rejects(
      GPT.fromPretrained(dir),
      (e) => e instanceof PretrainedError && pattern.test(e.message),
    );
  };
  await refused(
    edit('llama', (c) => (c.model_type = 'llama')),
    /config\.json: model_type="llama"/,
  );
  await refused(
    edit('inner', (c) => (c.n_inner = 40)),
    /n_inner=40: the MLP is 4 x n_embd \(64\)/,
  );
  await refused(
    edit('relu', (c) => (c.activation_function = 'relu')),
    /activation_function="relu"/,
  );
  await refused(
    edit('eps', (c) => (c.layer_norm_epsilon = 1e-6)),
    /layer_norm_epsilon=0\.000001/,
  );
  await refused(
    edit('drops', (c) => (c.attn_pdrop = 0)),
    /one dropout; resid\/embd\/attn_pdrop are 0.1, 0.1, 0/,
  );
  await refused(
    edit('untied', (c) => (c.tie_word_embeddings = false)),
    /tie_word_embeddings=false/,
  );
  const noWeights = edit('no-weights', () => {});
  rmSync(join(noWeights, 'model.safetensors'));
  await assert.rejects(GPT.fromPretrained(noWeights), /model\.safetensors/);
  await refused(join(tmp, 'nowhere'), /config\.json: cannot be read \(ENOENT\)/);
  await assert.rejects(
    new GPT({ nLayer: 1, nEmbd: 16, nHead: 2, vocabSize: 8, blockSize: 4, bias: false }).savePretrained(
      join(tmp, 'nobias'),
    ),
    /bias: false/,
  );
});
