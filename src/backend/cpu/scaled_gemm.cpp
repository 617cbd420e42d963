// float8 scaled matrix product on the CPU: the reference for the CUDA backend's cuBLASLt path.
// The float8 operands are widened to float32 (exactly: every e4m3/e5m2 value is a float32),
// multiplied through the float32 gemm, and the two scales applied as gemm's alpha, so the
// result is scale_a * scale_b * (a @ b) accumulated in float32, as cuBLASLt computes it
// (D = scaleA * scaleB * A B, alpha = 1), rather than a product of pre-rounded scaled operands.
#include "cpu_backend.h"

namespace rcuda::cpu {

void CpuBackend::scaled_gemm(const Tensor& out, const Tensor& a, const Tensor& b,
                             const Tensor& scale_a, const Tensor& scale_b, const Tensor& bias) {
  const int64_t m = out.size(0), n = out.size(1), k = a.size(1);
  if (m == 0 || n == 0) return;
  const double alpha =
      static_cast<double>(*scale_a.data<float>()) * static_cast<double>(*scale_b.data<float>());
  const Tensor a32 = Tensor::empty({1, m, k}, DType::Float32, out.device());
  const Tensor b32 = Tensor::empty({1, k, n}, DType::Float32, out.device());
  copy(a32, a.unsqueeze(0));
  copy(b32, b.unsqueeze(0));
  // float32 outputs are written in place (gemm handles any layout); half types round once, after
  // the bias is added in float32 (as cuBLASLt's epilogue adds it).
  const bool direct = out.dtype() == DType::Float32;
  const Tensor c = direct ? out : Tensor::empty({m, n}, DType::Float32, out.device());
  if (bias.defined()) copy(c, bias.expand({m, n}));
  gemm(c.unsqueeze(0), a32, b32, alpha, bias.defined() ? 1.0 : 0.0);
  if (!direct) copy(out, c);
}

}  // namespace rcuda::cpu
