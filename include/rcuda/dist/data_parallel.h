// Data-parallel training as PyTorch's DistributedDataParallel (docs/distributed.md): each rank
// runs the model on its share of the batch, and the gradients are averaged over the ranks while
// backward is still running.
//
//   dist::DataParallel ddp(group, parameters, buffers);   // broadcasts rank 0's values
//   ddp.before_forward();                                  // broadcasts the buffers
//   autograd::backward(loss);                              // buckets all-reduce as they fill
//   // every parameter's grad is now the mean over the ranks
//
// The reducer groups the parameters that require grad into buckets (the first of
// first_bucket_bytes, the others of bucket_bytes; in reverse order of the list, which is roughly
// the order backward produces them), registers a post-accumulate hook on each, and starts a
// bucket's all-reduce as soon as its last gradient is accumulated; an end-of-backward callback
// waits for every bucket and writes the averaged gradients back. A parameter that got no gradient
// in a backward pass is an error naming it, unless find_unused_parameters (then it counts as a
// zero gradient, as PyTorch's does).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "rcuda/dist/process_group.h"
#include "rcuda/tensor/tensor.h"

namespace rcuda::dist {

struct DataParallelOptions {
  int64_t bucket_bytes = 25 << 20;       // bucket_cap_mb = 25
  int64_t first_bucket_bytes = 1 << 20;  // the first (last-layer) bucket
  bool find_unused_parameters = false;
  bool broadcast_buffers = true;  // rank 0's buffers sent before each forward
};

class DataParallel {
 public:
  // Parameters and buffers by name (names go into error messages). Broadcasts rank 0's values of
  // both, and checks that every rank passed the same names, shapes and dtypes (DistError naming
  // the first that differs).
  DataParallel(std::shared_ptr<ProcessGroup> group,
               std::vector<std::pair<std::string, Tensor>> parameters,
               std::vector<std::pair<std::string, Tensor>> buffers = {},
               DataParallelOptions options = {});
  ~DataParallel();  // removes the hooks
  DataParallel(const DataParallel&) = delete;
  DataParallel& operator=(const DataParallel&) = delete;

  // Call before each forward: broadcasts rank 0's buffers when broadcast_buffers (running
  // statistics that each rank's forward updated from its own shard).
  void before_forward();

  // While a NoSync lives, backward passes accumulate local gradients without communicating (the
  // first backward after it ends reduces the accumulated sum), as DDP's no_sync(). What counts
  // is when backward runs, not when the forward did.
  class NoSync {
   public:
    explicit NoSync(DataParallel& ddp);
    ~NoSync();
    NoSync(const NoSync&) = delete;
    NoSync& operator=(const NoSync&) = delete;

   private:
    DataParallel& ddp_;
    bool previous_;
  };

  // The buckets as parameter names, in the order they are reduced (for tests and docs).
  std::vector<std::vector<std::string>> buckets() const;
  const std::shared_ptr<ProcessGroup>& group() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace rcuda::dist
