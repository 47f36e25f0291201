// The collectives beyond DDP's: point-to-point, all-to-all, gather/scatter/reduce, the
// single-tensor all-gather and reduce-scatter, the coalesced forms and monitoredBarrier,
// each one call of c10d::ProcessGroup (torch.distributed's, so a PyTorch rank in the same
// group matches it). Ranks here are group ranks; src/distributed/collectives.ts maps
// torch.distributed's global ranks onto them. Each call takes a last `blocking` argument:
// true waits for it here (async_op=False), false returns a promise, "handle" a pending call
// for waitPending() (Ending, distributed.h).
#include "distributed.h"

#include <torch/csrc/distributed/c10d/debug.h>

namespace tsddp {
namespace {

const c10::intrusive_ptr<c10d::ProcessGroup>& groupArg(const Napi::CallbackInfo& info, const char* what) {
  return processGroups().get(info.Env(), info[0], what);
}

template <typename Opts>
Opts withTimeout(const Napi::Value& v) {
  Opts opts;
  if (v.IsNumber()) opts.timeout = msArg(v, 0);
  return opts;
}

int64_t intArg(const Napi::Value& v, const char* what) {
  if (!v.IsNumber()) throw Napi::TypeError::New(v.Env(), std::string(what) + ": expected a number");
  return v.As<Napi::Number>().Int64Value();
}

std::vector<std::vector<at::Tensor>> tensorListsArg(const Napi::Value& v, const char* what) {
  if (!v.IsArray()) throw Napi::TypeError::New(v.Env(), std::string(what) + ": expected an array of tensor arrays");
  auto arr = v.As<Napi::Array>();
  std::vector<std::vector<at::Tensor>> out;
  for (uint32_t i = 0; i < arr.Length(); ++i) out.push_back(tensorsArg(arr.Get(i), what));
  return out;
}

// send(pg, tensor, dst, tag) / recv(pg, tensor, src (-1: any), tag) -> Promise (recv: the
// sender's group rank).
Napi::Value Send(const Napi::CallbackInfo& info) {
  const char* what = "send";
  auto& pg = groupArg(info, what);
  std::vector<at::Tensor> tensors{tensorArg(info[1], what)};
  int dst = static_cast<int>(intArg(info[2], what));
  int tag = static_cast<int>(intArg(info[3], what));
  Ending blocking = blockingArg(info, 4);
  return guarded(info.Env(), what, [&] { return finishWork(info.Env(), pg->send(tensors, dst, tag), what, blocking); });
}

Napi::Value Recv(const Napi::CallbackInfo& info) {
  const char* what = "recv";
  auto& pg = groupArg(info, what);
  std::vector<at::Tensor> tensors{tensorArg(info[1], what)};
  int src = static_cast<int>(intArg(info[2], what));
  int tag = static_cast<int>(intArg(info[3], what));
  Ending blocking = blockingArg(info, 4);
  return guarded(info.Env(), what, [&] {
    auto work = src < 0 ? pg->recvAnysource(tensors, tag) : pg->recv(tensors, src, tag);
    if (blocking == Ending::Block) {
      work->wait();
      return Napi::Value(Napi::Number::New(info.Env(), work->sourceRank()));
    }
    return Napi::Value(promiseFromThreadInt(info.Env(), [work] {
      work->wait();
      return std::optional<int64_t>(work->sourceRank());
    }, what));
  });
}

// allToAllSingle(pg, output, input, outputSplits[], inputSplits[], timeoutMs?)
Napi::Value AllToAllSingle(const Napi::CallbackInfo& info) {
  const char* what = "allToAllSingle";
  auto& pg = groupArg(info, what);
  at::Tensor output = tensorArg(info[1], what), input = tensorArg(info[2], what);
  auto outSplits = intListArg(info[3], what), inSplits = intListArg(info[4], what);
  auto opts = withTimeout<c10d::AllToAllOptions>(info[5]);
  Ending blocking = blockingArg(info, 6);
  return guarded(info.Env(), what, [&] {
    return finishWork(info.Env(), pg->alltoall_base(output, input, outSplits, inSplits, opts), what, blocking);
  });
}

// allToAll(pg, outputs[], inputs[], timeoutMs?)
Napi::Value AllToAll(const Napi::CallbackInfo& info) {
  const char* what = "allToAll";
  auto& pg = groupArg(info, what);
  auto outputs = tensorsArg(info[1], what), inputs = tensorsArg(info[2], what);
  auto opts = withTimeout<c10d::AllToAllOptions>(info[3]);
  Ending blocking = blockingArg(info, 4);
  return guarded(info.Env(), what,
                 [&] { return finishWork(info.Env(), pg->alltoall(outputs, inputs, opts), what, blocking); });
}

// gather(pg, outputs[] (empty off the root), input, root, timeoutMs?)
Napi::Value Gather(const Napi::CallbackInfo& info) {
  const char* what = "gather";
  auto& pg = groupArg(info, what);
  auto list = tensorsArg(info[1], what);
  std::vector<std::vector<at::Tensor>> outputs;
  if (!list.empty()) outputs.push_back(std::move(list));
  std::vector<at::Tensor> inputs{tensorArg(info[2], what)};
  auto opts = withTimeout<c10d::GatherOptions>(info[4]);
  Ending blocking = blockingArg(info, 5);
  opts.rootRank = intArg(info[3], what);
  return guarded(info.Env(), what,
                 [&] { return finishWork(info.Env(), pg->gather(outputs, inputs, opts), what, blocking); });
}

// scatter(pg, output, inputs[] (empty off the root), root, timeoutMs?)
Napi::Value Scatter(const Napi::CallbackInfo& info) {
  const char* what = "scatter";
  auto& pg = groupArg(info, what);
  std::vector<at::Tensor> outputs{tensorArg(info[1], what)};
  auto list = tensorsArg(info[2], what);
  std::vector<std::vector<at::Tensor>> inputs;
  if (!list.empty()) inputs.push_back(std::move(list));
  auto opts = withTimeout<c10d::ScatterOptions>(info[4]);
  Ending blocking = blockingArg(info, 5);
  opts.rootRank = intArg(info[3], what);
  return guarded(info.Env(), what,
                 [&] { return finishWork(info.Env(), pg->scatter(outputs, inputs, opts), what, blocking); });
}

// reduce(pg, tensor, root, op, timeoutMs?)
Napi::Value Reduce(const Napi::CallbackInfo& info) {
  const char* what = "reduce";
  auto& pg = groupArg(info, what);
  std::vector<at::Tensor> tensors{tensorArg(info[1], what)};
  auto opts = withTimeout<c10d::ReduceOptions>(info[4]);
  Ending blocking = blockingArg(info, 5);
  opts.rootRank = intArg(info[2], what);
  opts.reduceOp = reduceOpArg(info[3]);
  return guarded(info.Env(), what, [&] { return finishWork(info.Env(), pg->reduce(tensors, opts), what, blocking); });
}

// allGatherIntoTensor(pg, output, input, timeoutMs?): torch's _allgather_base.
Napi::Value AllGatherIntoTensor(const Napi::CallbackInfo& info) {
  const char* what = "allGatherIntoTensor";
  auto& pg = groupArg(info, what);
  at::Tensor output = tensorArg(info[1], what), input = tensorArg(info[2], what);
  auto opts = withTimeout<c10d::AllgatherOptions>(info[3]);
  Ending blocking = blockingArg(info, 4);
  return guarded(info.Env(), what,
                 [&] { return finishWork(info.Env(), pg->_allgather_base(output, input, opts), what, blocking); });
}

// reduceScatterTensor(pg, output, input, op, timeoutMs?): torch's _reduce_scatter_base.
// Gloo implements it (ProcessGroupGloo::reduce_scatter_tensor_coalesced) as one all-reduce
// of a copy of the input, then a copy of this rank's chunk, in a work that has no future:
// an asynchronous call would need a thread to wait on it, one more hand-off per call (2x
// the latency of small tensors). On a Gloo group the same all-reduce is issued here and
// continued through its future, so the ranks see the very calls PyTorch makes.
Napi::Value ReduceScatterTensor(const Napi::CallbackInfo& info) {
  const char* what = "reduceScatterTensor";
  auto& pg = groupArg(info, what);
  at::Tensor output = tensorArg(info[1], what), input = tensorArg(info[2], what);
  auto opts = withTimeout<c10d::ReduceScatterOptions>(info[4]);
  Ending blocking = blockingArg(info, 5);
  opts.reduceOp = reduceOpArg(info[3]);
  return guarded(info.Env(), what, [&] {
    auto type = input.device().type();
    if (pg->getBackend(type)->getBackendName() != "gloo")
      return finishWork(info.Env(), pg->_reduce_scatter_base(output, input, opts), what, blocking);
    int64_t size = pg->getSize(), rank = pg->getRank();
    TORCH_CHECK(output.dtype() == input.dtype(), "reduceScatterTensor: input and output dtypes differ");
    TORCH_CHECK(output.size(0) * size == input.size(0), "reduceScatterTensor: the input is not world size x the output");
    std::vector<at::Tensor> buffer{input.clone()};
    c10d::AllreduceOptions arOpts;
    arOpts.reduceOp = opts.reduceOp;
    arOpts.timeout = opts.timeout;
    auto future = pg->allreduce(buffer, arOpts)->getFuture();
    auto chunk = [buffer, output, size, rank](c10::ivalue::Future& parent) {
      rethrowIfFailed(parent);
      output.copy_(buffer[0].chunk(size)[rank]);
      return c10::IValue();
    };
    return finishFuture(info.Env(), future->then(chunk, c10::NoneType::get()), what, blocking);
  });
}

// allReduceCoalesced(pg, tensors[], op, timeoutMs?)
Napi::Value AllReduceCoalesced(const Napi::CallbackInfo& info) {
  const char* what = "allReduceCoalesced";
  auto& pg = groupArg(info, what);
  auto tensors = tensorsArg(info[1], what);
  auto opts = withTimeout<c10d::AllreduceCoalescedOptions>(info[3]);
  Ending blocking = blockingArg(info, 4);
  opts.reduceOp = reduceOpArg(info[2]);
  return guarded(info.Env(), what,
                 [&] { return finishWork(info.Env(), pg->allreduce_coalesced(tensors, opts), what, blocking); });
}

// allGatherCoalesced(pg, outputLists[][], inputs[], timeoutMs?)
Napi::Value AllGatherCoalesced(const Napi::CallbackInfo& info) {
  const char* what = "allGatherCoalesced";
  auto& pg = groupArg(info, what);
  auto outputs = tensorListsArg(info[1], what);
  auto inputs = tensorsArg(info[2], what);
  auto opts = withTimeout<c10d::AllgatherOptions>(info[3]);
  Ending blocking = blockingArg(info, 4);
  return guarded(info.Env(), what,
                 [&] { return finishWork(info.Env(), pg->allgather_coalesced(outputs, inputs, opts), what, blocking); });
}

// monitoredBarrier(pg, timeoutMs, waitAllRanks): Gloo's, which blocks; run on a thread. Rank
// 0's error names the ranks that did not arrive within the timeout.
Napi::Value MonitoredBarrier(const Napi::CallbackInfo& info) {
  const char* what = "monitoredBarrier";
  auto pg = groupArg(info, what);
  c10d::BarrierOptions opts;
  opts.timeout = msArg(info[1], 1800000);
  bool waitAll = info[2].ToBoolean().Value();
  Ending blocking = blockingArg(info, 3);
  return guarded(info.Env(), what, [&]() -> Napi::Value {
    if (blocking != Ending::Block)
      return promiseFromThread(info.Env(), [pg, opts, waitAll] { pg->monitoredBarrier(opts, waitAll); }, what);
    pg->monitoredBarrier(opts, waitAll);
    return info.Env().Undefined();
  });
}

// debugLevel() -> 0 (OFF), 1 (INFO), 2 (DETAIL); setDebugLevel(level | -1: from
// TORCH_DISTRIBUTED_DEBUG). c10d's global level, which its DDP logging reads.
Napi::Value DebugLevel(const Napi::CallbackInfo& info) {
  return Napi::Number::New(info.Env(), static_cast<int>(c10d::debug_level()));
}

Napi::Value SetDebugLevel(const Napi::CallbackInfo& info) {
  int level = static_cast<int>(intArg(info[0], "setDebugLevel"));
  return guarded(info.Env(), "setDebugLevel", [&] {
    if (level < 0) c10d::setDebugLevelFromEnvironment();
    else c10d::setDebugLevel(static_cast<c10d::DebugLevel>(level));
    return info.Env().Undefined();
  });
}

}  // namespace

void initCollectives(Napi::Env env, Napi::Object exports) {
  exports.Set("send", Napi::Function::New(env, Send));
  exports.Set("recv", Napi::Function::New(env, Recv));
  exports.Set("allToAllSingle", Napi::Function::New(env, AllToAllSingle));
  exports.Set("allToAll", Napi::Function::New(env, AllToAll));
  exports.Set("gather", Napi::Function::New(env, Gather));
  exports.Set("scatter", Napi::Function::New(env, Scatter));
  exports.Set("reduce", Napi::Function::New(env, Reduce));
  exports.Set("allGatherIntoTensor", Napi::Function::New(env, AllGatherIntoTensor));
  exports.Set("reduceScatterTensor", Napi::Function::New(env, ReduceScatterTensor));
  exports.Set("allReduceCoalesced", Napi::Function::New(env, AllReduceCoalesced));
  exports.Set("allGatherCoalesced", Napi::Function::New(env, AllGatherCoalesced));
  exports.Set("monitoredBarrier", Napi::Function::New(env, MonitoredBarrier));
  exports.Set("debugLevel", Napi::Function::New(env, DebugLevel));
  exports.Set("setDebugLevel", Napi::Function::New(env, SetDebugLevel));
  // As `import torch.distributed` does.
  try {
    c10d::setDebugLevelFromEnvironment();
  } catch (const std::exception&) {
    // An unknown TORCH_DISTRIBUTED_DEBUG: setDebugLevelFromEnv() in TypeScript reports it.
  }
}

}  // namespace tsddp
