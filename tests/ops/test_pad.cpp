// pad on the CPU backend against plain double loops written from torch.nn.functional.pad's
// documentation: each padded dim's index list is built the way the docs draw it (reflect: the
// input mirrored without repeating its edge; replicate: the edge repeated; circular: the input
// wrapped around; negative padding removes elements), then the output reads through those lists
// and the gradient sums back along them. Every mode over 1, 2 and 3 padded dims, batched and
// not, odd sizes, cropping, an empty batch, contiguous, channels-last and strided inputs, every
// floating dtype (and other dtypes for the forward), and every argument error.
#include <string>
#include <vector>

#include "ops/layer_test_util.h"
#include "rcuda/ops/resample.h"

namespace rcuda::test {
namespace {

struct Case {
  std::string mode;
  Shape shape;
  std::vector<int64_t> padding;
  double value = 0;
};

std::string describe(const Case& c) {
  return c.mode + " " + shape_str(c.shape) + " pad " + shape_str(c.padding) +
         (c.mode == "constant" ? " value " + std::to_string(c.value) : "");
}

// The input index each output position of one dim reads (-1: the constant value), built as the
// documentation describes the modes. PyTorch crops circular padding's negative part before it
// wraps (checked against torch 2.x: pad(arange(6), (2, -1), "circular") is 3 4 0 1 2 3 4), but
// reflects and replicates the uncropped input.
std::vector<int64_t> index_list(const std::string& mode, int64_t size, int64_t before,
                                int64_t after) {
  if (mode == "circular") {  // PyTorch crops first, then wraps what is left around
    const int64_t lo = std::max<int64_t>(-before, 0), hi = size - std::max<int64_t>(-after, 0);
    std::vector<int64_t> all;
    for (int64_t j = std::max<int64_t>(before, 0); j >= 1; --j) all.push_back(hi - j);
    for (int64_t i = lo; i < hi; ++i) all.push_back(i);
    for (int64_t j = 1; j <= std::max<int64_t>(after, 0); ++j) all.push_back(lo + j - 1);
    return all;
  }
  std::vector<int64_t> left, right;
  for (int64_t j = std::max<int64_t>(before, 0); j >= 1; --j) {  // j-th element before the edge
    if (mode == "reflect") left.push_back(j);
    if (mode == "replicate") left.push_back(0);
    if (mode == "constant") left.push_back(-1);
  }
  for (int64_t j = 1; j <= std::max<int64_t>(after, 0); ++j) {  // j-th element past the edge
    if (mode == "reflect") right.push_back(size - 1 - j);
    if (mode == "replicate") right.push_back(size - 1);
    if (mode == "constant") right.push_back(-1);
  }
  std::vector<int64_t> all = left;
  for (int64_t i = 0; i < size; ++i) all.push_back(i);
  all.insert(all.end(), right.begin(), right.end());
  const size_t crop_front = static_cast<size_t>(std::max<int64_t>(-before, 0));
  const size_t crop_back = static_cast<size_t>(std::max<int64_t>(-after, 0));
  return std::vector<int64_t>(all.begin() + static_cast<std::ptrdiff_t>(crop_front),
                              all.end() - static_cast<std::ptrdiff_t>(crop_back));
}

struct Reference {
  Shape out_shape;
  std::vector<double> out, grad_input;
};

// Row-major walk over every output element; the padded dims read through their index lists.
Reference reference(const Case& c, const std::vector<double>& x, const std::vector<double>& g) {
  const size_t rank = c.shape.size(), pairs = c.padding.size() / 2;
  std::vector<std::vector<int64_t>> lists(rank);
  Reference r;
  r.out_shape = c.shape;
  for (size_t d = 0; d < rank; ++d) {
    const size_t j = rank - 1 - d;  // pair j pads dim rank - 1 - j
    if (j < pairs) {
      lists[d] = index_list(c.mode, c.shape[d], c.padding[2 * j], c.padding[2 * j + 1]);
    } else {
      for (int64_t i = 0; i < c.shape[d]; ++i) lists[d].push_back(i);
    }
    r.out_shape[d] = static_cast<int64_t>(lists[d].size());
  }
  r.grad_input.assign(x.size(), 0);
  const int64_t total = numel(r.out_shape);
  std::vector<int64_t> index(rank, 0);
  for (int64_t o = 0; o < total; ++o) {
    int64_t src = 0;
    bool inside = true;
    for (size_t d = 0; d < rank; ++d) {
      const int64_t i = lists[d][static_cast<size_t>(index[d])];
      inside = inside && i >= 0;
      src = src * c.shape[d] + i;
    }
    r.out.push_back(inside ? x[static_cast<size_t>(src)] : c.value);
    if (inside) r.grad_input[static_cast<size_t>(src)] += g[static_cast<size_t>(o)];
    for (size_t d = rank; d-- > 0;) {
      if (++index[d] < r.out_shape[d]) break;
      index[d] = 0;
    }
  }
  return r;
}

const std::vector<Case>& cases() {
  static const std::vector<Case> all = {
      // reflect: padding up to size - 1, asymmetric, cropping on one side, unbatched, 3-D.
      {"reflect", {2, 3, 7}, {2, 3}},
      {"reflect", {3, 5}, {4, 1}},
      {"reflect", {2, 2, 6}, {-2, 3}},
      {"reflect", {2, 3, 5, 6}, {1, 2, 3, 4}},
      {"reflect", {1, 2, 4, 3}, {2, 0, 0, 3}},
      {"reflect", {3, 4, 4}, {3, 3, 1, 2}},
      {"reflect", {1, 2, 3, 4, 5}, {1, 2, 2, 1, 1, 2}},
      {"reflect", {0, 3, 4, 4}, {1, 1, 1, 1}},
      // replicate: padding beyond the size, single-element dims, cropping.
      {"replicate", {2, 3, 2}, {5, 4}},
      {"replicate", {2, 3, 1, 5}, {2, 1, 3, 2}},
      {"replicate", {2, 4, 5}, {-1, 2, 3, -2}},
      {"replicate", {2, 1, 2, 3, 2}, {1, 3, 2, 0, 1, 1}},
      // circular: padding equal to the size, cropping, 2-D and 3-D.
      {"circular", {2, 3, 5}, {5, 2}},
      {"circular", {2, 2, 3, 4}, {4, 1, 3, 2}},
      {"circular", {2, 3, 6}, {-2, 3}},
      {"circular", {2, 3, 6}, {2, -1}},
      {"circular", {2, 2, 4, 6}, {-4, 2, 3, -1}},
      {"circular", {1, 2, 2, 3, 3}, {1, 2, 2, 1, 1, 1}},
      {"circular", {3, 4, 3}, {1, 1, 2, 2}},
      // constant: any dims, crops, value, one dim of a larger tensor, all dims.
      {"constant", {5}, {2, 1}, 1.5},
      {"constant", {2, 3, 4, 5}, {1, 2}, -2},
      {"constant", {2, 3, 4, 5}, {1, 2, 0, 3, 1, 1, 2, 0}, 0.25},
      {"constant", {2, 3, 5, 6}, {-1, 2, 3, -2}, 3},
      {"constant", {3, 4, 5}, {-2, -3}, 0},
      {"constant", {2, 3, 4}, {0, 0, 0, 0, 0, 0}, 7},
      {"constant", {0, 3, 4}, {1, 1}, 1},
      {"constant", {2, 0, 3}, {1, 1, 2, 0}, 4},
      {"constant", {2, 3, 4}, {-3, -1}, 0},
  };
  return all;
}

bool four_d(const Case& c) { return c.shape.size() == 4; }

TEST(Pad, ForwardAndBackwardMatchDoubleLoops) {
  for (const Case& c : cases()) {
    for (DType dtype : floating_dtypes()) {
      for (Layout layout : all_layouts()) {
        if (layout == Layout::ChannelsLast && c.shape.size() < 3) continue;
        SCOPED_TRACE(describe(c) + " " + dtype_name(dtype) + " " + layout_name(layout));
        const Tensor x = in_layout(random_tensor(c.shape, dtype), layout);
        const ops::PadPlan plan = ops::pad_plan(x, c.padding, c.mode, c.value);
        const Reference probe = reference(c, to_doubles(x), std::vector<double>(x.numel(), 0));
        const Tensor g = random_tensor(probe.out_shape, dtype, -1, 1);
        const Reference ref = reference(c, to_doubles(x), to_doubles(g));
        const Tensor out = ops::pad(x, c.padding, c.mode, c.value);
        ASSERT_EQ(out.shape(), ref.out_shape);
        EXPECT_EQ(plan.output_shape, ref.out_shape);
        EXPECT_TRUE(all_close(to_doubles(out), rounded_to(ref.out, dtype), 0)) << "out";
        // A 4-D channels-last input pads into a channels-last output (the 3-D pad of an
        // unbatched 4-D input is not a 2-D layer's format and comes back contiguous).
        const bool keeps = four_d(c) && (c.mode == "constant" || c.padding.size() == 4);
        EXPECT_TRUE(in_expected_format(out, keeps ? layout : Layout::Contiguous));
        const Tensor grad = ops::pad_backward(in_layout(g, layout), plan);
        ASSERT_EQ(grad.shape(), x.shape());
        // Sums of up to a few gradient elements, rounded once.
        EXPECT_TRUE(
            all_close(to_doubles(grad), rounded_to(ref.grad_input, dtype), 2 * tolerance(dtype)))
            << "grad_input";
        EXPECT_TRUE(in_expected_format(grad, keeps ? layout : Layout::Contiguous));
      }
    }
  }
}

// The forward copies elements, so it takes every dtype: integers and bool exactly.
TEST(Pad, ForwardTakesEveryDtype) {
  for (DType dtype : {DType::Bool, DType::UInt8, DType::Int32, DType::Int64}) {
    for (const Case& c :
         {Case{"reflect", {2, 3, 5, 6}, {1, 2, 3, 4}}, Case{"circular", {2, 3, 5}, {5, 2}},
          Case{"replicate", {2, 4, 5}, {-1, 2, 3, -2}},
          Case{"constant", {2, 3, 5, 6}, {-1, 2, 3, -2}, 1}}) {
      SCOPED_TRACE(describe(c) + " " + dtype_name(dtype));
      const Tensor x = random_tensor(c.shape, dtype, 0, 5);
      const Reference ref = reference(c, to_doubles(x), std::vector<double>(x.numel(), 0));
      EXPECT_TRUE(all_close(to_doubles(ops::pad(x, c.padding, c.mode, c.value)), ref.out, 0));
    }
  }
}

// A larger input than the table's so that the OpenMP split runs, in both memory formats.
TEST(Pad, LargeInputs) {
  for (Layout layout : {Layout::Contiguous, Layout::ChannelsLast}) {
    for (const char* mode : {"reflect", "replicate", "circular", "constant"}) {
      SCOPED_TRACE(std::string(mode) + " " + layout_name(layout));
      const Case c{mode, {4, 16, 33, 31}, {3, 2, 1, 4}, std::string(mode) == "constant" ? 0.5 : 0};
      const Tensor x = in_layout(random_tensor(c.shape, DType::Float32), layout);
      const std::optional<double> value =
          c.mode == "constant" ? std::optional<double>(c.value) : std::nullopt;
      const ops::PadPlan plan = ops::pad_plan(x, c.padding, c.mode, value);
      const Tensor g = random_tensor(plan.output_shape, DType::Float32);
      const Reference ref = reference(c, to_doubles(x), to_doubles(g));
      EXPECT_TRUE(all_close(to_doubles(ops::pad(x, c.padding, c.mode, value)), ref.out, 0));
      EXPECT_TRUE(all_close(to_doubles(ops::pad_backward(g, plan)), ref.grad_input, 4e-7));
    }
  }
}

TEST(Pad, ArgumentErrors) {
  const Tensor x = random_tensor({2, 3, 4, 5}, DType::Float32);
  const Tensor x3 = random_tensor({2, 3, 5}, DType::Float32);
  expect_error_mentioning(
      [&] {
        ops::pad(x, {1, 2, 3});
      },
      "ValueError", {"pad", "even count", "3 values", "[1, 2, 3]"});
  expect_error_mentioning(
      [&] {
        ops::pad(x, {1, 1, 1, 1, 1, 1, 1, 1, 1, 1});
      },
      "ValueError", {"pad", "at most two values per input dim", "10 values", "4-D"});
  expect_error_mentioning(
      [&] {
        ops::pad(x, {1, 1}, "mirror");
      },
      "ValueError", {"pad", "'constant', 'reflect', 'replicate' or 'circular'", "'mirror'"});
  expect_error_mentioning(
      [&] {
        ops::pad(x3, {5, 1}, "reflect");
      },
      "ValueError",
      {"pad", "reflect padding must be less than", "(5, 1)", "dim 2", "size 5", "[2, 3, 5]"});
  expect_error_mentioning(
      [&] {
        ops::pad(x, {0, 0, 1, 4}, "reflect");
      },
      "ValueError", {"(1, 4)", "dim 2", "size 4"});
  expect_error_mentioning(
      [&] {
        ops::pad(x3, {6, 0}, "circular");
      },
      "ValueError", {"pad", "circular padding must be at most the size", "(6, 0)", "dim 2"});
  expect_error_mentioning(
      [&] {
        ops::pad(x3, {-3, 3}, "circular");
      },
      "ValueError", {"pad", "after cropping by its negative part", "(-3, 3)", "size 5"});
  expect_error_mentioning(
      [&] {
        ops::pad(x3, {1, 1}, "reflect", 2.0);
      },
      "ValueError", {"pad", "mode 'reflect' takes no value", "2"});
  expect_error_mentioning(
      [&] {
        ops::pad(x, {1, 1, 1, 1, 1, 1, 1, 1}, "replicate");
      },
      "ValueError", {"pad", "mode 'replicate' pads the last 1, 2 or 3 dims", "8 values"});
  expect_error_mentioning([&] { ops::pad(x, {}, "replicate"); }, "ValueError",
                          {"pad", "got 0 values"});
  expect_error_mentioning(
      [&] {
        ops::pad(x, {1, 1}, "replicate");
      },
      "ShapeError",
      {"pad", "mode 'replicate' with 2 padding values", "2-D or 3-D", "(C, L) or (N, C, L)",
       "[2, 3, 4, 5]"});
  expect_error_mentioning(
      [&] {
        ops::pad(random_tensor({5}, DType::Float32), {1, 1}, "reflect");
      },
      "ShapeError", {"expects a 2-D or 3-D", "[5]"});
  expect_error_mentioning(
      [&] {
        ops::pad(random_tensor({2, 0, 5}, DType::Float32), {1, 1}, "replicate");
      },
      "ShapeError", {"non-zero sizes but for the batch dim", "[2, 0, 5]"});
  expect_error_mentioning(
      [&] {
        ops::pad(x3, {-3, -2}, "replicate");
      },
      "ShapeError", {"pad", "(-3, -2)", "dim 2 of size 5", "output size of 0", "below 1"});
  expect_error_mentioning(
      [&] {
        ops::pad(x, {0, 0, -3, -2});
      },
      "ShapeError", {"pad", "(-3, -2)", "dim 2 of size 4", "output size of -1", "below 0"});
  expect_error_mentioning(
      [&] {
        ops::pad(to(x, DType::Float8E4M3FN), {1, 1});
      },
      "DTypeError", {"pad", "float8"});
  const ops::PadPlan plan = ops::pad_plan(x, {1, 1, 1, 1}, "reflect", std::nullopt);
  expect_error_mentioning(
      [&] {
        ops::pad_backward(random_tensor({2, 3, 4, 5}, DType::Float32), plan);
      },
      "ShapeError", {"pad_backward", "grad_output", "[2, 3, 4, 5]", "[2, 3, 6, 7]"});
  expect_error_mentioning(
      [&] {
        ops::pad_backward(random_tensor({2, 3, 6, 7}, DType::Int64), plan);
      },
      "DTypeError", {"pad_backward", "grad_output", "int64"});
}

}  // namespace
}  // namespace rcuda::test
