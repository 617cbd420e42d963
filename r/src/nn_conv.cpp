// The convolution layers of the R package: nnf_conv1d, nnf_conv2d and nnf_conv_transpose2d, each
// one call into rcuda::nn (include/rcuda/nn/conv.h), which records for autograd.
#include <string>
#include <vector>

#include "nn_glue.h"
#include "rcuda/nn/conv.h"

using namespace rcuda;
using namespace rcuda::r;

namespace {

// One number for every spatial dim, or one per dim (NULL is refused here: convolutions have no
// default that depends on another argument).
nn::SpatialSize sizes(SEXP x, const char* op, const char* arg) {
  RCUDA_CHECK(!Rf_isNull(x), ValueError, op, ": ", arg, " must be given");
  const std::vector<int64_t> v = sizes_arg(x, op, arg);
  return v.size() == 1 ? nn::SpatialSize(v[0]) : nn::SpatialSize(v);
}

nn::ConvPadding padding_arg(SEXP x, const char* op) {
  if (Rf_isString(x) && Rf_length(x) == 1)
    return nn::ConvPadding(std::string(CHAR(STRING_ELT(x, 0))));
  return nn::ConvPadding(sizes(x, op, "padding").values);
}

}  // namespace

// kind: "conv1d", "conv2d" or "conv_transpose2d"; output_padding only for the last.
extern "C" SEXP rc_nn_conv(SEXP kind, SEXP x, SEXP weight, SEXP bias, SEXP stride, SEXP padding,
                           SEXP dilation, SEXP groups, SEXP output_padding) {
  RCUDA_BEGIN
  const std::string k = CHAR(STRING_ELT(kind, 0));
  const std::string r_name = "nnf_" + k;
  const char* op = r_name.c_str();
  const int64_t g = static_cast<int64_t>(Rf_asReal(groups));
  return as_r_function(r_name, k, [&] {
    const Tensor& input = unwrap(x);
    const Tensor& w = unwrap(weight);
    const Tensor b = optional_tensor(bias);
    if (k == "conv1d")
      return wrap(nn::conv1d(input, w, b, sizes(stride, op, "stride"), padding_arg(padding, op),
                             sizes(dilation, op, "dilation"), g));
    if (k == "conv2d")
      return wrap(nn::conv2d(input, w, b, sizes(stride, op, "stride"), padding_arg(padding, op),
                             sizes(dilation, op, "dilation"), g));
    return wrap(nn::conv_transpose2d(
        input, w, b, sizes(stride, op, "stride"), sizes(padding, op, "padding"),
        sizes(output_padding, op, "output_padding"), g, sizes(dilation, op, "dilation")));
  });
  RCUDA_END
}
