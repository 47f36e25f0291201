// The JSON description of a t.load value (or of a value given to t.save) in the form
// test/fixtures/pt/describe.py gives PyTorch's values, so that the two can be compared
// whole: see that file for the form. A number is described as Python will hold it after
// t.save (a safe integer as an int, anything else as a float).
import { createHash } from 'node:crypto';
import { native } from '../../src/core/native.ts';
import * as t from '../../src/index.ts';

export type Described = null | boolean | { [kind: string]: unknown };

const isIndexKey = (k: string): boolean => /^(0|[1-9]\d{0,9})$/.test(k) && Number(k) < 2 ** 32 - 1;

function floatHex(v: number): string {
  const b = Buffer.alloc(8);
  b.writeDoubleBE(v);
  return b.toString('hex');
}

function bytesOf(x: t.Tensor): string {
  const b = Buffer.from(x.toBytes());
  return b.length <= 64 ? b.toString('hex') : `sha256:${createHash('sha256').update(b).digest('hex')}`;
}

export function describe(value: unknown): Described {
  const storages: t.Tensor[] = [];
  const objects: t.Tensor[] = [];
  const tensors: Record<string, number>[] = [];
  const minOffset = new Map<number, number>();

  const storageOf = (x: t.Tensor): number => {
    let i = x.numel() === 0 ? -1 : storages.findIndex((s) => s.numel() > 0 && native.sameStorage(s.h, x.h));
    if (i < 0 && x.numel() === 0) i = storages.indexOf(x);
    if (i < 0) i = storages.push(x) - 1;
    return i;
  };
  const tensor = (x: t.Tensor): Described => {
    if (!objects.includes(x)) objects.push(x);
    const d = {
      dtype: x.dtype,
      shape: x.shape,
      stride: x.stride(),
      offset: t.ops.call('aten::storage_offset', x) as number,
      storage: storageOf(x),
      object: objects.indexOf(x),
      requires_grad: x.requiresGrad,
      bytes: bytesOf(x),
    };
    minOffset.set(d.storage, Math.min(minOffset.get(d.storage) ?? d.offset, d.offset));
    tensors.push(d as unknown as Record<string, number>);
    return { tensor: d };
  };
  const key = (k: unknown, fromObject: boolean): Described =>
    fromObject ? (isIndexKey(k as string) ? { int: k } : { str: k }) : walk(k);
  const dict = (v: object): Described => {
    const entries = v instanceof Map ? [...v.entries()] : Object.entries(v);
    const items = entries.map(([k, x]) => [key(k, !(v instanceof Map)), walk(x)]);
    const attrs = t.serialization.orderedDictAttributes(v);
    return attrs === undefined ? { dict: items } : { odict: items, attrs: dict(attrs) };
  };
  const walk = (v: unknown): Described => {
    if (v === null || typeof v === 'boolean') return v;
    if (typeof v === 'number')
      return Number.isSafeInteger(v) && !Object.is(v, -0) ? { int: String(v) } : { float: floatHex(v) };
    if (typeof v === 'bigint') return { int: v.toString() };
    if (typeof v === 'string') return { str: v };
    if (v instanceof t.Tensor) return tensor(v);
    if (Array.isArray(v)) return Object.isFrozen(v) ? { tuple: v.map(walk) } : { list: v.map(walk) };
    if (typeof v === 'object') return dict(v);
    throw new TypeError(`cannot describe ${typeof v}`);
  };
  const out = walk(value);
  for (const d of tensors) d.offset -= minOffset.get(d.storage) as number;
  return out;
}

/**
 * A PyTorch description with its integral floats written as ints: t.load gives a
 * JavaScript number for both, and t.save writes an integral number as an int
 * (docs/guide/library.md, "Saving and loading .pt files").
 */
export function asJavaScriptSees(d: unknown): unknown {
  if (Array.isArray(d)) return d.map(asJavaScriptSees);
  if (d === null || typeof d !== 'object') return d;
  const o = d as Record<string, unknown>;
  if (typeof o.float === 'string' && Object.keys(o).length === 1) {
    const v = Buffer.from(o.float, 'hex').readDoubleBE();
    return Number.isSafeInteger(v) && !Object.is(v, -0) ? { int: String(v) } : o;
  }
  if ('tensor' in o) return o;
  return Object.fromEntries(Object.entries(o).map(([k, v]) => [k, asJavaScriptSees(v)]));
}
