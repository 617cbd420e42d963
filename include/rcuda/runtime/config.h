// A served model's configuration (docs/serving.md): DIR/<model>/config.json in a model
// repository laid out as Triton's, with Triton's field names where they exist.
//
//   {
//     "name": "mlp",
//     "max_batch_size": 64,
//     "input":  [{"name": "x", "data_type": "TYPE_FP32", "dims": [784]}],
//     "output": [{"name": "y", "data_type": "TYPE_FP32", "dims": [10]}],
//     "dynamic_batching": {
//       "max_queue_delay_microseconds": 500,
//       "preferred_batch_size": [16, 32],
//       "default_queue_policy": {"max_queue_size": 256, "default_timeout_microseconds": 0,
//                                "timeout_action": "REJECT", "allow_timeout_override": true}
//     },
//     "instance_group": [{"count": 1, "kind": "KIND_GPU", "gpus": [0]}],
//     "version_policy": {"latest": {"num_versions": 1}},
//     "cuda_graphs": [1, 8, 64]
//   }
//
// Every field may be left out: input and output then come from the ONNX file, and the model
// runs one request at a time on the best device. With max_batch_size > 0, dims leave out the
// batch dim (Triton's rule) and the file's first dim of each input and output must be symbolic.
// A field rcuda does not know, a value of the wrong type or range, or a config that disagrees with
// its file is a ValueError naming the model, the field and the value: that model fails its load
// and the others still serve.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "rcuda/core/device.h"
#include "rcuda/core/dtype.h"

namespace rcuda::runtime {

// An input or output as the config (or the file) declares it.
struct TensorConfig {
  std::string name;
  DType dtype = DType::Float32;
  // Without the batch dim when max_batch_size > 0; -1 for a size that varies.
  std::vector<int64_t> dims;
};

struct QueuePolicy {
  int64_t max_queue_size = 0;                // 0: unbounded
  int64_t default_timeout_microseconds = 0;  // 0: no timeout
  bool allow_timeout_override = true;        // may a request's "timeout" parameter set its own?
  // Triton's timeout_action: only REJECT (a request past its timeout is answered and dropped,
  // never run late); DELAY is refused at load, saying so.
};

struct DynamicBatching {
  int64_t max_queue_delay_microseconds = 0;
  std::vector<int64_t> preferred_batch_size;  // sorted, each in [1, max_batch_size]
  QueuePolicy default_queue_policy;
};

// Triton's instance_group: `count` instances of the model, each its own copy of the weights and
// its own worker thread, on each listed device.
struct InstanceGroup {
  int count = 1;
  // From "kind" and "gpus", or rcuda's "device": "cuda:0". KIND_GPU without "gpus" is every
  // visible GPU (Triton's meaning); empty (KIND_AUTO) is the repository's default device.
  std::vector<Device> devices;
};

struct VersionPolicy {
  enum class Kind { Latest, All, Specific };
  Kind kind = Kind::Latest;
  int64_t num_versions = 1;       // Latest
  std::vector<int64_t> versions;  // Specific
};

struct ModelConfig {
  std::string name;  // the folder's name; a "name" field must agree with it
  int64_t max_batch_size = 0;
  std::vector<TensorConfig> inputs;
  std::vector<TensorConfig> outputs;
  // Without a dynamic_batching block each request runs alone, queued under the default policy.
  std::optional<DynamicBatching> dynamic_batching;
  std::vector<InstanceGroup> instance_groups;  // empty: one instance on the best device
  VersionPolicy version_policy;
  std::string default_model_filename = "model.onnx";
  // rcuda's own: on CUDA, the batch sizes captured as CUDA graphs at load. A batch is padded up
  // to the next captured size and replayed; max_batch_size is always among them when the list
  // is given.
  std::vector<int64_t> cuda_graphs;

  // Parses config.json's text; `model` is the folder's name (errors name it and the field).
  static ModelConfig parse(const std::string& json_text, const std::string& model);
  // Triton's JSON form of this config (GET /v2/models/{m}/config), inputs and outputs included.
  std::string to_json() const;
  // The queue policy in force: dynamic batching's, or the defaults.
  QueuePolicy queue_policy() const;
};

// Triton's data_type names ("TYPE_FP32") and KServe v2's datatype names ("FP32") of a dtype,
// and back. ValueError naming the name for one rcuda has no dtype for ("TYPE_STRING", "BYTES").
std::string triton_type_name(DType dtype);
DType dtype_from_triton_type(const std::string& name);
std::string kserve_datatype(DType dtype);
DType dtype_from_kserve(const std::string& datatype);

}  // namespace rcuda::runtime
