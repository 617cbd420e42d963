// Pooling and normalisation layers of the R package (nnf_max_pool2d, nnf_batch_norm, ...), each
// one call into rcuda::nn (include/rcuda/nn/pool.h, norm.h), which records for autograd. Pooling
// indices are 1-based in R, as torch for R's: flat positions in each input plane, plus one.
#include <optional>
#include <string>
#include <vector>

#include "nn_glue.h"
#include "rcuda/nn/norm.h"
#include "rcuda/nn/pool.h"

using namespace rcuda;
using namespace rcuda::r;

namespace {

SEXP values_and_indices(const std::pair<Tensor, Tensor>& r) {
  // A public op (indices carry no gradient), so a trace records the shift.
  const Tensor one_based = add(r.second, Scalar(int64_t{1}));
  SEXP out = PROTECT(Rf_allocVector(VECSXP, 2));
  SET_VECTOR_ELT(out, 0, wrap(r.first));
  SET_VECTOR_ELT(out, 1, wrap(one_based));
  UNPROTECT(1);
  return out;
}

}  // namespace

// dims 1 or 2; stride NULL for the kernel size. With return_indices, list(values, indices).
extern "C" SEXP rc_nn_max_pool(SEXP dims, SEXP x, SEXP kernel, SEXP stride, SEXP padding,
                               SEXP dilation, SEXP ceil_mode, SEXP return_indices) {
  RCUDA_BEGIN
  const int d = Rf_asInteger(dims);
  const std::string r_name = d == 1 ? "nnf_max_pool1d" : "nnf_max_pool2d";
  const char* op = r_name.c_str();
  return as_r_function(r_name, d == 1 ? "max_pool1d" : "max_pool2d", [&]() -> SEXP {
    const Tensor& input = unwrap(x);
    const std::vector<int64_t> k = sizes_arg(kernel, op, "kernel_size"),
                               s = sizes_arg(stride, op, "stride"),
                               p = sizes_arg(padding, op, "padding"),
                               dl = sizes_arg(dilation, op, "dilation");
    if (d == 1) {
      const std::optional<int64_t> s1 = s.empty() ? std::nullopt : std::optional<int64_t>(s[0]);
      if (flag(return_indices))
        return values_and_indices(
            nn::max_pool1d_with_indices(input, k.at(0), s1, p.at(0), dl.at(0), flag(ceil_mode)));
      return wrap(nn::max_pool1d(input, k.at(0), s1, p.at(0), dl.at(0), flag(ceil_mode)));
    }
    if (flag(return_indices))
      return values_and_indices(nn::max_pool2d_with_indices(input, k, s, p, dl, flag(ceil_mode)));
    return wrap(nn::max_pool2d(input, k, s, p, dl, flag(ceil_mode)));
  });
  RCUDA_END
}

// divisor_override NULL for none.
extern "C" SEXP rc_nn_avg_pool(SEXP dims, SEXP x, SEXP kernel, SEXP stride, SEXP padding,
                               SEXP ceil_mode, SEXP count_include_pad, SEXP divisor_override) {
  RCUDA_BEGIN
  const int d = Rf_asInteger(dims);
  const std::string r_name = d == 1 ? "nnf_avg_pool1d" : "nnf_avg_pool2d";
  const char* op = r_name.c_str();
  return as_r_function(r_name, d == 1 ? "avg_pool1d" : "avg_pool2d", [&] {
    const Tensor& input = unwrap(x);
    const std::vector<int64_t> k = sizes_arg(kernel, op, "kernel_size"),
                               s = sizes_arg(stride, op, "stride"),
                               p = sizes_arg(padding, op, "padding");
    if (d == 1) {
      const std::optional<int64_t> s1 = s.empty() ? std::nullopt : std::optional<int64_t>(s[0]);
      return wrap(
          nn::avg_pool1d(input, k.at(0), s1, p.at(0), flag(ceil_mode), flag(count_include_pad)));
    }
    const std::optional<int64_t> divisor =
        Rf_isNull(divisor_override) ? std::nullopt
                                    : std::optional<int64_t>(Rf_asInteger(divisor_override));
    return wrap(nn::avg_pool2d(input, k, s, p, flag(ceil_mode), flag(count_include_pad), divisor));
  });
  RCUDA_END
}

// kind "avg" or "max".
extern "C" SEXP rc_nn_adaptive_pool(SEXP kind, SEXP x, SEXP output_size, SEXP return_indices) {
  RCUDA_BEGIN
  const bool max = std::string(CHAR(STRING_ELT(kind, 0))) == "max";
  const std::string engine = max ? "adaptive_max_pool2d" : "adaptive_avg_pool2d";
  const std::string r_name = "nnf_" + engine;
  return as_r_function(r_name, engine, [&]() -> SEXP {
    std::vector<int64_t> size = sizes_arg(output_size, r_name.c_str(), "output_size");
    if (size.size() == 1) size.push_back(size[0]);
    if (!max) return wrap(nn::adaptive_avg_pool2d(unwrap(x), size));
    if (flag(return_indices))
      return values_and_indices(nn::adaptive_max_pool2d_with_indices(unwrap(x), size));
    return wrap(nn::adaptive_max_pool2d(unwrap(x), size));
  });
  RCUDA_END
}

extern "C" SEXP rc_nn_batch_norm(SEXP x, SEXP running_mean, SEXP running_var, SEXP weight,
                                 SEXP bias, SEXP training, SEXP momentum, SEXP eps) {
  RCUDA_BEGIN
  return as_r_function("nnf_batch_norm", "batch_norm", [&] {
    return wrap(nn::batch_norm(unwrap(x), optional_tensor(running_mean),
                               optional_tensor(running_var), optional_tensor(weight),
                               optional_tensor(bias), flag(training), Rf_asReal(momentum),
                               Rf_asReal(eps)));
  });
  RCUDA_END
}

extern "C" SEXP rc_nn_group_norm(SEXP x, SEXP num_groups, SEXP weight, SEXP bias, SEXP eps) {
  RCUDA_BEGIN
  return as_r_function("nnf_group_norm", "group_norm", [&] {
    return wrap(nn::group_norm(unwrap(x), static_cast<int64_t>(Rf_asReal(num_groups)),
                               optional_tensor(weight), optional_tensor(bias), Rf_asReal(eps)));
  });
  RCUDA_END
}

extern "C" SEXP rc_nn_instance_norm(SEXP x, SEXP running_mean, SEXP running_var, SEXP weight,
                                    SEXP bias, SEXP use_input_stats, SEXP momentum, SEXP eps) {
  RCUDA_BEGIN
  return as_r_function("nnf_instance_norm", "instance_norm", [&] {
    return wrap(nn::instance_norm(unwrap(x), optional_tensor(running_mean),
                                  optional_tensor(running_var), optional_tensor(weight),
                                  optional_tensor(bias), flag(use_input_stats), Rf_asReal(momentum),
                                  Rf_asReal(eps)));
  });
  RCUDA_END
}
