// What the Hugging Face readers share (hf-gpt2.ts, hf-vit.ts): their error, config.json,
// and the weight files of a folder, whole or sharded.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { TsddpError } from '../errors/index.ts';

export type Json = Record<string, unknown>;

/** A Hugging Face folder tsddp cannot read, or a model it cannot write as one; names the file and field. */
export class PretrainedError extends TsddpError {
  override name = 'PretrainedError';
  readonly code = 'PRETRAINED';
}

export function readJson(file: string): Json {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    throw new PretrainedError(`${file}: cannot be read (${(e as NodeJS.ErrnoException).code ?? e})`);
  }
  try {
    const v = JSON.parse(text);
    if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new Error('not an object');
    return v as Json;
  } catch (e) {
    throw new PretrainedError(`${file}: not a JSON object (${(e as Error).message})`);
  }
}

/** The weight files of a folder: model.safetensors, or those a model.safetensors.index.json maps. */
export function weightFiles(dir: string): string[] {
  const index = join(dir, 'model.safetensors.index.json');
  let map: unknown;
  try {
    map = readJson(index).weight_map;
  } catch (e) {
    if (e instanceof PretrainedError && /cannot be read \(ENOENT\)/.test(e.message))
      return [join(dir, 'model.safetensors')];
    throw e;
  }
  if (typeof map !== 'object' || map === null) throw new PretrainedError(`${index}: no weight_map object`);
  const files = [...new Set(Object.values(map as Json))];
  for (const f of files)
    if (typeof f !== 'string' || f.includes('/') || f.startsWith('.'))
      throw new PretrainedError(`${index}: weight_map names ${JSON.stringify(f)}, not a file of the folder`);
  return (files as string[]).map((f) => join(dir, f));
}
