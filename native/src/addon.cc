// Module registration: each file contributes its functions to the exports object.
#include <c10/util/Logging.h>
#include <malloc.h>

#include <cstdlib>
#include <cstring>
#include <mutex>

#include "distributed.h"
#ifdef TSDDP_CUDA
#include "cuda/cuda.h"
#endif

namespace tsddp {
namespace {
Napi::Value SetErrorClass(const Napi::CallbackInfo& info) {
  setTorchErrorClass(info[0].As<Napi::Function>());
  return info.Env().Undefined();
}

// glibc serves blocks above a dynamic threshold with mmap and returns them on free, so a
// training step that frees and re-allocates its activations pays page faults for every
// page, every step (measured: ResNet-50 at 224x224 ran at 0.56x PyTorch's speed, 0.98x
// with this). Keep big blocks in the heap and do not trim it eagerly, as jemalloc-style
// allocators do. TSDDP_MALLOC_TUNING=0 leaves glibc's defaults.
void tuneMalloc() {
  const char* opt = std::getenv("TSDDP_MALLOC_TUNING");
  if (opt != nullptr && std::strcmp(opt, "0") == 0) return;
#ifdef M_MMAP_THRESHOLD
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 512 << 20);
#endif
}

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  static std::once_flag once;  // worker threads load the addon too
  std::call_once(once, [] {
    tuneMalloc();
    c10::initLogging();  // reads TORCH_CPP_LOG_LEVEL, as `import torch` does
  });
  exports.Set("setErrorClass", Napi::Function::New(env, SetErrorClass));
  initTensor(env, exports);
  initDispatch(env, exports);
  initAutograd(env, exports);
  initCheckpoint(env, exports);
  initFsdp(env, exports);
  initRandom(env, exports);
  initProfiler(env, exports);
  initProcessGroup(env, exports);
  initCollectives(env, exports);
  initDifferentiableAllReduce(env, exports);
  initReducer(env, exports);
#ifdef TSDDP_CUDA
  initCuda(env, exports);
#endif
  return exports;
}
}  // namespace
}  // namespace tsddp

static Napi::Object InitAddon(Napi::Env env, Napi::Object exports) { return tsddp::Init(env, exports); }
NODE_API_MODULE(tsddp, InitAddon)
