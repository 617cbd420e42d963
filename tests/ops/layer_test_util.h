// Test support for the pooling and normalisation layers: inputs in each memory format, written
// element by element through their strides (independent of rcuda's copy kernels), and the
// format checks of outputs.
#pragma once

#include <cstring>
#include <string>
#include <vector>

#include "support/reference.h"

namespace rcuda::test {

// The dtype a CPU reference of a layer runs in: float32 for the half types.
inline DType reference_dtype(DType d) { return is_reduced_float(d) ? DType::Float32 : d; }

enum class Layout { Contiguous, ChannelsLast, Strided };

inline const char* layout_name(Layout l) {
  switch (l) {
    case Layout::Contiguous:
      return "contiguous";
    case Layout::ChannelsLast:
      return "channels-last";
    case Layout::Strided:
      return "strided";
  }
  return "?";
}

// Writes values (row-major over view's shape) into view's memory by hand.
inline void write_through(const Tensor& view, const std::vector<double>& values) {
  std::vector<int64_t> index(static_cast<size_t>(view.dim()), 0);
  char* base = static_cast<char*>(view.storage()->data());
  for (size_t i = 0; i < values.size(); ++i) {
    int64_t off = view.offset();
    for (int64_t d = 0; d < view.dim(); ++d) off += index[d] * view.strides()[d];
    write_element(base + off * static_cast<int64_t>(view.element_size()), view.dtype(), values[i]);
    for (int64_t d = view.dim() - 1; d >= 0; --d) {
      if (++index[d] < view.shape()[d]) break;
      index[d] = 0;
    }
  }
}

// The strides of `shape` (N, C, spatial...) laid out channels-last, computed here.
inline Strides expected_channels_last_strides(const Shape& shape) {
  Strides s(shape.size());
  int64_t step = shape[1];
  s[1] = 1;
  for (size_t d = shape.size(); d-- > 2;) {
    s[d] = step;
    step *= shape[d];
  }
  s[0] = step;
  return s;
}

// Every dim of size > 1 has the expected stride.
inline bool strides_match(const Tensor& t, const Strides& expected) {
  for (int64_t d = 0; d < t.dim(); ++d)
    if (t.shape()[d] > 1 && t.strides()[d] != expected[d]) return false;
  return true;
}

// The values of t laid out as asked: contiguous, channels-last (dims >= 3; the permuted
// contiguous buffer seen through NC... strides), or strided (every other element of a buffer
// twice as wide in the last dim: neither format).
inline Tensor in_layout(const Tensor& t, Layout layout) {
  const std::vector<double> v = to_doubles(t);
  if (layout == Layout::Contiguous || (layout == Layout::ChannelsLast && t.dim() < 3))
    return tensor_of(v, t.shape(), t.dtype());
  if (layout == Layout::ChannelsLast) {
    Shape permuted = {t.shape()[0]};
    std::vector<int64_t> back = {0, t.dim() - 1};
    for (int64_t d = 2; d < t.dim(); ++d) {
      permuted.push_back(t.shape()[d]);
      back.push_back(d - 1);
    }
    permuted.push_back(t.shape()[1]);
    const Tensor view = Tensor::empty(permuted, t.dtype()).permute(back);
    write_through(view, v);
    return view;
  }
  Shape wide = t.shape();
  wide.back() = 2 * wide.back() + 1;
  const Tensor view = Tensor::empty(wide, t.dtype()).slice(t.dim() - 1, 1, wide.back(), 2);
  write_through(view, v);
  return view;
}

// in_layout's tensor on `device`: the same buffer copied there whole (rcuda's device copy of a
// contiguous tensor), then the same view taken of it, so that the layout is the same there.
inline Tensor in_layout_on(const Tensor& t, Layout layout, Device device) {
  const Tensor host = in_layout(t, layout);
  if (device.is_cpu()) return host;
  // The whole buffer as a contiguous 1-D tensor, moved, then seen through host's view.
  const int64_t elements = static_cast<int64_t>(host.storage()->nbytes() / host.element_size());
  const Tensor buffer = Tensor::empty({elements}, host.dtype());
  std::memcpy(buffer.data_ptr(), host.storage()->data(), host.storage()->nbytes());
  return to(buffer, device).as_strided(host.shape(), host.strides(), host.offset());
}

inline std::vector<Layout> all_layouts() {
  return {Layout::Contiguous, Layout::ChannelsLast, Layout::Strided};
}

// The output format the layers promise for an input in `layout`.
inline ::testing::AssertionResult in_expected_format(const Tensor& out, Layout input_layout) {
  const bool channels_last = input_layout == Layout::ChannelsLast && out.dim() >= 3;
  const bool ok = channels_last ? strides_match(out, expected_channels_last_strides(out.shape()))
                                : out.is_contiguous();
  if (ok) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "output of shape " << shape_str(out.shape()) << " has strides "
         << shape_str(out.strides()) << ", expected "
         << (channels_last ? "channels-last" : "contiguous");
}

// v rounded to dtype and back.
inline std::vector<double> rounded_to(std::vector<double> v, DType dtype) {
  char buf[8];
  for (double& x : v) {
    write_element(buf, dtype, x);
    x = read_element(buf, dtype);
  }
  return v;
}

// Expects f to throw an rcuda error of `kind` whose message contains every one of `parts`.
template <typename F>
void expect_error_mentioning(F f, const char* kind, const std::vector<std::string>& parts) {
  std::string message, thrown = "(none)";
  try {
    f();
  } catch (const Error& e) {
    message = e.what();
    thrown = e.kind();
  }
  EXPECT_EQ(thrown, kind) << message;
  for (const std::string& part : parts)
    EXPECT_NE(message.find(part), std::string::npos)
        << "'" << message << "' lacks '" << part << "'";
}

}  // namespace rcuda::test
