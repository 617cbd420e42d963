// A first look at rcuda from C++: a few tensors on the CPU, printed with their results.
// `make demo` runs this until the `rcuda` command (doctor, bench) exists.
#include <chrono>
#include <cstdio>

#include "rcuda/rcuda.h"

namespace {

void print(const char* label, const rcuda::Tensor& t) {
  const rcuda::Tensor values = rcuda::contiguous(rcuda::to(t, rcuda::DType::Float64));
  std::printf("%s %s %s:", label, rcuda::dtype_name(t.dtype()),
              rcuda::shape_str(t.shape()).c_str());
  const double* v = values.data<double>();
  for (int64_t i = 0; i < values.numel() && i < 8; ++i) std::printf(" %.4f", v[i]);
  std::printf(values.numel() > 8 ? " ...\n" : "\n");
}

}  // namespace

int main() {
  using namespace rcuda;
  manual_seed(42);
  const Tensor x = randn({3, 4});
  print("x = randn(3, 4)       ", x);
  print("x.t() @ x             ", matmul(x.t(), x));
  print("softmax(x, dim = 1)   ", softmax(x, 1));
  print("sum(x, dim = 0)       ", sum(x, {0}));
  print("x + arange(4)         ", add(x, arange(0, 4)));
  print("where(x > 0, x, 0)    ", where(gt(x, 0), x, Scalar(0.0)));

  const int64_t n = 2000;
  const Tensor a = randn({n, n}), b = randn({n, n});
  const auto start = std::chrono::steady_clock::now();
  const Tensor c = matmul(a, b);
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  std::printf("matmul %lldx%lld float32 on the CPU: %.1f ms (%.1f GFLOP/s)\n",
              static_cast<long long>(n), static_cast<long long>(n), ms, 2.0 * n * n * n / ms / 1e6);
  print("c[0, :]               ", c.select(0, 0));
  return 0;
}
