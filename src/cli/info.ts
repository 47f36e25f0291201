// `tsddp info`: what this installation runs on.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildInfo } from '../core/runtime.ts';

interface SetupStamp {
  torchDir?: string;
  torchVersion?: string;
  torchSource?: string;
  addons?: 'built' | 'prebuilt' | null;
  prebuilt?: string;
  builtAt?: string | null;
}

/** Where the addons came from: the package's prebuilt ones (scripts/lib/prebuilt.mjs) or a build here. */
function addonsOrigin(stamp: SetupStamp): string {
  if (stamp.addons === 'prebuilt') return `prebuilt (${stamp.prebuilt})`;
  if (stamp.addons === 'built' || stamp.builtAt)
    return `built here${stamp.builtAt ? ` (${stamp.builtAt})` : ''}`;
  return 'unknown (not built by the setup or install script)';
}

function readStamp(): SetupStamp {
  const path = fileURLToPath(new URL('../../.tsddp/setup.json', import.meta.url));
  try {
    return JSON.parse(readFileSync(path, 'utf8')) as SetupStamp;
  } catch {
    return {};
  }
}

export function collectInfo(): Record<string, unknown> {
  const b = buildInfo();
  const stamp = readStamp();
  const torchDir = stamp.torchDir ?? '';
  const lib = torchDir ? join(torchDir, 'lib') : '';
  const libs = lib && existsSync(lib) ? readdirSync(lib) : [];
  const glooHeader =
    torchDir && existsSync(join(torchDir, 'include/torch/csrc/distributed/c10d/ProcessGroupGloo.hpp'));
  return {
    torchVersion: b.torchVersion,
    libtorch: torchDir || 'unknown (run npm run setup)',
    libtorchSource: stamp.torchSource ?? 'unknown',
    addons: addonsOrigin(stamp),
    cuda: b.cudaAvailable
      ? `available, ${b.cudaDeviceCount} device(s)`
      : b.cudaCompiled
        ? 'compiled in, no device'
        : 'not available (CPU build)',
    nccl: libs.some((f) => f.startsWith('libtorch_cuda'))
      ? 'in this libtorch (CUDA build)'
      : 'not available (CPU build)',
    gloo: glooHeader ? 'in this libtorch (ProcessGroupGloo)' : 'not found',
    threads: b.threads,
    ompNumThreads: process.env.OMP_NUM_THREADS ?? '(not set)',
    node: process.version,
    compiler: `g++ ${b.compiler} (what the addon was built with)`,
    buildFlags: b.buildFlags ?? 'unknown',
  };
}

export function infoCommand(opts: { json?: boolean }): void {
  const info = collectInfo();
  if (opts.json) {
    console.log(JSON.stringify(info, null, 2));
    return;
  }
  const width = Math.max(...Object.keys(info).map((k) => k.length));
  for (const [k, v] of Object.entries(info)) console.log(`${k.padEnd(width)}  ${String(v)}`);
}
