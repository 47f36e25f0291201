// The JavaScript shapes of the Python values a .pt file holds, both ways (docs/guide/library.md,
// "Saving and loading .pt files"):
//   None ↔ null, bool ↔ boolean, str ↔ string, float → number, int → number (within
//   ±(2^53 - 1)) or bigint; a number that is a safe integer (not -0) is written as an
//   int, any other number as a float, a bigint as an int;
//   list ↔ array, tuple ↔ frozen array (Object.isFrozen), torch.Size → frozen array;
//   dict ↔ plain object when a JS object keeps its keys and their order (str keys that are
//   not array indices, and int keys in [0, 2^32 - 2] placed first in ascending order, as
//   optimizer state dicts are), else ↔ Map (any other keys or order); an object's
//   array-index keys ('0', '1', ...) are written as ints;
//   OrderedDict ↔ the same, marked with the ORDERED_DICT symbol, whose value holds its
//   attributes (a state dict's `_metadata`);
//   tensor ↔ Tensor (on the CPU), views of one storage sharing memory.
import type { Tensor } from '../../core/index.ts';

/** A key of a Map loaded from a dict whose keys a plain object cannot keep. */
export type PtKey = string | number | bigint | boolean | null;

/** A plain object loaded from a dict (or to be saved as one). */
export interface PtObject {
  [key: string]: PtValue;
}

/** What t.load returns and t.save writes. */
export type PtValue =
  | null
  | boolean
  | number
  | bigint
  | string
  | Tensor
  | PtValue[]
  | readonly PtValue[]
  | PtObject
  | Map<PtKey, PtValue>;

/**
 * Marks a plain object or Map that is (or is to be saved as) a collections.OrderedDict.
 * Its value is the OrderedDict's attributes (`{ _metadata: ... }` for a module's
 * state_dict(), else `{}`). Not enumerable: Object.keys, entries and spreads skip it.
 */
export const ORDERED_DICT: unique symbol = Symbol.for('tsddp.serialization.OrderedDict');

/** Marks `dict` to be saved as a collections.OrderedDict with `attributes`; returns it. */
export function orderedDict<T extends PtObject | Map<PtKey, PtValue>>(dict: T, attributes: PtObject = {}): T {
  Object.defineProperty(dict, ORDERED_DICT, { value: attributes, configurable: true, writable: true });
  return dict;
}

/** Whether `v` was loaded from (or is marked to be saved as) a collections.OrderedDict. */
export function isOrderedDict(v: unknown): boolean {
  return typeof v === 'object' && v !== null && Object.hasOwn(v, ORDERED_DICT);
}

/** The attributes of an OrderedDict (isOrderedDict), or undefined. */
export function orderedDictAttributes(v: unknown): PtObject | undefined {
  return isOrderedDict(v) ? ((v as Record<symbol, PtObject>)[ORDERED_DICT] ?? undefined) : undefined;
}

/** Containers nested deeper than this are refused both ways (NESTING). */
export const MAX_DEPTH = 1000;

/** Array-index keys ('0' .. '4294967294'): a JS object lists them first, ascending, whatever the insertion order. */
export function isIndexKey(k: string): boolean {
  return /^(0|[1-9]\d{0,9})$/.test(k) && Number(k) < 2 ** 32 - 1;
}
