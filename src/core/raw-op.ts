// Lazy lookup of a dispatcher op id, for hand-written wrappers.
import { native } from './native.ts';

/** Returns a function giving the op's id, looked up on first use. */
export function rawOp(name: string, overload: string): () => number {
  let id = -2;
  return () => {
    if (id >= 0) return id;
    id = native.findOp(name, overload);
    if (id < 0) throw new TypeError(`${name}.${overload} is not available in this libtorch`);
    return id;
  };
}
