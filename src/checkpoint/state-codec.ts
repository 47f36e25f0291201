// Optimizer / scheduler / scaler state as JSON with the tensors taken out. A state dict
// is walked once: tensors go to a safetensors file under their dotted path
// ("state.3.momentum_buffer"), and the JSON keeps a tag {"$tsddp": "tensor", "key": ...}
// in their place. Numbers JSON cannot hold (NaN, ±Infinity) and bigints are tagged too,
// so a GradScaler's or scheduler's state comes back exactly.
import * as t from '../core/index.ts';

const TAG = '$tsddp';

export type EncodedState = null | boolean | number | string | EncodedState[] | { [k: string]: EncodedState };

/**
 * Encodes `value` for JSON, moving its tensors into `tensors` under `prefix` + path.
 * Throws a TypeError naming the path of anything that is not plain data or a Tensor.
 */
export function encodeState(value: unknown, prefix: string, tensors: Map<string, t.Tensor>): EncodedState {
  const walk = (v: unknown, path: string[], depth: number): EncodedState => {
    const where = () => `${prefix}${path.join('.')}` || '(root)';
    if (depth > 64) throw new TypeError(`checkpoint state nests deeper than 64 at ${where()}`);
    if (v === null || typeof v === 'string' || typeof v === 'boolean') return v;
    if (typeof v === 'number') {
      return Number.isFinite(v) ? v : { [TAG]: 'number', value: String(v) };
    }
    if (typeof v === 'bigint') return { [TAG]: 'bigint', value: v.toString() };
    if (v instanceof t.Tensor) {
      const key = `${prefix}${path.join('.')}`;
      if (tensors.has(key)) throw new TypeError(`checkpoint state has two tensors named '${key}'`);
      tensors.set(key, v);
      return { [TAG]: 'tensor', key };
    }
    if (Array.isArray(v))
      return v.map((x, i) => (x === undefined ? null : walk(x, [...path, String(i)], depth + 1)));
    if (typeof v === 'object') {
      const proto = Object.getPrototypeOf(v);
      if (proto !== Object.prototype && proto !== null) {
        throw new TypeError(
          `checkpoint state at ${where()} is a ${proto?.constructor?.name ?? 'non-plain object'}; use plain objects, arrays, numbers, strings and Tensors`,
        );
      }
      const out: { [k: string]: EncodedState } = {};
      for (const [k, x] of Object.entries(v)) {
        if (k === TAG) throw new TypeError(`checkpoint state at ${where()} uses the reserved key '${TAG}'`);
        // A loader assigning it (out[key] = ...) would set a prototype: load refuses it (layout.ts).
        if (k === '__proto__')
          throw new TypeError(
            `checkpoint state at ${prefix}${[...path, k].join('.')} uses the key '__proto__', which cannot be loaded back as a key`,
          );
        if (x === undefined) continue;
        Object.defineProperty(out, k, {
          value: walk(x, [...path, k], depth + 1),
          enumerable: true,
          writable: true,
          configurable: true,
        });
      }
      return out;
    }
    throw new TypeError(`checkpoint state at ${where()} is a ${typeof v}, which cannot be saved`);
  };
  return walk(value, [], 0);
}

/**
 * The inverse of encodeState: `value` is parsed JSON (plain objects), `tensors` the
 * tensors read back. Every tag must name a tensor; `used` collects the keys taken so the
 * caller can check no tensor was left over. Throws Error with a message on a bad record.
 */
export function decodeState(value: unknown, tensors: Record<string, t.Tensor>, used: Set<string>): unknown {
  const walk = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(walk);
    if (v === null || typeof v !== 'object') return v;
    const o = v as Record<string, unknown>;
    if (Object.hasOwn(o, TAG)) {
      const kind = o[TAG];
      if (kind === 'tensor' && typeof o.key === 'string') {
        if (!Object.hasOwn(tensors, o.key))
          throw new Error(`state refers to tensor '${o.key}', which is not in the file`);
        used.add(o.key);
        return tensors[o.key];
      }
      if (kind === 'number' && ['NaN', 'Infinity', '-Infinity'].includes(o.value as string))
        return Number(o.value);
      if (kind === 'bigint' && typeof o.value === 'string' && /^-?\d+$/.test(o.value)) return BigInt(o.value);
      throw new Error(`state has an unknown tag ${JSON.stringify(o)}`);
    }
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(o)) {
      Object.defineProperty(out, k, { value: walk(x), enumerable: true, writable: true, configurable: true });
    }
    return out;
  };
  return walk(value);
}
