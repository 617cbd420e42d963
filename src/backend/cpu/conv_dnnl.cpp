// The CPU backend's convolution primitives (Note [Convolution primitives] in backend.h):
// float32 through oneDNN, float16 and bfloat16 through float32 copies, float64 through
// conv_f64.cpp (Note [float64 convolutions]).
//
// Note [oneDNN convolutions]
// Each primitive is made for operands in `format_tag::any`, so oneDNN picks the layouts its
// fastest implementation wants (often blocked, nChw16c); tensors whose layout differs are
// reordered into scratch buffers before the call and the result reordered back, as oneDNN's
// documentation recommends. Our tensors enter as memory descriptors with their own strides, so
// contiguous and channels-last operands need no copy of ours first. The algorithm is
// convolution_direct in oneDNN's default (strict) floating-point mode: float32 products and
// sums, no Winograd, no down-conversion. The backward primitives take the forward primitive
// descriptor as their hint, as oneDNN requires. Scratchpads come from rcuda's allocator
// (scratchpad_mode::user), so one primitive can run from several threads at once.
//
// Note [oneDNN primitive cache]
// Making a primitive descriptor chooses an implementation (tens of microseconds) and making the
// primitive generates its kernels (milliseconds). oneDNN caches primitives but not descriptors,
// so each (pass, shapes, strides, stride, padding, dilation, groups) keeps its descriptor's
// layouts and its primitive here, least recently used first out beyond kCacheCapacity entries.
#include <dnnl.hpp>

#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <utility>

#include "backend/plan_cache.h"
#include "conv_cpu.h"
#include "cpu_backend.h"
#include "rcuda/core/error.h"
#include "rcuda/tensor/autograd_meta.h"

namespace rcuda::cpu {
namespace {

using dnnl::memory;
using ConvArgs = Backend::ConvArgs;

// ForwardBiasRelu: relu(conv + bias) as one inference primitive, the bias and a relu post-op in
// oneDNN's epilogue (Note [Fused convolution epilogue] in backend/cuda/conv_cudnn.cpp).
enum class ConvPass : uint8_t { Forward, BackwardInput, BackwardWeight, ForwardBiasRelu };

const char* pass_name(ConvPass pass) {
  switch (pass) {
    case ConvPass::Forward:
      return "conv2d";
    case ConvPass::BackwardInput:
      return "conv2d_backward_input";
    case ConvPass::BackwardWeight:
      return "conv2d_backward_weight";
    case ConvPass::ForwardBiasRelu:
      return "conv2d_bias_relu";
  }
  return "conv2d";
}

constexpr size_t kCacheCapacity = 256;

// The three tensors of every pass, in the roles of the forward convolution: image (in or
// grad_in), weight (weight or grad_weight) and result (out or grad_out).
struct ConvOperands {
  const Tensor& image;
  const Tensor& weight;
  const Tensor& result;
};

// Everything a primitive depends on, flattened: the pass, three shapes, three stride vectors,
// stride, padding, dilation, groups, and whether it is an inference-only forward pass.
using ConvKey = std::array<int64_t, 33>;

// A forward pass without grad mode is inference: oneDNN may pick kernels that keep nothing for
// a backward pass.
bool inference_only(ConvPass pass) {
  return pass == ConvPass::ForwardBiasRelu ||
         (pass == ConvPass::Forward && !GradMode::is_enabled());
}
bool is_forward(ConvPass pass) {
  return pass == ConvPass::Forward || pass == ConvPass::ForwardBiasRelu;
}

ConvKey make_key(ConvPass pass, const ConvOperands& t, const ConvArgs& a) {
  ConvKey key{};
  size_t i = 0;
  key[i++] = static_cast<int64_t>(pass);
  for (const Tensor* x : {&t.image, &t.weight, &t.result})
    for (int64_t d = 0; d < 4; ++d) {
      key[i++] = x->size(d);
      key[i++] = x->stride(d);
    }
  for (int64_t d = 0; d < 2; ++d) {
    key[i++] = a.stride[d];
    key[i++] = a.padding[d];
    key[i++] = a.dilation[d];
  }
  key[i++] = a.groups;
  key[i++] = inference_only(pass);
  return key;
}

// A primitive and the layouts it wants for its three operands and its scratchpad.
struct ConvPrimitive {
  dnnl::primitive primitive;
  memory::desc image, weight, result, scratchpad;
};

dnnl::engine& cpu_engine() {
  static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

memory::dims dims_of(const Tensor& t) { return memory::dims(t.shape().begin(), t.shape().end()); }

// Grouped weights are 5-D for oneDNN: [groups, O / groups, C / groups, KH, KW].
memory::dims weight_dims(const Tensor& w, int64_t groups) {
  if (groups == 1) return dims_of(w);
  return {groups, w.size(0) / groups, w.size(1), w.size(2), w.size(3)};
}

// t as it lies in memory (float32, its own strides).
memory::desc user_desc(const Tensor& t) {
  return memory::desc(dims_of(t), memory::data_type::f32,
                      memory::dims(t.strides().begin(), t.strides().end()));
}
memory::desc user_weight_desc(const Tensor& w, int64_t groups) {
  if (groups == 1) return user_desc(w);
  const memory::dims strides = {w.stride(0) * (w.size(0) / groups), w.stride(0), w.stride(1),
                                w.stride(2), w.stride(3)};
  return memory::desc(weight_dims(w, groups), memory::data_type::f32, strides);
}

memory::desc any_desc(const memory::dims& dims) {
  return memory::desc(dims, memory::data_type::f32, memory::format_tag::any);
}

ConvPrimitive make_primitive(ConvPass pass, const ConvOperands& t, const ConvArgs& a) {
  const memory::dims strides = {a.stride[0], a.stride[1]};
  const memory::dims dilates = {a.dilation[0] - 1, a.dilation[1] - 1};  // oneDNN: 0 = none
  const memory::dims padding = {a.padding[0], a.padding[1]};
  const memory::desc image = any_desc(dims_of(t.image));
  const memory::desc weight = any_desc(weight_dims(t.weight, a.groups));
  const memory::desc result = any_desc(dims_of(t.result));
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  const bool fused = pass == ConvPass::ForwardBiasRelu;
  if (fused) {
    dnnl::post_ops relu;
    relu.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.0f, 0.0f);
    attr.set_post_ops(relu);
  }
  const memory::desc bias =
      fused ? memory::desc({t.result.size(1)}, memory::data_type::f32, memory::format_tag::x)
            : memory::desc();
  const dnnl::convolution_forward::desc forward_desc(
      inference_only(pass) ? dnnl::prop_kind::forward_inference : dnnl::prop_kind::forward_training,
      dnnl::algorithm::convolution_direct, image, weight, bias, result, strides, dilates, padding,
      padding);
  const dnnl::convolution_forward::primitive_desc forward(forward_desc, attr, cpu_engine());
  switch (pass) {
    case ConvPass::Forward:
    case ConvPass::ForwardBiasRelu:
      return {dnnl::convolution_forward(forward), forward.src_desc(), forward.weights_desc(),
              forward.dst_desc(), forward.scratchpad_desc()};
    case ConvPass::BackwardInput: {
      const dnnl::convolution_backward_data::desc desc(dnnl::algorithm::convolution_direct, image,
                                                       weight, result, strides, dilates, padding,
                                                       padding);
      const dnnl::convolution_backward_data::primitive_desc pd(desc, attr, cpu_engine(), forward);
      return {dnnl::convolution_backward_data(pd), pd.diff_src_desc(), pd.weights_desc(),
              pd.diff_dst_desc(), pd.scratchpad_desc()};
    }
    case ConvPass::BackwardWeight: {
      const dnnl::convolution_backward_weights::desc desc(dnnl::algorithm::convolution_direct,
                                                          image, weight, result, strides, dilates,
                                                          padding, padding);
      const dnnl::convolution_backward_weights::primitive_desc pd(desc, attr, cpu_engine(),
                                                                  forward);
      return {dnnl::convolution_backward_weights(pd), pd.src_desc(), pd.diff_weights_desc(),
              pd.diff_dst_desc(), pd.scratchpad_desc()};
    }
  }
  throw InternalError("conv2d: unknown convolution pass");
}

// Note [oneDNN primitive cache]: a bounded least-recently-used map (backend/plan_cache.h),
// shared by every thread behind a mutex.
class PrimitiveCache {
 public:
  std::shared_ptr<const ConvPrimitive> get(ConvPass pass, const ConvOperands& t,
                                           const ConvArgs& a) {
    const ConvKey key = make_key(pass, t, a);
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      if (auto primitive = primitives_.find(key)) return primitive;
    }
    // Made outside the lock: kernel generation takes milliseconds. Two threads making the same
    // primitive at once both succeed; the one inserted first is kept.
    auto made = std::make_shared<const ConvPrimitive>(make_primitive(pass, t, a));
    const std::lock_guard<std::mutex> lock(mutex_);
    return primitives_.insert(key, std::move(made));
  }

 private:
  std::mutex mutex_;
  backend::PlanCache<ConvKey, ConvPrimitive> primitives_{kCacheCapacity};
};

PrimitiveCache& primitive_cache() {
  static PrimitiveCache* cache = new PrimitiveCache();  // never destroyed: used until exit
  return *cache;
}

Tensor scratch_bytes(size_t bytes) {
  return Tensor::empty({static_cast<int64_t>(std::max<size_t>(bytes, 1))}, DType::UInt8);
}

// A tensor bound to the layout a primitive wants: the tensor's own memory when its layout
// already is that one, else a scratch buffer (filled from the tensor when it is read).
struct BoundOperand {
  memory user, wanted;
  Tensor buffer;  // keeps the scratch alive
  bool reordered = false;
};

BoundOperand bind(const Tensor& t, const memory::desc& user_md, const memory::desc& wanted_md,
                  bool read, dnnl::stream& stream) {
  BoundOperand b;
  b.user = memory(user_md, cpu_engine(), t.data_ptr());
  if (user_md == wanted_md) {
    b.wanted = b.user;
    return b;
  }
  b.buffer = scratch_bytes(wanted_md.get_size());
  b.wanted = memory(wanted_md, cpu_engine(), b.buffer.data_ptr());
  b.reordered = true;
  if (read) dnnl::reorder(b.user, b.wanted).execute(stream, b.user, b.wanted);
  return b;
}

// Note [Reordered weights kept for inference]
// A forward convolution reads its weight in oneDNN's blocked layout, and reordering it costs as
// much as the convolution at batch 1 (all of ResNet-18's 46 MB each run). Without grad mode
// (inference: a loaded ONNX model, an eval loop under no_grad) the reordered weight is kept,
// keyed by the weight's storage and offset, and reused while the storage is alive and its
// version (bumped by every in-place write: copy_, an optimizer step) is unchanged. Training
// steps change their weights every step and reorder each time, as before.
class ReorderedWeights {
 public:
  // The weight in `wanted_md`'s layout: the kept copy, or a new one made now and kept.
  memory get(const Tensor& w, const memory::desc& user_md, const memory::desc& wanted_md,
             dnnl::stream& stream) {
    const Key key{w.storage().get(), w.offset()};
    const uint64_t version = w.storage()->version();
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      auto it = kept_.find(key);
      if (it != kept_.end() && it->second.storage.lock() == w.storage() &&
          it->second.version == version && it->second.user_md == user_md &&
          it->second.wanted_md == wanted_md)
        return memory(wanted_md, cpu_engine(), it->second.buffer.data_ptr());
    }
    Entry e{w.storage(), version, user_md, wanted_md, scratch_bytes(wanted_md.get_size())};
    memory user(user_md, cpu_engine(), w.data_ptr());
    memory wanted(wanted_md, cpu_engine(), e.buffer.data_ptr());
    dnnl::reorder(user, wanted).execute(stream, user, wanted);
    const std::lock_guard<std::mutex> lock(mutex_);
    // Weights that are gone (a float16 weight's float32 copy, a freed model) leave no copy.
    for (auto it = kept_.begin(); it != kept_.end();) {
      if (it->second.storage.expired() || it->first == key) {
        bytes_ -= it->second.wanted_md.get_size();
        it = kept_.erase(it);
      } else {
        ++it;
      }
    }
    if (bytes_ + wanted_md.get_size() > kCapacityBytes) {  // a bound: models fit many times over
      kept_.clear();
      bytes_ = 0;
    }
    bytes_ += wanted_md.get_size();
    kept_[key] = std::move(e);
    return wanted;
  }

 private:
  using Key = std::pair<const Storage*, int64_t>;
  struct Entry {
    std::weak_ptr<Storage> storage;
    uint64_t version = 0;
    memory::desc user_md, wanted_md;
    Tensor buffer;
  };
  static constexpr size_t kCapacityBytes = size_t{1} << 30;
  std::mutex mutex_;
  std::map<Key, Entry> kept_;
  size_t bytes_ = 0;
};

ReorderedWeights& reordered_weights() {
  static ReorderedWeights* kept = new ReorderedWeights();  // never destroyed: used until exit
  return *kept;
}

// Runs one pass on float32 tensors; the written operand is the one `pass` produces. `bias`
// ([O], contiguous) only for ForwardBiasRelu.
void run_float32(ConvPass pass, const ConvOperands& t, const ConvArgs& a,
                 const Tensor* bias = nullptr) {
  try {
    const std::shared_ptr<const ConvPrimitive> p = primitive_cache().get(pass, t, a);
    dnnl::stream stream(cpu_engine());
    BoundOperand image =
        bind(t.image, user_desc(t.image), p->image, pass != ConvPass::BackwardInput, stream);
    const memory::desc weight_md = user_weight_desc(t.weight, a.groups);
    BoundOperand weight;
    if (inference_only(pass) && weight_md != p->weight) {
      weight.user = memory(weight_md, cpu_engine(), t.weight.data_ptr());
      weight.wanted = reordered_weights().get(t.weight, weight_md, p->weight, stream);
    } else {
      weight = bind(t.weight, weight_md, p->weight, pass != ConvPass::BackwardWeight, stream);
    }
    BoundOperand result = bind(t.result, user_desc(t.result), p->result, !is_forward(pass), stream);
    const Tensor scratchpad = scratch_bytes(p->scratchpad.get_size());
    const memory scratch(p->scratchpad, cpu_engine(), scratchpad.data_ptr());
    switch (pass) {
      case ConvPass::Forward:
        p->primitive.execute(stream, {{DNNL_ARG_SRC, image.wanted},
                                      {DNNL_ARG_WEIGHTS, weight.wanted},
                                      {DNNL_ARG_DST, result.wanted},
                                      {DNNL_ARG_SCRATCHPAD, scratch}});
        break;
      case ConvPass::ForwardBiasRelu: {
        const memory bias_memory(
            memory::desc({bias->numel()}, memory::data_type::f32, memory::format_tag::x),
            cpu_engine(), bias->data_ptr());
        p->primitive.execute(stream, {{DNNL_ARG_SRC, image.wanted},
                                      {DNNL_ARG_WEIGHTS, weight.wanted},
                                      {DNNL_ARG_BIAS, bias_memory},
                                      {DNNL_ARG_DST, result.wanted},
                                      {DNNL_ARG_SCRATCHPAD, scratch}});
        break;
      }
      case ConvPass::BackwardInput:
        p->primitive.execute(stream, {{DNNL_ARG_DIFF_SRC, image.wanted},
                                      {DNNL_ARG_WEIGHTS, weight.wanted},
                                      {DNNL_ARG_DIFF_DST, result.wanted},
                                      {DNNL_ARG_SCRATCHPAD, scratch}});
        break;
      case ConvPass::BackwardWeight:
        p->primitive.execute(stream, {{DNNL_ARG_SRC, image.wanted},
                                      {DNNL_ARG_DIFF_WEIGHTS, weight.wanted},
                                      {DNNL_ARG_DIFF_DST, result.wanted},
                                      {DNNL_ARG_SCRATCHPAD, scratch}});
        break;
    }
    BoundOperand& written = is_forward(pass)                  ? result
                            : pass == ConvPass::BackwardInput ? image
                                                              : weight;
    if (written.reordered)
      dnnl::reorder(written.wanted, written.user).execute(stream, written.wanted, written.user);
    stream.wait();
  } catch (const dnnl::error& e) {
    throw InternalError(detail::concat(
        pass_name(pass), " (oneDNN): input ", shape_str(t.image.shape()), ", weight ",
        shape_str(t.weight.shape()), ", output ", shape_str(t.result.shape()), ", stride [",
        a.stride[0], ", ", a.stride[1], "], padding [", a.padding[0], ", ", a.padding[1],
        "], dilation [", a.dilation[0], ", ", a.dilation[1], "], groups ", a.groups,
        " failed: ", e.what()));
  }
}

// A contiguous float32 copy of a float16 or bfloat16 tensor.
Tensor widen(Backend& backend, const Tensor& t) {
  Tensor wide = Tensor::empty(t.shape(), DType::Float32);
  backend.copy(wide, t);
  return wide;
}

}  // namespace

// float16 and bfloat16 run in float32 (Note [Compute types] in dispatch.h): the operands are
// widened into contiguous float32 copies and the result rounded once into the output.
void CpuBackend::conv2d(const Tensor& out, const Tensor& in, const Tensor& weight,
                        const ConvArgs& args) {
  if (in.dtype() == DType::Float64) return conv2d_f64(out, in, weight, args);
  if (in.dtype() == DType::Float32) return run_float32(ConvPass::Forward, {in, weight, out}, args);
  const Tensor in32 = widen(*this, in), weight32 = widen(*this, weight);
  const Tensor out32 = Tensor::empty(out.shape(), DType::Float32);
  run_float32(ConvPass::Forward, {in32, weight32, out32}, args);
  copy(out, out32);
}

// float32 only: the half types and float64 run their three passes (ops::conv2d_bias_relu).
bool CpuBackend::conv2d_bias_relu(const Tensor& out, const Tensor& in, const Tensor& weight,
                                  const Tensor& bias, const ConvArgs& args) {
  if (in.dtype() != DType::Float32) return false;
  run_float32(ConvPass::ForwardBiasRelu, {in, weight, out}, args, &bias);
  return true;
}

void CpuBackend::conv2d_backward_input(const Tensor& grad_in, const Tensor& grad_out,
                                       const Tensor& weight, const ConvArgs& args) {
  if (grad_out.dtype() == DType::Float64)
    return conv2d_backward_input_f64(grad_in, grad_out, weight, args);
  if (grad_out.dtype() == DType::Float32)
    return run_float32(ConvPass::BackwardInput, {grad_in, weight, grad_out}, args);
  const Tensor grad_out32 = widen(*this, grad_out), weight32 = widen(*this, weight);
  const Tensor grad_in32 = Tensor::empty(grad_in.shape(), DType::Float32);
  run_float32(ConvPass::BackwardInput, {grad_in32, weight32, grad_out32}, args);
  copy(grad_in, grad_in32);
}

void CpuBackend::conv2d_backward_weight(const Tensor& grad_weight, const Tensor& grad_out,
                                        const Tensor& in, const ConvArgs& args) {
  if (grad_out.dtype() == DType::Float64)
    return conv2d_backward_weight_f64(grad_weight, grad_out, in, args);
  if (grad_out.dtype() == DType::Float32)
    return run_float32(ConvPass::BackwardWeight, {in, grad_weight, grad_out}, args);
  const Tensor grad_out32 = widen(*this, grad_out), in32 = widen(*this, in);
  const Tensor grad_weight32 = Tensor::empty(grad_weight.shape(), DType::Float32);
  run_float32(ConvPass::BackwardWeight, {in32, grad_weight32, grad_out32}, args);
  copy(grad_weight, grad_weight32);
}

}  // namespace rcuda::cpu
