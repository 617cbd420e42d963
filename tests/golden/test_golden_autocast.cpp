// Output dtypes under autocast against PyTorch's: tests/golden/make_golden_autocast.py runs a
// table of ops under torch.autocast for the CPU and CUDA in float16 and bfloat16 and writes the
// dtypes; the same ops run here under AutocastGuard. Ops PyTorch refuses (binary_cross_entropy
// on CUDA) must be refused here too. Skipped (reported as skipped) when RCUDA_GOLDEN_DIR is unset.
#include <cstdlib>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "rcuda/autograd/autocast.h"
#include "rcuda/backend/cuda.h"
#include "rcuda/nn/rnn.h"
#include "support/reference.h"

namespace rcuda::test {
namespace {

const char* golden_dir() { return std::getenv("RCUDA_GOLDEN_DIR"); }

using Op = std::function<Tensor()>;

// The generator's table, op for op, on `device` with `low` as the autocast dtype.
std::map<std::string, Op> table(Device device, DType low) {
  const auto t = [device](Shape s) { return to(random_tensor(s, DType::Float32), device); };
  const Tensor x = t({4, 8}), w = t({6, 8}), b = t({6}), img = t({2, 3, 8, 8}),
               cw = t({4, 3, 3, 3});
  const Tensor cls = to(random_tensor({4}, DType::Int64, 0, 7), device);
  const Tensor p = to(random_tensor({4, 8}, DType::Float32, 0.05, 0.95), device);
  const Tensor xh = to(x, low), ph = to(p, low);
  const Tensor seq = x.unsqueeze(1);  // [T 4, N 1, 8]
  const auto layer = [t](int gates) {
    return std::vector<Tensor>{t({gates * 5, 8}), t({gates * 5, 5}), t({gates * 5}),
                               t({gates * 5})};
  };
  const auto recurrent = [=](Backend::RnnMode mode, int gates) {
    nn::RnnOptions o;
    o.mode = mode;
    return [=] { return nn::rnn(seq, Tensor(), Tensor(), layer(gates), o).output; };
  };
  return {
      {"linear", [=] { return nn::linear(x, w, b); }},
      {"matmul", [=] { return matmul(x, w.t()); }},
      {"mm", [=] { return mm(x, w.t()); }},
      {"bmm", [=] { return bmm(x.unsqueeze(0), w.t().unsqueeze(0)); }},
      {"addmm", [=] { return addmm(b, x, w.t()); }},
      {"conv1d",
       [=] {
         return nn::conv1d(x.unsqueeze(0), t({2, 4, 3}));
       }},
      {"conv2d", [=] { return nn::conv2d(img, cw); }},
      {"conv_transpose2d",
       [=] {
         return nn::conv_transpose2d(img, t({3, 2, 3, 3}));
       }},
      {"lstm", recurrent(Backend::RnnMode::Lstm, 4)},
      {"gru", recurrent(Backend::RnnMode::Gru, 3)},
      {"rnn", recurrent(Backend::RnnMode::RnnTanh, 1)},
      {"softmax", [=] { return softmax(xh, 1); }},
      {"log_softmax", [=] { return log_softmax(xh, 1); }},
      {"exp", [=] { return exp(xh); }},
      {"expm1", [=] { return expm1(xh); }},
      {"log", [=] { return log(abs(xh)); }},
      {"log1p", [=] { return log1p(abs(xh)); }},
      {"rsqrt", [=] { return rsqrt(abs(xh)); }},
      {"pow", [=] { return pow(xh, 2); }},
      {"softplus", [=] { return nn::softplus(xh); }},
      {"sum", [=] { return sum(xh); }},
      {"prod", [=] { return prod(xh); }},
      {"cumsum", [=] { return cumsum(xh, 1); }},
      {"norm", [=] { return norm(xh); }},
      {"mean", [=] { return mean(xh); }},
      {"layer_norm", [=] { return nn::layer_norm(xh, {8}); }},
      {"group_norm",
       [=] {
         return nn::group_norm(reshape(xh, {4, 8, 1}), 2);
       }},
      {"batch_norm",
       [=] { return nn::batch_norm(xh, Tensor(), Tensor(), Tensor(), Tensor(), true); }},
      {"mse_loss", [=] { return nn::mse_loss(xh, ph); }},
      {"l1_loss", [=] { return nn::l1_loss(xh, ph); }},
      {"smooth_l1_loss", [=] { return nn::smooth_l1_loss(xh, ph); }},
      {"huber_loss", [=] { return nn::huber_loss(xh, ph); }},
      {"nll_loss", [=] { return nn::nll_loss(xh, cls); }},
      {"cross_entropy", [=] { return nn::cross_entropy(xh, cls); }},
      {"kl_div", [=] { return nn::kl_div(xh, ph, "batchmean"); }},
      {"binary_cross_entropy_with_logits",
       [=] { return nn::binary_cross_entropy_with_logits(xh, ph); }},
      {"binary_cross_entropy", [=] { return nn::binary_cross_entropy(nn::sigmoid(xh), ph); }},
      {"relu", [=] { return nn::relu(xh); }},
      {"tanh", [=] { return nn::tanh(xh); }},
      {"gelu", [=] { return nn::gelu(xh); }},
      {"max_pool2d", [=] { return nn::max_pool2d(to(img, low), {2}); }},
      {"add_mixed", [=] { return add(xh, x); }},
      {"linear_float64", [=] { return nn::linear(to(x, DType::Float64), to(w, DType::Float64)); }},
  };
}

void check_device(const nlohmann::json& golden, Device device) {
  for (DType low : {DType::Float16, DType::BFloat16}) {
    const nlohmann::json& want = golden.at(dtype_name(low));
    const std::map<std::string, Op> ops = table(device, low);
    ASSERT_EQ(ops.size(), want.size()) << "the generator's table and this one differ";
    const AutocastGuard autocast(device.type, low);
    for (const auto& [op, f] : ops) {
      const std::string expected = want.at(op);
      SCOPED_TRACE(op + " under " + dtype_name(low) + " autocast on " + device.str());
      if (expected.rfind("error", 0) == 0) {
        // PyTorch refuses binary_cross_entropy on CUDA; its CPU oneDNN LSTM has no float16.
        if (op == "binary_cross_entropy") {
          EXPECT_THROW(f(), ValueError);
        }
        continue;
      }
      EXPECT_EQ(dtype_name(f().dtype()), expected);
    }
  }
}

nlohmann::json load() {
  std::ifstream in(std::string(golden_dir()) + "/autocast.json");
  EXPECT_TRUE(in.good()) << "cannot read autocast.json (tests/golden/make_golden_autocast.py)";
  return in.good() ? nlohmann::json::parse(in) : nlohmann::json::object();
}

TEST(GoldenAutocast, OutputDtypesMatchPyTorchOnTheCpu) {
  if (golden_dir() == nullptr) GTEST_SKIP() << "RCUDA_GOLDEN_DIR is not set";
  check_device(load().at("cpu"), Device(DeviceType::CPU));
}

TEST(GoldenAutocast, OutputDtypesMatchPyTorchOnCuda) {
  if (golden_dir() == nullptr) GTEST_SKIP() << "RCUDA_GOLDEN_DIR is not set";
  if (cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device: " << cuda::unavailable_reason();
  const nlohmann::json golden = load();
  ASSERT_TRUE(golden.contains("cuda")) << "the generator ran without a GPU";
  check_device(golden.at("cuda"), Device(DeviceType::CUDA, 0));
}

}  // namespace
}  // namespace rcuda::test
