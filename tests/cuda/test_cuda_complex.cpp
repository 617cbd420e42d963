// Complex tensors on CUDA against the same ops on the CPU (themselves checked against
// std::complex<double> loops in tests/ops/test_complex.cpp): copies across devices in both
// directions and between widths, the composed arithmetic, abs/angle/conj, and linalg_eig of a
// CUDA tensor (computed on the host, results back on the device). Skipped without a GPU.
#include <string>
#include <vector>

#include "ops/complex_reference.h"
#include "support/devices.h"

namespace rcuda {
namespace {

using test::complex_close;
using test::complex_values;
using test::kCpu;
using test::kCuda;
using test::on_cuda;
using test::random_complex;
using test::random_tensor;

TEST(CudaComplex, CopiesAcrossDevicesAndWidths) {
  RCUDA_REQUIRE_CUDA();
  const Tensor z = random_complex({3, 5}, DType::Complex64);
  const Tensor g = on_cuda(z);
  EXPECT_EQ(g.device(), kCuda);
  EXPECT_TRUE(complex_close(complex_values(g), complex_values(z), 0));
  // Non-contiguous on either side, a width change on the device.
  EXPECT_TRUE(complex_close(complex_values(to(g.t(), kCpu)), complex_values(z.t()), 0));
  EXPECT_TRUE(
      complex_close(complex_values(to(g.t(), DType::Complex128)), complex_values(z.t()), 0));
  const Tensor x = random_tensor({4}, DType::Float32);
  const std::vector<test::Complex> widened = complex_values(to(on_cuda(x), DType::Complex64));
  const std::vector<double> xs = test::to_doubles(x);
  for (size_t i = 0; i < xs.size(); ++i) EXPECT_EQ(widened[i], test::Complex(xs[i], 0));
  // A real host tensor into a complex device tensor: the imaginary part is zeroed there.
  Tensor target = on_cuda(random_complex({4}, DType::Complex128));
  copy_(target, x);
  for (size_t i = 0; i < xs.size(); ++i) EXPECT_EQ(complex_values(target)[i], widened[i]);
}

TEST(CudaComplex, ArithmeticAndPartsMatchTheCpu) {
  RCUDA_REQUIRE_CUDA();
  for (DType dtype : {DType::Complex64, DType::Complex128}) {
    const double tol = dtype == DType::Complex64 ? 1e-5 : 1e-12;
    const Tensor a = random_complex({3, 1, 4}, dtype), b = random_complex({2, 4}, dtype);
    const Tensor r = random_tensor({4}, complex_part_dtype(dtype));
    const Tensor ga = on_cuda(a), gb = on_cuda(b), gr = on_cuda(r);
    EXPECT_TRUE(complex_close(complex_values(add(ga, gb)), complex_values(add(a, b)), tol));
    EXPECT_TRUE(complex_close(complex_values(sub(ga, gr)), complex_values(sub(a, r)), tol));
    EXPECT_TRUE(complex_close(complex_values(mul(ga, gb)), complex_values(mul(a, b)), tol));
    EXPECT_TRUE(complex_close(complex_values(div(gr, gb)), complex_values(div(r, b)), tol));
    EXPECT_TRUE(complex_close(complex_values(mul(ga, Scalar(-1.5))),
                              complex_values(mul(a, Scalar(-1.5))), tol));
    EXPECT_TRUE(complex_close(complex_values(conj(ga)), complex_values(conj(a)), 0));
    EXPECT_TRUE(test::all_close(test::values(abs(ga)), test::to_doubles(abs(a)), tol));
    EXPECT_TRUE(test::all_close(test::values(angle(ga)), test::to_doubles(angle(a)), tol));
    EXPECT_TRUE(test::all_close(test::values(real(ga)), test::to_doubles(real(a)), 0));
    EXPECT_EQ(view_as_real(ga).device(), kCuda);
    EXPECT_TRUE(
        test::all_close(test::values(eq(ga, on_cuda(clone(a)))), std::vector<double>(12, 1.0), 0));
  }
}

TEST(CudaComplex, EigOfADeviceTensorMatchesTheCpuOnTheDevice) {
  RCUDA_REQUIRE_CUDA();
  const Tensor A = random_tensor({2, 4, 4}, DType::Float64);
  const EigResult g = linalg_eig(on_cuda(A)), c = linalg_eig(A);
  EXPECT_EQ(g.eigenvalues.device(), kCuda);
  EXPECT_EQ(g.eigenvectors.device(), kCuda);
  EXPECT_TRUE(complex_close(complex_values(g.eigenvalues), complex_values(c.eigenvalues), 0));
  EXPECT_TRUE(complex_close(complex_values(g.eigenvectors), complex_values(c.eigenvectors), 0));
  const Tensor Z = random_complex({3, 3}, DType::Complex64);
  EXPECT_TRUE(complex_close(complex_values(linalg_eigvals(on_cuda(Z))),
                            complex_values(linalg_eigvals(Z)), 0));
}

}  // namespace
}  // namespace rcuda
