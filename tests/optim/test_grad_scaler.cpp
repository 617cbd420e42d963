// GradScaler (rcuda/amp/grad_scaler.h): the unscaled gradients equal those of the unscaled
// loss; a step with inf or NaN is skipped and the scale backs off; the scale grows after
// growth_interval clean steps (torch.amp.GradScaler's documented rule, written out here as a
// plain loop); the fused unscale primitive against double loops for every floating dtype, with
// strided gradients; misuse and bad options refused with the call named; state_dict round trip;
// a disabled scaler passes everything through. tests/golden/test_golden_scaler.cpp replays a run
// of PyTorch's scaler, and tests/cuda the primitive on the GPU.
#include <cmath>
#include <limits>

#include "rcuda/amp/grad_scaler.h"
#include "rcuda/optim/sgd.h"
#include "support/devices.h"

namespace rcuda::test {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

Tensor parameter(const Shape& shape, DType dtype = DType::Float32) {
  Tensor p = random_tensor(shape, dtype);
  p.requires_grad_();
  return p;
}

optim::SGD sgd(const std::vector<Tensor>& params, double lr = 0.1) {
  optim::SGDOptions o;
  o.lr = lr;
  return optim::SGD(params, o);
}

TEST(GradScaler, UnscaledGradientsEqualThoseOfTheUnscaledLoss) {
  const Tensor w = parameter({4, 3}), b = parameter({4});
  const Tensor x = random_tensor({6, 3}, DType::Float32);
  const auto loss_of = [&] { return mean(mul(nn::linear(x, w, b), nn::linear(x, w, b))); };
  autograd::backward(loss_of());
  const std::vector<double> want_w = to_doubles(w.grad()), want_b = to_doubles(b.grad());
  w.set_grad(Tensor());
  b.set_grad(Tensor());

  optim::SGD opt = sgd({w, b});
  amp::GradScalerOptions o;
  o.init_scale = 1024;
  amp::GradScaler scaler(o);
  const Tensor loss = loss_of();
  const Tensor scaled = scaler.scale(loss);
  EXPECT_EQ(item(scaled).to_double(), item(loss).to_double() * 1024);
  autograd::backward(scaled);
  scaler.unscale_(opt);
  // A power-of-two scale makes scaling and unscaling exact.
  EXPECT_EQ(to_doubles(w.grad()), want_w);
  EXPECT_EQ(to_doubles(b.grad()), want_b);
}

TEST(GradScaler, SkipsStepsWithInfOrNanAndFollowsTheScaleRule) {
  const Tensor w = parameter({5});
  optim::SGD opt = sgd({w});
  amp::GradScalerOptions o;
  o.init_scale = 8;
  o.growth_interval = 2;
  amp::GradScaler scaler(o);
  // Steps 2 and 5 carry inf, step 3 NaN.
  const std::vector<double> bad = {0, 0, kInf, std::nan(""), 0, kInf, 0, 0, 0};
  double scale = 8;  // the rule, as torch documents it
  int64_t clean = 0;
  for (size_t k = 0; k < bad.size(); ++k) {
    std::vector<double> c = to_doubles(random_tensor({5}, DType::Float64));
    if (bad[k] != 0) c[1] = bad[k];
    const Tensor coefficients = to(from_data(c.data(), {5}, DType::Float64), DType::Float32);
    opt.zero_grad();
    const std::vector<double> before = to_doubles(w);
    autograd::backward(scaler.scale(sum(mul(w, coefficients))));
    const bool stepped = scaler.step(opt);
    scaler.update();
    EXPECT_EQ(stepped, bad[k] == 0) << "step " << k;
    if (stepped) {
      std::vector<double> want = before;
      for (int i = 0; i < 5; ++i) want[i] -= 0.1 * static_cast<float>(c[i]);
      EXPECT_TRUE(all_close(to_doubles(w), want, 1e-6)) << "step " << k;
    } else {
      EXPECT_EQ(to_doubles(w), before) << "step " << k;
    }
    if (bad[k] != 0) {
      scale *= 0.5;
      clean = 0;
    } else if (++clean == 2) {
      scale *= 2;
      clean = 0;
    }
    EXPECT_EQ(scaler.get_scale(), scale) << "step " << k;
    EXPECT_EQ(scaler.growth_tracker(), clean) << "step " << k;
  }
  scaler.update(3.0);  // an explicit scale
  EXPECT_EQ(scaler.get_scale(), 3.0);
}

TEST(GradScaler, UnscaleMatchesDoubleLoopsForEveryDtypeAndLayout) {
  for (DType dtype : {DType::Float32, DType::Float64, DType::BFloat16}) {
    for (bool strided : {false, true}) {
      SCOPED_TRACE(std::string(dtype_name(dtype)) + (strided ? " strided" : ""));
      const Tensor p = parameter({6, 4}, dtype), q = parameter({0}, dtype);
      optim::SGD opt = sgd({p, q});
      amp::GradScalerOptions o;
      o.init_scale = 3;  // not a power of two: unscaling rounds
      amp::GradScaler scaler(o);
      scaler.scale(sum(p));  // makes the scale
      const Tensor g = random_tensor({4, 6}, dtype, -50, 50);
      p.set_grad(strided ? g.t() : contiguous(g.t()));
      const std::vector<double> raw = to_doubles(p.grad());
      scaler.unscale_(opt);
      std::vector<double> want(raw.size());
      const double inv = static_cast<float>(1.0 / 3);
      for (size_t i = 0; i < raw.size(); ++i) want[i] = raw[i] * inv;
      EXPECT_TRUE(all_close(to_doubles(p.grad()), want, backend_tolerance(dtype)));
      EXPECT_TRUE(scaler.step(opt));
    }
  }
}

TEST(GradScaler, MisuseAndBadOptionsAreRefused) {
  const Tensor w = parameter({3});
  optim::SGD opt = sgd({w});
  amp::GradScaler scaler;
  EXPECT_NE(error_message([&] { scaler.unscale_(opt); }).find("no scale yet"), std::string::npos);
  autograd::backward(scaler.scale(sum(w)));
  EXPECT_NE(error_message([&] { scaler.update(); })
                .find("GradScaler.update: no gradients were "
                      "unscaled"),
            std::string::npos);
  scaler.unscale_(opt);
  EXPECT_NE(error_message([&] { scaler.unscale_(opt); }).find("already called"), std::string::npos);
  scaler.step(opt);
  EXPECT_NE(error_message([&] { scaler.step(opt); }).find("GradScaler.step: already called"),
            std::string::npos);
  scaler.update();
  EXPECT_NE(error_message([&] { scaler.update(-1.0); }).find("new_scale must be positive"),
            std::string::npos);
  // Float16 gradients, as torch's.
  const Tensor h = parameter({3}, DType::Float16);
  optim::SGD half_opt = sgd({h});
  autograd::backward(scaler.scale(sum(h)));
  EXPECT_NE(error_message([&] { scaler.unscale_(half_opt); }).find("float16 gradients"),
            std::string::npos);
  const auto bad = [](auto set) {
    amp::GradScalerOptions o;
    set(o);
    return error_message([&] { amp::GradScaler s(o); });
  };
  EXPECT_NE(bad([](auto& o) { o.init_scale = 0; }).find("init_scale must be positive"),
            std::string::npos);
  EXPECT_NE(bad([](auto& o) { o.growth_factor = 1; }).find("growth_factor must be greater than 1"),
            std::string::npos);
  EXPECT_NE(bad([](auto& o) { o.backoff_factor = 1; }).find("backoff_factor must be in (0, 1)"),
            std::string::npos);
  EXPECT_NE(bad([](auto& o) { o.growth_interval = 0; }).find("growth_interval must be at least 1"),
            std::string::npos);
}

TEST(GradScaler, StateDictRoundTripAndDisabledScaler) {
  const Tensor w = parameter({2});
  optim::SGD opt = sgd({w});
  amp::GradScalerOptions o;
  o.init_scale = 64;
  o.growth_interval = 5;
  amp::GradScaler scaler(o);
  for (int k = 0; k < 3; ++k) {
    opt.zero_grad();
    autograd::backward(scaler.scale(sum(w)));
    scaler.step(opt);
    scaler.update();
  }
  const amp::GradScalerState saved = scaler.state_dict();
  EXPECT_EQ(saved.scale, 64);
  EXPECT_EQ(saved.growth_tracker, 3);
  amp::GradScaler restored;
  restored.load_state_dict(saved);
  EXPECT_EQ(restored.get_scale(), 64);
  EXPECT_EQ(restored.growth_tracker(), 3);
  EXPECT_EQ(restored.options().growth_interval, 5);
  amp::GradScalerState broken = saved;
  broken.growth_tracker = 5;
  EXPECT_NE(error_message([&] { restored.load_state_dict(broken); }).find("growth_tracker"),
            std::string::npos);

  amp::GradScalerOptions off;
  off.enabled = false;
  amp::GradScaler disabled(off);
  const Tensor loss = sum(w);
  EXPECT_TRUE(disabled.scale(loss).is_same(loss));
  opt.zero_grad();
  autograd::backward(loss);
  const std::vector<double> before = to_doubles(w);
  EXPECT_TRUE(disabled.step(opt));
  EXPECT_NE(to_doubles(w), before);
  EXPECT_EQ(disabled.get_scale(), 1.0);
}

TEST(CudaGradScaler, UnscaleMatchesTheCpuForManyTensorsOfMixedDtypes) {
  RCUDA_REQUIRE_CUDA();
  // More tensors than one multi-tensor launch holds, of three dtypes, one of them with inf.
  std::vector<Tensor> cpu, gpu;
  for (int i = 0; i < 130; ++i) {
    const DType dtype = i % 3 == 0 ? DType::Float32 : i % 3 == 1 ? DType::BFloat16 : DType::Float64;
    Tensor p = random_tensor({i % 7 == 0 ? 0 : 1 + i * 37 % 5000}, dtype);
    p.requires_grad_();
    p.set_grad(random_tensor(p.shape(), dtype, -100, 100));
    cpu.push_back(p);
    Tensor q = autograd::detach(on_cuda(p));
    q.requires_grad_();
    q.set_grad(on_cuda(p.grad()));
    gpu.push_back(q);
  }
  for (bool with_inf : {false, true}) {
    SCOPED_TRACE(with_inf ? "with inf" : "finite");
    if (with_inf) {
      fill_(cpu[101].grad().slice(0, 3, 4), kInf);
      fill_(gpu[101].grad().slice(0, 3, 4), kInf);
    }
    optim::SGD cpu_opt = sgd(cpu), gpu_opt = sgd(gpu);
    amp::GradScaler cpu_scaler, gpu_scaler;
    cpu_scaler.scale(sum(cpu[1]));
    gpu_scaler.scale(sum(gpu[1]));
    cpu_scaler.unscale_(cpu_opt);
    gpu_scaler.unscale_(gpu_opt);
    for (size_t i = 0; i < cpu.size(); ++i)
      EXPECT_TRUE(all_close(values(gpu[i].grad()), values(cpu[i].grad()), 0)) << i;
    EXPECT_EQ(gpu_scaler.step(gpu_opt), !with_inf);
    EXPECT_EQ(cpu_scaler.step(cpu_opt), !with_inf);
  }
}

}  // namespace
}  // namespace rcuda::test
