// PyTorch-like printing: `tensor([[1., 2.], [3., 4.]], dtype=float64)`.
import type { DType, TypedArray } from './dtype.ts';

/** What printing reads of a tensor (a structural type: tensor.ts imports this file). */
interface Printable {
  readonly shape: number[];
  readonly dtype: DType;
  readonly device: string;
  readonly requiresGrad: boolean;
  readonly gradFn: string | null;
  toTypedArray(): TypedArray;
}

const EDGE = 3; // items shown at each end of a long dimension
const SUMMARIZE_OVER = 1000;

export function formatTensor(t: Printable): string {
  const shape = t.shape;
  const dtype = t.dtype;
  const flat = t.toTypedArray();
  const n = flat.length;
  const isFloat = dtype.startsWith('float') || dtype === 'bfloat16';
  const values: number[] = [];
  for (let i = 0; i < Math.min(n, 100_000); i++) values.push(Number(flat[i]));
  const fmt = isFloat
    ? floatFormatter(values)
    : dtype === 'bool'
      ? (v: number) => (v ? 'True' : 'False')
      : String;
  const summarize = n > SUMMARIZE_OVER;
  const strides: number[] = [];
  let acc = 1;
  for (let d = shape.length - 1; d >= 0; d--) {
    strides[d] = acc;
    acc *= shape[d];
  }
  // Like PyTorch, every element is padded to the widest one so columns line up.
  let width = 0;
  for (const v of values) width = Math.max(width, fmt(v).length);
  const render = (d: number, offset: number, indent: string): string => {
    if (d === shape.length) return fmt(Number(flat[offset])).padStart(width);
    const len = shape[d];
    const idx: (number | null)[] = [];
    if (summarize && len > 2 * EDGE) {
      for (let i = 0; i < EDGE; i++) idx.push(i);
      idx.push(null);
      for (let i = len - EDGE; i < len; i++) idx.push(i);
    } else {
      for (let i = 0; i < len; i++) idx.push(i);
    }
    const parts = idx.map((i) => (i === null ? '...' : render(d + 1, offset + i * strides[d], `${indent} `)));
    const sep = d === shape.length - 1 ? ', ' : `,${'\n'.repeat(shape.length - d - 1)}${indent} `;
    return `[${parts.join(sep)}]`;
  };
  const body = render(0, 0, ' '.repeat('tensor('.length));
  const extras: string[] = [];
  if (t.device !== 'cpu') extras.push(`device='${t.device}'`);
  if (dtype !== 'float32' && dtype !== 'int64' && dtype !== 'bool') extras.push(`dtype=${dtype}`);
  if (n === 0) extras.push(`size=(${shape.join(', ')})`);
  if (t.requiresGrad) extras.push(t.gradFn ? `gradFn=<${t.gradFn}>` : 'requiresGrad=true');
  return `tensor(${body}${extras.length ? `, ${extras.join(', ')}` : ''})`;
}

function floatFormatter(values: number[]): (v: number) => string {
  const finite = values.filter((v) => Number.isFinite(v));
  const allInt = finite.every((v) => Number.isInteger(v));
  const abs = finite.map(Math.abs).filter((v) => v > 0);
  const max = abs.length ? Math.max(...abs) : 0;
  const min = abs.length ? Math.min(...abs) : 0;
  const sci = max >= 1e8 || (min > 0 && (min < 1e-4 || max / min > 1000));
  const special = (v: number) => (Number.isNaN(v) ? 'nan' : v > 0 ? 'inf' : '-inf');
  if (allInt && !sci) return (v) => (Number.isFinite(v) ? `${v}.` : special(v));
  if (sci)
    return (v) => (Number.isFinite(v) ? v.toExponential(4).replace(/e([+-])(\d)$/, 'e$10$2') : special(v));
  return (v) => (Number.isFinite(v) ? v.toFixed(4) : special(v));
}
