// DistributedDataParallel's engine: c10d::Reducer (gradient buckets, autograd hooks,
// overlapped all-reduce), c10d::Logger (runtime stats), the parameter checks and the
// state broadcast DDP does at construction, and communication hooks. All hooks are
// C++; JavaScript only drives the per-iteration calls, as distributed.py does.
#include "distributed.h"
#include "powersgd.h"

#include <torch/csrc/distributed/c10d/comm.hpp>
#include <torch/csrc/distributed/c10d/default_comm_hooks.hpp>
#include <torch/csrc/distributed/c10d/logger.hpp>
#include <torch/csrc/distributed/c10d/reducer.hpp>
#include <torch/csrc/autograd/custom_function.h>
#include <torch/csrc/autograd/engine.h>

#include <atomic>
#include <mutex>

namespace tsddp {
namespace {

// BF16 gradient compression, the bfloat16 twin of libtorch's FP16CompressCommHook:
// divide by world size first (no overflow), all-reduce in bfloat16, copy back.
class BF16CompressCommHook : public c10d::CppCommHookInterface<c10::intrusive_ptr<c10d::ProcessGroup>> {
 public:
  explicit BF16CompressCommHook(const c10::intrusive_ptr<c10d::ProcessGroup>& pg)
      : c10d::CppCommHookInterface<c10::intrusive_ptr<c10d::ProcessGroup>>(pg) {}

  c10::intrusive_ptr<c10::ivalue::Future> runHook(c10d::GradBucket& bucket) override {
    auto compressed = bucket.getBufferRef().to(at::kBFloat16);
    compressed.div_(state_->getSize());
    std::vector<at::Tensor> tensors = {compressed};
    auto fut = state_->allreduce(tensors)->getFuture();
    auto decompressed = bucket.getBufferRef();
    auto decompress = [decompressed](c10::ivalue::Future& f) {
      auto reduced = f.value().toTensorVector()[0];
      decompressed.copy_(reduced);
      return c10::IValue(decompressed);
    };
    return fut->then(decompress, fut->elementType());
  }
};

struct DdpEngine {
  std::shared_ptr<c10d::Reducer> reducer;
  std::shared_ptr<c10d::Logger> logger;
  // Static graph: the first backward's all-reduce is delayed to the end of backward.
  std::shared_ptr<std::atomic<bool>> delayEnqueued = std::make_shared<std::atomic<bool>>(false);
  // What the PowerSGD hook sent, when it is registered.
  std::shared_ptr<PowerSGDCounters> powerSGD;
};

// The sink's backward may run on an autograd thread: it finds its reducer through this
// registry (weak references) rather than through the JS thread's table.
struct SinkTarget {
  std::weak_ptr<c10d::Reducer> reducer;
  std::shared_ptr<std::atomic<bool>> delayEnqueued;
};
std::mutex sinkMutex;
std::unordered_map<int64_t, SinkTarget> sinkTargets;
std::atomic<int64_t> nextSinkId{0};

// distributed.py's _DDPSink, for static graphs: outputs pass through (cloned), and the
// first backward through them queues Reducer::delay_all_reduce at the end of backward.
struct DDPSink : public torch::autograd::Function<DDPSink> {
  // The inputs arrive as at::TensorList: custom Function only sees tensors inside
  // at::Tensor / TensorList arguments (a std::vector would be treated as a non-tensor).
  static torch::autograd::variable_list forward(torch::autograd::AutogradContext* ctx, int64_t sinkId,
                                                at::TensorList inputs) {
    ctx->saved_data["sink"] = sinkId;
    torch::autograd::variable_list out;
    for (auto& t : inputs) out.push_back(t.clone());
    return out;
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    SinkTarget target;
    {
      std::lock_guard<std::mutex> lock(sinkMutex);
      auto it = sinkTargets.find(ctx->saved_data["sink"].toInt());
      if (it != sinkTargets.end()) target = it->second;
    }
    auto reducer = target.reducer.lock();
    if (reducer && !target.delayEnqueued->exchange(true)) {
      torch::autograd::Engine::get_default_engine().queue_callback([reducer] { reducer->delay_all_reduce(); });
    }
    torch::autograd::variable_list out{at::Tensor()};  // no gradient for sinkId
    for (auto& g : grads) out.push_back(g);
    return out;
  }
};

std::vector<DdpEngine>& engines() {
  thread_local std::vector<DdpEngine> e;
  return e;
}

DdpEngine& engineArg(const Napi::Value& v, const char* what) {
  auto& e = engines();
  int32_t h = v.IsNumber() ? v.As<Napi::Number>().Int32Value() : -1;
  if (h < 0 || static_cast<size_t>(h) >= e.size() || !e[h].reducer)
    throw Napi::TypeError::New(v.Env(), std::string(what) + ": invalid or destroyed DDP engine");
  return e[h];
}

std::vector<at::Tensor> tensorsArg(const Napi::Value& v, const char* what) {
  if (!v.IsArray()) throw Napi::TypeError::New(v.Env(), std::string(what) + ": expected an array of tensors");
  auto arr = v.As<Napi::Array>();
  std::vector<at::Tensor> out;
  for (uint32_t i = 0; i < arr.Length(); ++i) out.push_back(slots().get(v.Env(), handleArg(arr.Get(i), what), what));
  return out;
}

// verifyParams(pg, params[]): every rank has the same number of parameters with the
// same shapes and strides, else a c10::Error naming the first mismatch.
Napi::Value VerifyParams(const Napi::CallbackInfo& info) {
  const char* what = "DistributedDataParallel: verify parameters across ranks";
  auto& pg = processGroups().get(info.Env(), info[0], what);
  auto params = tensorsArg(info[1], what);
  return guarded(info.Env(), what, [&] {
    c10d::verify_params_across_processes(pg, params, std::nullopt);
    return info.Env().Undefined();
  });
}

// broadcastCoalesced(pg, tensors[], bufferBytes, src): blocking, like DDP's
// _sync_module_states.
Napi::Value BroadcastCoalesced(const Napi::CallbackInfo& info) {
  const char* what = "DistributedDataParallel: broadcast module states";
  auto& pg = processGroups().get(info.Env(), info[0], what);
  auto tensors = tensorsArg(info[1], what);
  size_t bytes = static_cast<size_t>(info[2].As<Napi::Number>().Int64Value());
  int src = info[3].As<Napi::Number>().Int32Value();
  return guarded(info.Env(), what, [&] {
    if (!tensors.empty()) c10d::broadcast_coalesced(pg, tensors, bytes, src);
    return info.Env().Undefined();
  });
}

// ddpNew(pg, params[], names[], bucketCapBytes, firstBucketBytes, initialLimits[],
//        findUnused, gradientAsBucketView, staticGraph, broadcastBuffers)
//   -> [handle, bucketIndices]. initialLimits are the size limits of the first bucket
// assignment (distributed.py's compute_bucket_size_limits); rebuilding after the first
// iteration uses firstBucketBytes then bucketCapBytes.
Napi::Value DdpNew(const Napi::CallbackInfo& info) {
  const char* what = "DistributedDataParallel";
  Napi::Env env = info.Env();
  auto& pg = processGroups().get(env, info[0], what);
  auto params = tensorsArg(info[1], what);
  auto namesArr = info[2].As<Napi::Array>();
  std::unordered_map<size_t, std::string> names;
  for (uint32_t i = 0; i < namesArr.Length(); ++i) names[i] = namesArr.Get(i).As<Napi::String>().Utf8Value();
  int64_t cap = info[3].As<Napi::Number>().Int64Value();
  int64_t firstCap = info[4].As<Napi::Number>().Int64Value();
  auto limitsArg = intListArg(info[5], what);
  std::vector<size_t> initialLimits(limitsArg.begin(), limitsArg.end());
  bool findUnused = info[6].ToBoolean().Value();
  bool asView = info[7].ToBoolean().Value();
  bool staticGraph = info[8].ToBoolean().Value();
  bool broadcastBuffers = info[9].ToBoolean().Value();
  return guarded(env, what, [&] {
    std::vector<bool> sparse(params.size(), false);
    // As distributed.py: buckets by size in parameter order, then reversed, because
    // gradients become ready roughly in reverse order of registration.
    auto [buckets, limits] = c10d::compute_bucket_assignment_by_size(params, initialLimits, sparse);
    std::reverse(buckets.begin(), buckets.end());
    auto reducer = std::make_shared<c10d::Reducer>(params, buckets, pg, sparse, cap, findUnused, asView, names,
                                                   firstCap, /*skip_all_reduce_unused_params=*/false,
                                                   /*use_python_reducer=*/false,
                                                   /*bucket_bytes_cap_list=*/std::vector<int64_t>{});
    auto logger = std::make_shared<c10d::Logger>(reducer);
    reducer->set_logger(logger);
    logger->set_construction_data_and_log("DistributedDataParallel", {}, -1, broadcastBuffers, false, staticGraph);
    if (staticGraph) {
      reducer->set_static_graph();
      logger->set_static_graph();
    }
    // Record runtime stats every iteration (the default samples every 100th), so that
    // stats() reflects the recent steps.
    reducer->set_ddp_runtime_logging_sample_rate(1);
    auto& e = engines();
    e.push_back({reducer, logger});
    auto out = Napi::Array::New(env, 2);
    out.Set(0u, Napi::Number::New(env, static_cast<double>(e.size() - 1)));
    auto b = Napi::Array::New(env, buckets.size());
    for (size_t i = 0; i < buckets.size(); ++i) {
      auto idx = Napi::Array::New(env, buckets[i].size());
      for (size_t j = 0; j < buckets[i].size(); ++j)
        idx.Set(static_cast<uint32_t>(j), Napi::Number::New(env, static_cast<double>(buckets[i][j])));
      b.Set(static_cast<uint32_t>(i), idx);
    }
    out.Set(1u, b);
    return out;
  });
}

// ddpPrepareForForward(h): record runtime stats, then prepare_for_forward — called by
// distributed.py's _pre_forward when grad is enabled and gradients are synced.
Napi::Value DdpPrepareForForward(const Napi::CallbackInfo& info) {
  const char* what = "DistributedDataParallel.forward";
  auto& e = engineArg(info[0], what);
  return guarded(info.Env(), what, [&] {
    e.logger->set_runtime_stats_and_log();
    e.reducer->prepare_for_forward();
    return info.Env().Undefined();
  });
}

// ddpRebuildBuckets(h) -> whether buckets were rebuilt (once, after the first
// iteration, in the order gradients actually became ready).
Napi::Value DdpRebuildBuckets(const Napi::CallbackInfo& info) {
  const char* what = "DistributedDataParallel.forward";
  auto& e = engineArg(info[0], what);
  return guarded(info.Env(), what, [&] { return Napi::Boolean::New(info.Env(), e.reducer->rebuild_buckets()); });
}

// ddpPrepareForBackward(h, outputs[]): outputs are searched for unused parameters only
// when findUnusedParameters is on (pass [] otherwise).
Napi::Value DdpPrepareForBackward(const Napi::CallbackInfo& info) {
  const char* what = "DistributedDataParallel.forward";
  auto& e = engineArg(info[0], what);
  auto outputs = tensorsArg(info[1], what);
  return guarded(info.Env(), what, [&] {
    e.reducer->prepare_for_backward(outputs);
    return info.Env().Undefined();
  });
}

// ddpSink(h, outputs[]) -> outputs'[] (see DDPSink); [] once the delayed all-reduce
// has been enqueued, when no sink is needed any more.
Napi::Value DdpSink(const Napi::CallbackInfo& info) {
  const char* what = "DistributedDataParallel.forward";
  Napi::Env env = info.Env();
  auto& e = engineArg(info[0], what);
  auto outputs = tensorsArg(info[1], what);
  return guarded(env, what, [&]() -> Napi::Value {
    if (e.delayEnqueued->load()) return Napi::Array::New(env, 0);
    int64_t id = nextSinkId++;
    {
      std::lock_guard<std::mutex> lock(sinkMutex);
      sinkTargets[id] = SinkTarget{e.reducer, e.delayEnqueued};
    }
    auto sunk = DDPSink::apply(id, at::TensorList(outputs));
    auto arr = Napi::Array::New(env, sunk.size());
    for (size_t i = 0; i < sunk.size(); ++i) arr.Set(static_cast<uint32_t>(i), wrapTensor(env, sunk[i]));
    return arr;
  });
}

// PowerSGD's options, checked in TypeScript (src/distributed/powersgd.ts).
PowerSGDOptions powerSGDOptions(const Napi::Object& o) {
  auto num = [&](const char* k) { return o.Get(k).As<Napi::Number>().DoubleValue(); };
  PowerSGDOptions p;
  p.matrixApproximationRank = static_cast<int64_t>(num("matrixApproximationRank"));
  p.startIter = static_cast<int64_t>(num("startPowerSGDIter"));
  p.minCompressionRate = num("minCompressionRate");
  p.useErrorFeedback = o.Get("useErrorFeedback").As<Napi::Boolean>().Value();
  p.warmStart = o.Get("warmStart").As<Napi::Boolean>().Value();
  p.orthogonalizationEpsilon = num("orthogonalizationEpsilon");
  p.randomSeed = static_cast<uint64_t>(num("randomSeed"));
  return p;
}

// ddpSetCommHook(h, pg, 'allreduce' | 'fp16' | 'bf16' | 'powerSGD', powerSGDOptions?)
Napi::Value DdpSetCommHook(const Napi::CallbackInfo& info) {
  const char* what = "DistributedDataParallel.registerCommHook";
  auto& e = engineArg(info[0], what);
  auto& pg = processGroups().get(info.Env(), info[1], what);
  std::string hook = info[2].As<Napi::String>().Utf8Value();
  return guarded(info.Env(), what, [&] {
    if (hook == "allreduce") e.reducer->register_builtin_comm_hook(c10d::BuiltinCommHookType::ALLREDUCE);
    else if (hook == "fp16") e.reducer->register_builtin_comm_hook(c10d::BuiltinCommHookType::FP16_COMPRESS);
    else if (hook == "bf16") e.reducer->register_comm_hook(std::make_unique<BF16CompressCommHook>(pg));
    else if (hook == "powerSGD") {
      auto counters = std::make_shared<PowerSGDCounters>();
      e.reducer->register_comm_hook(makePowerSGDHook(pg, powerSGDOptions(info[3].As<Napi::Object>()), counters));
      e.powerSGD = counters;
    } else
      throw std::invalid_argument("commHook must be 'allreduce', 'fp16', 'bf16' or 'powerSGD', got '" + hook + "'");
    e.logger->set_comm_hook(hook);
    return info.Env().Undefined();
  });
}

// ddpStats(h) -> { ints: {...}, strs: {...}, bucketSizes: number[] }: c10d::Logger's data.
Napi::Value DdpStats(const Napi::CallbackInfo& info) {
  const char* what = "DistributedDataParallel.stats";
  Napi::Env env = info.Env();
  auto& e = engineArg(info[0], what);
  return guarded(env, what, [&] {
    auto data = e.logger->get_ddp_logging_data();
    auto ints = Napi::Object::New(env);
    for (const auto& [k, v] : data.ints_map) ints.Set(k, Napi::Number::New(env, static_cast<double>(v)));
    auto strs = Napi::Object::New(env);
    for (const auto& [k, v] : data.strs_map) strs.Set(k, Napi::String::New(env, v));
    auto sizes = e.logger->get_bucket_sizes();
    auto b = Napi::Array::New(env, sizes.size());
    for (size_t i = 0; i < sizes.size(); ++i) b.Set(static_cast<uint32_t>(i), Napi::Number::New(env, static_cast<double>(sizes[i])));
    auto out = Napi::Object::New(env);
    out.Set("ints", ints);
    out.Set("strs", strs);
    out.Set("bucketSizes", b);
    if (e.powerSGD) {
      auto& c = *e.powerSGD;
      auto p = Napi::Object::New(env);
      auto n = [&](int64_t v) { return Napi::Number::New(env, static_cast<double>(v)); };
      p.Set("iteration", n(c.iter));
      p.Set("elementsLastIter", n(c.elementsLastIter));
      p.Set("gradientElementsLastIter", n(c.gradientElementsLastIter));
      p.Set("elementSize", n(c.elementSize));
      out.Set("powerSGD", p);
    }
    return out;
  });
}

// Uneven inputs (torch.distributed.algorithms.Join, src/distributed/join.ts).

// ddpJoinNotify(h, pg, ones, useStaticWorldSize): Join.notify_join_context's all-reduce of
// `ones` (this rank has not joined), handed to the Reducer as DDP's _pre_forward does: with
// useStaticWorldSize false, the Reducer divides gradients by the ranks that have not joined.
Napi::Value DdpJoinNotify(const Napi::CallbackInfo& info) {
  const char* what = "DistributedDataParallel.forward (Join)";
  auto& e = engineArg(info[0], what);
  auto& pg = processGroups().get(info.Env(), info[1], what);
  std::vector<at::Tensor> ones{tensorArg(info[2], what)};
  bool useStaticWorldSize = info[3].ToBoolean().Value();
  return guarded(info.Env(), what, [&] {
    e.reducer->set_forward_pass_work_handle(pg->allreduce(ones), useStaticWorldSize);
    return info.Env().Undefined();
  });
}

// ddpJoinShadowBackward(h, pg, findUnused): a joined rank's side of the backward all-reduces
// of the ranks still training (_DDPJoinHook.main_hook): one all-reduce of zeros per bucket,
// in the Reducer's bucket order through its comm hook, waited for; the used-parameter map
// when unused parameters are searched; then the rebuilt parameters are pushed.
Napi::Value DdpJoinShadowBackward(const Napi::CallbackInfo& info) {
  const char* what = "Join (DistributedDataParallel)";
  auto& e = engineArg(info[0], what);
  auto& pg = processGroups().get(info.Env(), info[1], what);
  bool findUnused = info[2].ToBoolean().Value();
  return guarded(info.Env(), what, [&] {
    auto buckets = e.reducer->get_grad_buckets(/*return_zero_tensors=*/true);
    std::vector<c10::intrusive_ptr<c10::ivalue::Future>> futures;
    for (auto& b : buckets) futures.push_back(e.reducer->run_comm_hook(b));
    for (auto& f : futures) {
      f->wait();
      if (f->hasError()) std::rethrow_exception(f->exception_ptr());
    }
    if (findUnused) {
      std::vector<at::Tensor> used{e.reducer->get_local_used_map_on_device()};
      pg->allreduce(used);  // not waited, as distributed.py's _match_unused_params_allreduce
    }
    e.reducer->push_rebuilt_params_for_all_indices();
    return info.Env().Undefined();
  });
}

// ddpSetUnevenInputJoin(h): c10d::Logger records that the run uses Join.
Napi::Value DdpSetUnevenInputJoin(const Napi::CallbackInfo& info) {
  auto& e = engineArg(info[0], "Join");
  e.logger->set_uneven_input_join();
  return info.Env().Undefined();
}

Napi::Value DdpDestroy(const Napi::CallbackInfo& info) {
  auto& e = engines();
  int32_t h = info[0].As<Napi::Number>().Int32Value();
  if (h >= 0 && static_cast<size_t>(h) < e.size()) {
    e[h].logger.reset();
    e[h].reducer.reset();
  }
  return info.Env().Undefined();
}

}  // namespace

void initReducer(Napi::Env env, Napi::Object exports) {
  exports.Set("verifyParams", Napi::Function::New(env, VerifyParams));
  exports.Set("broadcastCoalesced", Napi::Function::New(env, BroadcastCoalesced));
  exports.Set("ddpNew", Napi::Function::New(env, DdpNew));
  exports.Set("ddpPrepareForForward", Napi::Function::New(env, DdpPrepareForForward));
  exports.Set("ddpRebuildBuckets", Napi::Function::New(env, DdpRebuildBuckets));
  exports.Set("ddpPrepareForBackward", Napi::Function::New(env, DdpPrepareForBackward));
  exports.Set("ddpSink", Napi::Function::New(env, DdpSink));
  exports.Set("ddpSetCommHook", Napi::Function::New(env, DdpSetCommHook));
  exports.Set("ddpStats", Napi::Function::New(env, DdpStats));
  exports.Set("ddpDestroy", Napi::Function::New(env, DdpDestroy));
  exports.Set("ddpJoinNotify", Napi::Function::New(env, DdpJoinNotify));
  exports.Set("ddpJoinShadowBackward", Napi::Function::New(env, DdpJoinShadowBackward));
  exports.Set("ddpSetUnevenInputJoin", Napi::Function::New(env, DdpSetUnevenInputJoin));
}

}  // namespace tsddp
