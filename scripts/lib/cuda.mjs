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
