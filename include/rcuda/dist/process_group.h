// Process groups for data-parallel training (docs/distributed.md): collectives between the ranks
// of a job, over NCCL for CUDA tensors and over MPI for CPU tensors. MPI also starts nothing:
// mpirun, Slurm's srun or `rcuda launch` start the processes, and each finds its rank from what
// the launcher set (launch_info()).
//
//   dist::init_process_group({dist::Backend::Nccl});   // or Mpi; rank and size from the launcher
//   auto group = dist::default_group();
//   group->all_reduce(grad, dist::ReduceOp::Avg)->wait();
//
// Collectives work in place on contiguous tensors of one device type (CPU for MPI, CUDA for
// NCCL). They are asynchronous: each returns a Work whose wait() blocks until the result may be
// read (MPI) or orders the current CUDA stream after it (NCCL, which runs on the current stream).
// Every rank must call the same collectives in the same order with the same shapes and dtypes;
// a mismatch is a DistError naming the collective, the ranks and what differs, never corrupt
// memory. A rank that dies or stops answering makes the others' wait() (or, with check_shapes,
// their next collective call, which exchanges the fingerprints) throw DistError within the
// group's timeout, naming the rank where it can be known; never a hang.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "rcuda/core/error.h"
#include "rcuda/tensor/tensor.h"

namespace rcuda::dist {

// A collective that failed: a peer died or timed out, or the ranks disagreed. After one, the
// group is unusable (destroy_process_group(), then exit or start again).
class DistError : public Error {
 public:
  explicit DistError(const std::string& what) : Error(what) {}
  const char* kind() const override { return "DistError"; }
};

enum class Backend { Mpi, Nccl };
enum class ReduceOp { Sum, Avg, Max, Min };
const char* backend_name(Backend backend);  // "mpi", "nccl"
const char* reduce_op_name(ReduceOp op);    // "sum", ...

// Where this process sits in the job, from the launcher's environment: Open MPI's
// OMPI_COMM_WORLD_{RANK,SIZE,LOCAL_RANK,LOCAL_SIZE}, Slurm's SLURM_{PROCID,NTASKS,LOCALID} (and
// SLURM_NTASKS_PER_NODE), torchrun's RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE; a lone
// process is rank 0 of 1. ValueError naming the variables when they disagree or are out of range.
struct LaunchInfo {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  int local_world_size = 1;
  std::string launcher;  // "mpirun", "slurm", "torchrun" or "none"
};
LaunchInfo launch_info();

// A pending collective.
class Work {
 public:
  virtual ~Work() = default;
  // Blocks until done (MPI), or makes the current CUDA stream wait for it (NCCL). DistError when
  // the collective failed or the group's timeout passed first.
  virtual void wait() = 0;
  // Whether it has finished, without blocking.
  virtual bool completed() = 0;
};

class ProcessGroup {
 public:
  virtual ~ProcessGroup() = default;
  virtual Backend backend() const = 0;
  virtual int rank() const = 0;
  virtual int size() const = 0;

  // t = op over every rank's t, on every rank, in place.
  virtual std::shared_ptr<Work> all_reduce(const Tensor& t, ReduceOp op) = 0;
  // t = root's t on every rank, in place.
  virtual std::shared_ptr<Work> broadcast(const Tensor& t, int root) = 0;
  // out [size * n, ...] = every rank's in [n, ...] stacked along dim 0 in rank order.
  virtual std::shared_ptr<Work> all_gather(const Tensor& out, const Tensor& in) = 0;
  // out [n, ...] = op over the ranks of their in [size * n, ...], rank r getting rows
  // [r n, (r + 1) n).
  virtual std::shared_ptr<Work> reduce_scatter(const Tensor& out, const Tensor& in,
                                               ReduceOp op) = 0;
  virtual std::shared_ptr<Work> barrier() = 0;
};

struct ProcessGroupOptions {
  Backend backend = Backend::Mpi;
  // How long a collective may wait for the slowest rank before every waiting rank fails.
  std::chrono::milliseconds timeout{std::chrono::minutes(10)};
  // Checks that every rank calls each collective with the same shape and dtype (a small host
  // exchange per collective). Off saves that exchange where shapes are known to agree (the
  // data-parallel reducer checks its buckets once, at construction).
  bool check_shapes = true;
};

// Starts the default group of this process (every rank of the job): MPI is initialised if it is
// not, and for NCCL rank 0's unique id travels to the others over MPI; each rank uses the GPU of
// its local rank. ValueError when a default group exists or the backend was not built (NCCL
// without CUDA), DistError when the ranks cannot meet within the timeout.
std::shared_ptr<ProcessGroup> init_process_group(const ProcessGroupOptions& options = {});
// The default group, or nullptr before init_process_group and after destroy_process_group.
std::shared_ptr<ProcessGroup> default_group();
bool is_initialized();
// Drops the default group (NCCL's communicator destroyed or, after a failure, aborted).
void destroy_process_group();

}  // namespace rcuda::dist
