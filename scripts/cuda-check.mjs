#!/usr/bin/env node
// Compile-checks the addon's CUDA part on a machine without CUDA (run by CI): the
// files that TSDDP_CUDA adds or changes (native/src/cuda/*.cc, and the #ifdef TSDDP_CUDA
// branches of process_group.cc, addon.cc, random.cc) are compiled, through the same
// native/CMakeLists.txt, against this checkout's torch headers and the CUDA/cuBLAS/
// cuSPARSE/cuSOLVER headers of Debian's nvidia-cuda-dev (non-free) and NCCL's of
// libnccl-dev (contrib). Nothing is linked: that needs a CUDA libtorch.
//   node scripts/cuda-check.mjs        (after scripts/setup.mjs; root, network to Debian)
// The headers are downloaded once (about 1 GB of .deb, ~30 s) and kept in .tsddp/cuda-headers.
import { existsSync, mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { glooIncludeRoot, readStamp } from './lib/addons.mjs';
import { fail, run, SetupError } from './lib/proc.mjs';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const CACHE = join(ROOT, '.tsddp', 'cuda-headers');
const HEADERS = join(CACHE, 'root', 'usr', 'include');
// Debian unstable's: torch 2.13's headers need NCCL >= 2.23 (trixie has 2.22); sid has
// CUDA 12.4 and NCCL 2.29 (2026-12).
const SUITE = 'sid';
const PACKAGES = ['nvidia-cuda-dev', 'libnccl-dev', 'libcu++-dev'];
const log = (msg) => console.log(`cuda-check: ${msg}`);

// apt-get with its own sources, lists and cache in CACHE: the machine's apt setup is untouched.
function apt(args, opts = {}) {
  const o = [
    `Dir::Etc::SourceList=${join(CACHE, 'sources.list')}`,
    'Dir::Etc::SourceParts=/nonexistent',
    `Dir::State::Lists=${join(CACHE, 'lists')}`,
    `Dir::Cache=${join(CACHE, 'cache')}`,
    'APT::Architecture=amd64',
    'APT::Architectures=amd64',
    'APT::Sandbox::User=root',
    'Debug::NoLocking=1',
  ].flatMap((x) => ['-o', x]);
  run('apt-get', [...o, ...args], opts);
}

function fetchHeaders() {
  if (['nccl.h', 'cublas_v2.h', 'nv/target'].every((h) => existsSync(join(HEADERS, h)))) return;
  log(`downloading ${PACKAGES.join(', ')} from Debian ${SUITE} (headers only are kept)`);
  rmSync(CACHE, { recursive: true, force: true });
  for (const d of ['lists/partial', 'cache/archives/partial', 'debs', 'root'])
    mkdirSync(join(CACHE, d), { recursive: true });
  writeFileSync(
    join(CACHE, 'sources.list'),
    `deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian ${SUITE} main contrib non-free\n`,
  );
  apt(['-qq', 'update']);
  apt(['-qq', 'download', ...PACKAGES], { cwd: join(CACHE, 'debs') });
  for (const deb of readdirSync(join(CACHE, 'debs'))) {
    // Headers only: the libraries in these packages are for linking, which is not done here.
    run('sh', [
      '-c',
      `dpkg-deb --fsys-tarfile "$1" | tar -x -C "$2" --wildcards './usr/include/*'`,
      'sh',
      join(CACHE, 'debs', deb),
      join(CACHE, 'root'),
    ]);
  }
  rmSync(join(CACHE, 'debs'), { recursive: true, force: true });
  rmSync(join(CACHE, 'cache'), { recursive: true, force: true });
  if (!existsSync(join(HEADERS, 'nccl.h')))
    fail(`nccl.h is not in ${HEADERS} after unpacking ${PACKAGES.join(', ')}`);
}

// The CPU torch wheel ships c10/cuda's and ATen/cuda's headers but not the two that a
// CUDA build of torch generates from templates; these are their contents in CUDA wheels.
const GENERATED = {
  'c10/cuda/impl/cuda_cmake_macros.h': '#pragma once\n#define C10_CUDA_BUILD_SHARED_LIBS\n',
  'ATen/cuda/CUDAConfig.h':
    '#pragma once\n#define AT_CUDNN_ENABLED() 1\n#define AT_CUSPARSELT_ENABLED() 1\n#define AT_HIPSPARSELT_ENABLED() 0\n#define AT_ROCM_ENABLED() 0\n#define AT_MAGMA_ENABLED() 1\n',
};

function writeGenerated(torchDir) {
  const dir = join(CACHE, 'generated');
  for (const [rel, text] of Object.entries(GENERATED)) {
    if (existsSync(join(torchDir, 'include', rel))) continue; // a CUDA torch has its own
    mkdirSync(dirname(join(dir, rel)), { recursive: true });
    writeFileSync(join(dir, rel), text);
  }
  return dir;
}

function main() {
  const torchDir = readStamp(ROOT).torchDir;
  if (!torchDir || !existsSync(join(torchDir, 'include', 'ATen', 'cuda', 'CUDAContext.h')))
    fail('no torch with ATen/cuda headers recorded in .tsddp/setup.json: run `node scripts/setup.mjs` first');
  fetchHeaders();
  const generated = writeGenerated(torchDir);
  const build = join(CACHE, 'build');
  rmSync(build, { recursive: true, force: true });
  const gloo = glooIncludeRoot();
  run('cmake', [
    '-S',
    join(ROOT, 'native'),
    '-B',
    build,
    '-DCMAKE_BUILD_TYPE=Release',
    `-DTORCH_DIR=${torchDir}`,
    '-DTSDDP_CUDA=ON',
    `-DTSDDP_CUDA_INCLUDE=${HEADERS};${generated}`,
    `-DCMAKE_JS_INC=${join(ROOT, 'node_modules', 'node-api-headers', 'include')}`,
    `-DCMAKE_CXX_STANDARD_INCLUDE_DIRECTORIES=${gloo === '/usr/include' ? '' : gloo}`,
  ]);
  // Each source's object target (Makefile generator): compiled, never linked.
  const sources = [
    ...readdirSync(join(ROOT, 'native', 'src', 'cuda'))
      .filter((f) => f.endsWith('.cc'))
      .map((f) => `cuda/${f}`),
    'process_group.cc',
    'addon.cc',
    'random.cc',
  ];
  const t0 = Date.now();
  run('make', ['-C', build, `-j${availableParallelism()}`, ...sources.map((s) => `src/${s}.o`)]);
  log(`compiled ${sources.join(', ')} with TSDDP_CUDA=ON in ${((Date.now() - t0) / 1000).toFixed(0)} s`);
}

try {
  main();
} catch (e) {
  if (!(e instanceof SetupError)) throw e;
  console.error(`cuda-check: ${e.message}`);
  process.exit(1);
}
