// One batch on one instance: the requests' inputs joined along the batch dim (and padded with
// zero rows up to the next captured CUDA-graph size), moved to the instance's device, run, and
// the outputs brought back to the CPU and split by rows, one response per request.
#include <algorithm>
#include <string>

#include "rcuda/backend/cuda.h"
#include "rcuda/ops/copy.h"
#include "rcuda/ops/creation.h"
#include "rcuda/ops/indexing.h"
#include "rcuda/tensor/autograd_meta.h"
#include "runtime/served_model.h"

namespace rcuda::runtime {
namespace {

uint64_t micros(Clock::duration d) {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(d).count());
}

// The CUDA work queued so far, finished: the durations then time what they say.
void wait_for(const Device& device) {
  if (device.is_cuda()) cuda::synchronize(device.index);
}

}  // namespace

void ServedModel::Impl::run_batch(Instance& instance,
                                  std::vector<std::unique_ptr<PendingRequest>>& batch) {
  const bool batched = config.max_batch_size > 0;
  int64_t rows = 0;
  for (const auto& request : batch) rows += request->rows;
  // The rows the model runs: a CUDA graph replays only the size it was captured at.
  int64_t padded = rows;
  if (batched && instance.device.is_cuda()) {
    auto size = std::lower_bound(config.cuda_graphs.begin(), config.cuda_graphs.end(), rows);
    if (size != config.cuda_graphs.end()) padded = *size;
  }

  const auto start = Clock::now();
  Clock::time_point inputs_ready, ran, split;
  std::vector<InferResponse> responses(batch.size());
  try {
    NoGradGuard no_grad;
    std::vector<Tensor> inputs;
    for (size_t k = 0; k < config.inputs.size(); ++k) {
      std::vector<Tensor> parts;
      for (const auto& request : batch) parts.push_back(request->inputs[k]);
      if (padded > rows) {
        Shape shape = parts.front().shape();
        shape[0] = padded - rows;
        parts.push_back(ops::zeros(shape, TensorOptions(parts.front().dtype())));
      }
      const Tensor joined = parts.size() == 1 ? parts.front() : ops::cat(parts, 0);
      inputs.push_back(ops::to(joined, instance.device));
    }
    wait_for(instance.device);
    inputs_ready = Clock::now();

    const std::vector<Tensor> outputs = instance.model.run(inputs);
    wait_for(instance.device);
    ran = Clock::now();

    std::vector<Tensor> host;
    for (size_t k = 0; k < outputs.size(); ++k) {
      host.push_back(ops::to(outputs[k], Device()));
      RCUDA_CHECK(!batched || (host[k].dim() >= 1 && host[k].shape()[0] == padded), ValueError,
                  "output '", config.outputs[k].name, "' has shape ", shape_str(host[k].shape()),
                  " for a batch of ", padded,
                  " rows; a batched model's outputs keep the batch dim");
    }
    // A response owns its memory: a slice of the batch's output would keep all of it alive.
    const bool shared = batch.size() > 1 || padded > rows;
    int64_t offset = 0;
    for (size_t r = 0; r < batch.size(); ++r) {
      const PendingRequest& request = *batch[r];
      InferResponse& response = responses[r];
      response.id = request.id;
      response.model_name = config.name;
      response.model_version = version_string;
      for (size_t k : request.output_index) {
        Tensor value = batched ? host[k].narrow(0, offset, request.rows) : host[k];
        value = shared ? ops::clone(value) : ops::contiguous(value);
        response.outputs.push_back({config.outputs[k].name, value});
      }
      offset += request.rows;
    }
    split = Clock::now();
  } catch (const std::exception& e) {
    count_failure(batch.size());
    for (auto& request : batch)
      answer_error(*request, InferError::Status::Internal, where() + " failed to run: " + e.what());
    return;
  }

  // Triton's meanings: each request of a batch counts the batch's compute durations.
  {
    std::lock_guard<std::mutex> lock(stats_mutex);
    stats.execution_count += 1;
    for (const auto& request : batch) {
      stats.request_success += 1;
      stats.inference_count += static_cast<uint64_t>(batched ? request->rows : 1);
      stats.request_duration_us += micros(split - request->arrival);
      stats.queue_duration_us += micros(start - request->arrival);
      stats.compute_input_duration_us += micros(inputs_ready - start);
      stats.compute_infer_duration_us += micros(ran - inputs_ready);
      stats.compute_output_duration_us += micros(split - ran);
    }
  }
  for (size_t r = 0; r < batch.size(); ++r) batch[r]->promise.set_value(std::move(responses[r]));
}

}  // namespace rcuda::runtime
