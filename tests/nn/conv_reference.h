// Plain double-precision loops for convolutions, the references of tests/nn/test_conv*.cpp and
// tests/cuda/test_cuda_conv.cpp. Each loop is written from the definition (torch's docs), not
// from rcuda's code: the convolution gathers each output from its receptive field; the
// transposed convolution scatters each input element over its output window, so the two are
// independent formulations of adjoint maps.
#pragma once

#include <cmath>
#include <vector>

#include "rcuda/ops/conv.h"
#include "support/reference.h"

namespace rcuda::test {

// conv2d of row-major values: x [N, C, H, W], w [O, C / groups, KH, KW], b [O] or empty.
// Positions outside [0, H) x [0, W) read 0; padding_end_extra only lengthens the output.
inline std::vector<double> conv2d_loop(const std::vector<double>& x, const Shape& xs,
                                       const std::vector<double>& w, const Shape& ws,
                                       const std::vector<double>& b, const ops::ConvParams& p,
                                       Shape* out_shape = nullptr) {
  const int64_t n_ = xs[0], c_ = xs[1], h_ = xs[2], w_ = xs[3];
  const int64_t o_ = ws[0], cg = ws[1], kh = ws[2], kw = ws[3], og = o_ / p.groups;
  const int64_t oh =
      (h_ + 2 * p.padding[0] + p.padding_end_extra[0] - p.dilation[0] * (kh - 1) - 1) /
          p.stride[0] +
      1;
  const int64_t ow =
      (w_ + 2 * p.padding[1] + p.padding_end_extra[1] - p.dilation[1] * (kw - 1) - 1) /
          p.stride[1] +
      1;
  if (out_shape) *out_shape = {n_, o_, oh, ow};
  std::vector<double> y;
  y.reserve(static_cast<size_t>(n_ * o_ * oh * ow));
  for (int64_t n = 0; n < n_; ++n)
    for (int64_t o = 0; o < o_; ++o)
      for (int64_t i = 0; i < oh; ++i)
        for (int64_t j = 0; j < ow; ++j) {
          const int64_t g = o / og;
          double s = b.empty() ? 0.0 : b[o];
          for (int64_t c = 0; c < cg; ++c)
            for (int64_t r = 0; r < kh; ++r)
              for (int64_t q = 0; q < kw; ++q) {
                const int64_t yy = i * p.stride[0] - p.padding[0] + r * p.dilation[0];
                const int64_t xx = j * p.stride[1] - p.padding[1] + q * p.dilation[1];
                if (yy < 0 || yy >= h_ || xx < 0 || xx >= w_) continue;
                s += x[((n * c_ + g * cg + c) * h_ + yy) * w_ + xx] *
                     w[((o * cg + c) * kh + r) * kw + q];
              }
          y.push_back(s);
        }
  (void)c_;
  return y;
}

// conv_transpose2d: x [N, C, H, W], w [C, O / groups, KH, KW], b [O] or empty; each input
// element adds x * w over the window it spreads to, cropped by padding at both ends.
inline std::vector<double> conv_transpose2d_loop(const std::vector<double>& x, const Shape& xs,
                                                 const std::vector<double>& w, const Shape& ws,
                                                 const std::vector<double>& b,
                                                 const ops::ConvParams& p,
                                                 std::array<int64_t, 2> output_padding,
                                                 Shape* out_shape = nullptr) {
  const int64_t n_ = xs[0], c_ = xs[1], h_ = xs[2], w_ = xs[3];
  const int64_t og = ws[1], kh = ws[2], kw = ws[3], cg = c_ / p.groups, o_ = og * p.groups;
  const int64_t oh =
      (h_ - 1) * p.stride[0] - 2 * p.padding[0] + p.dilation[0] * (kh - 1) + output_padding[0] + 1;
  const int64_t ow =
      (w_ - 1) * p.stride[1] - 2 * p.padding[1] + p.dilation[1] * (kw - 1) + output_padding[1] + 1;
  if (out_shape) *out_shape = {n_, o_, oh, ow};
  std::vector<double> y(static_cast<size_t>(n_ * o_ * oh * ow), 0.0);
  for (int64_t n = 0; n < n_; ++n)
    for (int64_t c = 0; c < c_; ++c)
      for (int64_t i = 0; i < h_; ++i)
        for (int64_t j = 0; j < w_; ++j) {
          const double v = x[((n * c_ + c) * h_ + i) * w_ + j];
          const int64_t g = c / cg;
          for (int64_t o = 0; o < og; ++o)
            for (int64_t r = 0; r < kh; ++r)
              for (int64_t q = 0; q < kw; ++q) {
                const int64_t yy = i * p.stride[0] - p.padding[0] + r * p.dilation[0];
                const int64_t xx = j * p.stride[1] - p.padding[1] + q * p.dilation[1];
                if (yy < 0 || yy >= oh || xx < 0 || xx >= ow) continue;
                y[((n * o_ + g * og + o) * oh + yy) * ow + xx] +=
                    v * w[((c * og + o) * kh + r) * kw + q];
              }
        }
  if (!b.empty())
    for (int64_t n = 0; n < n_; ++n)
      for (int64_t o = 0; o < o_; ++o)
        for (int64_t k = 0; k < oh * ow; ++k) y[(n * o_ + o) * oh * ow + k] += b[o];
  return y;
}

inline std::vector<double> abs_values(std::vector<double> v) {
  for (double& x : v) x = std::fabs(x);
  return v;
}

// |a - e| <= tol * scale[i] elementwise, where scale[i] bounds the sum of the magnitudes of the
// terms behind e[i] (a rounding error of each term, or of the sum, is a fraction of it). A
// wrong result is off by about scale itself.
inline ::testing::AssertionResult close_to_scale(const std::vector<double>& actual,
                                                 const std::vector<double>& expected,
                                                 const std::vector<double>& scale, double tol) {
  if (actual.size() != expected.size() || scale.size() != expected.size())
    return ::testing::AssertionFailure()
           << "sizes " << actual.size() << ", " << expected.size() << ", " << scale.size();
  for (size_t i = 0; i < actual.size(); ++i) {
    const double bound = tol * std::max(scale[i], 1e-30);
    if (!(std::fabs(actual[i] - expected[i]) <= bound))
      return ::testing::AssertionFailure()
             << "element " << i << ": " << actual[i] << " vs expected " << expected[i] << " (scale "
             << scale[i] << ", tol " << tol << ")";
  }
  return ::testing::AssertionSuccess();
}

// A tensor of `shape` holding `values` in channels-last layout (written by hand).
inline Tensor channels_last_of(const std::vector<double>& values, const Shape& shape, DType dtype) {
  const Tensor stored = tensor_of(std::vector<double>(values.size()),
                                  {shape[0], shape[2], shape[3], shape[1]}, dtype);
  const Tensor view = stored.permute({0, 3, 1, 2});
  char* base = static_cast<char*>(stored.data_ptr());
  const int64_t es = static_cast<int64_t>(stored.element_size());
  size_t k = 0;
  for (int64_t n = 0; n < shape[0]; ++n)
    for (int64_t c = 0; c < shape[1]; ++c)
      for (int64_t h = 0; h < shape[2]; ++h)
        for (int64_t w = 0; w < shape[3]; ++w) {
          const int64_t off =
              n * view.stride(0) + c * view.stride(1) + h * view.stride(2) + w * view.stride(3);
          write_element(base + off * es, dtype, values[k++]);
        }
  return view;
}

// Every other element along W of a [N, C, H, 2W] buffer: in neither memory format.
inline Tensor stepped_of(const std::vector<double>& values, const Shape& shape, DType dtype) {
  const Tensor stored = tensor_of(std::vector<double>(values.size() * 2),
                                  {shape[0], shape[1], shape[2], shape[3] * 2}, dtype);
  const Tensor view = stored.slice(3, 0, shape[3] * 2, 2);
  char* base = static_cast<char*>(stored.data_ptr());
  const int64_t es = static_cast<int64_t>(stored.element_size());
  size_t k = 0;
  for (int64_t n = 0; n < shape[0]; ++n)
    for (int64_t c = 0; c < shape[1]; ++c)
      for (int64_t h = 0; h < shape[2]; ++h)
        for (int64_t w = 0; w < shape[3]; ++w) {
          const int64_t off =
              n * view.stride(0) + c * view.stride(1) + h * view.stride(2) + w * view.stride(3);
          write_element(base + off * es, dtype, values[k++]);
        }
  return view;
}

// Values rounded to dtype (what a tensor of that dtype holds).
inline std::vector<double> rounded(const std::vector<double>& v, DType dtype) {
  return to_doubles(tensor_of(v, {static_cast<int64_t>(v.size())}, dtype));
}

inline std::vector<double> uniform_values(int64_t n, double low = -2, double high = 2) {
  std::vector<double> v(static_cast<size_t>(n));
  std::uniform_real_distribution<double> d(low, high);
  for (double& x : v) x = d(rng());
  return v;
}

}  // namespace rcuda::test
