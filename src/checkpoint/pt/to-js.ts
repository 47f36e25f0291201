// The JavaScript value of what the pickle reader built (values.ts says which Python value
// becomes what). Run twice: first without tensors (a dry run that refuses what cannot be
// loaded — a bare storage, a dtype as a value, nesting past MAX_DEPTH, a container that
// holds itself — before any memory is allocated), then with them.
import type { Tensor } from '../../core/index.ts';
import { SerializationError } from './errors.ts';
import { kindOf, type Py, PyDict, PyFloat, type PyKey, PyList, PyTensor, PyTuple } from './py.ts';
import { isIndexKey, MAX_DEPTH, ORDERED_DICT, type PtKey, type PtObject, type PtValue } from './values.ts';

/** Makes the tensor of a spec (or, in the dry run, nothing). */
export type TensorMaker = (spec: PyTensor) => Tensor | null;

const MAX_INDEX = 2 ** 32 - 2;

function defineKey(obj: object, key: string, value: unknown): void {
  // defineProperty: a key called "__proto__" must stay a key, not set a prototype.
  Object.defineProperty(obj, key, { value, enumerable: true, writable: true, configurable: true });
}

/**
 * Whether a plain object keeps this dict's keys and order: str keys that are not array
 * indices, after int keys in [0, 2^32 - 2] in ascending order (a JS object lists index
 * keys first, ascending, whatever order they were set in).
 */
function fitsObject(keys: readonly PyKey[]): boolean {
  let lastInt = -1;
  let sawString = false;
  for (const k of keys) {
    if (typeof k === 'string') {
      if (isIndexKey(k)) return false;
      sawString = true;
    } else if (typeof k === 'number' && Number.isInteger(k) && k >= 0 && k <= MAX_INDEX) {
      if (sawString || k <= lastInt) return false;
      lastInt = k;
    } else return false;
  }
  return true;
}

function jsKey(k: PyKey): PtKey {
  return k instanceof PyFloat ? k.value : k;
}

class Converter {
  private readonly done = new Map<object, PtValue>();
  private readonly active = new Set<object>();
  constructor(
    private readonly makeTensor: TensorMaker,
    private readonly file: string,
  ) {}

  convert(v: Py, depth: number): PtValue {
    if (v === null || typeof v !== 'object') return v;
    if (v instanceof PyFloat) return v.value;
    const known = this.done.get(v);
    if (known !== undefined) return known;
    let out: PtValue;
    if (v instanceof PyTensor) out = this.makeTensor(v) as Tensor;
    else if (v instanceof PyList || v instanceof PyTuple || v instanceof PyDict)
      out = this.container(v, depth + 1);
    else
      throw new SerializationError(
        'UNSUPPORTED_VALUE',
        this.file,
        `the file holds ${kindOf(v)} as a value; t.load gives tensors, dicts, lists, tuples, numbers, strings, bools and None`,
      );
    this.done.set(v, out);
    return out;
  }

  private container(v: PyList | PyTuple | PyDict, depth: number): PtValue {
    if (depth > MAX_DEPTH)
      throw new SerializationError('NESTING', this.file, `containers nest deeper than ${MAX_DEPTH} levels`);
    if (this.active.has(v))
      throw new SerializationError(
        'NESTING',
        this.file,
        `${kindOf(v)} contains itself; t.load reads trees of values only`,
      );
    this.active.add(v);
    let out: PtValue;
    if (v instanceof PyDict) out = this.dict(v, depth);
    else {
      const items = v.items.map((x) => this.convert(x, depth));
      out = v instanceof PyTuple ? Object.freeze(items) : items;
    }
    this.active.delete(v);
    return out;
  }

  private dict(d: PyDict, depth: number): PtObject | Map<PtKey, PtValue> {
    let out: PtObject | Map<PtKey, PtValue>;
    if (fitsObject(d.keys)) {
      const obj: PtObject = {};
      for (let i = 0; i < d.keys.length; i++)
        defineKey(obj, String(d.keys[i]), this.convert(d.values[i], depth));
      out = obj;
    } else out = new Map(d.keys.map((k, i) => [jsKey(k), this.convert(d.values[i], depth)]));
    if (d.ordered) {
      const attrs: PtObject = {};
      if (d.attrs !== null) {
        if (this.active.has(d.attrs))
          throw new SerializationError('NESTING', this.file, 'an OrderedDict contains itself');
        this.active.add(d.attrs);
        const a = d.attrs;
        for (let i = 0; i < a.keys.length; i++)
          defineKey(attrs, String(a.keys[i]), this.convert(a.values[i], depth + 1));
        this.active.delete(d.attrs);
      }
      Object.defineProperty(out, ORDERED_DICT, { value: attrs, configurable: true, writable: true });
    }
    return out;
  }
}

/** The JavaScript value of `root`; tensors come from `makeTensor`. */
export function toJs(root: Py, makeTensor: TensorMaker, file: string): PtValue {
  return new Converter(makeTensor, file).convert(root, 0);
}
