// The base of every error tsddp throws on purpose: `instanceof TsddpError` tells them from
// a bug, and `code` is a stable string a program may branch on (docs/errors.md lists
// every class and code). `name` stays the class name, as PyTorch users read it in a
// message. This module is the floor of src/ with src/files: it imports nothing.
export abstract class TsddpError extends Error {
  /** Stable across versions: what went wrong, for a program (the message is for a person). */
  abstract readonly code: string;
}
