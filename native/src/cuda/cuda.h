// The CUDA-only part of the addon (docs/architecture.md §3): compiled when CMake's
// TSDDP_CUDA is on, which it is by default when the libtorch found has libtorch_cuda.
// Everything here goes through libtorch's own CUDA pieces (c10::cuda, the caching
// allocator, c10::Event, ProcessGroupNCCL); no CUDA runtime call is made directly.
#pragma once

#include <chrono>

#include "../distributed.h"

namespace tsddp {

// cudaSetDevice, cudaSynchronize, cudaMemoryStats, cudaEvent*: see cuda_runtime.cc.
void initCuda(Napi::Env env, Napi::Object exports);

// A ProcessGroupNCCL for the default group, as torch.distributed builds it: over
// PrefixStore("cuda/", groupStore), its sequence number drawn, and connected eagerly on
// `device` when that is >= 0 (init_process_group's device_id).
c10::intrusive_ptr<c10d::Backend> makeNcclBackend(const c10::intrusive_ptr<c10d::Store>& groupStore, int rank,
                                                 int size, std::chrono::milliseconds timeout, int device);

}  // namespace tsddp
