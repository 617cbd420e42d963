// ONNX import: the window functions of signal processing (kernel.h): HannWindow, HammingWindow
// and BlackmanWindow, computed in double precision on the host (their values depend only on the
// size) and made as one tensor of the requested type on the model's device.
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "io/onnx/import/kernel.h"
#include "rcuda/autograd/api.h"

namespace rcuda::io::onnx_import {
namespace {

// w(n, N) for n in [0, size): N is the size for a periodic window, one less for a symmetric one.
using WindowFormula = std::function<double(double n, double N)>;

Kernel make_window(NodeReader& node, WindowFormula formula) {
  node.host_input(0);
  const bool periodic = node.i("periodic", 1) != 0;
  const DType dtype = dtype_from_onnx(static_cast<int32_t>(node.i("output_datatype", 1)),
                                      node.where() + ": output_datatype");
  const std::string where = node.where();
  return [=](const std::vector<Tensor>& in, const RunContext& ctx) -> std::vector<Tensor> {
    const int64_t size = static_cast<int64_t>(host_scalar(in[0], where + ": size"));
    RCUDA_CHECK(size >= 0, ValueError, where, ": size must not be negative, got ", size);
    const double N = static_cast<double>(periodic ? size : size - 1);
    std::vector<double> w(static_cast<size_t>(size));
    for (int64_t n = 0; n < size; ++n)
      w[static_cast<size_t>(n)] = N > 0 ? formula(static_cast<double>(n), N) : 1.0;
    const Tensor values = rcuda::from_data(w.data(), {size}, DType::Float64, ctx.device);
    return {rcuda::to(values, dtype)};
  };
}

constexpr double kPi = 3.14159265358979323846;

Kernel make_hann(NodeReader& node) {
  return make_window(node,
                     [](double n, double N) { return 0.5 - 0.5 * std::cos(2 * kPi * n / N); });
}

Kernel make_hamming(NodeReader& node) {
  // ONNX's coefficients: 25/46 and 21/46 (not 0.54 and 0.46).
  return make_window(node, [](double n, double N) {
    return 25.0 / 46.0 - 21.0 / 46.0 * std::cos(2 * kPi * n / N);
  });
}

Kernel make_blackman(NodeReader& node) {
  return make_window(node, [](double n, double N) {
    return 0.42 - 0.5 * std::cos(2 * kPi * n / N) + 0.08 * std::cos(4 * kPi * n / N);
  });
}

}  // namespace

const std::vector<ImportOp>& window_ops() {
  static const std::vector<ImportOp> ops = {
      {"HannWindow", make_hann, 17},
      {"HammingWindow", make_hamming, 17},
      {"BlackmanWindow", make_blackman, 17},
  };
  return ops;
}

}  // namespace rcuda::io::onnx_import
