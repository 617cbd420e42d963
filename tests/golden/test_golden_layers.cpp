// Single layers against PyTorch: tests/golden/make_golden_layers.py writes, in float64, the
// inputs, a random upstream gradient g, the output (and max pools' indices, and the running
// statistics after the call) and the gradients of sum(out * g) for a table of configurations of
// each layer: conv1d, conv2d, conv_transpose2d, max/avg/adaptive pools, batch/group/instance/
// layer norm. Each configuration runs here on the CPU in float64, float32, float16 and bfloat16
// and, where there is a GPU, on CUDA in float32 (TF32 off), float16 and bfloat16; 4-D inputs in
// both memory formats (the output and the input gradient must keep a channels-last input's).
// Skipped (reported as skipped) when RCUDA_GOLDEN_DIR is unset: the GPU check sets it.
//
// Note [Golden layer tolerances]
// Float64 on the CPU: 1e-10 relative (as all_close). Other dtypes get an absolute bound per
// tensor, c * u * sqrt(K) * M, u the dtype's unit roundoff (PyTorch's float64 inputs are rounded
// to it, then the layer computes): each value is a sum of K terms of magnitude at most M (for a
// convolution's output K = C / groups * KH * KW, M = max|x| * max|w|), whose rounding errors
// are independent, so they grow as sqrt(K) and not as K, while a wrong tap, channel or divisor
// is off by a sizeable fraction of M (far above float32's bound). c is 8, and 32 for float32 on
// CUDA (cuDNN's FFT and Winograd engines spread their errors over the output). Normalisations: each
// output is one normalised value times the weight plus the bias (K = 1, M = max|xhat| * max|w| +
// max|b|), the weight and bias gradients sum over the K elements that share a weight, and the input
// gradient, a few terms of its own size per element, is bounded by its largest magnitude (K = 1).
// Max pools' outputs and indices are exact: their inputs are distinct values exact in every dtype.
// Each test prints the largest error it saw as a fraction of its bound, by dtype and tensor.
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>

#include "ops/layer_test_util.h"
#include "rcuda/backend/cuda.h"
#include "rcuda/nn/conv.h"
#include "rcuda/nn/layers.h"
#include "rcuda/nn/norm.h"
#include "rcuda/nn/pool.h"
#include "support/devices.h"

namespace rcuda::test {
namespace {

using json = nlohmann::json;
using Tensors = std::map<std::string, Tensor>;

const char* golden_dir() { return std::getenv("RCUDA_GOLDEN_DIR"); }

struct Config {
  std::string name, layer;
  json args, tensors;  // tensors: name -> {shape, dtype}
};

std::vector<Config> load_manifest() {
  const std::string path = std::string(golden_dir()) + "/layers/manifest.json";
  std::ifstream in(path);
  if (!in.good()) {
    ADD_FAILURE() << "cannot read " << path << " (tests/golden/make_golden_layers.py writes it)";
    return {};
  }
  std::vector<Config> configs;
  // A copy, not a reference: at() of a temporary key (GCC 13's -Wdangling-reference).
  const json list = json::parse(in).at("configs");
  for (const json& c : list)
    configs.push_back({c.at("name"), c.at("layer"), c.at("args"), c.at("tensors")});
  return configs;
}

bool has(const Config& c, const std::string& tensor) { return c.tensors.contains(tensor); }

// The tensor as PyTorch wrote it: float64 (or int64), contiguous, on the CPU.
Tensor golden(const Config& c, const std::string& tensor) {
  const json& info = c.tensors.at(tensor);
  const Shape shape = info.at("shape").get<Shape>();
  const DType dtype = info.at("dtype") == "int64" ? DType::Int64 : DType::Float64;
  const std::string path = std::string(golden_dir()) + "/layers/" + c.name + "__" + tensor + ".bin";
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << "cannot read " << path;
  std::vector<char> bytes(static_cast<size_t>(numel(shape)) * element_size(dtype));
  in.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  EXPECT_EQ(in.gcount(), static_cast<std::streamsize>(bytes.size())) << path;
  return from_data(bytes.data(), shape, dtype);
}

// torch's int-or-tuple arguments: one number, or a list.
std::vector<int64_t> sizes(const json& v) {
  if (v.is_number()) return {v.get<int64_t>()};
  return v.get<std::vector<int64_t>>();
}
nn::ConvPadding conv_padding(const json& v) {
  if (v.is_string()) return nn::ConvPadding(v.get<std::string>());
  return nn::ConvPadding(sizes(v));
}
Tensor maybe(const Tensors& in, const std::string& name) {
  const auto it = in.find(name);
  return it == in.end() ? Tensor() : it->second;
}

struct LayerResult {
  LayerResult(Tensor out, Tensor indices = Tensor())  // NOLINT(google-explicit-constructor)
      : out(std::move(out)), indices(std::move(indices)) {}
  Tensor out, indices;  // indices: max pools only
};
using Layer = std::function<LayerResult(const json& a, const Tensors& in)>;

// Each layer as the configurations call it, by the manifest's layer names.
const std::map<std::string, Layer>& layers() {
  static const std::map<std::string, Layer> l = {
      {"conv1d",
       [](const json& a, const Tensors& in) {
         return LayerResult{nn::conv1d(in.at("x"), in.at("w"), maybe(in, "b"), sizes(a["stride"]),
                                       conv_padding(a["padding"]), sizes(a["dilation"]),
                                       a["groups"].get<int64_t>())};
       }},
      {"conv2d",
       [](const json& a, const Tensors& in) {
         return LayerResult{nn::conv2d(in.at("x"), in.at("w"), maybe(in, "b"), sizes(a["stride"]),
                                       conv_padding(a["padding"]), sizes(a["dilation"]),
                                       a["groups"].get<int64_t>())};
       }},
      {"conv_transpose2d",
       [](const json& a, const Tensors& in) {
         return LayerResult{nn::conv_transpose2d(
             in.at("x"), in.at("w"), maybe(in, "b"), sizes(a["stride"]), sizes(a["padding"]),
             sizes(a["output_padding"]), a["groups"].get<int64_t>(), sizes(a["dilation"]))};
       }},
      {"max_pool1d",
       [](const json& a, const Tensors& in) {
         const std::optional<int64_t> stride =
             a["stride"].is_null() ? std::nullopt
                                   : std::optional<int64_t>(a["stride"].get<int64_t>());
         auto [out, indices] = nn::max_pool1d_with_indices(
             in.at("x"), a["kernel_size"].get<int64_t>(), stride, a["padding"].get<int64_t>(),
             a["dilation"].get<int64_t>(), a["ceil_mode"].get<bool>());
         return LayerResult{out, indices};
       }},
      {"max_pool2d",
       [](const json& a, const Tensors& in) {
         const std::vector<int64_t> stride =
             a["stride"].is_null() ? std::vector<int64_t>() : sizes(a["stride"]);
         auto [out, indices] = nn::max_pool2d_with_indices(
             in.at("x"), sizes(a["kernel_size"]), stride, sizes(a["padding"]), sizes(a["dilation"]),
             a["ceil_mode"].get<bool>());
         return LayerResult{out, indices};
       }},
      {"avg_pool1d",
       [](const json& a, const Tensors& in) {
         const std::optional<int64_t> stride =
             a["stride"].is_null() ? std::nullopt
                                   : std::optional<int64_t>(a["stride"].get<int64_t>());
         return LayerResult{nn::avg_pool1d(in.at("x"), a["kernel_size"].get<int64_t>(), stride,
                                           a["padding"].get<int64_t>(), a["ceil_mode"].get<bool>(),
                                           a["count_include_pad"].get<bool>())};
       }},
      {"avg_pool2d",
       [](const json& a, const Tensors& in) {
         const std::vector<int64_t> stride =
             a["stride"].is_null() ? std::vector<int64_t>() : sizes(a["stride"]);
         const std::optional<int64_t> divisor =
             a["divisor_override"].is_null()
                 ? std::nullopt
                 : std::optional<int64_t>(a["divisor_override"].get<int64_t>());
         return LayerResult{nn::avg_pool2d(in.at("x"), sizes(a["kernel_size"]), stride,
                                           sizes(a["padding"]), a["ceil_mode"].get<bool>(),
                                           a["count_include_pad"].get<bool>(), divisor)};
       }},
      {"adaptive_avg_pool2d",
       [](const json& a, const Tensors& in) {
         return LayerResult{nn::adaptive_avg_pool2d(in.at("x"), sizes(a["output_size"]))};
       }},
      {"adaptive_max_pool2d",
       [](const json& a, const Tensors& in) {
         auto [out, indices] =
             nn::adaptive_max_pool2d_with_indices(in.at("x"), sizes(a["output_size"]));
         return LayerResult{out, indices};
       }},
      {"batch_norm",
       [](const json& a, const Tensors& in) {
         return LayerResult{nn::batch_norm(in.at("x"), maybe(in, "running_mean"),
                                           maybe(in, "running_var"), maybe(in, "w"), maybe(in, "b"),
                                           a["training"].get<bool>(), a["momentum"].get<double>(),
                                           a["eps"].get<double>())};
       }},
      {"group_norm",
       [](const json& a, const Tensors& in) {
         return LayerResult{nn::group_norm(in.at("x"), a["num_groups"].get<int64_t>(),
                                           maybe(in, "w"), maybe(in, "b"), a["eps"].get<double>())};
       }},
      {"instance_norm",
       [](const json& a, const Tensors& in) {
         return LayerResult{nn::instance_norm(in.at("x"), maybe(in, "running_mean"),
                                              maybe(in, "running_var"), maybe(in, "w"),
                                              maybe(in, "b"), a["use_input_stats"].get<bool>(),
                                              a["momentum"].get<double>(), a["eps"].get<double>())};
       }},
      {"layer_norm",
       [](const json& a, const Tensors& in) {
         return LayerResult{nn::layer_norm(in.at("x"), a["normalized_shape"].get<Shape>(),
                                           maybe(in, "w"), maybe(in, "b"), a["eps"].get<double>())};
       }},
  };
  return l;
}

enum class Family { Convolution, Pool, Norm };

Family family_of(const std::string& layer) {
  if (layer.rfind("conv", 0) == 0) return Family::Convolution;
  if (layer.find("pool") != std::string::npos) return Family::Pool;
  return Family::Norm;
}

double max_abs(const Tensor& t) {
  double m = 0;
  if (t.defined())
    for (double v : to_doubles(t)) m = std::max(m, std::fabs(v));
  return m;
}

// The largest |xhat| of a normalisation: its output itself without weight and bias, else
// (out - b) / w, the weight and bias indexed by channel (dim 1) or, for layer_norm, by the
// trailing elements they cover.
double max_normalised(const Config& c, const Tensor& w) {
  const std::vector<double> out = to_doubles(golden(c, "out"));
  if (!w.defined()) return max_abs(golden(c, "out"));
  const std::vector<double> wv = to_doubles(w), bv = to_doubles(golden(c, "b"));
  const Shape x = c.tensors["x"]["shape"].get<Shape>();
  int64_t inner = 1;
  for (size_t d = 2; d < x.size(); ++d) inner *= x[d];
  double m = 0;
  for (size_t i = 0; i < out.size(); ++i) {
    const size_t k = c.layer == "layer_norm" ? i % wv.size() : (i / inner) % wv.size();
    m = std::max(m, std::fabs((out[i] - bv[k]) / wv[k]));
  }
  return m;
}

// sqrt(K) * M of Note [Golden layer tolerances] for each tensor the configuration compares.
std::map<std::string, double> error_scales(const Config& c) {
  std::map<std::string, double> s;
  const Tensor x = golden(c, "x"), g = golden(c, "g");
  const double mx = max_abs(x), mg = max_abs(g);
  if (family_of(c.layer) == Family::Convolution) {
    const Tensor w = golden(c, "w");
    const double mw = max_abs(w), mb = has(c, "b") ? max_abs(golden(c, "b")) : 0;
    const bool transposed = c.layer == "conv_transpose2d";
    const int64_t groups = c.args["groups"].get<int64_t>();
    int64_t kernel = 1;
    for (int64_t d = 2; d < w.dim(); ++d) kernel *= w.shape()[d];
    // Terms per output (C / groups channels times the kernel), per input gradient (O / groups
    // times the kernel), per weight and bias gradient (every sample and position).
    const int64_t per_out = (transposed ? w.shape()[0] / groups : w.shape()[1]) * kernel + 1;
    const int64_t per_input = (transposed ? w.shape()[1] : w.shape()[0] / groups) * kernel;
    const Shape out = c.tensors["out"]["shape"].get<Shape>();
    const int64_t channels_out = transposed ? w.shape()[1] * groups : w.shape()[0];
    const int64_t out_positions = numel(out) / channels_out;
    const int64_t in_positions = x.numel() / (transposed ? w.shape()[0] : w.shape()[1] * groups);
    s["out"] = std::sqrt(double(per_out)) * std::max(mx * mw, mb);
    s["x_grad"] = std::sqrt(double(per_input)) * mg * mw;
    s["w_grad"] = std::sqrt(double(transposed ? in_positions : out_positions)) * mg * mx;
    s["b_grad"] = std::sqrt(double(out_positions)) * mg;
  } else if (family_of(c.layer) == Family::Pool) {
    // The largest window (adaptive windows span at most ceil(in / out) + 1 elements a dim); an
    // input element gets the gradients of at most that many windows too.
    int64_t window = 1;
    if (c.layer.rfind("adaptive", 0) == 0) {
      std::vector<int64_t> size = sizes(c.args["output_size"]);
      if (size.size() == 1) size.push_back(size[0]);
      for (size_t d = 0; d < 2; ++d) {
        const int64_t in = x.shape()[x.dim() - 2 + d];
        window *= (in + size[d] - 1) / size[d] + 1;
      }
    } else {
      for (int64_t k : sizes(c.args["kernel_size"])) window *= k;
      if (c.layer.find("2d") != std::string::npos && sizes(c.args["kernel_size"]).size() == 1)
        window *= window;
    }
    s["out"] = std::sqrt(double(window)) * mx;
    s["x_grad"] = std::sqrt(double(window)) * mg;
  } else {
    // out = xhat * w + b, each element from one normalised value; the weight and bias gradients
    // sum g * xhat and g over the K elements that share a weight; the running statistics mix
    // their old values with the mean and variance of x.
    const Tensor w = has(c, "w") ? golden(c, "w") : Tensor();
    const double mw = w.defined() ? max_abs(w) : 1, mb = has(c, "b") ? max_abs(golden(c, "b")) : 0;
    const double mxhat = max_normalised(c, w);
    const int64_t per_weight = w.defined() ? x.numel() / w.numel() : 1;
    s["out"] = mxhat * mw + mb;
    s["x_grad"] = max_abs(golden(c, "x_grad"));
    s["w_grad"] = std::sqrt(double(per_weight)) * mg * mxhat;
    s["b_grad"] = std::sqrt(double(per_weight)) * mg;
    if (has(c, "running_mean")) {
      s["running_mean_after"] = std::max(max_abs(golden(c, "running_mean")), mx);
      s["running_var_after"] = std::max(max_abs(golden(c, "running_var")), mx * mx);
    }
  }
  return s;
}

// u of Note [Golden layer tolerances].
double unit_roundoff(DType dtype) {
  switch (dtype) {
    case DType::Float16:
      return std::ldexp(1.0, -11);
    case DType::BFloat16:
      return std::ldexp(1.0, -8);
    case DType::Float32:
      return std::ldexp(1.0, -24);
    default:
      return std::ldexp(1.0, -53);
  }
}

// The largest error seen as a fraction of its bound, per device and dtype (printed at the end:
// how much room the bounds leave).
struct Margin {
  double ratio = 0;
  std::string where;
};

::testing::AssertionResult within(const std::vector<double>& actual,
                                  const std::vector<double>& expected, double bound, Margin& margin,
                                  const std::string& where) {
  if (actual.size() != expected.size())
    return ::testing::AssertionFailure()
           << "size " << actual.size() << " != expected " << expected.size();
  double worst = 0;
  size_t at = 0;
  for (size_t i = 0; i < actual.size(); ++i) {
    const double e = std::fabs(actual[i] - expected[i]);
    if (std::isnan(e)) {  // NaN is the worst error there is
      worst = e;
      at = i;
      break;
    }
    if (e > worst) {
      worst = e;
      at = i;
    }
  }
  if (bound > 0 && worst / bound > margin.ratio) margin = {worst / bound, where};
  if (worst <= bound) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "element " << at << ": " << actual[at] << " vs expected " << expected[at] << ", error "
         << worst << " > bound " << bound;
}

struct Run {
  Device device;
  DType dtype;
  Layout layout;
};

std::string run_name(const Run& r) {
  return std::string(r.device.is_cpu() ? "cpu" : "cuda") + " " + dtype_name(r.dtype) + " " +
         layout_name(r.layout);
}

// The configuration's inputs on the run's device, in its dtype; x (and a convolution's 4-D
// weight) in its layout. x, w and b require grad; the running statistics are buffers.
Tensors inputs_for(const Config& c, const Run& r) {
  Tensors in;
  for (const std::string name : {"x", "w", "b", "running_mean", "running_var"}) {
    if (!has(c, name)) continue;
    const Tensor host = to(golden(c, name), r.dtype);
    const bool laid_out = name == "x" || (name == "w" && host.dim() == 4);
    in[name] = laid_out ? in_layout_on(host, r.layout, r.device) : to(host, r.device);
    if (name == "x" || name == "w" || name == "b") in[name].requires_grad_();
  }
  return in;
}

void check_config(const Config& c, const Run& r, std::map<std::string, Margin>& margins) {
  SCOPED_TRACE(c.name + " (" + run_name(r) + ")");
  const Tensors in = inputs_for(c, r);
  const LayerResult result = layers().at(c.layer)(c.args, in);
  ASSERT_TRUE(result.out.defined());
  // The gradients as the layer's backward makes them (autograd::grad: a leaf's accumulated
  // .grad may be a copy in another format).
  std::vector<std::string> differentiated;
  autograd::TensorList leaves;
  for (const std::string name : {"x", "w", "b"})
    if (in.count(name)) {
      differentiated.push_back(name);
      leaves.push_back(in.at(name));
    }
  const autograd::TensorList grads =
      autograd::grad({result.out}, leaves, {to(to(golden(c, "g"), r.dtype), r.device)});
  std::map<std::string, Tensor> actual = {{"out", result.out}};
  for (size_t i = 0; i < differentiated.size(); ++i) actual[differentiated[i] + "_grad"] = grads[i];
  for (const std::string name : {"running_mean", "running_var"})
    if (in.count(name)) actual[name + "_after"] = in.at(name);
  // The output and the input gradient keep a channels-last input's format (layer_norm, like
  // PyTorch's, promises none).
  if (c.layer != "layer_norm") {
    EXPECT_TRUE(in_expected_format(result.out, r.layout)) << "output";
    EXPECT_TRUE(in_expected_format(actual.at("x_grad"), r.layout)) << "input gradient";
  }
  const bool exact_max = c.layer.find("max_pool") != std::string::npos;
  if (result.indices.defined() || has(c, "indices")) {
    ASSERT_TRUE(has(c, "indices") && result.indices.defined()) << "indices";
    EXPECT_EQ(values(result.indices), to_doubles(golden(c, "indices"))) << "indices";
  }
  const std::map<std::string, double> scales =
      r.dtype == DType::Float64 ? std::map<std::string, double>() : error_scales(c);
  const double c_factor = r.dtype == DType::Float32 && !r.device.is_cpu() ? 32 : 8;
  std::set<std::string> compared;
  for (const auto& [name, info] : c.tensors.items()) {
    const bool result_tensor = name == "out" || name.find("_grad") != std::string::npos ||
                               name.find("_after") != std::string::npos;
    if (!result_tensor) continue;
    compared.insert(name);
    const auto it = actual.find(name);
    ASSERT_TRUE(it != actual.end() && it->second.defined()) << name << " is missing";
    const std::vector<double> got = values(it->second), expected = to_doubles(golden(c, name));
    if (r.dtype == DType::Float64) {
      EXPECT_TRUE(all_close(got, expected, 1e-10)) << name;
    } else {
      const double bound =
          exact_max && name == "out" ? 0.0 : c_factor * unit_roundoff(r.dtype) * scales.at(name);
      Margin& margin = margins[std::string(dtype_name(r.dtype)) + " " + name];
      EXPECT_TRUE(within(got, expected, bound, margin, c.name)) << name;
    }
  }
  EXPECT_EQ(compared.size(), actual.size()) << "PyTorch wrote fewer results than rcuda made";
}

std::vector<Layout> layouts_for(const Config& c) {
  if (c.tensors["x"]["shape"].size() == 4) return {Layout::Contiguous, Layout::ChannelsLast};
  return {Layout::Contiguous};
}

// Every configuration of the family, in every dtype and layout, on `device`.
void check_family(Family family, Device device, const std::vector<DType>& dtypes) {
  const std::vector<Config> configs = load_manifest();
  std::map<std::string, int> per_layer;
  for (const Config& c : configs) {
    if (layers().count(c.layer) == 0) {
      ADD_FAILURE() << c.name << ": no layer " << c.layer;
      continue;
    }
    if (family_of(c.layer) != family) continue;
    ++per_layer[c.layer];
  }
  std::map<std::string, Margin> margins;  // by dtype and tensor
  for (const DType dtype : dtypes) {
    const auto start = std::chrono::steady_clock::now();
    int runs = 0;
    for (const Config& c : configs) {
      if (layers().count(c.layer) == 0 || family_of(c.layer) != family) continue;
      for (const Layout layout : layouts_for(c)) {
        check_config(c, {device, dtype, layout}, margins);
        ++runs;
      }
    }
    const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
    std::printf("[ golden ] %s: %d runs in %.2f s\n", dtype_name(dtype), runs, took.count());
  }
  EXPECT_FALSE(per_layer.empty()) << "the manifest has no configuration of this family";
  for (const auto& [layer, n] : per_layer)
    std::printf("[ golden ] %s: %d configurations\n", layer.c_str(), n);
  for (const auto& [what, m] : margins)
    std::printf("[ golden ] %s: largest error %.3g of its bound (%s)\n", what.c_str(), m.ratio,
                m.where.c_str());
}

// CUDA float32 convolutions without TF32 for the comparison, the setting restored after.
class ConvTf32Off {
 public:
  ConvTf32Off() : previous_(cuda::allow_conv_tf32()) { cuda::set_allow_conv_tf32(false); }
  ~ConvTf32Off() { cuda::set_allow_conv_tf32(previous_); }
  ConvTf32Off(const ConvTf32Off&) = delete;
  ConvTf32Off& operator=(const ConvTf32Off&) = delete;

 private:
  bool previous_;
};

const std::vector<DType> kCpuDtypes = {DType::Float64, DType::Float32, DType::Float16,
                                       DType::BFloat16};
const std::vector<DType> kCudaDtypes = {DType::Float32, DType::Float16, DType::BFloat16};

#define RCUDA_REQUIRE_GOLDEN() \
  if (golden_dir() == nullptr) GTEST_SKIP() << "RCUDA_GOLDEN_DIR is not set"

TEST(GoldenLayers, ConvolutionsMatchPyTorchOnTheCpu) {
  RCUDA_REQUIRE_GOLDEN();
  check_family(Family::Convolution, kCpu, kCpuDtypes);
}
TEST(GoldenLayers, PoolsMatchPyTorchOnTheCpu) {
  RCUDA_REQUIRE_GOLDEN();
  check_family(Family::Pool, kCpu, kCpuDtypes);
}
TEST(GoldenLayers, NormsMatchPyTorchOnTheCpu) {
  RCUDA_REQUIRE_GOLDEN();
  check_family(Family::Norm, kCpu, kCpuDtypes);
}
TEST(GoldenLayers, ConvolutionsMatchPyTorchOnCuda) {
  RCUDA_REQUIRE_GOLDEN();
  RCUDA_REQUIRE_CUDA();
  ConvTf32Off tf32_off;
  check_family(Family::Convolution, kCuda, kCudaDtypes);
}
TEST(GoldenLayers, PoolsMatchPyTorchOnCuda) {
  RCUDA_REQUIRE_GOLDEN();
  RCUDA_REQUIRE_CUDA();
  check_family(Family::Pool, kCuda, kCudaDtypes);
}
TEST(GoldenLayers, NormsMatchPyTorchOnCuda) {
  RCUDA_REQUIRE_GOLDEN();
  RCUDA_REQUIRE_CUDA();
  check_family(Family::Norm, kCuda, kCudaDtypes);
}

}  // namespace
}  // namespace rcuda::test
