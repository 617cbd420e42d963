// The MPI backend, seen without MPI's headers: the group of every rank of the job over CPU
// tensors, which also bootstraps the NCCL backend (its unique id and its fingerprints travel
// here).
#pragma once

#include <memory>

#include "dist/collective.h"
#include "rcuda/dist/process_group.h"

namespace rcuda::dist::mpi {

class MpiGroup : public ProcessGroup {
 public:
  // Initialises MPI when nobody has (Note [MPI threads]) and makes this group's communicators.
  // DistError when MPI's view of the job differs from `launch` or the ranks do not meet within
  // the timeout.
  MpiGroup(const ProcessGroupOptions& options, const LaunchInfo& launch);
  ~MpiGroup() override;

  Backend backend() const override { return Backend::Mpi; }
  int rank() const override;
  int size() const override;
  std::shared_ptr<Work> all_reduce(const Tensor& t, ReduceOp op) override;
  std::shared_ptr<Work> broadcast(const Tensor& t, int root) override;
  std::shared_ptr<Work> all_gather(const Tensor& out, const Tensor& in) override;
  std::shared_ptr<Work> reduce_scatter(const Tensor& out, const Tensor& in, ReduceOp op) override;
  std::shared_ptr<Work> barrier() override;

  // Exchanges `mine` with every rank (Note [Collective fingerprints]): DistError naming the
  // call, the ranks and the field when they differ, or the ranks that did not answer within the
  // timeout. Also how the NCCL backend checks its calls.
  void agree(const Fingerprint& mine, const std::string& call);
  // `n` bytes at `data` from `root` to every rank, blocking, within the timeout.
  void broadcast_bytes(void* data, size_t n, int root, const std::string& call);
  // Marks the group failed: every later call throws DistError(`why`).
  void fail(const std::string& why);

  struct State;

 private:
  std::shared_ptr<State> state_;
};

}  // namespace rcuda::dist::mpi
