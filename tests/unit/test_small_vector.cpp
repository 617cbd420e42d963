// Tests for SmallVector (rcuda/core/small_vector.h; Note [Small vectors]): random sequences of
// its operations against std::vector doing the same, across the move from inside the object
// to the heap, and copies and moves of both kinds.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <utility>
#include <vector>

#include "rcuda/core/small_vector.h"
#include "support/reference.h"

namespace {

using rcuda::test::rng;
using Small = rcuda::SmallVector<int64_t, 4>;

void expect_same(const Small& small, const std::vector<int64_t>& reference) {
  ASSERT_EQ(small.size(), reference.size());
  EXPECT_EQ(small.empty(), reference.empty());
  EXPECT_EQ(std::vector<int64_t>(small.begin(), small.end()), reference);
  for (size_t i = 0; i < reference.size(); ++i) EXPECT_EQ(small[i], reference[i]);
  if (!reference.empty()) {
    EXPECT_EQ(small.back(), reference.back());
  }
}

TEST(SmallVector, RandomOperationsMatchStdVector) {
  std::uniform_int_distribution<int> op_of(0, 9), length_of(0, 11);
  std::uniform_int_distribution<int64_t> value_of(-1000, 1000);
  for (int trial = 0; trial < 200; ++trial) {
    Small small;
    std::vector<int64_t> reference;
    for (int step = 0; step < 40; ++step) {
      const int op = op_of(rng());
      if (op <= 4) {
        const int64_t v = value_of(rng());
        small.push_back(v);
        reference.push_back(v);
      } else if (op == 5) {
        const size_t n = static_cast<size_t>(length_of(rng()));
        const int64_t v = value_of(rng());
        small.resize(n, v);
        reference.resize(n, v);
      } else if (op == 6) {
        Small copy(small);  // the copy is independent of the original
        expect_same(copy, reference);
        if (!copy.empty()) copy[0] += 1;
        expect_same(small, reference);
      } else if (op == 7) {
        Small moved(std::move(small));
        expect_same(moved, reference);
        EXPECT_TRUE(small.empty());  // NOLINT(bugprone-use-after-move): moved-from is empty
        EXPECT_TRUE(small.is_inline());
        small = std::move(moved);
      } else if (op == 8) {
        Small other;
        for (int i = 0, n = length_of(rng()); i < n; ++i) other.push_back(value_of(rng()));
        other = small;
        expect_same(other, reference);
      } else if (step % 13 == 0) {
        small.clear();
        reference.clear();
      }
      expect_same(small, reference);
    }
  }
}

TEST(SmallVector, StaysInsideUpToItsCapacityThenGrows) {
  Small small;
  for (int64_t i = 0; i < 4; ++i) small.push_back(i * 10);
  EXPECT_TRUE(small.is_inline());
  small.push_back(40);
  EXPECT_FALSE(small.is_inline());
  expect_same(small, {0, 10, 20, 30, 40});
  Small sized(3, 7);
  EXPECT_TRUE(sized.is_inline());
  expect_same(sized, {7, 7, 7});
  Small big(9, -1);
  EXPECT_FALSE(big.is_inline());
  expect_same(big, std::vector<int64_t>(9, -1));
  const Small empty{};
  expect_same(empty, {});
  EXPECT_EQ(empty.begin(), empty.end());
}

}  // namespace
