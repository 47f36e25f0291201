// Before t.save writes a byte: every value is checked to have a weights-only form
// (values.ts), and the tensors are grouped by the storage they view, so that views and
// tied weights are written once and load back sharing memory. A storage is written from
// its first to its last element any of its tensors reaches (PyTorch writes the whole
// storage; the part no tensor can see is left out).

import { ITEM_SIZE } from '../../core/dtype.ts';
import * as t from '../../core/index.ts';
import { native } from '../../core/native.ts';
import { hasLoneSurrogate } from '../strict-json.ts';
import { SerializationError } from './errors.ts';
import { MAX_DEPTH, ORDERED_DICT } from './values.ts';

/** The storage of one or more tensors, as it will be written. */
export interface StorageGroup {
  readonly rep: t.Tensor;
  readonly dtype: t.DType;
  readonly location: string;
  /** Its only tensor has no elements: one zero element is written. */
  readonly empty: boolean;
  /** The first element (of the storage) written, and one past the last. */
  start: number;
  stop: number;
  /** Its record name (data/<key>), given in the order the pickle first names it. */
  key?: string;
}

export interface SavePlan {
  readonly groupOf: Map<t.Tensor, StorageGroup>;
}

const LONG1_LIMIT = 1n << 2039n;

const storageOffset = (x: t.Tensor): number => t.ops.call('aten::storage_offset', x) as number;

/** [first, last + 1) elements of its storage that `x` reaches. */
function extent(x: t.Tensor): [number, number] {
  const start = storageOffset(x);
  if (x.numel() === 0) return [start, start];
  const shape = x.shape;
  const strides = x.stride();
  let last = start;
  for (let d = 0; d < shape.length; d++) last += (shape[d] - 1) * strides[d];
  return [start, last + 1];
}

function describe(v: unknown): string {
  if (v === undefined) return 'undefined';
  if (typeof v === 'function') return 'a function';
  if (typeof v === 'symbol') return 'a symbol';
  const proto = Object.getPrototypeOf(v);
  return `an instance of ${proto?.constructor?.name ?? 'an unknown class'}`;
}

class Planner {
  readonly groups: StorageGroup[] = [];
  readonly groupOf = new Map<t.Tensor, StorageGroup>();
  private readonly active = new Set<object>();
  private readonly seen = new Set<object>();
  constructor(private readonly file: string) {}

  fail(code: 'UNSUPPORTED_VALUE' | 'NESTING', path: string, detail: string): never {
    throw new SerializationError(code, this.file, `${path}: ${detail}`);
  }

  visit(v: unknown, path: string, depth: number): void {
    if (v === null || typeof v === 'boolean' || typeof v === 'number') return;
    if (typeof v === 'bigint') {
      // LONG1 (what weights-only loading reads) holds at most 255 bytes.
      if (v >= LONG1_LIMIT || v < -LONG1_LIMIT)
        this.fail('UNSUPPORTED_VALUE', path, 'an int of more than 2039 bits');
      return;
    }
    if (typeof v === 'string') {
      if (hasLoneSurrogate(v))
        this.fail('UNSUPPORTED_VALUE', path, 'a string with a lone surrogate has no UTF-8 form');
      return;
    }
    if (v instanceof t.Tensor) {
      this.tensor(v, path);
      return;
    }
    if (typeof v !== 'object')
      this.fail('UNSUPPORTED_VALUE', path, `${describe(v)} has no form in a .pt file`);
    if (this.seen.has(v)) {
      if (this.active.has(v)) this.fail('NESTING', path, 'a container that contains itself cannot be saved');
      return;
    }
    if (depth >= MAX_DEPTH) this.fail('NESTING', path, `containers nest deeper than ${MAX_DEPTH} levels`);
    this.seen.add(v);
    this.active.add(v);
    this.container(v, path, depth + 1);
    this.active.delete(v);
  }

  private container(v: object, path: string, depth: number): void {
    if (Array.isArray(v)) for (let i = 0; i < v.length; i++) this.visit(v[i], `${path}[${i}]`, depth);
    else if (v instanceof Map) {
      for (const [k, x] of v) {
        const kt = typeof k;
        if (!(k === null || kt === 'string' || kt === 'number' || kt === 'bigint' || kt === 'boolean'))
          this.fail(
            'UNSUPPORTED_VALUE',
            path,
            `a Map key is ${describe(k)}; keys must be strings, numbers, bigints, booleans or null`,
          );
        this.visit(k, `${path} (a key)`, depth);
        this.visit(x, `${path}.get(${String(k)})`, depth);
      }
    } else {
      const proto = Object.getPrototypeOf(v);
      if (proto !== Object.prototype && proto !== null)
        this.fail(
          'UNSUPPORTED_VALUE',
          path,
          `${describe(v)} has no form in a .pt file (plain objects, arrays, Maps and Tensors do)`,
        );
      for (const [k, x] of Object.entries(v)) {
        this.visit(k, `${path} (a key)`, depth);
        this.visit(x, `${path}.${k}`, depth);
      }
    }
    const attrs = (v as Record<symbol, unknown>)[ORDERED_DICT];
    if (attrs !== undefined && Object.hasOwn(v, ORDERED_DICT)) {
      if (typeof attrs !== 'object' || attrs === null || Object.getPrototypeOf(attrs) !== Object.prototype)
        this.fail('UNSUPPORTED_VALUE', path, "an OrderedDict's attributes must be a plain object");
      this.visit(attrs, `${path} (OrderedDict attributes)`, depth);
    }
  }

  private tensor(x: t.Tensor, path: string): void {
    if (x.isDisposed) this.fail('UNSUPPORTED_VALUE', path, 'the tensor was disposed');
    if (this.groupOf.has(x)) return;
    const location = x.device;
    if (location !== 'cpu' && !/^cuda:\d+$/.test(location))
      this.fail('UNSUPPORTED_VALUE', path, `a tensor on '${location}' has no data to write`);
    // torch.save's refusal: autograd history does not cross a file.
    if (x.requiresGrad && !x.isLeaf)
      this.fail(
        'UNSUPPORTED_VALUE',
        path,
        'a non-leaf tensor that requires grad cannot be saved (as in torch.save); save x.detach()',
      );
    // An empty tensor gets a storage of one (zero) element, never an empty record:
    // PyTorch's writer gives an empty record no data descriptor, which fflate's always
    // writes, and torch.load's offset arithmetic (mmap, calculate_storage_offsets) counts on it.
    const empty = x.numel() === 0;
    const [start, stop] = empty ? [0, 1] : extent(x);
    const group = empty ? undefined : this.groups.find((g) => !g.empty && native.sameStorage(g.rep.h, x.h));
    if (group === undefined) {
      const g: StorageGroup = { rep: x, dtype: x.dtype, location, start, stop, empty };
      this.groups.push(g);
      this.groupOf.set(x, g);
      return;
    }
    if (group.dtype !== x.dtype)
      this.fail(
        'UNSUPPORTED_VALUE',
        path,
        `this ${x.dtype} tensor views the memory of a ${group.dtype} tensor saved beside it; ` +
          'views of one storage as two dtypes cannot be saved (as in torch.save)',
      );
    group.start = Math.min(group.start, start);
    group.stop = Math.max(group.stop, stop);
    this.groupOf.set(x, group);
  }
}

/** Checks `value` and groups its tensors by storage; throws SerializationError naming the first value at fault. */
export function planSave(value: unknown, file: string): SavePlan {
  const p = new Planner(file);
  p.visit(value, 'the value', 0);
  return { groupOf: p.groupOf };
}

/** PyTorch's lazy conj/neg bits of a tensor (torch._utils.get_tensor_metadata). */
export function tensorBits(x: t.Tensor): { conj: boolean; neg: boolean } {
  return {
    conj: t.ops.call('aten::is_conj', x) as boolean,
    neg: t.ops.call('aten::is_neg', x) as boolean,
  };
}

/** The bytes of a storage group: elements [start, stop) of its storage (device memory is copied to the host). */
export function groupBytes(g: StorageGroup): Uint8Array {
  if (g.empty) return new Uint8Array(ITEM_SIZE[g.dtype]);
  const views = [g.rep.asStrided([g.stop - g.start], [1], g.start)];
  try {
    // The memory as it is: toBytes() applies a lazy conj/neg bit, which the file keeps
    // as each tensor's metadata instead; conj and _neg_view of a view with the bit clear it.
    const bits = tensorBits(views[0]);
    if (bits.conj) views.push(t.ops.call('aten::conj', views[views.length - 1]) as t.Tensor);
    if (bits.neg) views.push(t.ops.call('aten::_neg_view', views[views.length - 1]) as t.Tensor);
    return views[views.length - 1].toBytes();
  } finally {
    for (const v of views) v.dispose();
  }
}
