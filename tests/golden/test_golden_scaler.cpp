// A run of PyTorch's GradScaler replayed (tests/golden/make_golden_scaler.py): SGD on
// sum(w * c_k) for twelve rows c_k, three with inf or NaN; after each step the scale, whether the
// optimizer stepped and the parameter must be PyTorch's. Skipped (reported as skipped) when
// RCUDA_GOLDEN_DIR is unset.
#include <cstdlib>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>

#include "rcuda/amp/grad_scaler.h"
#include "rcuda/optim/sgd.h"
#include "support/devices.h"

namespace rcuda::test {
namespace {

double number(const nlohmann::json& v) {
  if (!v.is_string()) return v.get<double>();
  return v.get<std::string>() == "nan" ? std::numeric_limits<double>::quiet_NaN()
                                       : std::numeric_limits<double>::infinity();
}

Tensor float32_of(const nlohmann::json& row, Device device) {
  std::vector<double> v;
  for (const auto& x : row) v.push_back(number(x));
  return to(from_data(v.data(), {static_cast<int64_t>(v.size())}, DType::Float64), device,
            DType::Float32);
}

void replay(Device device) {
  const char* dir = std::getenv("RCUDA_GOLDEN_DIR");
  if (dir == nullptr) GTEST_SKIP() << "RCUDA_GOLDEN_DIR is not set";
  std::ifstream in(std::string(dir) + "/scaler.json");
  ASSERT_TRUE(in.good()) << "cannot read scaler.json (tests/golden/make_golden_scaler.py)";
  const nlohmann::json run = nlohmann::json::parse(in);
  Tensor w = float32_of(run.at("w0"), device);
  w.requires_grad_();
  optim::SGDOptions sgd;
  sgd.lr = 0.1;
  optim::SGD opt({w}, sgd);
  amp::GradScalerOptions o;
  o.init_scale = 16;
  o.growth_interval = 3;
  amp::GradScaler scaler(o);
  for (size_t k = 0; k < run.at("rows").size(); ++k) {
    SCOPED_TRACE("step " + std::to_string(k));
    opt.zero_grad();
    autograd::backward(scaler.scale(sum(mul(w, float32_of(run.at("rows")[k], device)))));
    EXPECT_EQ(scaler.step(opt), run.at("stepped")[k].get<bool>());
    scaler.update();
    EXPECT_EQ(scaler.get_scale(), run.at("scales")[k].get<double>());
    EXPECT_TRUE(all_close(values(w), values(float32_of(run.at("w")[k], Device())), 1e-6));
  }
}

TEST(GoldenScaler, ReplaysPyTorchsScalerOnTheCpu) { replay(Device(DeviceType::CPU)); }

TEST(GoldenScaler, ReplaysPyTorchsScalerOnCuda) {
  RCUDA_REQUIRE_CUDA();
  replay(Device(DeviceType::CUDA, 0));
}

}  // namespace
}  // namespace rcuda::test
