// Pickle refusal where safetensors or a checkpoint directory belongs. torch.save writes a
// pickle (legacy) or a zip holding a pickle; unpickling either can run arbitrary code, so
// the safetensors and checkpoint readers never do: they say so, and point to t.load
// (pt/load.ts: the data inside a .pt file, read without running anything) or to a
// one-time conversion.
import { extname } from 'node:path';

/** File extensions PyTorch users give pickled checkpoints. */
export const PICKLE_EXTENSIONS: readonly string[] = ['.pt', '.pth', '.bin', '.pkl', '.pickle', '.ckpt'];

export function hasPickleExtension(path: string): boolean {
  return PICKLE_EXTENSIONS.includes(extname(path).toLowerCase());
}

/**
 * What the first bytes of a file say it is: 'zip' (torch.save's default since 1.6:
 * 'PK\x03\x04'), 'pickle' (protocol 2–5 starts with 0x80 and the protocol number), or
 * null. A valid safetensors file can also start with 0x80 (a 640-byte header is
 * 80 02 00 ..), so callers consult this only once the file failed as safetensors or
 * was offered where a checkpoint directory belongs.
 */
export function pickleMagic(prefix: Uint8Array): 'zip' | 'pickle' | null {
  if (
    prefix.length >= 4 &&
    prefix[0] === 0x50 &&
    prefix[1] === 0x4b &&
    prefix[2] === 0x03 &&
    prefix[3] === 0x04
  )
    return 'zip';
  if (prefix.length >= 2 && prefix[0] === 0x80 && prefix[1] >= 2 && prefix[1] <= 5) return 'pickle';
  return null;
}

/** The explanation given whenever a pickle is refused. */
export function pickleRefusal(what: string): string {
  return (
    `${what} looks like a PyTorch pickle (torch.save / .pt), not safetensors. tsddp never unpickles: loading a pickle can ` +
    'run arbitrary code. `await t.load(path)` reads the tensors, dicts, lists, numbers and strings inside it without ' +
    'running anything (as torch.load(path, weights_only=True) does; any other Python object is refused). ' +
    'Or convert it once, in Python, from a source you trust: ' +
    "`from safetensors.torch import save_file; save_file(torch.load(path, weights_only=True), 'model.safetensors')` " +
    '(for a training checkpoint, save the model state_dict that way and load it into the model).'
  );
}
