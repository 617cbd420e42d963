// A served model (docs/serving.md): one version of an ONNX model loaded on its devices, with a
// request queue and a dynamic batcher in front of its instances.
//
//   auto model = runtime::ServedModel::load(config, "repo/mlp/1/model.onnx", 1);
//   runtime::InferRequest request;
//   request.inputs.push_back({"x", x});                 // x: [n, 784] on the CPU
//   runtime::InferResponse response = model->infer(std::move(request));
//
// Requests are checked when submitted (input names, dtypes, shapes against the config, a batch
// above max_batch_size), so a bad one fails at once with InferError(BadRequest). Accepted ones
// wait in one queue per model; each instance's worker thread takes the oldest, adds the queued
// requests of the same shape that fit (up to max_batch_size, a preferred batch size, or the
// queue delay), runs them as one batch and splits the outputs back. A full queue answers
// Unavailable at once; a request whose timeout passes while it waits is answered Unavailable and
// never runs.
#pragma once

#include <cstdint>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include "rcuda/core/error.h"
#include "rcuda/runtime/config.h"
#include "rcuda/tensor/tensor.h"

namespace rcuda::runtime {

// An error a client is answered with: its status says whose fault it is (the HTTP server
// answers it as that status code).
class InferError : public Error {
 public:
  enum class Status {
    BadRequest = 400,   // the request does not fit the model (names the field and values)
    NotFound = 404,     // no such model or version
    Unavailable = 503,  // queue full, timed out in the queue, model unloading, server draining
    Internal = 500,     // the model failed to run
  };
  InferError(Status status, const std::string& what) : Error(what), status(status) {}
  const char* kind() const override { return "InferError"; }
  Status status;
};

struct NamedTensor {
  std::string name;
  Tensor value;  // on the CPU in requests and responses
};

struct InferRequest {
  std::string id;                     // echoed in the response
  std::vector<NamedTensor> inputs;    // every input of the model, in any order
  std::vector<std::string> outputs;   // the outputs wanted; empty: all, in the model's order
  int64_t timeout_microseconds = -1;  // -1: the queue policy's default; 0: none
};

struct InferResponse {
  std::string id;
  std::string model_name;
  std::string model_version;
  std::vector<NamedTensor> outputs;
};

// Cumulative figures with Triton's meanings (docs/serving.md maps them to Triton's metric names):
// the ratio inference_count / execution_count is the mean batch size.
struct ModelStats {
  uint64_t request_success = 0;
  uint64_t request_failure = 0;
  uint64_t inference_count = 0;             // batch rows run (a request of 4 rows counts 4)
  uint64_t execution_count = 0;             // batches run
  uint64_t request_duration_us = 0;         // submit to answer, successful requests
  uint64_t queue_duration_us = 0;           // waiting in the queue
  uint64_t compute_input_duration_us = 0;   // merging, padding, copying inputs to the device
  uint64_t compute_infer_duration_us = 0;   // running the model
  uint64_t compute_output_duration_us = 0;  // copying outputs back and splitting them
  int64_t pending_request_count = 0;        // in the queue now
};

class ServedModel {
 public:
  // Loads `onnx_path` on every instance's device and completes `config` from the file (inputs
  // and outputs it leaves out), checking the two agree; captures config.cuda_graphs' batch
  // sizes on CUDA; starts the workers. ValueError or FileError naming the model and the reason.
  static std::shared_ptr<ServedModel> load(const ModelConfig& config, const std::string& onnx_path,
                                           int64_t version);
  ~ServedModel();  // stop(), then joins the workers
  ServedModel(const ServedModel&) = delete;
  ServedModel& operator=(const ServedModel&) = delete;

  // Checks and queues a request; the future holds the response or throws InferError.
  // InferError(BadRequest) or (Unavailable) at once for a bad request or a full queue.
  std::future<InferResponse> submit(InferRequest request);
  InferResponse infer(InferRequest request) { return submit(std::move(request)).get(); }

  // Stops taking requests (submit answers Unavailable) and returns once every queued request has
  // been answered.
  void stop();

  const ModelConfig& config() const;  // completed from the file
  const std::string& name() const;
  int64_t version() const;
  std::vector<Device> devices() const;  // one per instance
  ModelStats stats() const;
  // Signatures captured as CUDA graphs per instance and why any could not be (the model's
  // captures()); empty on the CPU.
  std::vector<std::string> captured() const;

  struct Impl;

 private:
  explicit ServedModel(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace rcuda::runtime
