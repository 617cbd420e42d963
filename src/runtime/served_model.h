// ServedModel's state (rcuda/runtime/model.h), shared by model_load.cpp, request_check.cpp,
// batcher.cpp and batch_run.cpp.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "rcuda/io/onnx/import.h"
#include "rcuda/runtime/model.h"

namespace rcuda::runtime {

using Clock = std::chrono::steady_clock;

// An accepted request waiting for, or in, a batch.
struct PendingRequest {
  std::string id;
  std::vector<Tensor> inputs;        // contiguous CPU tensors, in the model's input order
  std::vector<size_t> output_index;  // the outputs wanted, as indices into the model's outputs
  int64_t rows = 0;                  // the batch dim's size; 0 when max_batch_size is 0
  Clock::time_point arrival;
  std::optional<Clock::time_point> deadline;  // past it, the request is answered, never run
  int64_t timeout_us = 0;
  std::promise<InferResponse> promise;
};

// One copy of the model's weights on one device, and the thread that runs its batches.
struct Instance {
  io::OnnxModel model;
  Device device;
  std::thread worker;
};

struct ServedModel::Impl {
  ModelConfig config;  // completed from the file
  int64_t version = 0;
  std::string version_string;
  std::vector<std::unique_ptr<Instance>> instances;

  // The queue, oldest first. Workers wait on `wake` for a request, or while gathering a batch,
  // for more requests; submit and stop notify it.
  mutable std::mutex mutex;
  std::condition_variable wake;
  std::deque<std::unique_ptr<PendingRequest>> queue;
  bool stopping = false;

  std::mutex join_mutex;  // one stop() joins the workers; a second waits for it

  mutable std::mutex stats_mutex;
  ModelStats stats;  // pending_request_count is read from the queue

  std::string where() const;  // "model 'mlp' version 1"

  // request_check.cpp: the request checked against the config, as a queue entry.
  std::unique_ptr<PendingRequest> check(InferRequest request) const;
  // batcher.cpp
  void start_workers();
  void worker_loop(Instance& instance);
  std::vector<std::unique_ptr<PendingRequest>> next_batch();
  void stop();
  // batch_run.cpp: runs one batch on `instance` and answers each of its requests.
  void run_batch(Instance& instance, std::vector<std::unique_ptr<PendingRequest>>& batch);

  void count_failure(uint64_t requests = 1);
};

// Answers a request with an InferError.
void answer_error(PendingRequest& request, InferError::Status status, const std::string& message);

}  // namespace rcuda::runtime
