// The CUDA backend's convolution primitives (Note [Convolution primitives] in backend.h) through
// cuDNN's graph API, built with cudnn-frontend's C++ header library (docs/convolution.md). The
// only file that includes cudnn_frontend.h: it takes most of a minute to compile.
//
// Note [cuDNN convolution plans]
// Each pass is a one-node graph (conv_fprop, conv_dgrad or conv_wgrad) over tensors described by
// their shapes, strides, dtype and pointer alignment. Building its execution plan asks cuDNN's
// heuristics (mode A) for engine configurations in order of expected speed, drops the ones whose
// numerics we do not accept, and builds the first that cuDNN supports; when mode A leaves none,
// a fresh graph tries the FALLBACK list. Dropped: engines that down-convert their inputs (as
// PyTorch drops them), and for float32 with allow_conv_tf32() off the tensor-core engines (TF32).
// Plans are cached per (pass, dtype, device, shapes, strides, alignments, stride, padding,
// dilation, groups, TF32, benchmark), least recently used first out beyond kCacheCapacity; a
// cached plan runs with one cudnn-frontend execute on the thread's handle, which is bound to the
// current stream, with workspace from the stream-ordered pool. With set_cudnn_benchmark(true)
// every supported plan is built and the fastest on the actual tensors kept (frontend autotune,
// torch.backends.cudnn.benchmark): it synchronises and takes seconds, once per configuration.
#include <cudnn_frontend.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/cudnn.h"
#include "backend/cuda/runtime.h"
#include "backend/plan_cache.h"
#include "rcuda/backend/cuda.h"
#include "rcuda/tensor/memory_format.h"

namespace rcuda::cuda {

namespace {
std::atomic<bool> conv_tf32_allowed{true};  // torch.backends.cudnn.allow_tf32's default
std::atomic<bool> benchmark_on{false};      // torch.backends.cudnn.benchmark's default
}  // namespace

void set_allow_conv_tf32(bool allow) { conv_tf32_allowed = allow; }
bool allow_conv_tf32() { return conv_tf32_allowed; }
void set_cudnn_benchmark(bool on) { benchmark_on = on; }
bool cudnn_benchmark() { return benchmark_on; }

namespace {

namespace fe = cudnn_frontend;
using ConvArgs = Backend::ConvArgs;

// ForwardBiasRelu: relu(conv_fprop + bias) as one graph, the bias and relu fused into the
// convolution's epilogue (Note [Fused convolution epilogue]).
enum class ConvPass : uint8_t { Forward, BackwardInput, BackwardWeight, ForwardBiasRelu };

const char* pass_name(ConvPass pass) {
  switch (pass) {
    case ConvPass::Forward:
      return "conv2d (cuDNN conv_fprop)";
    case ConvPass::BackwardInput:
      return "conv2d_backward_input (cuDNN conv_dgrad)";
    case ConvPass::BackwardWeight:
      return "conv2d_backward_weight (cuDNN conv_wgrad)";
    case ConvPass::ForwardBiasRelu:
      return "conv2d_bias_relu (cuDNN conv_fprop, bias, relu)";
  }
  return "conv2d";
}

constexpr size_t kCacheCapacity = 512;
// The graph's tensor ids, fixed so that a cached plan needs no tensor handles to run.
constexpr int64_t kImageUid = 1, kWeightUid = 2, kResultUid = 3, kBiasUid = 4;

// The three tensors of every pass in the forward convolution's roles (as conv_dnnl.cpp).
struct ConvOperands {
  const Tensor& image;           // in, or grad_in
  const Tensor& weight;          // weight, or grad_weight
  const Tensor& result;          // out, or grad_out
  const Tensor* bias = nullptr;  // [O], ForwardBiasRelu only
};

// The largest power of two up to 16 dividing t's address: plans are chosen for it.
int64_t alignment_of(const Tensor& t) {
  const auto address = reinterpret_cast<uintptr_t>(t.data_ptr());
  int64_t a = 16;
  while (a > 1 && address % static_cast<uintptr_t>(a) != 0) a /= 2;
  return a;
}

using PlanKey = std::array<int64_t, 44>;

PlanKey make_key(ConvPass pass, const ConvOperands& t, const ConvArgs& a, bool tf32,
                 bool benchmark) {
  PlanKey key{};
  size_t i = 0;
  key[i++] = static_cast<int64_t>(pass);
  key[i++] = static_cast<int64_t>(t.image.dtype());
  key[i++] = t.image.device().index;
  key[i++] = tf32;
  key[i++] = benchmark;
  for (const Tensor* x : {&t.image, &t.weight, &t.result}) {
    for (int64_t d = 0; d < 4; ++d) {
      key[i++] = x->size(d);
      key[i++] = x->stride(d);
    }
    key[i++] = alignment_of(*x);
  }
  for (int64_t d = 0; d < 2; ++d) {
    key[i++] = a.stride[d];
    key[i++] = a.padding[d];
    key[i++] = a.dilation[d];
  }
  key[i++] = a.groups;
  key[i++] = t.bias != nullptr ? alignment_of(*t.bias) : 0;
  return key;
}

struct ConvPlan {
  std::shared_ptr<fe::graph::Graph> graph;
  int64_t workspace_bytes = 0;
};

fe::DataType_t frontend_type(DType dtype) {
  switch (dtype) {
    case DType::Float32:
      return fe::DataType_t::FLOAT;
    case DType::Float16:
      return fe::DataType_t::HALF;
    case DType::BFloat16:
      return fe::DataType_t::BFLOAT16;
    default:
      throw InternalError("conv2d (cuDNN): no graph data type for " +
                          std::string(dtype_name(dtype)));
  }
}

fe::graph::Tensor_attributes describe(const char* name, int64_t uid, const Tensor& t) {
  return fe::graph::Tensor_attributes()
      .set_name(name)
      .set_uid(uid)
      .set_dim(std::vector<int64_t>(t.shape().begin(), t.shape().end()))
      .set_stride(std::vector<int64_t>(t.strides().begin(), t.strides().end()))
      .set_data_type(frontend_type(t.dtype()))
      .set_alignment(alignment_of(t));
}

// The output tensor of a graph node takes the shape, strides and alignment of ours.
void describe_output(const std::shared_ptr<fe::graph::Tensor_attributes>& out, const char* name,
                     int64_t uid, const Tensor& t) {
  out->set_name(name)
      .set_uid(uid)
      .set_dim(std::vector<int64_t>(t.shape().begin(), t.shape().end()))
      .set_stride(std::vector<int64_t>(t.strides().begin(), t.strides().end()))
      .set_data_type(frontend_type(t.dtype()))
      .set_alignment(alignment_of(t))
      .set_output(true);
}

std::shared_ptr<fe::graph::Graph> make_graph(ConvPass pass, const ConvOperands& t,
                                             const ConvArgs& a) {
  auto graph = std::make_shared<fe::graph::Graph>();
  graph->set_io_data_type(frontend_type(t.image.dtype()))
      .set_intermediate_data_type(fe::DataType_t::FLOAT)
      .set_compute_data_type(fe::DataType_t::FLOAT);
  const std::vector<int64_t> stride = {a.stride[0], a.stride[1]};
  const std::vector<int64_t> padding = {a.padding[0], a.padding[1]};
  const std::vector<int64_t> dilation = {a.dilation[0], a.dilation[1]};
  // cuDNN infers the groups from the channel counts: input C, weight C / groups.
  switch (pass) {
    case ConvPass::Forward: {
      auto x = graph->tensor(describe("x", kImageUid, t.image));
      auto w = graph->tensor(describe("w", kWeightUid, t.weight));
      auto y = graph->conv_fprop(x, w,
                                 fe::graph::Conv_fprop_attributes()
                                     .set_name("conv_fprop")
                                     .set_padding(padding)
                                     .set_stride(stride)
                                     .set_dilation(dilation));
      describe_output(y, "y", kResultUid, t.result);
      break;
    }
    case ConvPass::ForwardBiasRelu: {
      auto x = graph->tensor(describe("x", kImageUid, t.image));
      auto w = graph->tensor(describe("w", kWeightUid, t.weight));
      const int64_t channels = t.weight.size(0);
      auto b = graph->tensor(fe::graph::Tensor_attributes()
                                 .set_name("bias")
                                 .set_uid(kBiasUid)
                                 .set_dim({1, channels, 1, 1})
                                 .set_stride({channels, 1, 1, 1})
                                 .set_data_type(frontend_type(t.bias->dtype()))
                                 .set_alignment(alignment_of(*t.bias)));
      auto conv = graph->conv_fprop(x, w,
                                    fe::graph::Conv_fprop_attributes()
                                        .set_name("conv_fprop")
                                        .set_padding(padding)
                                        .set_stride(stride)
                                        .set_dilation(dilation));
      auto biased = graph->pointwise(conv, b,
                                     fe::graph::Pointwise_attributes()
                                         .set_name("bias")
                                         .set_mode(fe::PointwiseMode_t::ADD)
                                         .set_compute_data_type(fe::DataType_t::FLOAT));
      auto y = graph->pointwise(biased, fe::graph::Pointwise_attributes()
                                            .set_name("relu")
                                            .set_mode(fe::PointwiseMode_t::RELU_FWD)
                                            .set_compute_data_type(fe::DataType_t::FLOAT));
      describe_output(y, "y", kResultUid, t.result);
      break;
    }
    case ConvPass::BackwardInput: {
      auto dy = graph->tensor(describe("dy", kResultUid, t.result));
      auto w = graph->tensor(describe("w", kWeightUid, t.weight));
      auto dx = graph->conv_dgrad(dy, w,
                                  fe::graph::Conv_dgrad_attributes()
                                      .set_name("conv_dgrad")
                                      .set_padding(padding)
                                      .set_stride(stride)
                                      .set_dilation(dilation));
      describe_output(dx, "dx", kImageUid, t.image);
      break;
    }
    case ConvPass::BackwardWeight: {
      auto dy = graph->tensor(describe("dy", kResultUid, t.result));
      auto x = graph->tensor(describe("x", kImageUid, t.image));
      auto dw = graph->conv_wgrad(dy, x,
                                  fe::graph::Conv_wgrad_attributes()
                                      .set_name("conv_wgrad")
                                      .set_padding(padding)
                                      .set_stride(stride)
                                      .set_dilation(dilation));
      describe_output(dw, "dw", kWeightUid, t.weight);
      break;
    }
  }
  return graph;
}

std::string pair_str(const std::array<int64_t, 2>& v) {
  return "[" + std::to_string(v[0]) + ", " + std::to_string(v[1]) + "]";
}

std::string describe_call(ConvPass pass, const ConvOperands& t, const ConvArgs& a) {
  const auto layout = [](const Tensor& x) {
    return std::string(memory_format_name(suggest_memory_format(x)));
  };
  return std::string(pass_name(pass)) + " on " + t.image.device().str() + ", " +
         dtype_name(t.image.dtype()) + ", input " + shape_str(t.image.shape()) + " " +
         layout(t.image) + ", weight " + shape_str(t.weight.shape()) + " " + layout(t.weight) +
         ", output " + shape_str(t.result.shape()) + ", stride " + pair_str(a.stride) +
         ", padding " + pair_str(a.padding) + ", dilation " + pair_str(a.dilation) + ", groups " +
         std::to_string(a.groups);
}

// cuDNN's versions, for messages about plans an older runtime may lack.
std::string version_note() {
  const size_t v = cudnnGetVersion();
  const std::string loaded = std::to_string(v / 10000) + "." + std::to_string(v % 10000 / 100) +
                             "." + std::to_string(v % 100);
  const std::string built = std::to_string(CUDNN_MAJOR) + "." + std::to_string(CUDNN_MINOR) + "." +
                            std::to_string(CUDNN_PATCHLEVEL);
  std::string note = "cuDNN " + loaded + " loaded, rcuda built with " + built;
  if (static_cast<int64_t>(v) < CUDNN_VERSION)
    note += " (an older runtime than the build's may lack engines: install cuDNN >= " + built +
            " or rebuild rcuda against " + loaded + "; `rcuda doctor` checks)";
  return note;
}

// Tries one heuristics mode on a fresh graph: validate, lower, query, filter, build. Returns
// "" and sets `plan` on success, else the frontend's message.
std::string try_build(ConvPass pass, const ConvOperands& t, const ConvArgs& a, cudnnHandle_t handle,
                      fe::HeurMode_t mode, bool tf32, bool benchmark, ConvPlan* plan) {
  try {
    std::shared_ptr<fe::graph::Graph> graph = make_graph(pass, t, a);
    fe::error_t status = graph->validate();
    if (status.is_good()) status = graph->build_operation_graph(handle);
    if (status.is_good()) status = graph->create_execution_plans({mode});
    if (status.is_bad()) return status.get_message();
    graph->deselect_numeric_notes({fe::NumericalNote_t::DOWN_CONVERT_INPUTS});
    if (t.image.dtype() == DType::Float32 && !tf32)
      graph->deselect_numeric_notes({fe::NumericalNote_t::TENSOR_CORE});
    status = graph->check_support(handle);
    if (status.is_good())
      status = graph->build_plans(handle, benchmark ? fe::BuildPlanPolicy_t::ALL
                                                    : fe::BuildPlanPolicy_t::HEURISTICS_CHOICE);
    if (status.is_bad()) return status.get_message();
    plan->graph = std::move(graph);
    return "";
  } catch (const std::exception& e) {  // the frontend throws where it does not return errors
    return e.what();
  }
}

// The graph's tensor ids bound to the call's pointers.
std::unordered_map<int64_t, void*> variant_pack(const ConvOperands& t) {
  std::unordered_map<int64_t, void*> pack = {{kImageUid, t.image.data_ptr()},
                                             {kWeightUid, t.weight.data_ptr()},
                                             {kResultUid, t.result.data_ptr()}};
  if (t.bias != nullptr) pack[kBiasUid] = t.bias->data_ptr();
  return pack;
}

// Keeps the fastest of the built plans on the call's own tensors (frontend autotune). Outputs
// are only written, so running every plan on them is harmless; inputs are only read.
void autotune(ConvPlan* plan, const ConvOperands& t, cudnnHandle_t handle) {
  const int device = t.image.device().index;
  const Tensor workspace =
      cudnn_workspace(device, static_cast<size_t>(plan->graph->get_autotune_workspace_size()));
  std::unordered_map<int64_t, void*> pack = variant_pack(t);
  // A failed tune keeps the heuristics' choice, which is still a valid plan.
  (void)plan->graph->autotune(handle, pack, workspace.defined() ? workspace.data_ptr() : nullptr);
}

ConvPlan build_plan(ConvPass pass, const ConvOperands& t, const ConvArgs& a, cudnnHandle_t handle,
                    bool tf32, bool benchmark) {
  ConvPlan plan;
  std::string failures;
  for (fe::HeurMode_t mode : {fe::HeurMode_t::A, fe::HeurMode_t::FALLBACK}) {
    std::string error = try_build(pass, t, a, handle, mode, tf32, benchmark, &plan);
    if (error.empty()) break;
    constexpr size_t kMaxDetail = 400;  // the frontend lists every engine it tried
    if (error.size() > kMaxDetail) error = error.substr(0, kMaxDetail) + " ...";
    failures += std::string(failures.empty() ? "" : "; ") +
                (mode == fe::HeurMode_t::A ? "heuristics A: " : "fallback: ") + error;
  }
  if (!plan.graph) {
    throw CudaError(describe_call(pass, t, a) + ": cuDNN has no execution plan for this " +
                    "convolution" +
                    (t.image.dtype() == DType::Float32 && !tf32
                         ? " without TF32 (cuda::set_allow_conv_tf32(true) allows more engines)"
                         : "") +
                    "; " + version_note() + ". Frontend: " + failures);
  }
  if (benchmark) autotune(&plan, t, handle);
  int64_t bytes = 0;
  fe::error_t status = plan.graph->get_workspace_size(bytes);
  if (status.is_bad())
    throw CudaError(describe_call(pass, t, a) + ": workspace size: " + status.get_message());
  plan.workspace_bytes = bytes;
  return plan;
}

// Note [cuDNN convolution plans]: a bounded least-recently-used map of built plans, shared by
// every thread.
class ConvPlanCache {
 public:
  std::shared_ptr<const ConvPlan> get(ConvPass pass, const ConvOperands& t, const ConvArgs& a,
                                      cudnnHandle_t handle) {
    const bool tf32 = allow_conv_tf32(), benchmark = cudnn_benchmark();
    const PlanKey key = make_key(pass, t, a, tf32, benchmark);
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      if (auto plan = plans_.find(key)) return plan;
    }
    // Built outside the lock (tens of milliseconds, seconds when benchmarking); a plan two
    // threads build at once is kept once. A fused graph that cuDNN cannot build is kept as an
    // empty plan, so the next call falls back to separate passes without asking again.
    std::shared_ptr<const ConvPlan> plan;
    if (pass == ConvPass::ForwardBiasRelu) {
      try {
        plan = std::make_shared<const ConvPlan>(build_plan(pass, t, a, handle, tf32, benchmark));
      } catch (const CudaError&) {
        plan = std::make_shared<const ConvPlan>();
      }
    } else {
      plan = std::make_shared<const ConvPlan>(build_plan(pass, t, a, handle, tf32, benchmark));
    }
    const std::lock_guard<std::mutex> lock(mutex_);
    return plans_.insert(key, std::move(plan));
  }

 private:
  std::mutex mutex_;
  backend::PlanCache<PlanKey, ConvPlan> plans_{kCacheCapacity};
};

ConvPlanCache& plan_cache() {
  // Never destroyed: plans hold cuDNN descriptors, which must not be freed after the CUDA
  // context at exit (Note [cuDNN handles]).
  static ConvPlanCache* cache = new ConvPlanCache();
  return *cache;
}

// False, having run nothing, when the pass has no plan (a fused graph cuDNN cannot build).
bool execute(ConvPass pass, const ConvOperands& t, const ConvArgs& a) {
  const int device = t.image.device().index;
  const cudnnHandle_t handle = cudnn_handle(device);
  const std::shared_ptr<const ConvPlan> plan = plan_cache().get(pass, t, a, handle);
  if (!plan->graph) return false;
  const Tensor workspace = cudnn_workspace(device, static_cast<size_t>(plan->workspace_bytes));
  std::unordered_map<int64_t, void*> pack = variant_pack(t);
  fe::error_t status =
      plan->graph->execute(handle, pack, workspace.defined() ? workspace.data_ptr() : nullptr);
  if (status.is_bad())
    throw CudaError(describe_call(pass, t, a) + ": cuDNN execute failed: " + status.get_message());
  return true;
}

// Note [Aligned convolution operands]
// cuDNN's engines are chosen for each operand's pointer alignment, and many (the tensor-core
// ones especially) need 16 bytes. Tensors from the pool are 256-byte aligned; a view with a
// storage offset (a slice of a batch) may not be. Such an operand is copied into a fresh tensor
// of the same layout first (and an output computed there, then copied back), so every plan is
// built for aligned operands and none is missing for an odd offset.
Tensor aligned_copy(Backend& backend, const Tensor& t) {
  Tensor copy = empty_with_format(t.shape(), t.dtype(), t.device(), suggest_memory_format(t));
  backend.copy(copy, t);
  return copy;
}

bool run(Backend& backend, ConvPass pass, const ConvOperands& t, const ConvArgs& a) {
  RCUDA_CHECK(t.image.dtype() != DType::Float64, DTypeError, pass_name(pass),
              ": float64 is not supported on CUDA (cuDNN's graph API has no double-precision "
              "convolutions); use float32, or run float64 on the CPU");
  const DeviceGuard guard(t.image.device().index);
  const Tensor* operands[3] = {&t.image, &t.weight, &t.result};
  const int written = pass == ConvPass::BackwardInput    ? 0
                      : pass == ConvPass::BackwardWeight ? 1
                                                         : 2;
  Tensor aligned_bias;
  if (t.bias != nullptr && alignment_of(*t.bias) != 16)
    aligned_bias = aligned_copy(backend, *t.bias);
  const Tensor* bias = aligned_bias.defined() ? &aligned_bias : t.bias;
  Tensor fixed[3];
  bool any = false;
  for (int i = 0; i < 3; ++i) {
    if (alignment_of(*operands[i]) == 16) continue;
    fixed[i] = i == written
                   ? empty_with_format(operands[i]->shape(), operands[i]->dtype(),
                                       operands[i]->device(), suggest_memory_format(*operands[i]))
                   : aligned_copy(backend, *operands[i]);
    any = true;
  }
  if (!any) return execute(pass, {t.image, t.weight, t.result, bias}, a);
  const auto pick = [&](int i) -> const Tensor& {
    return fixed[i].defined() ? fixed[i] : *operands[i];
  };
  if (!execute(pass, {pick(0), pick(1), pick(2), bias}, a)) return false;
  if (fixed[written].defined()) backend.copy(*operands[written], fixed[written]);
  return true;
}

}  // namespace

void CudaBackend::conv2d(const Tensor& out, const Tensor& in, const Tensor& weight,
                         const ConvArgs& args) {
  run(*this, ConvPass::Forward, {in, weight, out}, args);
}

// Note [Fused convolution epilogue]
// A convolution followed by its bias and a relu (ResNet's blocks with batch norm folded in, as
// ONNX exporters write them) is one cuDNN graph: conv_fprop, then pointwise ADD and RELU_FWD on
// the float32 accumulator before the one rounding to the output's dtype. Two passes over the
// activation less than conv, bias and relu apart; cuDNN's fused engines take NHWC half types
// and float32. Where cuDNN has no plan for the graph, the op runs the three passes.
bool CudaBackend::conv2d_bias_relu(const Tensor& out, const Tensor& in, const Tensor& weight,
                                   const Tensor& bias, const ConvArgs& args) {
  return run(*this, ConvPass::ForwardBiasRelu, {in, weight, out, &bias}, args);
}

void CudaBackend::conv2d_backward_input(const Tensor& grad_in, const Tensor& grad_out,
                                        const Tensor& weight, const ConvArgs& args) {
  run(*this, ConvPass::BackwardInput, {grad_in, weight, grad_out}, args);
}

void CudaBackend::conv2d_backward_weight(const Tensor& grad_weight, const Tensor& grad_out,
                                         const Tensor& in, const ConvArgs& args) {
  run(*this, ConvPass::BackwardWeight, {in, grad_weight, grad_out}, args);
}

}  // namespace rcuda::cuda
