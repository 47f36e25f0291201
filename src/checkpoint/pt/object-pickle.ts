// Values as Python's plain pickler writes them (pickle.dumps, which torch.distributed's
// object collectives send), both ways: the same data-only values as t.save/t.load
// (values.ts), with each tensor inside the pickle as torch.storage._load_from_bytes of
// torch.save bytes, the form Python's pickler gives a tensor. PyTorch's pickle.loads reads
// what pickleObject writes; unpickleObject reads what PyTorch's pickle.dumps writes
// (protocol 4: frames, memoize, stack globals) and refuses any other global.
import type * as t from '../../core/index.ts';
import { SerializationError } from './errors.ts';
import { type Parsed, parse } from './load.ts';
import { readPickle } from './pickle-reader.ts';
import { writePickle } from './pickle-writer.ts';
import { dumps } from './save.ts';
import { planSave } from './save-plan.ts';
import { TensorFactory } from './storages.ts';
import { toJs } from './to-js.ts';
import type { PtValue } from './values.ts';

/** The pickle of `value`; throws SerializationError naming the first value with no such form. */
export function pickleObject(value: unknown, name = '<object>'): Uint8Array {
  return writePickle(value, planSave(value, name), (x: t.Tensor) => dumps(x)).pickle;
}

/** The value of a pickle that pickle.dumps (or pickleObject) wrote; `name` is used in errors. */
export function unpickleObject<T = PtValue>(bytes: Uint8Array, name = '<object>'): T {
  const nested: Parsed[] = [];
  const { value: root, end } = readPickle(bytes, 0, {
    file: name,
    persistentLoad: () => {
      throw new SerializationError('PICKLE_INVALID', name, 'a persistent id in a plain pickle');
    },
    loadFromBytes: (b) => {
      const parsed = parse(b, name);
      nested.push(parsed);
      return parsed.root;
    },
  });
  if (end !== bytes.length)
    throw new SerializationError(
      'PICKLE_INVALID',
      name,
      `${bytes.length - end} bytes after the pickle's STOP`,
    );
  toJs(root, () => null, name); // the dry run: refuses before anything is allocated
  const factory = new TensorFactory();
  try {
    for (const p of nested) {
      const used = p.used();
      const data = p.read(used);
      for (const r of used) factory.addBase(r, data.get(r.key) as Uint8Array, p.bigEndian);
    }
    const value = toJs(root, (spec) => factory.make(spec), name);
    factory.releaseBases();
    return value as T;
  } catch (e) {
    factory.disposeAll();
    throw e;
  }
}
