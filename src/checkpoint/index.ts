// Checkpoints: safetensors files, atomic, verified checkpoint directories, and PyTorch's
// .pt files read as data only (t.save / t.load; architecture §8).
export type { ProgressHook, WriteProgress, WrittenFile } from './atomic.ts';
export {
  CheckpointError,
  type CheckpointErrorCode,
  SafetensorsError,
  type SafetensorsErrorCode,
} from './errors.ts';
export { checkpointDirName, stepOfDirName } from './layout.ts';
export {
  type LoadCheckpointOptions,
  type LoadedCheckpoint,
  type LoadTargets,
  latestCheckpoint,
  loadCheckpoint,
  verifyCheckpoint,
} from './load.ts';
export type { Manifest, ManifestEntry } from './manifest.ts';
export * as serialization from './pt/index.ts';
export { load, type PtValue, SerializationError, type SerializationErrorCode, save } from './pt/index.ts';
export * as safetensors from './safetensors-api.ts';
export {
  type CheckpointState,
  type SaveCheckpointOptions,
  type SavedCheckpoint,
  saveCheckpoint,
} from './save.ts';
export type { EpochSetter, Stateful } from './stateful.ts';
