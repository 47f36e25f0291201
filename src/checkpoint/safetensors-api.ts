// The `safetensors` namespace: Python's safetensors.torch names plus the strict header reader.

export { FORMAT_DTYPES, type FormatDtype } from './dtypes.ts';
export {
  type ByteSource,
  deserialize,
  load,
  loadFile,
  type RawTensor,
  type ReadOptions,
  readHeader,
  readSafetensors,
  type SafetensorsContents,
  type SaveOptions,
  save,
  saveFile,
} from './safetensors.ts';
export { MAX_HEADER_BYTES, type SafetensorsHeader, type TensorEntry } from './safetensors-header.ts';
