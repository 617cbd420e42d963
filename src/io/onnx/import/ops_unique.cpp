// ONNX import: Unique (kernel.h). Its outputs' sizes depend on the values, so the distinct
// elements (or slices along `axis`) are found on the host; the values themselves are then taken
// from the input by index_select, so Y keeps the input's dtype and device exactly.
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "io/onnx/import/kernel.h"
#include "rcuda/autograd/api.h"

namespace rcuda::io::onnx_import {
namespace {

Tensor int64_tensor(const std::vector<int64_t>& v, Device device) {
  return rcuda::from_data(v.data(), {static_cast<int64_t>(v.size())}, DType::Int64, device);
}

Kernel make_unique(NodeReader& node) {
  const bool sorted = node.i("sorted", 1) != 0;
  const bool has_axis = node.has("axis");
  const int64_t axis_attribute = node.i("axis", 0);
  const std::string where = node.where();
  return [=](const std::vector<Tensor>& in, const RunContext&) -> std::vector<Tensor> {
    const Tensor& x = in[0];
    RCUDA_CHECK(is_floating(x.dtype()) || is_integral(x.dtype(), true), DTypeError, where,
                ": Unique of dtype ", dtype_name(x.dtype()), " is not supported");
    // Rows to compare: the slices along the axis, or every element of the flattened input.
    const int64_t axis = has_axis ? normalize_axis(axis_attribute, x.dim(), where + ": axis") : 0;
    // numpy's moveaxis: the axis first, the others in their order (the rows then compare, and
    // sort, as numpy.unique's do).
    std::vector<int64_t> perm = {axis};
    for (int64_t d = 0; d < x.dim(); ++d)
      if (d != axis) perm.push_back(d);
    const Tensor along = has_axis ? rcuda::flatten(x.permute(perm), 1) : rcuda::flatten(x);
    const Tensor rows = along.dim() == 1 ? along.unsqueeze(1) : along;
    const int64_t n = rows.size(0), width = rows.size(1);
    const std::vector<double> values = host_doubles(rows);
    if (!is_floating(x.dtype()))
      for (double v : values)
        RCUDA_CHECK(std::fabs(v) <= 9007199254740992.0, ValueError, where,
                    ": Unique compares values in float64; ", v, " is beyond 2^53");
    // First occurrence of each distinct row, in sorted or first-seen order.
    std::map<std::vector<double>, int64_t> first;
    std::vector<int64_t> order;  // first occurrences, first-seen order
    std::vector<std::vector<double>> keys(static_cast<size_t>(n));
    for (int64_t r = 0; r < n; ++r) {
      keys[static_cast<size_t>(r)].assign(values.begin() + r * width,
                                          values.begin() + (r + 1) * width);
      if (first.emplace(keys[static_cast<size_t>(r)], r).second) order.push_back(r);
    }
    std::vector<int64_t> indices;
    if (sorted)
      for (const auto& [key, r] : first) indices.push_back(r);
    else
      indices = order;
    std::map<std::vector<double>, int64_t> position;
    for (size_t k = 0; k < indices.size(); ++k)
      position[keys[static_cast<size_t>(indices[k])]] = static_cast<int64_t>(k);
    std::vector<int64_t> inverse(static_cast<size_t>(n)), counts(indices.size(), 0);
    for (int64_t r = 0; r < n; ++r) {
      inverse[static_cast<size_t>(r)] = position[keys[static_cast<size_t>(r)]];
      ++counts[static_cast<size_t>(inverse[static_cast<size_t>(r)])];
    }
    const Tensor picked = int64_tensor(indices, x.device());
    const Tensor y = has_axis ? rcuda::index_select(x, axis, picked)
                              : rcuda::index_select(rcuda::flatten(x), 0, picked);
    return {y, int64_tensor(indices, x.device()), int64_tensor(inverse, x.device()),
            int64_tensor(counts, x.device())};
  };
}

}  // namespace

const std::vector<ImportOp>& unique_ops() {
  static const std::vector<ImportOp> ops = {{"Unique", make_unique, 11}};
  return ops;
}

}  // namespace rcuda::io::onnx_import
