// Printing as PyTorch's repr (torch/_tensor_str.py with its default print options):
// `tensor([[1., 2.], [3., 4.]], dtype=torch.float64)`, rows wrapped at 80 columns, and
// tensors over 1000 elements summarized to 3 items at each end of every dimension.
import { type DType, isComplex, type TypedArray } from './dtype.ts';

/** What printing reads of a tensor (a structural type: tensor.ts imports this file). */
interface Printable {
  readonly shape: number[];
  readonly dtype: DType;
  readonly device: string;
  readonly requiresGrad: boolean;
  readonly gradFn: string | null;
}

// PyTorch's default print options (torch.set_printoptions).
const PRECISION = 4;
const THRESHOLD = 1000;
const EDGE = 3;
const LINE_WIDTH = 80;

const PREFIX = 'tensor(';

/**
 * `flat` is the data as Tensor.toTypedArray() gives it (complex: interleaved (re, im)
 * pairs), except float8, whose values (not bits) the caller passes.
 */
export function formatTensor(t: Printable, flat: TypedArray): string {
  const shape = t.shape;
  const dtype = t.dtype;
  const n = isComplex(dtype) ? flat.length / 2 : flat.length;
  const suffixes: string[] = [];
  if (t.device !== 'cpu') suffixes.push(`device='${t.device}'`);
  let body: string;
  if (n === 0) {
    // no elements to tell the dtype by: shown unless it is the default float32
    if (shape.length !== 1) suffixes.push(`size=(${shape.join(', ')})`);
    if (dtype !== 'float32') suffixes.push(`dtype=torch.${dtype}`);
    body = '[]';
  } else {
    // complex64 is the default complex dtype (float32's), so it is not shown either
    if (!['float32', 'int64', 'bool', 'complex64'].includes(dtype)) suffixes.push(`dtype=torch.${dtype}`);
    body = tensorBody(flat, shape, dtype, PREFIX.length);
  }
  if (t.gradFn) suffixes.push(`grad_fn=<${t.gradFn}>`);
  else if (t.requiresGrad) suffixes.push('requires_grad=True');
  return addSuffixes(PREFIX + body, suffixes);
}

function tensorBody(flat: TypedArray, shape: number[], dtype: DType, indent: number): string {
  const summarize = flat.length > THRESHOLD;
  const strides: number[] = [];
  let acc = 1;
  for (let d = shape.length - 1; d >= 0; d--) {
    strides[d] = acc;
    acc *= shape[d];
  }
  // The indices shown along a dimension (null: the `...` between the two ends).
  const shown = (len: number): (number | null)[] => {
    const idx: (number | null)[] = [];
    if (summarize && len > 2 * EDGE) {
      for (let i = 0; i < EDGE; i++) idx.push(i);
      idx.push(null);
      for (let i = len - EDGE; i < len; i++) idx.push(i);
    } else for (let i = 0; i < len; i++) idx.push(i);
    return idx;
  };
  // Like PyTorch, the formatter (and so the column width) comes from the shown values only.
  const visible: number[] = [];
  const collect = (d: number, offset: number): void => {
    if (d === shape.length) visible.push(offset);
    else for (const i of shown(shape[d])) if (i !== null) collect(d + 1, offset + i * strides[d]);
  };
  collect(0, 0);
  const fmt = isComplex(dtype)
    ? complexFormatter(flat, visible)
    : formatter(
        flat,
        visible,
        dtype === 'bool' ? 'bool' : dtype.startsWith('float') || dtype === 'bfloat16' ? 'float' : 'int',
      );
  const render = (d: number, offset: number, ind: number): string => {
    if (d === shape.length) return fmt.format(offset);
    const idx = shown(shape[d]);
    if (d === shape.length - 1) {
      // a row: as many elements a line as fit in the line width
      const perLine = Math.max(1, Math.floor((LINE_WIDTH - ind) / (fmt.width + 2)));
      const items = idx.map((i) => (i === null ? ' ...' : fmt.format(offset + i * strides[d])));
      const lines: string[] = [];
      for (let i = 0; i < items.length; i += perLine) lines.push(items.slice(i, i + perLine).join(', '));
      return `[${lines.join(`,\n${' '.repeat(ind + 1)}`)}]`;
    }
    const parts = idx.map((i) => (i === null ? '...' : render(d + 1, offset + i * strides[d], ind + 1)));
    return `[${parts.join(`,${'\n'.repeat(shape.length - d - 1)}${' '.repeat(ind + 1)}`)}]`;
  };
  return render(0, 0, indent);
}

interface Formatter {
  width: number;
  /** The element at a flat index, padded to `width`. */
  format(i: number): string;
}

/**
 * PyTorch's complex printing: one float formatter for the real parts and one for the
 * imaginary parts, `re+imj` (the imaginary part's padding dropped). `width` is what the
 * row layout counts per element: both widths and the `j`.
 */
function complexFormatter(flat: TypedArray, visible: number[]): Formatter {
  const n = flat.length / 2;
  const re = new Float64Array(n);
  const im = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    re[i] = Number(flat[2 * i]);
    im[i] = Number(flat[2 * i + 1]);
  }
  const fre = formatter(re, visible, 'float');
  const fim = formatter(im, visible, 'float');
  return {
    width: fre.width + fim.width + 1,
    format: (i) => {
      const imag = `${fim.format(i)}j`.trimStart();
      return fre.format(i) + (imag[0] === '-' || imag[0] === '+' ? imag : `+${imag}`);
    },
  };
}

function formatter(flat: TypedArray, visible: number[], kind: 'float' | 'int' | 'bool'): Formatter {
  const pad = (s: string, w: number) => s.padStart(w);
  if (kind !== 'float') {
    const str =
      kind === 'bool' ? (i: number) => (flat[i] ? 'True' : 'False') : (i: number) => String(flat[i]);
    let width = 1;
    for (const i of visible) width = Math.max(width, str(i).length);
    return { width, format: (i) => pad(str(i), width) };
  }
  // Floats: integers print as `2.`, else fixed with 4 decimals, or scientific when the
  // magnitudes span more than 1000x, reach 1e8 or (not all integers) go below 1e-4.
  const finite: number[] = [];
  for (const i of visible) {
    const v = Number(flat[i]);
    if (Number.isFinite(v) && v !== 0) finite.push(v);
  }
  const value = (i: number) => Number(flat[i]);
  if (finite.length === 0) return { width: 1, format: (i) => intStyle(value(i)) };
  let max = 0;
  let min = Infinity;
  for (const v of finite) {
    max = Math.max(max, Math.abs(v));
    min = Math.min(min, Math.abs(v));
  }
  const intMode = finite.every((v) => Number.isInteger(v));
  let width = 1;
  if (intMode && !(max / min > 1000 || max > 1e8)) {
    for (const v of finite) width = Math.max(width, intStyle(v).length);
    return { width, format: (i) => pad(intStyle(value(i)), width) };
  }
  if (max / min > 1000 || max > 1e8 || (!intMode && min < 1e-4)) {
    for (const v of finite) width = Math.max(width, sciStyle(v).length);
    return { width, format: (i) => pad(sciStyle(value(i)), width) };
  }
  for (const v of finite) width = Math.max(width, fixedStyle(v).length);
  return { width, format: (i) => pad(fixedStyle(value(i)), width) };
}

function special(v: number): string | undefined {
  if (Number.isNaN(v)) return 'nan';
  if (!Number.isFinite(v)) return v > 0 ? 'inf' : '-inf';
  return undefined;
}

/** Python's f"{v:.0f}" followed by '.', for a float tensor of integers. */
function intStyle(v: number): string {
  return special(v) ?? `${Object.is(v, -0) ? '-0' : v.toFixed(0)}.`;
}

/** Python's f"{v:.4f}": correctly rounded, ties to even (JS's toFixed rounds ties up). */
function fixedStyle(v: number): string {
  const s = special(v);
  if (s !== undefined) return s;
  const out = roundHalfEven(v, (x, digits) => x.toFixed(digits), PRECISION);
  return Object.is(v, -0) ? `-${out}` : out;
}

/** Python's f"{v:.4e}": a two-digit exponent at least, ties to even. */
function sciStyle(v: number): string {
  const s = special(v);
  if (s !== undefined) return s;
  const out = roundHalfEven(v, (x, digits) => x.toExponential(digits), PRECISION);
  return `${Object.is(v, -0) ? '-' : ''}${out.replace(/e([+-])(\d)$/, 'e$10$2')}`;
}

/**
 * JS rounds an exact tie away from zero, Python to the even digit. A tie shows as the
 * exact expansion (`digits + 1` onwards) being a 5 and then zeros; there the JS result
 * is replaced by the rounding towards zero when that gives an even last digit.
 */
function roundHalfEven(v: number, render: (x: number, digits: number) => string, digits: number): string {
  const rounded = render(v, digits);
  const exact = render(v, 100);
  const mantissa = exact.replace(/e.*$/, '');
  const point = mantissa.indexOf('.');
  const tail = mantissa.slice(point + 1 + digits);
  if (!/^50*$/.test(tail)) return rounded;
  // a tie: the truncated value, if its last digit is even, is Python's answer
  const truncated = mantissa.slice(0, point + 1 + digits) + exact.slice(mantissa.length);
  const last = Number(truncated.replace(/e.*$/, '').slice(-1));
  return last % 2 === 0 ? truncated : rounded;
}

/** PyTorch's _add_suffixes: `, suffix`, or on a new line when it would pass 80 columns. */
function addSuffixes(body: string, suffixes: string[]): string {
  let out = body;
  let lastLine = body.length - body.lastIndexOf('\n') + 1;
  for (const s of suffixes) {
    if (lastLine + s.length + 2 > LINE_WIDTH) {
      out += `,\n${' '.repeat(PREFIX.length)}${s}`;
      lastLine = PREFIX.length + s.length;
    } else {
      out += `, ${s}`;
      lastLine += s.length + 2;
    }
  }
  return `${out})`;
}
