// The CUDA backend's recurrent primitives (Note [Recurrent primitives] in backend.h) through
// cuDNN's RNN API: cudnnRNNForward, cudnnRNNBackwardData_v8 and cudnnRNNBackwardWeights_v8
// (docs/rnn-cudnn.md says why this API and what is left out).
//
// Note [cuDNN RNN weights and reserve]
// cuDNN reads the weights from one packed "weight space" whose layout it chooses; we take
// PyTorch's separate tensors (w_ih, w_hh, b_ih, b_hh per layer and direction). Where each gate's
// matrix and bias lives is asked once per configuration (cudnnGetRNNWeightParams, pseudo-layer
// l * D + d, linear layer IDs 0..G-1 the input matrices and G..2G-1 the recurrent ones in
// PyTorch's gate order: LSTM i, f, g, o and GRU r, z, n), turned into a list of device-to-device
// copies (merged where both sides are contiguous) and cached with the descriptors. Every forward
// copies the weights in; a training forward packs them inside the `reserve` it returns, laid
// out as [cuDNN reserve space | pad to 256 bytes | packed weights], so rnn_backward runs on the
// very weights of the forward without repacking, and copies the weight-space gradient back out
// through the same list. The bias modes map one to one: DOUBLE_BIAS is PyTorch's b_ih + b_hh.
//
// Note [cuDNN RNN descriptors]
// The RNN descriptor, the data descriptors (time-major packed: [T, N, I] contiguous, every
// sequence of length T), the state descriptor and the sizes cuDNN asks for are built per
// (device, mode, layers, directions, input size, hidden size, dtype, biases, N, T, TF32) and
// kept in a per-thread least-recently-used cache of kCacheCapacity entries: a descriptor is
// cheap to use but not to build, and per thread needs no lock. Evicted entries destroy their
// descriptors; the cache itself and the thread's dropout descriptor (p = 0:
// cudnnSetRNNDescriptor_v8 wants one, and p = 0 needs no random states) are never destroyed (Note
// [cuDNN handles]).
#include <cudnn.h>

#include <algorithm>
#include <array>
#include <memory>
#include <string>
#include <vector>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/cudnn.h"
#include "backend/cuda/runtime.h"
#include "backend/plan_cache.h"
#include "rcuda/backend/cuda.h"

namespace rcuda::cuda {
namespace {

using RnnArgs = Backend::RnnArgs;
using RnnMode = Backend::RnnMode;
using TensorList = Backend::TensorList;

constexpr size_t kCacheCapacity = 64;
constexpr size_t kWeightAlignment = 256;  // where the packed weights start inside `reserve`
// cuDNN's RNN takes bfloat16 data from 9.13 on.
constexpr size_t kFirstBFloat16Version = 91300;

const char* mode_name(RnnMode mode) {
  switch (mode) {
    case RnnMode::Lstm:
      return "LSTM";
    case RnnMode::Gru:
      return "GRU";
    case RnnMode::RnnTanh:
      return "RNN_TANH";
    case RnnMode::RnnRelu:
      return "RNN_RELU";
  }
  return "RNN";
}

cudnnRNNMode_t cell_mode(RnnMode mode) {
  switch (mode) {
    case RnnMode::Lstm:
      return CUDNN_LSTM;
    case RnnMode::Gru:
      return CUDNN_GRU;  // linear-before-reset, as PyTorch: r * (W_hn h + b_hn)
    case RnnMode::RnnTanh:
      return CUDNN_RNN_TANH;
    case RnnMode::RnnRelu:
      return CUDNN_RNN_RELU;
  }
  return CUDNN_LSTM;
}

cudnnDataType_t data_type(DType dtype) {
  switch (dtype) {
    case DType::Float32:
      return CUDNN_DATA_FLOAT;
    case DType::Float16:
      return CUDNN_DATA_HALF;
    case DType::BFloat16:
      return CUDNN_DATA_BFLOAT16;
    default:
      throw InternalError("rnn (cuDNN): no cuDNN data type for " + std::string(dtype_name(dtype)));
  }
}

// Everything the descriptors depend on (Note [cuDNN RNN descriptors]).
struct RnnConfig {
  int device = 0;
  RnnMode mode = RnnMode::Lstm;
  int64_t layers = 1, directions = 1, input_size = 0, hidden = 0;
  DType dtype = DType::Float32;
  bool has_biases = true;
  int64_t batch = 0, steps = 0;
  bool tf32 = false;  // float32 only: TF32 tensor cores allowed (cuda::allow_conv_tf32)

  int64_t gates() const { return Backend::rnn_gates(mode); }
  int64_t blocks() const { return layers * directions; }
  int64_t tensors_per_block() const { return has_biases ? 4 : 2; }
  int64_t layer_input(int64_t layer) const { return layer == 0 ? input_size : directions * hidden; }
};

using RnnKey = std::array<int64_t, 11>;

RnnKey key_of(const RnnConfig& c) {
  return {c.device, static_cast<int64_t>(c.mode),  c.layers,     c.directions, c.input_size,
          c.hidden, static_cast<int64_t>(c.dtype), c.has_biases, c.batch,      c.steps,
          c.tf32};
}

std::string describe(const char* op, const RnnConfig& c) {
  return std::string(op) + " (cuDNN) on cuda:" + std::to_string(c.device) + ", " +
         mode_name(c.mode) + ", " + dtype_name(c.dtype) + ", " + std::to_string(c.layers) +
         (c.layers == 1 ? " layer" : " layers") +
         (c.directions == 2 ? ", bidirectional" : ", unidirectional") + ", input [" +
         std::to_string(c.steps) + ", " + std::to_string(c.batch) + ", " +
         std::to_string(c.input_size) + "], hidden " + std::to_string(c.hidden) +
         (c.has_biases ? ", with biases" : ", without biases");
}

// One device-to-device copy between a PyTorch-layout weight and the packed weight space.
struct WeightCopy {
  size_t tensor = 0;       // index into the weights list
  size_t tensor_byte = 0;  // offset inside that tensor
  size_t space_byte = 0;   // offset inside the weight space
  size_t bytes = 0;
};

struct RnnPlan {
  cudnnRNNDescriptor_t rnn = nullptr;
  cudnnRNNDataDescriptor_t x = nullptr, y = nullptr;
  cudnnTensorDescriptor_t state = nullptr;  // hx, hy, cx, cy and their gradients: [L * D, N, H]
  size_t weight_bytes = 0, training_work_bytes = 0, reserve_bytes = 0, inference_work_bytes = 0;
  size_t weights_offset = 0;  // where the packed weights start inside `reserve`
  std::vector<WeightCopy> copies;

  size_t reserve_total() const { return weights_offset + weight_bytes; }

  RnnPlan() = default;
  RnnPlan(const RnnPlan&) = delete;
  RnnPlan& operator=(const RnnPlan&) = delete;
  ~RnnPlan() {  // statuses ignored: nothing useful can be done about a failure here
    if (state != nullptr) (void)cudnnDestroyTensorDescriptor(state);
    if (y != nullptr) (void)cudnnDestroyRNNDataDescriptor(y);
    if (x != nullptr) (void)cudnnDestroyRNNDataDescriptor(x);
    if (rnn != nullptr) (void)cudnnDestroyRNNDescriptor(rnn);
  }
};

// A tensor descriptor for the duration of a scope.
class ScopedTensorDescriptor {
 public:
  ScopedTensorDescriptor() { RCUDA_CUDNN_CHECK(cudnnCreateTensorDescriptor(&desc_)); }
  ~ScopedTensorDescriptor() { (void)cudnnDestroyTensorDescriptor(desc_); }
  ScopedTensorDescriptor(const ScopedTensorDescriptor&) = delete;
  ScopedTensorDescriptor& operator=(const ScopedTensorDescriptor&) = delete;
  cudnnTensorDescriptor_t get() const { return desc_; }

 private:
  cudnnTensorDescriptor_t desc_ = nullptr;
};

int64_t described_numel(cudnnTensorDescriptor_t desc) {
  cudnnDataType_t type{};
  int dims = 0;
  std::array<int, 8> size{}, stride{};
  RCUDA_CUDNN_CHECK(cudnnGetTensorNdDescriptor(desc, static_cast<int>(size.size()), &type, &dims,
                                               size.data(), stride.data()));
  int64_t n = 1;
  for (int i = 0; i < dims; ++i) n *= size[static_cast<size_t>(i)];
  return n;
}

// The thread's no-dropout descriptor for `device` (Note [cuDNN RNN descriptors]).
cudnnDropoutDescriptor_t no_dropout(int device, cudnnHandle_t handle) {
  thread_local cudnnDropoutDescriptor_t descriptors[kMaxDevices] = {};
  if (descriptors[device] == nullptr) {
    cudnnDropoutDescriptor_t desc = nullptr;
    RCUDA_CUDNN_CHECK(cudnnCreateDropoutDescriptor(&desc));
    const cudnnStatus_t status = cudnnSetDropoutDescriptor(desc, handle, 0.0f, nullptr, 0, 0);
    if (status != CUDNN_STATUS_SUCCESS) {
      (void)cudnnDestroyDropoutDescriptor(desc);
      throw_cudnn_error(status, "cudnnSetDropoutDescriptor(p = 0)", __FILE__, __LINE__);
    }
    descriptors[device] = desc;
  }
  return descriptors[device];
}

// Sorted by weight and offset, then merged where both sides continue each other.
std::vector<WeightCopy> merged(std::vector<WeightCopy> copies) {
  std::sort(copies.begin(), copies.end(), [](const WeightCopy& a, const WeightCopy& b) {
    return a.tensor != b.tensor ? a.tensor < b.tensor : a.tensor_byte < b.tensor_byte;
  });
  std::vector<WeightCopy> out;
  for (const WeightCopy& c : copies) {
    if (!out.empty()) {
      WeightCopy& last = out.back();
      if (last.tensor == c.tensor && last.tensor_byte + last.bytes == c.tensor_byte &&
          last.space_byte + last.bytes == c.space_byte) {
        last.bytes += c.bytes;
        continue;
      }
    }
    out.push_back(c);
  }
  return out;
}

// Where each gate's matrix and bias of each weight lives in the weight space (Note [cuDNN RNN
// weights and reserve]). cudnnGetRNNWeightParams only computes addresses, but from a real
// weight space: one is borrowed from the pool for the question.
std::vector<WeightCopy> weight_layout(const RnnConfig& c, const RnnPlan& plan,
                                      cudnnHandle_t handle) {
  const Tensor space = cudnn_workspace(c.device, plan.weight_bytes);
  char* base = static_cast<char*>(space.data_ptr());
  const ScopedTensorDescriptor matrix_desc, bias_desc;
  const size_t element = element_size(c.dtype);
  const int64_t G = c.gates(), H = c.hidden;
  std::vector<WeightCopy> copies;
  for (int64_t block = 0; block < c.blocks(); ++block) {
    const int64_t columns_ih = c.layer_input(block / c.directions);
    const size_t first = static_cast<size_t>(block * c.tensors_per_block());
    for (int64_t id = 0; id < 2 * G; ++id) {
      const bool recurrent = id >= G;
      const int64_t gate = id % G, columns = recurrent ? H : columns_ih;
      void* matrix = nullptr;
      void* bias = nullptr;
      RCUDA_CUDNN_CHECK(cudnnGetRNNWeightParams(
          handle, plan.rnn, static_cast<int32_t>(block), plan.weight_bytes, base,
          static_cast<int32_t>(id), matrix_desc.get(), &matrix,
          c.has_biases ? bias_desc.get() : nullptr, c.has_biases ? &bias : nullptr));
      RCUDA_CHECK(matrix != nullptr && described_numel(matrix_desc.get()) == H * columns,
                  InternalError, "rnn (cuDNN): weight matrix ", id, " of pseudo-layer ", block,
                  " is not ", H, " x ", columns);
      const size_t matrix_bytes = static_cast<size_t>(H * columns) * element;
      copies.push_back({first + (recurrent ? 1 : 0), static_cast<size_t>(gate) * matrix_bytes,
                        static_cast<size_t>(static_cast<char*>(matrix) - base), matrix_bytes});
      if (!c.has_biases) continue;
      RCUDA_CHECK(bias != nullptr && described_numel(bias_desc.get()) == H, InternalError,
                  "rnn (cuDNN): bias ", id, " of pseudo-layer ", block, " is not of size ", H);
      const size_t bias_bytes = static_cast<size_t>(H) * element;
      copies.push_back({first + (recurrent ? 3 : 2), static_cast<size_t>(gate) * bias_bytes,
                        static_cast<size_t>(static_cast<char*>(bias) - base), bias_bytes});
    }
  }
  for (const WeightCopy& copy : copies)
    RCUDA_CHECK(copy.space_byte + copy.bytes <= plan.weight_bytes, InternalError,
                "rnn (cuDNN): a weight lies outside the ", plan.weight_bytes, "-byte weight space");
  return merged(std::move(copies));
}

std::shared_ptr<const RnnPlan> build_plan(const RnnConfig& c, cudnnHandle_t handle) {
  auto plan = std::make_shared<RnnPlan>();
  const cudnnDataType_t type = data_type(c.dtype);
  // float32 accumulation for every dtype; tensor cores for the half types, and TF32 ones for
  // float32 only when allowed (FMA math keeps float32 exact).
  const cudnnMathType_t math = c.dtype != DType::Float32 ? CUDNN_TENSOR_OP_MATH
                               : c.tf32                  ? CUDNN_DEFAULT_MATH
                                                         : CUDNN_FMA_MATH;
  const auto i32 = [](int64_t v) { return static_cast<int32_t>(v); };
  RCUDA_CUDNN_CHECK(cudnnCreateRNNDescriptor(&plan->rnn));
  RCUDA_CUDNN_CHECK(cudnnSetRNNDescriptor_v8(
      plan->rnn, CUDNN_RNN_ALGO_STANDARD, cell_mode(c.mode),
      c.has_biases ? CUDNN_RNN_DOUBLE_BIAS : CUDNN_RNN_NO_BIAS,
      c.directions == 2 ? CUDNN_BIDIRECTIONAL : CUDNN_UNIDIRECTIONAL, CUDNN_LINEAR_INPUT, type,
      CUDNN_DATA_FLOAT, math, i32(c.input_size), i32(c.hidden), /*projSize=*/i32(c.hidden),
      i32(c.layers), no_dropout(c.device, handle), CUDNN_RNN_PADDED_IO_DISABLED));

  const std::vector<int> lengths(static_cast<size_t>(c.batch), static_cast<int>(c.steps));
  RCUDA_CUDNN_CHECK(cudnnCreateRNNDataDescriptor(&plan->x));
  RCUDA_CUDNN_CHECK(cudnnSetRNNDataDescriptor(plan->x, type, CUDNN_RNN_DATA_LAYOUT_SEQ_MAJOR_PACKED,
                                              i32(c.steps), i32(c.batch), i32(c.input_size),
                                              lengths.data(), nullptr));
  RCUDA_CUDNN_CHECK(cudnnCreateRNNDataDescriptor(&plan->y));
  RCUDA_CUDNN_CHECK(cudnnSetRNNDataDescriptor(
      plan->y, type, CUDNN_RNN_DATA_LAYOUT_SEQ_MAJOR_PACKED, i32(c.steps), i32(c.batch),
      i32(c.directions * c.hidden), lengths.data(), nullptr));
  const std::array<int, 3> state_size = {i32(c.blocks()), i32(c.batch), i32(c.hidden)};
  const std::array<int, 3> state_stride = {i32(c.batch * c.hidden), i32(c.hidden), 1};
  RCUDA_CUDNN_CHECK(cudnnCreateTensorDescriptor(&plan->state));
  RCUDA_CUDNN_CHECK(
      cudnnSetTensorNdDescriptor(plan->state, type, 3, state_size.data(), state_stride.data()));

  RCUDA_CUDNN_CHECK(cudnnGetRNNWeightSpaceSize(handle, plan->rnn, &plan->weight_bytes));
  RCUDA_CUDNN_CHECK(cudnnGetRNNTempSpaceSizes(handle, plan->rnn, CUDNN_FWD_MODE_TRAINING, plan->x,
                                              &plan->training_work_bytes, &plan->reserve_bytes));
  size_t unused_reserve = 0;
  RCUDA_CUDNN_CHECK(cudnnGetRNNTempSpaceSizes(handle, plan->rnn, CUDNN_FWD_MODE_INFERENCE, plan->x,
                                              &plan->inference_work_bytes, &unused_reserve));
  plan->weights_offset =
      (plan->reserve_bytes + kWeightAlignment - 1) / kWeightAlignment * kWeightAlignment;
  plan->copies = weight_layout(c, *plan, handle);
  return plan;
}

std::shared_ptr<const RnnPlan> plan_for(const RnnConfig& c, cudnnHandle_t handle) {
  // Never destroyed, as the thread's handles (Note [cuDNN RNN descriptors]).
  thread_local auto* cache = new backend::PlanCache<RnnKey, RnnPlan>(kCacheCapacity);
  const RnnKey key = key_of(c);
  if (auto plan = cache->find(key)) return plan;
  return cache->insert(key, build_plan(c, handle));
}

void check_dtype(const char* op, DType dtype) {
  RCUDA_CHECK(dtype != DType::Float64, DTypeError, op,
              ": float64 is not supported on CUDA (cuDNN's RNN runs float32, float16 and "
              "bfloat16); use float32, or run float64 on the CPU");
  RCUDA_CHECK(dtype == DType::Float32 || dtype == DType::Float16 || dtype == DType::BFloat16,
              DTypeError, op, ": CUDA takes float32, float16 or bfloat16, not ", dtype_name(dtype));
  if (dtype == DType::BFloat16) {
    const size_t loaded = cudnnGetVersion();
    RCUDA_CHECK(loaded >= kFirstBFloat16Version, DTypeError, op,
                ": bfloat16 recurrent layers need cuDNN 9.13 or newer, and cuDNN ", loaded / 10000,
                ".", loaded % 10000 / 100,
                " is loaded; use float16 or float32, or install a "
                "newer cuDNN (`rcuda doctor` shows which library is loaded)");
  }
}

RnnConfig config_of(const char* op, const RnnArgs& args, const Tensor& input) {
  RnnConfig c;
  c.device = input.device().index;
  c.mode = args.mode;
  c.layers = args.layers;
  c.directions = args.directions;
  c.hidden = args.hidden;
  c.has_biases = args.has_biases;
  c.dtype = input.dtype();
  c.steps = input.size(0);
  c.batch = input.size(1);
  c.input_size = input.size(2);
  c.tf32 = c.dtype == DType::Float32 && allow_conv_tf32();
  RCUDA_CHECK(c.layers >= 1 && (c.directions == 1 || c.directions == 2) && c.hidden >= 1,
              InternalError, op, ": layers ", c.layers, ", directions ", c.directions, ", hidden ",
              c.hidden, " reached the CUDA backend");
  constexpr int64_t kIntMax = 2147483647;
  for (const int64_t v : {c.steps, c.batch, c.input_size, c.hidden * c.directions,
                          c.layers * c.directions, c.batch * c.hidden})
    RCUDA_CHECK(v <= kIntMax, ValueError, describe(op, c), ": a size beyond cuDNN's 32-bit limit (",
                kIntMax, ")");
  return c;
}

// Weights (or their gradients) in the Backend contract's order and shapes.
void check_weights(const char* op, const char* what, const RnnConfig& c, const TensorList& w) {
  const size_t expected = static_cast<size_t>(c.blocks() * c.tensors_per_block());
  RCUDA_CHECK(w.size() == expected, InternalError, describe(op, c), ": ", w.size(), " ", what,
              " reached the CUDA backend, expected ", expected);
  const int64_t G = c.gates(), H = c.hidden;
  for (size_t i = 0; i < w.size(); ++i) {
    const int64_t block = static_cast<int64_t>(i) / c.tensors_per_block();
    const int64_t role = static_cast<int64_t>(i) % c.tensors_per_block();
    const int64_t numel = role == 0   ? G * H * c.layer_input(block / c.directions)
                          : role == 1 ? G * H * H
                                      : G * H;
    RCUDA_CHECK(
        w[i].defined() && w[i].numel() == numel && w[i].is_contiguous() && w[i].dtype() == c.dtype,
        InternalError, describe(op, c), ": ", what, " ", i, " is not a contiguous tensor of ",
        numel, " elements of the input's dtype");
  }
}

void* pointer(const Tensor& t) { return t.defined() ? t.data_ptr() : nullptr; }

// cudnnRNNForward and the backward calls read every sequence's length from the device.
Tensor sequence_lengths(Backend& backend, const RnnConfig& c) {
  Tensor lengths = Tensor::empty({c.batch}, DType::Int32, Device(DeviceType::CUDA, c.device));
  backend.fill(lengths, Scalar(c.steps));
  return lengths;
}

// Copies between the weights and the weight space on the current stream, in either direction.
void copy_weights(const RnnPlan& plan, const TensorList& weights, char* space, bool into_space,
                  int device) {
  const cudaStream_t stream = current_stream(device);
  for (const WeightCopy& c : plan.copies) {
    char* tensor = static_cast<char*>(weights[c.tensor].data_ptr()) + c.tensor_byte;
    char* packed = space + c.space_byte;
    RCUDA_CUDA_CHECK(cudaMemcpyAsync(into_space ? packed : tensor, into_space ? tensor : packed,
                                     c.bytes, cudaMemcpyDeviceToDevice, stream));
  }
}

// Runs `body`, prefixing any CUDA or cuDNN failure with the call's configuration.
template <typename Body>
auto with_context(const char* op, const RnnConfig& c, Body body) {
  try {
    return body();
  } catch (const CudaError& e) {
    throw CudaError(describe(op, c) + ": " + e.what());
  }
}

}  // namespace

Tensor CudaBackend::rnn(const RnnArgs& args, const Tensor& out, const Tensor& hy, const Tensor& cy,
                        const Tensor& input, const Tensor& hx, const Tensor& cx,
                        const TensorList& weights) {
  constexpr const char* op = "rnn";
  check_dtype(op, input.dtype());
  const RnnConfig c = config_of(op, args, input);
  check_weights(op, "weights", c, weights);
  const DeviceGuard guard(c.device);
  return with_context(op, c, [&] {
    const cudnnHandle_t handle = cudnn_handle(c.device);
    const std::shared_ptr<const RnnPlan> plan = plan_for(c, handle);
    // Note [cuDNN RNN weights and reserve]: training packs the weights inside the reserve.
    Tensor reserve, inference_weights;
    char* space = nullptr;
    if (args.training) {
      reserve = Tensor::empty({static_cast<int64_t>(plan->reserve_total())}, DType::UInt8,
                              input.device());
      space = static_cast<char*>(reserve.data_ptr()) + plan->weights_offset;
    } else {
      inference_weights = cudnn_workspace(c.device, plan->weight_bytes);
      space = static_cast<char*>(inference_weights.data_ptr());
    }
    copy_weights(*plan, weights, space, /*into_space=*/true, c.device);
    const size_t work_bytes =
        args.training ? plan->training_work_bytes : plan->inference_work_bytes;
    const Tensor work = cudnn_workspace(c.device, work_bytes);
    const Tensor lengths = sequence_lengths(*this, c);
    const bool lstm = c.mode == RnnMode::Lstm;
    RCUDA_CUDNN_CHECK(cudnnRNNForward(
        handle, plan->rnn, args.training ? CUDNN_FWD_MODE_TRAINING : CUDNN_FWD_MODE_INFERENCE,
        lengths.data<int32_t>(), plan->x, input.data_ptr(), plan->y, out.data_ptr(), plan->state,
        pointer(hx), pointer(hy), lstm ? plan->state : nullptr, lstm ? pointer(cx) : nullptr,
        lstm ? pointer(cy) : nullptr, plan->weight_bytes, space, work_bytes, pointer(work),
        args.training ? plan->reserve_bytes : 0, args.training ? reserve.data_ptr() : nullptr));
    return reserve;
  });
}

void CudaBackend::rnn_backward(const RnnArgs& args, const Tensor& grad_input, const Tensor& grad_hx,
                               const Tensor& grad_cx, const TensorList& grad_weights,
                               const Tensor& grad_out, const Tensor& grad_hy, const Tensor& grad_cy,
                               const Tensor& input, const Tensor& hx, const Tensor& cx,
                               const TensorList& weights, const Tensor& out,
                               const Tensor& reserve) {
  constexpr const char* op = "rnn_backward";
  check_dtype(op, input.dtype());
  const RnnConfig c = config_of(op, args, input);
  check_weights(op, "weights", c, weights);
  if (!grad_weights.empty()) check_weights(op, "weight gradients", c, grad_weights);
  const DeviceGuard guard(c.device);
  with_context(op, c, [&] {
    const cudnnHandle_t handle = cudnn_handle(c.device);
    const std::shared_ptr<const RnnPlan> plan = plan_for(c, handle);
    RCUDA_CHECK(reserve.defined() && reserve.dtype() == DType::UInt8 && reserve.is_contiguous() &&
                    static_cast<size_t>(reserve.numel()) == plan->reserve_total(),
                ValueError, describe(op, c), ": `reserve` (",
                reserve.defined() ? std::to_string(reserve.numel()) + " bytes" : "undefined",
                ") is not the one a training forward of this configuration returns (",
                plan->reserve_total(), " bytes)");
    char* reserve_space = static_cast<char*>(reserve.data_ptr());
    char* space = reserve_space + plan->weights_offset;
    const Device device = input.device();
    // cuDNN always writes dx, and its weight gradient needs the data pass first.
    const Tensor dx =
        grad_input.defined() ? grad_input : Tensor::empty(input.shape(), input.dtype(), device);
    Tensor dy = grad_out;
    if (!dy.defined()) {
      dy = Tensor::empty(out.shape(), out.dtype(), device);
      fill(dy, Scalar(0.0));
    }
    const Tensor work = cudnn_workspace(c.device, plan->training_work_bytes);
    const Tensor lengths = sequence_lengths(*this, c);
    const bool lstm = c.mode == RnnMode::Lstm;
    RCUDA_CUDNN_CHECK(cudnnRNNBackwardData_v8(
        handle, plan->rnn, lengths.data<int32_t>(), plan->y, out.data_ptr(), dy.data_ptr(), plan->x,
        dx.data_ptr(), plan->state, pointer(hx), pointer(grad_hy), pointer(grad_hx),
        lstm ? plan->state : nullptr, lstm ? pointer(cx) : nullptr,
        lstm ? pointer(grad_cy) : nullptr, lstm ? pointer(grad_cx) : nullptr, plan->weight_bytes,
        space, plan->training_work_bytes, pointer(work), plan->reserve_bytes, reserve_space));
    if (grad_weights.empty()) return;
    // Accumulating into a zeroed gradient space is the mode every cuDNN 9 release takes.
    const Tensor grad_space = cudnn_workspace(c.device, plan->weight_bytes);
    RCUDA_CUDA_CHECK(
        cudaMemsetAsync(grad_space.data_ptr(), 0, plan->weight_bytes, current_stream(c.device)));
    RCUDA_CUDNN_CHECK(cudnnRNNBackwardWeights_v8(
        handle, plan->rnn, CUDNN_WGRAD_MODE_ADD, lengths.data<int32_t>(), plan->x, input.data_ptr(),
        plan->state, pointer(hx), plan->y, out.data_ptr(), plan->weight_bytes,
        grad_space.data_ptr(), plan->training_work_bytes, pointer(work), plan->reserve_bytes,
        reserve_space));
    copy_weights(*plan, grad_weights, static_cast<char*>(grad_space.data_ptr()),
                 /*into_space=*/false, c.device);
  });
}

}  // namespace rcuda::cuda
