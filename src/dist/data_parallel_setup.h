// What the data-parallel reducer does once, before training (data_parallel_setup.cpp): the
// check that every rank passed the same tensors, the broadcast of rank 0's values, and the
// assignment of parameters to buckets.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "rcuda/dist/process_group.h"
#include "rcuda/tensor/tensor.h"

namespace rcuda::dist {

using NamedTensors = std::vector<std::pair<std::string, Tensor>>;

// DistError naming the first parameter or buffer whose name, shape, dtype or requires_grad flag
// differs between the ranks (or the counts, when those differ). Two all_gathers of small int64
// tensors on `device`, which must be one the group's backend takes.
void check_same_on_every_rank(ProcessGroup& group, const NamedTensors& parameters,
                              const NamedTensors& buffers, Device device);

// Every tensor = rank 0's, in place: consecutive tensors of one dtype and device travel
// together in one flat buffer of at most chunk_bytes (a larger tensor alone), so that a model
// of many small tensors costs a few broadcasts.
void broadcast_from_rank0(ProcessGroup& group, const std::vector<Tensor>& tensors,
                          int64_t chunk_bytes);

// Note [Bucket assignment]
// As PyTorch's compute_bucket_assignment_by_size: the tensors are taken in reverse order (the
// last layer's gradients come first in backward), each (dtype, device) pair fills its own open
// bucket, and a bucket closes once it holds at least its cap: first_bucket_bytes for the
// first bucket of a pair, bucket_bytes after (so a bucket may pass its cap by its last tensor,
// and a tensor larger than the cap has a bucket of its own). The buckets are returned in the
// order they will be reduced, by the position of their first tensor in the reversed order;
// each lists indices into `tensors`, in the order they were added.
std::vector<std::vector<size_t>> assign_buckets(const std::vector<Tensor>& tensors,
                                                int64_t first_bucket_bytes, int64_t bucket_bytes);

}  // namespace rcuda::dist
