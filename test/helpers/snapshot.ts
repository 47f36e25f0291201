// What "nothing was touched" compares: every entry under a folder with the sha256 of its
// bytes (links and other non-files by their kind, never followed).
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

export function snapshot(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (d: string) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.isFile()) out[p] = createHash('sha256').update(readFileSync(p)).digest('hex');
      else out[p] = e.isSymbolicLink() ? 'link' : 'other';
    }
  };
  walk(dir);
  return out;
}
