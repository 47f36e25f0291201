// t.save / t.load: PyTorch's own file format (torch.save's zip, and its legacy pickle
// format for reading), as data only: architecture §8, docs/guide/library.md.
export { SerializationError, type SerializationErrorCode } from './errors.ts';
export { type LoadOptions, load, loads } from './load.ts';
export { dumps, save } from './save.ts';
export {
  isOrderedDict,
  MAX_DEPTH,
  ORDERED_DICT,
  orderedDict,
  orderedDictAttributes,
  type PtKey,
  type PtObject,
  type PtValue,
} from './values.ts';
