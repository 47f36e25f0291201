// Activation checkpointing (src/utils/checkpoint.ts): the autograd node of a checkpointed
// region, as PyTorch's CheckpointFunction. Its forward ran in JavaScript without grad,
// keeping only the region's inputs; its backward calls back into JavaScript, which
// recomputes the region with grad and runs a backward through it (a reentrant backward,
// on this thread), then hands back the inputs' gradients. Like JavaScript tensor hooks
// (autograd.cc), it can only run on the JS thread: CPU graphs, whose backward runs on the
// calling thread (architecture §4).
#include "common.h"

#include <torch/csrc/autograd/engine.h>
#include <torch/csrc/autograd/function.h>

#include <mutex>
#include <thread>
#include <vector>

namespace tsddp {
namespace {

Napi::FunctionReference* dispatcher = new Napi::FunctionReference();  // never freed: see autograd.cc
napi_env dispatcherEnv = nullptr;
std::thread::id jsThread;
std::mutex* deadMutex = new std::mutex();
std::vector<int64_t>* deadRegions = new std::vector<int64_t>();

// Reports its region dead when the node that holds it goes (the graph was freed).
struct RegionToken {
  explicit RegionToken(int64_t i) : id(i) {}
  RegionToken(const RegionToken&) = delete;
  RegionToken& operator=(const RegionToken&) = delete;
  const int64_t id;
  ~RegionToken() {
    std::lock_guard<std::mutex> lock(*deadMutex);
    deadRegions->push_back(id);
  }
};

struct CheckpointBackward : torch::autograd::Node {
  explicit CheckpointBackward(int64_t id) : token(std::make_shared<RegionToken>(id)) {}
  std::string name() const override { return "CheckpointFunctionBackward"; }

  torch::autograd::variable_list apply(torch::autograd::variable_list&& grads) override {
    TORCH_CHECK(std::this_thread::get_id() == jsThread,
                "checkpoint: a checkpointed region's backward ran off the JavaScript thread (only CPU "
                "graphs can be checkpointed)");
    TORCH_CHECK(torch::autograd::Engine::get_default_engine().is_checkpoint_valid(),
                "checkpoint() recomputes its region in a reentrant backward, which is incompatible with "
                "autograd.grad() or with passing `inputs` to backward(); call backward() without `inputs`");
    Napi::Env env(dispatcherEnv);
    Napi::HandleScope scope(env);
    auto arr = Napi::Array::New(env, grads.size());
    for (size_t i = 0; i < grads.size(); ++i)
      arr.Set(static_cast<uint32_t>(i), grads[i].defined() ? wrapTensor(env, grads[i]) : env.Null());
    Napi::Value r = dispatcher->Call({Napi::Number::New(env, static_cast<double>(token->id)), arr});
    TORCH_CHECK(r.IsArray(), "checkpoint: the recomputation returned no gradients");
    auto out = r.As<Napi::Array>();
    // The handles are handed over (src/utils/checkpoint.ts releases them on its side): each
    // is released here once read, so the gradient lives as long as autograd needs it.
    torch::autograd::variable_list result(out.Length());
    bool disposed = false;
    for (uint32_t i = 0; i < out.Length(); ++i) {
      Napi::Value h = out.Get(i);
      if (!h.IsNumber()) continue;
      const int32_t handle = h.As<Napi::Number>().Int32Value();
      const at::Tensor* g = slots().tryGet(handle);
      if (g == nullptr) {
        disposed = true;
        continue;
      }
      result[i] = *g;
      slots().release(handle);
    }
    TORCH_CHECK(out.Length() == num_outputs(), "checkpoint: expected ", num_outputs(), " input gradients, got ",
                out.Length());
    TORCH_CHECK(!disposed, "checkpoint: a gradient was disposed before autograd read it");
    return result;
  }

  std::shared_ptr<RegionToken> token;
};

std::vector<at::Tensor> tensors(const Napi::Value& v, const char* what) {
  if (!v.IsArray()) throw Napi::TypeError::New(v.Env(), std::string(what) + ": expected an array of tensors");
  auto arr = v.As<Napi::Array>();
  std::vector<at::Tensor> out;
  for (uint32_t i = 0; i < arr.Length(); ++i) out.push_back(slots().get(v.Env(), handleArg(arr.Get(i), what), what));
  return out;
}

// setCheckpointDispatcher(fn): fn(regionId, gradHandles (null: none)) -> input gradient handles (null: none),
// handed over: the node releases each once read (JS has given them up: src/core/scope.ts releaseHandle).
Napi::Value SetCheckpointDispatcher(const Napi::CallbackInfo& info) {
  *dispatcher = Napi::Persistent(info[0].As<Napi::Function>());
  dispatcherEnv = info.Env();
  jsThread = std::this_thread::get_id();
  return info.Env().Undefined();
}

// checkpointAttach(inputs, outputs, regionId) -> handles of the outputs (detached copies
// sharing their storage) with the region's node as grad_fn, its next edges the inputs'.
Napi::Value CheckpointAttach(const Napi::CallbackInfo& info) {
  const char* what = "checkpoint";
  auto inputs = tensors(info[0], what);
  auto outputs = tensors(info[1], what);
  const int64_t id = info[2].As<Napi::Number>().Int64Value();
  return guarded(info.Env(), what, [&] {
    for (const auto& x : inputs)
      TORCH_CHECK(x.device().is_cpu(), "checkpoint(): only CPU regions can be checkpointed (a CUDA backward runs on "
                  "libtorch's device threads, where JavaScript cannot run); got an input on ", x.device());
    auto node = c10::make_intrusive<CheckpointBackward>(id);
    torch::autograd::edge_list edges;
    for (const auto& x : inputs)
      edges.push_back(x.requires_grad() ? torch::autograd::impl::gradient_edge(x) : torch::autograd::Edge());
    node->set_next_edges(std::move(edges));
    auto out = Napi::Array::New(info.Env(), outputs.size());
    for (size_t i = 0; i < outputs.size(); ++i) {
      at::Tensor y = outputs[i].detach();
      if (at::isFloatingType(y.scalar_type()) || at::isComplexType(y.scalar_type()))
        torch::autograd::create_gradient_edge(y, node);
      out.Set(static_cast<uint32_t>(i), wrapTensor(info.Env(), y));
    }
    return Napi::Value(out);
  });
}

// drainDeadCheckpoints() -> ids of regions whose node was freed since the last call.
Napi::Value DrainDeadCheckpoints(const Napi::CallbackInfo& info) {
  std::vector<int64_t> ids;
  {
    std::lock_guard<std::mutex> lock(*deadMutex);
    ids.swap(*deadRegions);
  }
  auto out = Napi::Array::New(info.Env(), ids.size());
  for (size_t i = 0; i < ids.size(); i++) out.Set(static_cast<uint32_t>(i), static_cast<double>(ids[i]));
  return out;
}

}  // namespace

void initCheckpoint(Napi::Env env, Napi::Object exports) {
  exports.Set("setCheckpointDispatcher", Napi::Function::New(env, SetCheckpointDispatcher));
  exports.Set("checkpointAttach", Napi::Function::New(env, CheckpointAttach));
  exports.Set("drainDeadCheckpoints", Napi::Function::New(env, DrainDeadCheckpoints));
}

}  // namespace tsddp
