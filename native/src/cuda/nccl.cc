// ProcessGroupNCCL for the default group (CUDA builds only; see cuda.h).
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>

#include "cuda.h"

namespace tsddp {

c10::intrusive_ptr<c10d::Backend> makeNcclBackend(const c10::intrusive_ptr<c10d::Store>& groupStore, int rank,
                                                 int size, std::chrono::milliseconds timeout, int device) {
  // As distributed_c10d._new_process_group_helper: the backend's own store prefix is its
  // device type, the timeout is the group's, the group is the default one ("0").
  auto opts = c10d::ProcessGroupNCCL::Options::create();
  opts->timeout = timeout;
  opts->group_name = "0";
  opts->global_ranks_in_group.reserve(size);
  for (int r = 0; r < size; ++r) opts->global_ranks_in_group.push_back(r);
  auto nccl = c10::make_intrusive<c10d::ProcessGroupNCCL>(c10::make_intrusive<c10d::PrefixStore>("cuda/", groupStore),
                                                          rank, size, opts);
  nccl->setSequenceNumberForGroup();
  if (device >= 0) {
    // NCCL otherwise creates its communicator at the first collective; connecting now
    // makes a rank that cannot reach the others fail here, in init, like device_id does.
    at::Device d(at::kCUDA, static_cast<c10::DeviceIndex>(device));
    nccl->setBoundDeviceId(d);
    nccl->eagerConnectSingleDevice(d);
  }
  return nccl;
}

}  // namespace tsddp
