// t.onnx.export against the other side's own readers: each model (ResNet-18 and -50, a ViT,
// GPT with either GELU) is exported with dynamic batch (and sequence) axes, run by
// onnxruntime-node (a devDependency) at the traced sizes and at others, and its outputs
// must be tsddp's within 1e-4. Where .venv has onnx and onnxruntime (npm run setup installs
// them), test/fixtures/onnx/run_onnx.py also runs the ONNX checker (with shape inference)
// and the Python onnxruntime on each file. The protobuf schema's field numbers are checked
// against the onnx package's own descriptors there.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { REPO_ROOT } from '../src/benchmark/reference.ts';
import * as t from '../src/index.ts';
import { onnxType } from '../src/onnx/schema.ts';

const PYTHON = join(REPO_ROOT, '.venv', 'bin', 'python');
const python =
  spawnSync(PYTHON, ['-c', 'import onnx, onnxruntime, safetensors, numpy'], { encoding: 'utf8' }).status === 0
    ? null
    : `${PYTHON} cannot import onnx and onnxruntime (npm run setup installs them)`;
const tmp = mkdtempSync(join(tmpdir(), 'tsddp-onnx-'));
after(() => rmSync(tmp, { recursive: true, force: true }));

type Model = t.nn.Module;
interface Case {
  name: string;
  make: () => Model;
  input: (shape: number[]) => t.Tensor;
  /** The traced shape first, then others the dynamic axes allow. */
  shapes: number[][];
  opts: t.onnx.ExportOptions;
}

/** Every parameter and buffer drawn afresh (a zero-initialised head would hide a wrong graph). */
function randomized(m: Model): Model {
  t.noGrad(() => {
    for (const p of m.parameters()) t.nn.init.normal_(p, 0, 0.2);
  });
  return m;
}

/** A ResNet whose BatchNorms saw data: running statistics other than 0 and 1. */
function resnet(build: () => Model): Model {
  const m = randomized(build());
  t.noGrad(() => m.forward(t.randn([4, 3, 32, 32])));
  return m;
}

const image = (shape: number[]): t.Tensor => t.randn(shape);
const tokens = (shape: number[]): t.Tensor => t.randint(0, 64, shape);
const gptConfig = { nLayer: 2, nHead: 2, nEmbd: 16, vocabSize: 64, blockSize: 16, dropout: 0.1 };
const CASES: Case[] = [
  {
    name: 'resnet18',
    make: () => resnet(() => t.models.resnet18({ numClasses: 10, widthMultiplier: 0.25 })),
    input: image,
    shapes: [
      [2, 3, 32, 32],
      [5, 3, 32, 32],
      [1, 3, 32, 32],
    ],
    opts: { dynamicAxes: { input: { 0: 'batch' } } },
  },
  {
    name: 'resnet50',
    make: () => resnet(() => t.models.resnet50({ numClasses: 10, widthMultiplier: 0.125, stem: 'cifar' })),
    input: image,
    shapes: [
      [2, 3, 32, 32],
      [3, 3, 32, 32],
    ],
    opts: { dynamicAxes: { input: [0] } },
  },
  {
    name: 'vit_tiny',
    make: () => randomized(t.models.vitTiny({ numClasses: 10 })),
    input: image,
    shapes: [
      [2, 3, 32, 32],
      [4, 3, 32, 32],
    ],
    opts: {
      inputNames: ['pixels'],
      outputNames: ['logits'],
      dynamicAxes: { pixels: { 0: 'batch' }, logits: { 0: 'batch' } },
    },
  },
  {
    name: 'gpt (gelu_new)',
    make: () => t.models.gpt({ ...gptConfig, activation: 'gelu_new' }),
    input: tokens,
    shapes: [
      [2, 8],
      [3, 5],
      [1, 16],
    ],
    opts: {
      inputNames: ['idx'],
      outputNames: ['logits'],
      dynamicAxes: { idx: { 0: 'batch', 1: 'sequence' } },
    },
  },
  {
    name: 'gpt (exact gelu)',
    make: () => t.models.gpt(gptConfig),
    input: tokens,
    shapes: [
      [2, 8],
      [2, 3],
    ],
    opts: { inputNames: ['idx'], dynamicAxes: { idx: [0, 1] } },
  },
];

/** The forward's output tensor (GPT: its logits). */
function forward(m: Model, x: t.Tensor): t.Tensor {
  const out = t.noGrad(() => m.forward(x)) as t.Tensor | { logits: t.Tensor };
  return out instanceof t.Tensor ? out : out.logits;
}

function assertClose(actual: t.Tensor, expected: t.Tensor, what: string): void {
  assert.deepEqual(actual.shape, expected.shape, what);
  const diff = actual.sub(expected).abs().max().item();
  assert.ok(diff <= 1e-4, `${what}: max |diff| ${diff}`);
}

async function runNode(file: string, inputName: string, x: t.Tensor): Promise<t.Tensor> {
  const ort = await import('onnxruntime-node');
  const session = await ort.InferenceSession.create(file);
  const data = x.dtype === 'int64' ? (x.toTypedArray() as BigInt64Array) : (x.toTypedArray() as Float32Array);
  const feeds = { [inputName]: new ort.Tensor(x.dtype === 'int64' ? 'int64' : 'float32', data, x.shape) };
  const out = await session.run(feeds);
  const y = out[session.outputNames[0]];
  return t.tensor(Array.from(y.data as Float32Array), { dtype: 'float32' }).reshape(y.dims.map(Number));
}

async function runPython(
  file: string,
  inputName: string,
  outputName: string,
  x: t.Tensor,
): Promise<t.Tensor> {
  const io = join(tmp, 'io.safetensors');
  await t.safetensors.saveFile({ [inputName]: x }, io);
  const r = spawnSync(PYTHON, [join(REPO_ROOT, 'test/fixtures/onnx/run_onnx.py'), file, io], {
    encoding: 'utf8',
  });
  assert.equal(r.status, 0, r.stderr);
  return (await t.safetensors.loadFile(io))[outputName];
}

for (const c of CASES) {
  test(`${c.name}: onnxruntime gives tsddp's outputs at the traced and other sizes`, async (tc) => {
    t.manualSeed(0);
    const model = c.make();
    const file = join(tmp, `${c.name.replace(/\W+/g, '_')}.onnx`);
    t.onnx.export(model, c.input(c.shapes[0]), file, c.opts);
    assert.equal(model.training, true, 'export leaves the model in the mode it was in');
    model.eval();
    const inputName = c.opts.inputNames?.[0] ?? 'input';
    const outputName = c.opts.outputNames?.[0] ?? 'output';
    for (const shape of c.shapes) {
      const x = c.input(shape);
      const ours = forward(model, x);
      assertClose(await runNode(file, inputName, x), ours, `onnxruntime-node at [${shape}]`);
      if (python === null)
        assertClose(
          await runPython(file, inputName, outputName, x),
          ours,
          `Python onnxruntime at [${shape}]`,
        );
    }
    if (python !== null) tc.diagnostic(`the ONNX checker and Python onnxruntime not run: ${python}`);
  });
}

test("the schema's fields have onnx.proto's names and numbers", { skip: python ?? false }, () => {
  const messages = [
    'AttributeProto',
    'ValueInfoProto',
    'NodeProto',
    'ModelProto',
    'GraphProto',
    'TensorProto',
    'OperatorSetIdProto',
    'TensorShapeProto.Dimension',
    'TypeProto.Tensor',
    'TypeProto',
    'TensorShapeProto',
  ];
  const ours = Object.fromEntries(
    messages.map((m) => [
      m,
      Object.values(onnxType(`onnx.${m}`).fields)
        .map((f) => [f.name, f.id])
        .sort(),
    ]),
  );
  const code = `
import json
from onnx import onnx_ml_pb2 as p
ours = json.loads(${JSON.stringify(JSON.stringify(ours))})
out = {}
for m, fields in ours.items():
    d = p
    for part in m.split('.'):
        d = getattr(d, part)
    official = {f.name: f.number for f in d.DESCRIPTOR.fields}
    out[m] = sorted([n, official.get(n)] for n, _ in fields)
print(json.dumps(out))`;
  const r = spawnSync(PYTHON, ['-c', code], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  assert.deepEqual(JSON.parse(r.stdout), ours);
});

test('an op with no ONNX mapping is an OnnxExportError naming it; bad options are refused', () => {
  class Cumulative extends t.nn.Module {
    override forward(x: t.Tensor): t.Tensor {
      return x.cumsum(1);
    }
  }
  const file = join(tmp, 'refused.onnx');
  assert.throws(
    () => t.onnx.export(new Cumulative(), t.randn([2, 3]), file),
    (e) => e instanceof t.onnx.OnnxExportError && /aten::cumsum has no ONNX mapping/.test(e.message),
  );
  const model = t.models.resnet18({ numClasses: 10, widthMultiplier: 0.125 });
  const x = t.randn([1, 3, 32, 32]);
  assert.throws(
    () => t.onnx.export(model, x, file, { opsetVersion: 13 }),
    /opsetVersion 13: tsddp writes opsets 17 to 21/,
  );
  assert.throws(() => t.onnx.export(model, x, file, { dynamic: true } as never), /unknown option 'dynamic'/);
  assert.throws(
    () => t.onnx.export(model, x, file, { dynamicAxes: { input: [4] } }),
    /axis 4 of a 4-D input/,
  );
});

test('examples/onnx_serve.ts classifies an image with onnxruntime-node as tsddp does', async () => {
  t.manualSeed(1);
  const model = resnet(() => t.models.resnet18({ numClasses: 10, widthMultiplier: 0.25, stem: 'cifar' }));
  const file = join(tmp, 'serve.onnx');
  t.onnx.export(model, t.randn([1, 3, 32, 32]), file, { dynamicAxes: { input: { 0: 'batch' } } });
  // A 32x32 PNG of a gradient; the example resizes nothing at --size 32.
  const pixels = Buffer.alloc(32 * 32 * 3);
  for (let i = 0; i < pixels.length; i++) pixels[i] = (i * 7) % 256;
  const { default: sharp } = await import('sharp');
  const png = join(tmp, 'image.png');
  await sharp(pixels, { raw: { width: 32, height: 32, channels: 3 } })
    .png()
    .toFile(png);
  const [mean, std] = [t.data.SHAPES_MEAN, t.data.SHAPES_STD];
  const r = spawnSync(
    process.execPath,
    ['--import', 'tsx', 'examples/onnx_serve.ts', file, png, '--size', '32', '--labels', 'shapes'].concat([
      '--mean',
      mean.join(','),
      '--std',
      std.join(','),
      '--top',
      '3',
    ]),
    { cwd: REPO_ROOT, encoding: 'utf8' },
  );
  assert.equal(r.status, 0, r.stderr);
  const printed = r.stdout
    .trim()
    .split('\n')
    .map((l) => l.split('\t'));
  // tsddp on the same pixels: HWC bytes -> CHW, / 255, normalized.
  model.eval();
  const x = t
    .fromBytes(new Uint8Array(pixels), [32, 32, 3], 'uint8')
    .permute([2, 0, 1])
    .unsqueeze(0)
    .float()
    .div(255);
  const normalized = x.sub(t.tensor(mean).view([1, 3, 1, 1])).div(t.tensor(std).view([1, 3, 1, 1]));
  const probs = t.softmax(forward(model, normalized), 1).view([-1]).toArray() as number[];
  const top = probs
    .map((p, k) => ({ p, k }))
    .sort((a, b) => b.p - a.p)
    .slice(0, 3);
  assert.deepEqual(
    printed,
    top.map(({ p, k }) => [t.data.SHAPES_CLASSES[k], p.toFixed(4)]),
  );
});
