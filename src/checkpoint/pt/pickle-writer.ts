// Writes a checked value (save-plan.ts) as pickle protocol 2, the way torch.save does
// (Python's pickler with PyTorch's persistent ids): containers and strings are memoized
// so that a value referenced twice is written once and loads back as one; lists and dicts
// are filled in batches of 1000 (APPENDS / SETITEMS); a tensor is
// torch._utils._rebuild_tensor_v2(storage, offset, size, stride, requires_grad,
// OrderedDict()) with its storage a persistent id ('storage', torch.<T>Storage, key,
// location, numel), each storage named once. A dtype with no typed storage class (uint16,
// float8_e4m3fn, ...) is _rebuild_tensor_v3(..., OrderedDict(), torch.<dtype>) of a
// torch.storage.UntypedStorage whose numel counts bytes; a tensor with PyTorch's lazy
// conj/neg bits adds the metadata dict {'neg': True, 'conj': True} torch.save writes.
import { ITEM_SIZE } from '../../core/dtype.ts';
import * as t from '../../core/index.ts';
import { OP } from './opcodes.ts';
import { type SavePlan, type StorageGroup, tensorBits } from './save-plan.ts';
import { STORAGE_TYPES } from './torch-globals.ts';
import { isIndexKey, ORDERED_DICT } from './values.ts';

const STORAGE_OF: Record<string, string> = Object.fromEntries(
  Object.entries(STORAGE_TYPES).map(([name, [torchName]]) => [torchName, name]),
);

const BATCH = 1000;
const utf8 = new TextEncoder();

class Writer {
  private chunks: Uint8Array[] = [];
  private buf = new Uint8Array(1 << 16);
  private at = 0;
  private readonly memo = new Map<unknown, number>();
  /** Storage groups in the order the pickle first names them (their keys are 0, 1, ...). */
  readonly storages: StorageGroup[] = [];

  constructor(
    private readonly plan: SavePlan,
    /** Writes each tensor as torch.storage._load_from_bytes(these bytes) instead of by persistent id. */
    private readonly inline?: (x: t.Tensor) => Uint8Array,
  ) {}

  private room(n: number): void {
    if (this.at + n <= this.buf.length) return;
    this.chunks.push(this.buf.subarray(0, this.at));
    this.buf = new Uint8Array(Math.max(1 << 16, n));
    this.at = 0;
  }
  op(...bytes: number[]): void {
    this.room(bytes.length);
    for (const b of bytes) this.buf[this.at++] = b;
  }
  raw(b: Uint8Array): void {
    this.room(b.length);
    this.buf.set(b, this.at);
    this.at += b.length;
  }
  u32(op: number, n: number): void {
    this.op(op, n & 0xff, (n >>> 8) & 0xff, (n >>> 16) & 0xff, n >>> 24);
  }
  bytes(): Uint8Array {
    this.chunks.push(this.buf.subarray(0, this.at));
    return Buffer.concat(this.chunks);
  }

  /** Remembers `key` (an object, or a string's own value) at the next memo slot. */
  put(key: unknown): void {
    const i = this.memo.size;
    this.memo.set(key, i);
    if (i < 256) this.op(OP.BINPUT, i);
    else this.u32(OP.LONG_BINPUT, i);
  }
  /** Writes a BINGET when `key` was written before; says whether it was. */
  got(key: unknown): boolean {
    const i = this.memo.get(key);
    if (i === undefined) return false;
    if (i < 256) this.op(OP.BINGET, i);
    else this.u32(OP.LONG_BINGET, i);
    return true;
  }

  int(v: number | bigint): void {
    if (typeof v === 'number' && v >= 0 && v < 256) this.op(OP.BININT1, v);
    else if (typeof v === 'number' && v >= 0 && v < 65536) this.op(OP.BININT2, v & 0xff, v >>> 8);
    else if (typeof v === 'number' && v >= -(2 ** 31) && v < 2 ** 31) this.u32(OP.BININT, v >>> 0);
    else this.long(BigInt(v));
  }
  // LONG1: the shortest little-endian two's complement.
  private long(v: bigint): void {
    let n = v;
    const out: number[] = [];
    for (;;) {
      const b = Number(n & 0xffn);
      out.push(b);
      n >>= 8n;
      if ((n === 0n && (b & 0x80) === 0) || (n === -1n && (b & 0x80) !== 0)) break;
    }
    this.op(OP.LONG1, out.length, ...out);
  }
  float(v: number): void {
    const b = new Uint8Array(8);
    new DataView(b.buffer).setFloat64(0, v, false);
    this.op(OP.BINFLOAT);
    this.raw(b);
  }
  str(s: string): void {
    if (this.got(`s:${s}`)) return;
    const b = utf8.encode(s);
    this.u32(OP.BINUNICODE, b.length);
    this.raw(b);
    this.put(`s:${s}`);
  }
  global(module: string, name: string): void {
    if (this.got(`g:${module}.${name}`)) return;
    this.op(OP.GLOBAL);
    this.raw(utf8.encode(`${module}\n${name}\n`));
    this.put(`g:${module}.${name}`);
  }
  tuple(items: readonly unknown[], each: (x: unknown) => void): void {
    if (items.length === 0) {
      this.op(OP.EMPTY_TUPLE);
      return;
    }
    if (items.length > 3) this.op(OP.MARK);
    for (const x of items) each(x);
    this.op(items.length > 3 ? OP.TUPLE : [0, OP.TUPLE1, OP.TUPLE2, OP.TUPLE3][items.length]);
  }

  number(v: number): void {
    // A safe integer is Python's int; anything else (1.5, -0, NaN, 1e300) its float.
    if (Number.isSafeInteger(v) && !Object.is(v, -0)) this.int(v);
    else this.float(v);
  }

  value(v: unknown): void {
    if (v === null) this.op(OP.NONE);
    else if (v === true || v === false) this.op(v ? OP.NEWTRUE : OP.NEWFALSE);
    else if (typeof v === 'number') this.number(v);
    else if (typeof v === 'bigint') this.int(v);
    else if (typeof v === 'string') this.str(v);
    else if (this.got(v)) return;
    else if (v instanceof t.Tensor) this.tensor(v);
    else if (Array.isArray(v)) {
      if (Object.isFrozen(v)) this.tupleValue(v);
      else this.list(v);
    } else if (v instanceof Map) this.dict(v, [...v.entries()]);
    else this.dict(v as object, Object.entries(v as object));
  }

  private tupleValue(v: readonly unknown[]): void {
    this.tuple(v, (x) => this.value(x));
    this.put(v);
  }

  private list(v: unknown[]): void {
    this.op(OP.EMPTY_LIST);
    this.put(v);
    this.batches(v, 1, OP.APPEND, OP.APPENDS, (x) => this.value(x));
  }

  private dict(v: object, entries: [unknown, unknown][]): void {
    const attrs = Object.hasOwn(v, ORDERED_DICT) ? (v as Record<symbol, object>)[ORDERED_DICT] : undefined;
    if (attrs === undefined) this.op(OP.EMPTY_DICT);
    else {
      this.global('collections', 'OrderedDict');
      this.op(OP.EMPTY_TUPLE, OP.REDUCE);
    }
    this.put(v);
    const key =
      v instanceof Map ? (k: unknown) => this.value(k) : (k: unknown) => this.objectKey(k as string);
    const flat = entries.flat();
    this.batches(flat, 2, OP.SETITEM, OP.SETITEMS, (x, i) => (i % 2 === 0 ? key(x) : this.value(x)));
    if (attrs !== undefined && Object.keys(attrs).length > 0) {
      this.value(attrs);
      this.op(OP.BUILD);
    }
  }

  // A plain object's array-index keys were a dict's int keys (values.ts).
  private objectKey(k: string): void {
    if (isIndexKey(k)) this.int(Number(k));
    else this.str(k);
  }

  /** Python's _batch_appends / _batch_setitems: `per` stack values per item, MARK .. many for 2+ items. */
  private batches(
    flat: readonly unknown[],
    per: number,
    one: number,
    many: number,
    each: (x: unknown, i: number) => void,
  ): void {
    for (let i = 0; i < flat.length; i += BATCH * per) {
      const end = Math.min(flat.length, i + BATCH * per);
      const several = end - i > per;
      if (several) this.op(OP.MARK);
      for (let j = i; j < end; j++) each(flat[j], j);
      this.op(several ? many : one);
    }
  }

  /**
   * A tensor as Python's plain pickler writes one (no persistent ids: torch.save's bytes
   * inside the pickle), which pickle.loads in PyTorch reads back.
   */
  private inlineTensor(x: t.Tensor, save: (x: t.Tensor) => Uint8Array): void {
    this.global('torch.storage', '_load_from_bytes');
    const b = save(x);
    this.u32(OP.BINBYTES, b.length);
    this.raw(b);
    this.op(OP.TUPLE1, OP.REDUCE);
    this.put(x);
  }

  private tensor(x: t.Tensor): void {
    if (this.inline) {
      this.inlineTensor(x, this.inline);
      return;
    }
    const g = this.plan.groupOf.get(x);
    if (g === undefined) throw new Error('pickle writer: a tensor the plan did not see');
    if (g.key === undefined) {
      g.key = String(this.storages.length);
      this.storages.push(g);
    }
    const storageClass = Object.hasOwn(STORAGE_OF, g.dtype) ? STORAGE_OF[g.dtype] : undefined;
    this.global('torch._utils', storageClass ? '_rebuild_tensor_v2' : '_rebuild_tensor_v3');
    this.op(OP.MARK, OP.MARK);
    this.str('storage');
    if (storageClass) this.global('torch', storageClass);
    else this.global('torch.storage', 'UntypedStorage');
    this.str(g.key);
    this.str(g.location);
    const numel = g.stop - g.start;
    this.int(storageClass ? numel : numel * ITEM_SIZE[g.dtype]);
    this.op(OP.TUPLE, OP.BINPERSID);
    this.int(g.empty ? 0 : (t.ops.call('aten::storage_offset', x) as number) - g.start);
    const ints = (n: unknown) => this.int(n as number);
    this.tuple(x.shape, ints);
    this.tuple(x.stride(), ints);
    this.op(x.requiresGrad ? OP.NEWTRUE : OP.NEWFALSE);
    this.global('collections', 'OrderedDict');
    this.op(OP.EMPTY_TUPLE, OP.REDUCE);
    if (!storageClass) this.global('torch', g.dtype);
    const bits = tensorBits(x);
    if (bits.neg || bits.conj)
      this.value({ ...(bits.neg && { neg: true }), ...(bits.conj && { conj: true }) });
    this.op(OP.TUPLE, OP.REDUCE);
    this.put(x);
  }
}

/**
 * The pickle of `value` and its storages in key order (their record names are data/0,
 * data/1, ...). With `inline`, each tensor is written as torch.storage._load_from_bytes of
 * the bytes `inline` gives for it (protocol 3, for its BINBYTES), and there are no storages.
 */
export function writePickle(
  value: unknown,
  plan: SavePlan,
  inline?: (x: t.Tensor) => Uint8Array,
): { pickle: Uint8Array; storages: StorageGroup[] } {
  const w = new Writer(plan, inline);
  w.op(OP.PROTO, inline ? 3 : 2);
  w.value(value);
  w.op(OP.STOP);
  return { pickle: w.bytes(), storages: w.storages };
}
