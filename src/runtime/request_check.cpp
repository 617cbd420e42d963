// A request checked against the completed config when it is submitted, so that a bad one fails
// at once with InferError(BadRequest) naming the field and the values, and a batch never holds a
// request that cannot run.
#include <algorithm>
#include <string>

#include "rcuda/core/error.h"
#include "rcuda/ops/copy.h"
#include "runtime/served_model.h"

namespace rcuda::runtime {
namespace {

std::string names_of(const std::vector<TensorConfig>& tensors) {
  std::string out;
  for (const TensorConfig& t : tensors) out += (out.empty() ? "" : ", ") + t.name;
  return out;
}

// The shape a request's tensor must have: the batch dim shown as -1.
Shape expected_shape(const TensorConfig& input, int64_t max_batch_size) {
  Shape shape = input.dims;
  if (max_batch_size > 0) shape.insert(shape.begin(), -1);
  return shape;
}

// KServe's name of a dtype, or rcuda's for one KServe has none of (a complex tensor).
std::string kserve_or_name(DType dtype) {
  try {
    return kserve_datatype(dtype);
  } catch (const Error&) {
    return dtype_name(dtype);
  }
}

bool fits(const Shape& given, const Shape& expected) {
  if (given.size() != expected.size()) return false;
  for (size_t d = 0; d < given.size(); ++d)
    if (expected[d] != -1 && given[d] != expected[d]) return false;
  return true;
}

}  // namespace

std::unique_ptr<PendingRequest> ServedModel::Impl::check(InferRequest request) const {
  const std::string model = "model '" + config.name + "'";
  auto bad = [&](const std::string& why) {
    throw InferError(InferError::Status::BadRequest, model + ": " + why);
  };
  auto pending = std::make_unique<PendingRequest>();
  pending->id = request.id;
  pending->inputs.resize(config.inputs.size());

  for (NamedTensor& given : request.inputs) {
    auto input = std::find_if(config.inputs.begin(), config.inputs.end(),
                              [&](const TensorConfig& t) { return t.name == given.name; });
    if (input == config.inputs.end())
      bad("unknown input '" + given.name + "' (the model's inputs: " + names_of(config.inputs) +
          ")");
    const size_t k = static_cast<size_t>(input - config.inputs.begin());
    if (pending->inputs[k].defined()) bad("input '" + given.name + "' is given twice");
    if (!given.value.defined()) bad("input '" + given.name + "' holds no tensor");
    const Tensor& t = given.value;
    if (t.dtype() != input->dtype)
      bad("input '" + given.name + "' is " + kserve_or_name(t.dtype()) + " (" +
          dtype_name(t.dtype()) + "); the model takes " + kserve_datatype(input->dtype) + " (" +
          dtype_name(input->dtype) + ")");
    const Shape expected = expected_shape(*input, config.max_batch_size);
    if (!fits(t.shape(), expected))
      bad("input '" + given.name + "' has shape " + shape_str(t.shape()) + "; the model takes " +
          shape_str(expected) + (config.max_batch_size > 0 ? " (-1: any size)" : ""));
    if (config.max_batch_size > 0) {
      const int64_t rows = t.shape()[0];
      if (rows == 0) bad("input '" + given.name + "' has 0 rows; a request needs at least one");
      if (rows > config.max_batch_size)
        bad("input '" + given.name + "' has a batch of " + std::to_string(rows) +
            " rows, above max_batch_size " + std::to_string(config.max_batch_size));
    }
    // Owned, contiguous and on the CPU: the batch joins it later, and the caller may reuse its
    // own tensor as soon as submit returns.
    pending->inputs[k] = ops::contiguous(t.device().is_cpu() ? t : ops::to(t, Device()));
  }
  for (size_t k = 0; k < config.inputs.size(); ++k)
    if (!pending->inputs[k].defined()) bad("missing input '" + config.inputs[k].name + "'");
  if (config.max_batch_size > 0) {
    pending->rows = pending->inputs[0].shape()[0];
    for (size_t k = 1; k < config.inputs.size(); ++k)
      if (pending->inputs[k].shape()[0] != pending->rows)
        bad("inputs '" + config.inputs[0].name + "' (" + std::to_string(pending->rows) +
            " rows) and '" + config.inputs[k].name + "' (" +
            std::to_string(pending->inputs[k].shape()[0]) + " rows) differ in their batch size");
  }

  if (request.outputs.empty())
    for (size_t k = 0; k < config.outputs.size(); ++k) pending->output_index.push_back(k);
  for (const std::string& name : request.outputs) {
    auto output = std::find_if(config.outputs.begin(), config.outputs.end(),
                               [&](const TensorConfig& t) { return t.name == name; });
    if (output == config.outputs.end())
      bad("unknown output '" + name + "' (the model's outputs: " + names_of(config.outputs) + ")");
    const size_t k = static_cast<size_t>(output - config.outputs.begin());
    if (std::find(pending->output_index.begin(), pending->output_index.end(), k) !=
        pending->output_index.end())
      bad("output '" + name + "' is asked for twice");
    pending->output_index.push_back(k);
  }

  // The request's own timeout replaces the policy's only where the policy allows it (Triton
  // ignores it otherwise); 0 means none.
  const QueuePolicy policy = config.queue_policy();
  int64_t timeout_us = policy.default_timeout_microseconds;
  if (request.timeout_microseconds >= 0 && policy.allow_timeout_override)
    timeout_us = request.timeout_microseconds;
  if (request.timeout_microseconds < -1)
    bad("timeout_microseconds must be -1 (the policy's), 0 (none) or positive, got " +
        std::to_string(request.timeout_microseconds));
  pending->timeout_us = timeout_us;
  return pending;
}

}  // namespace rcuda::runtime
