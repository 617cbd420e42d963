// rcuda_dist_tests' main: every rank runs every test under mpirun (tests/dist/README.md). Rank 0
// prints gtest's report; the other ranks print only their failures, prefixed with their rank.
// The run fails when any rank's test fails (mpirun returns the first non-zero status).
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "dist/dist_support.h"

namespace rcuda::test::dist {

namespace {

uint64_t g_seed = 0;
rcuda::dist::ProcessGroupOptions g_options;

class RankFailurePrinter : public ::testing::EmptyTestEventListener {
 public:
  explicit RankFailurePrinter(int rank) : rank_(rank) {}
  // The name is kept here: gtest holds its lock while it reports a part result.
  void OnTestStart(const ::testing::TestInfo& info) override {
    test_ = std::string(info.test_suite_name()) + "." + info.name();
  }
  void OnTestPartResult(const ::testing::TestPartResult& result) override {
    if (!result.failed()) return;
    std::printf("[rank %d] %s failed at %s:%d\n%s\n", rank_, test_.c_str(),
                result.file_name() ? result.file_name() : "?", result.line_number(),
                result.summary());
    std::fflush(stdout);
  }

 private:
  int rank_;
  std::string test_;
};

}  // namespace

uint64_t run_seed() { return g_seed; }

std::shared_ptr<rcuda::dist::ProcessGroup> group() { return rcuda::dist::default_group(); }

void restart_group() {
  rcuda::dist::destroy_process_group();
  rcuda::dist::init_process_group(g_options);
}

}  // namespace rcuda::test::dist

int main(int argc, char** argv) {
  using namespace rcuda::test::dist;
  ::testing::InitGoogleTest(&argc, argv);
  g_options.backend = rcuda::dist::Backend::Mpi;
  g_options.timeout = std::chrono::seconds(30);
  auto group = rcuda::dist::init_process_group(g_options);

  // Rank 0's seed (RCUDA_TEST_SEED or the clock) for every rank: the references need every
  // rank's values.
  rcuda::Tensor seed = rcuda::Tensor::empty({1}, rcuda::DType::Int64);
  const char* env = std::getenv("RCUDA_TEST_SEED");
  seed.data<int64_t>()[0] = static_cast<int64_t>(
      env ? std::strtoull(env, nullptr, 10)
          : static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count()));
  group->broadcast(seed, 0)->wait();
  g_seed = static_cast<uint64_t>(seed.data<int64_t>()[0]);
  if (group->rank() == 0)
    std::printf("[ rcuda ] %d ranks, RCUDA_TEST_SEED=%llu\n", group->size(),
                static_cast<unsigned long long>(g_seed));

  if (group->rank() != 0) {
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new RankFailurePrinter(group->rank()));
  }
  const int status = RUN_ALL_TESTS();
  group.reset();
  rcuda::dist::destroy_process_group();
  return status;
}
