// Where the headers of the addon's CUDA part (native/src/cuda, CMake's TSDDP_CUDA) are.
// ATen/cuda's headers include the CUDA runtime's, cuBLAS', cuSPARSE', cuSOLVER's and
// NCCL's. A CUDA torch wheel depends on the nvidia-* wheels that hold them (beside torch
// in site-packages/nvidia/<lib>/include, or nvidia/cu13/include); a CUDA toolkit adds
// /usr/local/cuda/include. node: builtins only.
import { existsSync, readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';

/** True when this libtorch has CUDA (libtorch_cuda.so beside libtorch.so). */
export const torchHasCuda = (torchDir) => existsSync(join(torchDir, 'lib', 'libtorch_cuda.so'));

/** The include folders for TSDDP_CUDA_INCLUDE, most specific first; [] when none. */
export function cudaIncludeDirs(torchDir, env = process.env) {
  const dirs = [];
  const nvidia = join(dirname(torchDir), 'nvidia');
  if (existsSync(nvidia)) {
    for (const lib of readdirSync(nvidia).sort()) {
      const inc = join(nvidia, lib, 'include');
      if (existsSync(inc)) dirs.push(inc);
    }
  }
  for (const home of [env.CUDA_HOME, env.CUDA_PATH, '/usr/local/cuda']) {
    if (home && existsSync(join(home, 'include', 'cuda_runtime_api.h'))) {
      dirs.push(join(home, 'include'));
      break;
    }
  }
  return [...new Set(dirs)];
}

/**
 * CMake's TSDDP_CUDA flags: the CUDA part (NCCL, torch.cuda's calls) is built when this
 * torch has CUDA and the headers it needs are found; a CUDA torch without them (no NCCL
 * headers) builds the CPU part only and says so.
 */
export function cudaFlags(torchDir, log = (msg) => console.log(`tsddp setup: ${msg}`)) {
  if (!torchHasCuda(torchDir)) return ['--CDTSDDP_CUDA=OFF', '--CDTSDDP_CUDA_INCLUDE='];
  const dirs = cudaIncludeDirs(torchDir);
  const has = (h) => dirs.some((d) => existsSync(join(d, h)));
  if (!has('nccl.h') || !has('cuda_runtime_api.h')) {
    log(
      `CUDA torch, but no ${has('nccl.h') ? 'CUDA runtime' : 'NCCL'} headers: building without the CUDA part (no NCCL)`,
    );
    return ['--CDTSDDP_CUDA=OFF', '--CDTSDDP_CUDA_INCLUDE='];
  }
  return ['--CDTSDDP_CUDA=ON', `--CDTSDDP_CUDA_INCLUDE=${dirs.join(';')}`];
}
