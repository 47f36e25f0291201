// The torch version a libtorch folder holds, read from its files (no python needed). Used
// at load by native.ts to refuse an addon built against another torch than the one now in
// that folder, and by the setup and install scripts (scripts/lib/torch.mjs). Plain
// JavaScript with its own declarations (torch-version.d.mts): those scripts run before
// anything is compiled, and scripts/build.mjs copies it into dist/ as it is.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/** "2.13.0+cpu" for a torch package folder or a libtorch folder; undefined when unknown. */
export function torchFolderVersion(dir) {
  const read = (p) => (existsSync(join(dir, p)) ? readFileSync(join(dir, p), 'utf8') : '');
  const py = read('version.py').match(/__version__\s*=\s*'([^']+)'/); // torch package
  if (py) return py[1];
  const bv = read('build-version').trim(); // libtorch zip
  if (bv) return bv;
  const h =
    read('include/torch/headeronly/version.h') || read('include/torch/csrc/api/include/torch/version.h');
  const part = (n) => h.match(new RegExp(`TORCH_VERSION_${n}\\s+(\\d+)`))?.[1];
  return part('MAJOR') ? `${part('MAJOR')}.${part('MINOR')}.${part('PATCH')}` : undefined;
}
