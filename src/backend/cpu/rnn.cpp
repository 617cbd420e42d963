// The CPU's recurrent primitives (Note [Recurrent primitives] in backend.h): float32 through
// oneDNN (Note [oneDNN recurrent layers]), float64 through plain loops (Note [float64 recurrent
// layers]), float16 and bfloat16 through float32 copies of every operand, with the results
// rounded once into their outputs (Note [Compute types] in dispatch.h).
#include "cpu_backend.h"
#include "rnn_cpu.h"

namespace rcuda::cpu {
namespace {

// A contiguous float32 copy of t (undefined stays undefined).
Tensor widen(Backend& backend, const Tensor& t) {
  if (!t.defined()) return t;
  Tensor wide = Tensor::empty(t.shape(), DType::Float32);
  backend.copy(wide, t);
  return wide;
}
Backend::TensorList widen_all(Backend& backend, const Backend::TensorList& list) {
  Backend::TensorList wide;
  for (const Tensor& t : list) wide.push_back(widen(backend, t));
  return wide;
}
// A float32 buffer for an output of t's shape (undefined stays undefined).
Tensor wide_like(const Tensor& t) {
  return t.defined() ? Tensor::empty(t.shape(), DType::Float32) : Tensor();
}
void narrow_into(Backend& backend, const Tensor& dst, const Tensor& wide) {
  if (dst.defined()) backend.copy(dst, wide);
}

}  // namespace

Tensor CpuBackend::rnn(const RnnArgs& args, const Tensor& out, const Tensor& hy, const Tensor& cy,
                       const Tensor& input, const Tensor& hx, const Tensor& cx,
                       const TensorList& weights) {
  if (input.dtype() == DType::Float64) return rnn_f64(args, out, hy, cy, input, hx, cx, weights);
  if (input.dtype() == DType::Float32) return rnn_f32(args, out, hy, cy, input, hx, cx, weights);
  const Tensor out32 = wide_like(out), hy32 = wide_like(hy), cy32 = wide_like(cy);
  Tensor reserve = rnn_f32(args, out32, hy32, cy32, widen(*this, input), widen(*this, hx),
                           widen(*this, cx), widen_all(*this, weights));
  narrow_into(*this, out, out32);
  narrow_into(*this, hy, hy32);
  narrow_into(*this, cy, cy32);
  return reserve;
}

void CpuBackend::rnn_backward(const RnnArgs& args, const Tensor& grad_input, const Tensor& grad_hx,
                              const Tensor& grad_cx, const TensorList& grad_weights,
                              const Tensor& grad_out, const Tensor& grad_hy, const Tensor& grad_cy,
                              const Tensor& input, const Tensor& hx, const Tensor& cx,
                              const TensorList& weights, const Tensor& out, const Tensor& reserve) {
  if (input.dtype() == DType::Float64)
    return rnn_backward_f64(args, grad_input, grad_hx, grad_cx, grad_weights, grad_out, grad_hy,
                            grad_cy, input, hx, cx, weights, out, reserve);
  if (input.dtype() == DType::Float32)
    return rnn_backward_f32(args, grad_input, grad_hx, grad_cx, grad_weights, grad_out, grad_hy,
                            grad_cy, input, hx, cx, weights, out, reserve);
  const Tensor gi32 = wide_like(grad_input), gh32 = wide_like(grad_hx), gc32 = wide_like(grad_cx);
  TensorList gw32;
  for (const Tensor& g : grad_weights) gw32.push_back(wide_like(g));
  rnn_backward_f32(args, gi32, gh32, gc32, gw32, widen(*this, grad_out), widen(*this, grad_hy),
                   widen(*this, grad_cy), widen(*this, input), widen(*this, hx), widen(*this, cx),
                   widen_all(*this, weights), widen(*this, out), reserve);
  narrow_into(*this, grad_input, gi32);
  narrow_into(*this, grad_hx, gh32);
  narrow_into(*this, grad_cx, gc32);
  for (size_t i = 0; i < grad_weights.size(); ++i) narrow_into(*this, grad_weights[i], gw32[i]);
}

}  // namespace rcuda::cpu
