// Serve a model tsddp exported, in Node, with ONNX Runtime: no libtorch, no tsddp at run
// time, only onnxruntime-node and sharp (`npm install onnxruntime-node sharp`).
//
//   node --import tsx examples/onnx_serve.ts resnet18.onnx photo.jpg --size 32 --labels shapes
//
// Make the .onnx file from a trained model with t.onnx.export (docs/guide/ecosystem.md):
//   t.onnx.export(model, t.randn([1, 3, 32, 32]), 'resnet18.onnx', { dynamicAxes: { input: { 0: 'batch' } } });
// The image is resized (cover) to --size, scaled to 0..1 and normalized per channel with
// --mean and --std (ImageNet's by default), as torchvision's transforms would for the
// model's training; the top classes print with their probabilities.
import { Command } from 'commander';
import * as ort from 'onnxruntime-node';
import sharp from 'sharp';

// tsddp's Shapes data set (t.data.SHAPES_CLASSES), for a model trained on it.
const SHAPES = [
  'circle',
  'square',
  'triangle',
  'plus',
  'ring',
  'diamond',
  'cross',
  'frame',
  'semicircle',
  'bars',
];
const list = (s: string): number[] => s.split(',').map(Number);

const cmd = new Command('onnx_serve')
  .argument('<model>', 'an .onnx file with one image input [N, 3, H, W]')
  .argument('<image>', 'a JPEG, PNG or WebP file')
  .option('--size <n>', 'the side the image is resized to', Number, 224)
  .option('--mean <r,g,b>', 'per-channel mean (of 0..1 values)', list, [0.485, 0.456, 0.406])
  .option('--std <r,g,b>', 'per-channel standard deviation', list, [0.229, 0.224, 0.225])
  .option('--labels <names>', "class names: 'shapes' (tsddp's Shapes data set) or a comma-separated list")
  .option('--top <k>', 'how many classes to print', Number, 5)
  .parse();
const [modelPath, imagePath] = cmd.args;
const opts = cmd.opts<{ size: number; mean: number[]; std: number[]; labels?: string; top: number }>();

// Pixels: RGB bytes, row by row, as [H, W, 3]; then [1, 3, H, W] floats, normalized.
const { data } = await sharp(imagePath)
  .removeAlpha()
  .resize(opts.size, opts.size, { fit: 'cover' })
  .raw()
  .toBuffer({ resolveWithObject: true });
const plane = opts.size * opts.size;
const chw = new Float32Array(3 * plane);
for (let i = 0; i < plane; i++)
  for (let ch = 0; ch < 3; ch++)
    chw[ch * plane + i] = (data[i * 3 + ch] / 255 - opts.mean[ch]) / opts.std[ch];

const session = await ort.InferenceSession.create(modelPath);
const input = new ort.Tensor('float32', chw, [1, 3, opts.size, opts.size]);
const outputs = await session.run({ [session.inputNames[0]]: input });
const logits = Array.from(outputs[session.outputNames[0]].data as Float32Array);

// Softmax, then the most likely classes.
const max = Math.max(...logits);
const exp = logits.map((z) => Math.exp(z - max));
const total = exp.reduce((a, b) => a + b, 0);
const labels = opts.labels === 'shapes' ? SHAPES : opts.labels?.split(',');
const ranked = exp.map((e, k) => ({ k, p: e / total })).sort((a, b) => b.p - a.p);
for (const { k, p } of ranked.slice(0, opts.top))
  console.log(`${labels?.[k] ?? `class ${k}`}\t${p.toFixed(4)}`);
