// rcuda::cpu::set_num_threads / num_threads (torch_set_num_threads): the number set is the
// number read back, OpenMP's pool follows it, a CPU reduction's result does not depend on it, and
// a count below one is refused.
#include <gtest/gtest.h>
#include <omp.h>

#include "rcuda/backend/cpu.h"
#include "rcuda/ops/reduction.h"
#include "support/reference.h"

namespace rcuda::test {

TEST(CpuThreads, SetIsReadBackAndResultsDoNotChange) {
  const int before = cpu::num_threads();
  ASSERT_GE(before, 1);
  const Tensor x = random_tensor({1 << 16}, DType::Float64);
  double expected = 0;
  for (double v : to_doubles(x)) expected += v;
  for (int n : {1, 3, 2}) {
    cpu::set_num_threads(n);
    EXPECT_EQ(cpu::num_threads(), n);
    // OpenMP's pool has n threads, or half of them beside a pthreads OpenBLAS's own pool.
    EXPECT_TRUE(omp_get_max_threads() == n || omp_get_max_threads() == std::max(1, n / 2))
        << "omp_get_max_threads() " << omp_get_max_threads() << " after set_num_threads(" << n
        << ")";
    EXPECT_NEAR(to_doubles(ops::sum(x))[0], expected, 1e-9);
  }
  cpu::set_num_threads(before);
}

TEST(CpuThreads, FewerThanOneIsRefused) {
  const int before = cpu::num_threads();
  for (int bad : {0, -1}) {
    try {
      cpu::set_num_threads(bad);
      FAIL() << "set_num_threads(" << bad << ") did not throw";
    } catch (const ValueError& e) {
      EXPECT_NE(std::string(e.what()).find("set_num_threads"), std::string::npos) << e.what();
    }
  }
  EXPECT_EQ(cpu::num_threads(), before);
}

}  // namespace rcuda::test
