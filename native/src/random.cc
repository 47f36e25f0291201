// Random generators, thread settings and build/runtime facts (torch version, CUDA).
#include "common.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Context.h>
#include <ATen/Parallel.h>
#include <ATen/detail/CUDAHooksInterface.h>
#include <torch/csrc/api/include/torch/version.h>

namespace tsddp {
namespace {

// Generators are few and long-lived: a plain per-thread table, never compacted.
std::vector<at::Generator>& generators() {
  thread_local std::vector<at::Generator> g;
  return g;
}

uint64_t seedArg(const Napi::Value& v, const char* what) {
  if (v.IsBigInt()) {
    bool lossless;
    return v.As<Napi::BigInt>().Uint64Value(&lossless);
  }
  if (!v.IsNumber()) throw Napi::TypeError::New(v.Env(), std::string(what) + ": seed must be an integer");
  double d = v.As<Napi::Number>().DoubleValue();
  if (d < 0 || d != static_cast<double>(static_cast<uint64_t>(d)))
    throw Napi::TypeError::New(v.Env(), std::string(what) + ": seed must be a non-negative integer");
  return static_cast<uint64_t>(d);
}

at::Generator& genArg(const Napi::Value& v, const char* what) {
  auto& g = generators();
  if (!v.IsNumber()) throw Napi::TypeError::New(v.Env(), std::string(what) + ": expected a Generator");
  int32_t h = v.As<Napi::Number>().Int32Value();
  if (h < 0 || static_cast<size_t>(h) >= g.size())
    throw Napi::TypeError::New(v.Env(), std::string(what) + ": unknown Generator");
  return g[h];
}

Napi::Value ManualSeed(const Napi::CallbackInfo& info) {
  at::manual_seed(seedArg(info[0], "manualSeed()"));
  return info.Env().Undefined();
}

// generatorNew(device) -> handle. Handle 0.. are per thread; the default CPU generator
// is reachable as generatorDefault().
Napi::Value GeneratorNew(const Napi::CallbackInfo& info) {
  const char* what = "new Generator()";
  std::string dev = info.Length() > 0 && info[0].IsString() ? info[0].As<Napi::String>().Utf8Value() : "cpu";
  return guarded(info.Env(), what, [&] {
    c10::Device d(dev);
    at::Generator gen;
    if (d.is_cpu()) gen = at::make_generator<at::CPUGeneratorImpl>();
    else if (d.is_cuda()) gen = at::detail::getCUDAHooks().getNewGenerator(d.has_index() ? d.index() : 0);
    else throw std::runtime_error("Generator: unsupported device " + dev);
    auto& g = generators();
    g.push_back(gen);
    return Napi::Number::New(info.Env(), static_cast<double>(g.size() - 1));
  });
}

Napi::Value GeneratorDefault(const Napi::CallbackInfo& info) {
  auto& g = generators();
  g.push_back(at::detail::getDefaultCPUGenerator());
  return Napi::Number::New(info.Env(), static_cast<double>(g.size() - 1));
}

Napi::Value GeneratorManualSeed(const Napi::CallbackInfo& info) {
  at::Generator& gen = genArg(info[0], "Generator.manualSeed()");
  uint64_t seed = seedArg(info[1], "Generator.manualSeed()");
  std::lock_guard<std::mutex> lock(gen.mutex());
  gen.set_current_seed(seed);
  return info.Env().Undefined();
}

Napi::Value GeneratorInitialSeed(const Napi::CallbackInfo& info) {
  at::Generator& gen = genArg(info[0], "Generator.initialSeed()");
  return Napi::BigInt::New(info.Env(), gen.current_seed());
}

Napi::Value GeneratorGetState(const Napi::CallbackInfo& info) {
  const char* what = "Generator.getState()";
  at::Generator& gen = genArg(info[0], what);
  return guarded(info.Env(), what, [&] {
    std::lock_guard<std::mutex> lock(gen.mutex());
    return wrapTensor(info.Env(), gen.get_state());
  });
}

Napi::Value GeneratorSetState(const Napi::CallbackInfo& info) {
  const char* what = "Generator.setState()";
  at::Generator& gen = genArg(info[0], what);
  const at::Tensor& state = slots().get(info.Env(), handleArg(info[1], what), what);
  return guarded(info.Env(), what, [&] {
    std::lock_guard<std::mutex> lock(gen.mutex());
    gen.set_state(state);
    return info.Env().Undefined();
  });
}

Napi::Value GetNumThreads(const Napi::CallbackInfo& info) {
  return Napi::Number::New(info.Env(), at::get_num_threads());
}

Napi::Value SetNumThreads(const Napi::CallbackInfo& info) {
  int n = info[0].IsNumber() ? info[0].As<Napi::Number>().Int32Value() : 0;
  if (n < 1) throw Napi::TypeError::New(info.Env(), "setNumThreads(): expected a positive integer");
  at::set_num_threads(n);
  return info.Env().Undefined();
}

Napi::Value BuildInfo(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  auto o = Napi::Object::New(env);
  o.Set("torchVersion", TORCH_VERSION);
  o.Set("cudaAvailable", at::detail::getCUDAHooks().hasCUDA());
  o.Set("cudaDeviceCount", at::detail::getCUDAHooks().deviceCount());
  o.Set("cudaCompiled", at::hasCUDA() || at::detail::getCUDAHooks().hasCUDA());
#ifdef TSDDP_CUDA
  o.Set("cudaBuilt", true);  // this addon's CUDA part (NCCL, cuda.* calls) is compiled in
#else
  o.Set("cudaBuilt", false);
#endif
  o.Set("threads", at::get_num_threads());
  o.Set("parallelInfo", at::get_parallel_info());
  o.Set("compiler", __VERSION__);
#ifdef TSDDP_BUILD_FLAGS
  o.Set("buildFlags", TSDDP_BUILD_FLAGS);
#endif
  return o;
}

// torch.backends.cudnn.benchmark: libtorch's global switch (it only matters on CUDA).
Napi::Value CudnnBenchmark(const Napi::CallbackInfo& info) {
  if (info.Length() > 0 && info[0].IsBoolean()) at::globalContext().setBenchmarkCuDNN(info[0].As<Napi::Boolean>());
  return Napi::Boolean::New(info.Env(), at::globalContext().benchmarkCuDNN());
}

}  // namespace

at::Generator generatorFromHandle(Napi::Env env, const Napi::Value& v, const char* what) {
  return genArg(v, what);
}

void initRandom(Napi::Env env, Napi::Object exports) {
  // NNPACK cannot run on many CPUs and then warns on every first conv; PyTorch falls
  // back to other kernels either way.
  at::globalContext().setUserEnabledNNPACK(false);
  exports.Set("manualSeed", Napi::Function::New(env, ManualSeed));
  exports.Set("generatorNew", Napi::Function::New(env, GeneratorNew));
  exports.Set("generatorDefault", Napi::Function::New(env, GeneratorDefault));
  exports.Set("generatorManualSeed", Napi::Function::New(env, GeneratorManualSeed));
  exports.Set("generatorInitialSeed", Napi::Function::New(env, GeneratorInitialSeed));
  exports.Set("generatorGetState", Napi::Function::New(env, GeneratorGetState));
  exports.Set("generatorSetState", Napi::Function::New(env, GeneratorSetState));
  exports.Set("getNumThreads", Napi::Function::New(env, GetNumThreads));
  exports.Set("setNumThreads", Napi::Function::New(env, SetNumThreads));
  exports.Set("buildInfo", Napi::Function::New(env, BuildInfo));
  exports.Set("cudnnBenchmark", Napi::Function::New(env, CudnnBenchmark));
}

}  // namespace tsddp
