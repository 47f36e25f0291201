// Shared between the distributed translation units: the per-thread tables of stores
// and process groups, and the bridge that settles JS promises from c10d threads.
#pragma once

#include "common.h"
#include "future_error.h"

#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include <chrono>
#include <functional>
#include <optional>

namespace tsddp {

// Handle tables: small integer handles, like tensors. Entries are cleared on destroy.
template <typename T>
class Table {
 public:
  int32_t put(c10::intrusive_ptr<T> p) {
    items_.push_back(std::move(p));
    return static_cast<int32_t>(items_.size() - 1);
  }
  const c10::intrusive_ptr<T>& get(Napi::Env env, const Napi::Value& v, const char* what) const {
    int32_t h = v.IsNumber() ? v.As<Napi::Number>().Int32Value() : -1;
    if (h < 0 || static_cast<size_t>(h) >= items_.size() || !items_[h])
      throw Napi::TypeError::New(env, std::string(what) + ": invalid or destroyed handle");
    return items_[h];
  }
  void reset(int32_t h) {
    if (h >= 0 && static_cast<size_t>(h) < items_.size()) items_[h].reset();
  }

 private:
  std::vector<c10::intrusive_ptr<T>> items_;
};

Table<c10d::Store>& stores();
Table<c10d::ProcessGroup>& processGroups();

// Returns a promise settled when `future` completes (on whatever thread it completes),
// naming `op` in the rejection. Keeps the event loop alive while anything is pending.
Napi::Promise promiseFromFuture(Napi::Env env, const c10::intrusive_ptr<c10::ivalue::Future>& future,
                                const std::string& op);

// As promiseFromFuture, for a Work that may have no future (Gloo's send/recv/reduce_scatter):
// then a short-lived thread waits on it.
Napi::Promise promiseFromWork(Napi::Env env, const c10::intrusive_ptr<c10d::Work>& work, const std::string& op);
// Runs `body` on a short-lived thread; the promise settles with its result (a number, or
// undefined) or its exception. For the blocking calls of c10d (monitoredBarrier).
Napi::Promise promiseFromThread(Napi::Env env, std::function<void()> body, const std::string& op);
Napi::Promise promiseFromThreadInt(Napi::Env env, std::function<std::optional<int64_t>()> body, const std::string& op);

// How a collective call ends (its last argument). Block (true: torch's async_op=False) waits
// on this thread, as PyTorch's caller does, and a failure throws here; it returns undefined.
// Promise (false, absent) returns a promise (promiseFromWork / promiseFromFuture). Waiting
// here saves the hand-off of each completion to the event loop, ~80 µs per call at world 2
// on 2 cores (docs/benchmarks.md). Handle ("handle") returns a pending call that
// waitPending() waits for on this thread later, as PyTorch's synchronous Work.wait(): for
// work issued ahead inside a synchronous forward or backward (fully sharded data parallel's
// prefetched all-gathers and deferred reduce-scatters), which cannot await a promise.
enum class Ending { Promise, Block, Handle };
Napi::Value finishWork(Napi::Env env, const c10::intrusive_ptr<c10d::Work>& work, const std::string& op,
                       Ending ending);
Napi::Value finishFuture(Napi::Env env, const c10::intrusive_ptr<c10::ivalue::Future>& future,
                         const std::string& op, Ending ending);
// Argument i as the Ending: true, false (or absent) or "handle".
Ending blockingArg(const Napi::CallbackInfo& info, size_t i);

// Arguments shared by the collective bindings.
std::chrono::milliseconds msArg(const Napi::Value& v, int64_t fallback);
std::string strArg(const Napi::Value& v, const char* what);
const at::Tensor& tensorArg(const Napi::Value& v, const char* what);
std::vector<at::Tensor> tensorsArg(const Napi::Value& v, const char* what);
c10d::ReduceOp reduceOpArg(const Napi::Value& v);

void initCollectives(Napi::Env env, Napi::Object exports);
void initDifferentiableAllReduce(Napi::Env env, Napi::Object exports);
void initProcessGroup(Napi::Env env, Napi::Object exports);
void initReducer(Napi::Env env, Napi::Object exports);

}  // namespace tsddp
