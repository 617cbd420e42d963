// Note [Test seeds] (reference.h): restarts each test's generator as the test starts and prints,
// for each failed test, the command line that repeats exactly it.
#include <unistd.h>

#include <climits>
#include <cstdio>
#include <string>
#include <vector>

#include "support/reference.h"

namespace rcuda::test {
namespace {

// This binary's path, so the printed command runs from any folder.
std::string program_path() {
  char buf[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string("rcuda_tests");
}

std::string repeat_command(const ::testing::TestInfo& info) {
  return "RCUDA_TEST_SEED=" + std::to_string(run_seed()) + " " + program_path() +
         " --gtest_filter=" + info.test_suite_name() + "." + info.name();
}

class PerTestSeed : public ::testing::EmptyTestEventListener {
 public:
  void OnTestProgramStart(const ::testing::UnitTest&) override { run_seed(); }
  void OnTestStart(const ::testing::TestInfo&) override { reset_rng(); }
  void OnTestEnd(const ::testing::TestInfo& info) override {
    if (!info.result()->Failed()) return;
    failed_.push_back(repeat_command(info));
    std::printf("[ rcuda ] to repeat: %s\n", failed_.back().c_str());
    std::fflush(stdout);
  }
  // Again at the end, where the summary lists the failures.
  void OnTestProgramEnd(const ::testing::UnitTest&) override {
    if (failed_.empty()) return;
    std::printf("[ rcuda ] to repeat a failed test with its inputs:\n");
    for (const std::string& command : failed_) std::printf("  %s\n", command.c_str());
    std::fflush(stdout);
  }

 private:
  std::vector<std::string> failed_;
};

// Registered before main(): gtest_main only adds its printer, and listeners may be appended
// any time before RUN_ALL_TESTS.
const bool registered = [] {
  ::testing::UnitTest::GetInstance()->listeners().Append(new PerTestSeed);
  return true;
}();

// The specification of Note [Test seeds] itself.
TEST(TestSeeds, EachTestStartsFromTheSeedOfItsOwnName) {
  const std::string name = "TestSeeds.EachTestStartsFromTheSeedOfItsOwnName";
  ASSERT_EQ(current_test_name(), name);
  EXPECT_EQ(test_seed(), seed_for_test(run_seed(), name));
  std::mt19937_64 expected(seed_for_test(run_seed(), name));
  for (int i = 0; i < 4; ++i) EXPECT_EQ(rng()(), expected()) << "draw " << i;
  // Restarting gives the same stream again: what the hook does as each test starts.
  reset_rng();
  std::mt19937_64 again(test_seed());
  EXPECT_EQ(rng()(), again());
}

TEST(TestSeeds, NamesAndRunSeedsGiveUnrelatedSeeds) {
  const uint64_t a = seed_for_test(1, "Suite.A"), b = seed_for_test(1, "Suite.B");
  EXPECT_NE(a, b);
  EXPECT_NE(seed_for_test(2, "Suite.A"), a);
  EXPECT_EQ(seed_for_test(1, "Suite.A"), a);
  // Nearby inputs must not give nearby seeds (about half of the 64 bits differ).
  EXPECT_GT(__builtin_popcountll(a ^ b), 16);
  EXPECT_GT(__builtin_popcountll(seed_for_test(1, "Suite.A") ^ seed_for_test(2, "Suite.A")), 16);
}

}  // namespace
}  // namespace rcuda::test
