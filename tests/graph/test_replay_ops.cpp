// Replay of each op family a graph holds beyond the elementwise, view and layer ops of
// test_trace.cpp: a function using the family is traced once and its graph, run on fresh
// inputs (another batch size too where the ops allow), equals the function bitwise on the CPU,
// in float64 and float32.
#include <gtest/gtest.h>

#include <functional>

#include "rcuda/autograd/linalg_factor.h"
#include "rcuda/graph/graph.h"
#include "rcuda/nn/fp8_linear.h"
#include "rcuda/nn/functional.h"
#include "rcuda/rcuda.h"
#include "support/reference.h"

namespace rcuda::test {
namespace {

using graph::Graph;
using Inputs = std::vector<Tensor>;

bool bitwise_equal(const Tensor& a, const Tensor& b) {
  if (a.shape() != b.shape() || a.dtype() != b.dtype()) return false;
  const std::vector<double> x = to_doubles(a), y = to_doubles(b);
  for (size_t i = 0; i < x.size(); ++i)
    if (!(x[i] == y[i] || (std::isnan(x[i]) && std::isnan(y[i])))) return false;
  return true;
}

// Traces f on make(batches[0]), then for each batch size runs the graph and f on fresh inputs
// from make and compares every output bitwise. Returns the graph for checks on its nodes.
Graph expect_replay_equals_function(const graph::TracedFunction& f,
                                    const std::function<Inputs(int64_t)>& make,
                                    const std::vector<int64_t>& batches,
                                    const graph::NamedTensors& parameters = {}) {
  const Graph g = graph::trace(f, make(batches.at(0)), parameters);
  for (int64_t batch : batches) {
    const Inputs fresh = make(batch);
    const Inputs expected = f(fresh), replayed = g.run(fresh);
    EXPECT_EQ(replayed.size(), expected.size());
    for (size_t i = 0; i < expected.size() && i < replayed.size(); ++i)
      EXPECT_TRUE(bitwise_equal(replayed[i], expected[i]))
          << "batch " << batch << ", output " << i << " of " << dtype_name(expected[i].dtype())
          << "\n"
          << g.to_string();
  }
  return g;
}

bool has_op(const Graph& g, OpId op) {
  for (const graph::Node& n : g.nodes)
    if (n.op == op) return true;
  return false;
}

const std::vector<DType> kDtypes = {DType::Float64, DType::Float32};

TEST(ReplayOps, SortingAndCumulative) {
  for (DType dt : kDtypes) {
    const auto f = [dt](const Inputs& in) {
      const Tensor& t = in[0];                                // [B, 5, 6]
      const Tensor q = tensor_of({0.1, 0.5, 0.85}, {3}, dt);  // a constant of the graph
      const Tensor q0 = tensor_of({0.3}, {}, dt);
      const Tensor coarse = round(mul(t, 2.0));  // repeated values for mode
      auto [sorted, order] = sort(t, -1);
      auto [sorted_desc, order_desc] = sort(t, 1, /*descending=*/true, /*stable=*/true);
      auto [top, top_at] = topk(t, 3, 2);
      auto [low, low_at] = topk(t, 2, 1, /*largest=*/false, /*sorted=*/false);
      auto [kth, kth_at] = kthvalue(t, 2, 1, /*keepdim=*/true);
      auto [med, med_at] = median(t, 2, false);
      auto [common, common_at] = mode(coarse, 2, true);
      auto [run_max, run_max_at] = cummax(t, 1);
      auto [run_min, run_min_at] = cummin(t, 2);
      // Both outputs of sort feed later ops.
      return Inputs{add(sorted, to(order, dt)),
                    gather(t, 1, order_desc),
                    sorted_desc,
                    sub(top, to(top_at, dt)),
                    low,
                    low_at,
                    kth,
                    kth_at,
                    median(t),
                    med,
                    med_at,
                    common,
                    common_at,
                    run_max,
                    run_max_at,
                    run_min,
                    run_min_at,
                    logcumsumexp(t, 2),
                    argsort(t, 2, /*descending=*/true, /*stable=*/true),
                    quantile(t, q, 2, /*keepdim=*/true, "linear"),
                    quantile(t, q, std::nullopt, false, "midpoint"),
                    quantile(t, q0, 1, false, "nearest")};
    };
    const Graph g = expect_replay_equals_function(f,
                                                  [dt](int64_t b) {
                                                    return Inputs{random_tensor({b, 5, 6}, dt)};
                                                  },
                                                  {3, 5});
    for (OpId op : {OpId::Sort, OpId::Topk, OpId::Kthvalue, OpId::Median, OpId::Mode, OpId::Cummax,
                    OpId::Cummin, OpId::Logcumsumexp, OpId::Argsort, OpId::Quantile})
      EXPECT_TRUE(has_op(g, op)) << op_name(op);
  }
}

TEST(ReplayOps, Linalg) {
  for (DType dt : kDtypes) {
    const auto f = [dt](const Inputs& in) {
      const Tensor& x = in[0];  // [B, 4, 4]
      const Tensor& b = in[1];  // [B, 4, 2]
      const Tensor shift = tensor_of({4, 0, 0, 0, 0, 4, 0, 0, 0, 0, 4, 0, 0, 0, 0, 4}, {4, 4}, dt);
      const Tensor spd = add(matmul(x, x.transpose(-1, -2)), shift);
      const SlogdetResult sd = linalg_slogdet(x);
      const QrResult qr = linalg_qr(x);
      const QrResult qr_complete = linalg_qr(x, "complete");
      const QrResult r_only = linalg_qr(x, "r");
      const SvdResult svd = linalg_svd(x, /*full_matrices=*/false);
      const EighResult eigh = linalg_eigh(spd, "U");
      Tolerances tol;
      tol.atol = 1e-3;
      tol.rtol = 1e-2;
      return Inputs{linalg_solve(spd, b),
                    linalg_inv(spd),
                    linalg_det(x),
                    sd.sign,
                    sd.logabsdet,
                    linalg_cholesky(spd),
                    linalg_cholesky(spd, /*upper=*/true),
                    qr.Q,
                    qr.R,
                    qr_complete.Q,
                    r_only.R,
                    svd.U,
                    svd.S,
                    svd.Vh,
                    linalg_svdvals(x),
                    eigh.eigenvalues,
                    eigh.eigenvectors,
                    linalg_eigvalsh(spd),
                    linalg_tensorinv(in[2], 1),
                    linalg_tensorsolve(in[3], in[4]),
                    linalg_tensorsolve(in[3].permute({2, 0, 1}), in[4], std::vector<int64_t>{0}),
                    linalg_pinv(x),
                    linalg_pinv(spd, tol, /*hermitian=*/true),
                    linalg_cond(x),
                    linalg_cond(spd, -2)};
    };
    const auto make = [dt](int64_t batch) {
      return Inputs{random_tensor({batch, 4, 4}, dt), random_tensor({batch, 4, 2}, dt),
                    add(random_tensor({4, 2, 2}, dt),
                        tensor_of({3, 0, 0, 0, 0, 3, 0, 0, 0, 0, 3, 0, 0, 0, 0, 3}, {4, 2, 2}, dt)),
                    add(random_tensor({2, 2, 4}, dt),
                        tensor_of({3, 0, 0, 0, 0, 3, 0, 0, 0, 0, 3, 0, 0, 0, 0, 3}, {2, 2, 4}, dt)),
                    random_tensor({2, 2}, dt)};
    };
    const Graph g = expect_replay_equals_function(f, make, {3, 2});
    for (OpId op : {OpId::LinalgSolve, OpId::LinalgInv, OpId::LinalgDet, OpId::LinalgSlogdet,
                    OpId::LinalgCholesky, OpId::LinalgQr, OpId::LinalgSvd, OpId::LinalgSvdvals,
                    OpId::LinalgEigh, OpId::LinalgEigvalsh, OpId::LinalgTensorinv,
                    OpId::LinalgTensorsolve, OpId::LinalgPinv, OpId::LinalgCond})
      EXPECT_TRUE(has_op(g, op)) << op_name(op);
  }
}

TEST(ReplayOps, ScatterIndexPutAndDataDependentShapes) {
  for (DType dt : kDtypes) {
    const auto f = [dt](const Inputs& in) {
      const Tensor& x = in[0];    // [B, 6]
      const Tensor& idx = in[1];  // int64 [B, 3], values in [0, 6)
      const Tensor src = mul(x.slice(1, 0, 3, 1), 2.0);
      // index_put_ writes a copy, not the caller's input: constants made here, and an index
      // taken from an input.
      Tensor h = clone(x);
      const Tensor cols = tensor_of({0, 2}, {2}, DType::Int64);
      index_put_(h, {std::nullopt, cols}, x.slice(1, 3, 5, 1));
      index_put_(h, {std::nullopt, idx.select(0, 0)}, src, /*accumulate=*/true);
      index_put_(h, {tensor_of({1, 0}, {2}, DType::Int64), tensor_of({5, 1}, {2}, DType::Int64)},
                 tensor_of({7.5}, {}, dt));
      const Tensor counts = to(gt(x, Scalar(0)), DType::Int64);
      return Inputs{scatter(x, 1, idx, src),
                    scatter(x, 1, idx, Scalar(1.5)),
                    scatter(counts, 1, idx, Scalar(int64_t{7})),
                    scatter_add(x, 1, idx, src),
                    h,
                    masked_select(x, gt(x, Scalar(0))),
                    nonzero(gt(x, Scalar(0.5))),
                    one_hot(idx, 6),
                    one_hot(idx)};
    };
    const auto make = [dt](int64_t batch) {
      return Inputs{random_tensor({batch, 6}, dt), random_tensor({batch, 3}, DType::Int64, 0, 6)};
    };
    const Graph g = expect_replay_equals_function(f, make, {3, 6});
    for (OpId op : {OpId::Scatter, OpId::ScatterAdd, OpId::IndexPut, OpId::MaskedSelect,
                    OpId::Nonzero, OpId::OneHot})
      EXPECT_TRUE(has_op(g, op)) << op_name(op);
  }
}

// Per layer and direction: w_ih [G * H, I_l], w_hh [G * H, H], b_ih, b_hh [G * H].
graph::NamedTensors rnn_weights(int64_t gates, int64_t input, int64_t hidden, int64_t layers,
                                int64_t directions, DType dt) {
  graph::NamedTensors w;
  for (int64_t l = 0; l < layers; ++l)
    for (int64_t d = 0; d < directions; ++d) {
      const std::string suffix = "_l" + std::to_string(l) + (d ? "_reverse" : "");
      const int64_t in = l == 0 ? input : directions * hidden;
      w.emplace_back("weight_ih" + suffix, random_tensor({gates * hidden, in}, dt, -0.5, 0.5));
      w.emplace_back("weight_hh" + suffix, random_tensor({gates * hidden, hidden}, dt, -0.5, 0.5));
      w.emplace_back("bias_ih" + suffix, random_tensor({gates * hidden}, dt, -0.5, 0.5));
      w.emplace_back("bias_hh" + suffix, random_tensor({gates * hidden}, dt, -0.5, 0.5));
    }
  return w;
}

std::vector<Tensor> tensors_of(const graph::NamedTensors& named) {
  std::vector<Tensor> out;
  for (const auto& [name, t] : named) out.push_back(t);
  return out;
}

TEST(ReplayOps, LstmWithStatesTwoLayersBidirectional) {
  for (DType dt : kDtypes) {
    const graph::NamedTensors params = rnn_weights(4, 3, 5, 2, 2, dt);
    const std::vector<Tensor> w = tensors_of(params);
    nn::RnnOptions o;
    o.num_layers = 2;
    o.bidirectional = true;
    o.training = false;
    const auto f = [&](const Inputs& in) {
      const nn::RnnResult r = nn::lstm(in[0], in[1], in[2], w, o);
      return Inputs{r.output, r.h_n, r.c_n};
    };
    const auto make = [dt](int64_t batch) {
      return Inputs{random_tensor({6, batch, 3}, dt), random_tensor({4, batch, 5}, dt),
                    random_tensor({4, batch, 5}, dt)};
    };
    const Graph g = expect_replay_equals_function(f, make, {2, 4}, params);
    ASSERT_EQ(g.nodes.size(), 1u);
    EXPECT_EQ(g.nodes[0].op, OpId::Lstm);
    EXPECT_EQ(g.nodes[0].outputs.size(), 3u);
    EXPECT_EQ(g.values[g.nodes[0].inputs[3]].kind, graph::ValueKind::Parameter);
  }
}

TEST(ReplayOps, GruBatchFirstAndRnnBelowNn) {
  for (DType dt : kDtypes) {
    const graph::NamedTensors gru_params = rnn_weights(3, 3, 4, 1, 1, dt);
    const graph::NamedTensors rnn_params = rnn_weights(1, 4, 2, 1, 1, dt);
    graph::NamedTensors params = gru_params;
    for (const auto& p : rnn_params) params.emplace_back("rnn." + p.first, p.second);
    const std::vector<Tensor> gru_w = tensors_of(gru_params), rnn_w = tensors_of(rnn_params);
    nn::RnnOptions o;
    o.batch_first = true;
    const auto f = [&](const Inputs& in) {
      const nn::RnnResult r = nn::gru(in[0], Tensor(), gru_w, o);
      ops::RnnParams p;
      p.mode = ops::RnnMode::RnnRelu;
      p.batch_first = true;
      const ops::RnnOutputs s = rcuda::rnn(r.output, Tensor(), Tensor(), rnn_w, p);
      return Inputs{r.output, r.h_n, s.output, s.h_n};
    };
    const auto make = [dt](int64_t batch) { return Inputs{random_tensor({batch, 5, 3}, dt)}; };
    const Graph g = expect_replay_equals_function(f, make, {3, 1}, params);
    ASSERT_EQ(g.nodes.size(), 2u);
    EXPECT_EQ(g.nodes[0].op, OpId::Gru);
    EXPECT_EQ(g.nodes[0].outputs.size(), 2u);
    EXPECT_EQ(g.nodes[1].op, OpId::Rnn);
  }
}

TEST(ReplayOps, LossesWithTheirOptions) {
  for (DType dt : kDtypes) {
    const auto f = [dt](const Inputs& in) {
      const Tensor& x = in[0];    // [B, 5]
      const Tensor& t = in[1];    // [B, 5]
      const Tensor& cls = in[2];  // int64 [B], values in [0, 5)
      const Tensor weight = tensor_of({0.5, 1, 2, 1.5, 0.25}, {5}, dt);
      const Tensor pos_weight = tensor_of({2, 1, 0.5, 3, 1}, {5}, dt);
      nn::NllLossOptions nll;
      nll.weight = weight;
      nll.ignore_index = 2;
      nll.reduction = "sum";
      nn::CrossEntropyOptions ce;
      ce.weight = weight;
      ce.ignore_index = 1;
      ce.label_smoothing = 0.1;
      nn::CrossEntropyOptions soft;
      soft.reduction = "sum";
      soft.label_smoothing = 0.2;
      return Inputs{nn::mse_loss(x, t, "none"),
                    nn::mse_loss(x, t),
                    nn::l1_loss(x, t, "sum"),
                    nn::smooth_l1_loss(x, t, "mean", 0.5),
                    nn::huber_loss(x, t, "sum", 0.7),
                    nn::nll_loss(log_softmax(x, 1), cls, nll),
                    nn::nll_loss(log_softmax(x, 1), cls),
                    nn::cross_entropy(x, cls, ce),
                    nn::cross_entropy(x, softmax(t, 1), soft),
                    nn::binary_cross_entropy(sigmoid(x), sigmoid(t), weight, "mean"),
                    nn::binary_cross_entropy(sigmoid(x), sigmoid(t), Tensor(), "none"),
                    nn::binary_cross_entropy_with_logits(x, sigmoid(t), weight, "none", pos_weight),
                    nn::binary_cross_entropy_with_logits(x, sigmoid(t)),
                    nn::kl_div(log_softmax(x, 1), softmax(t, 1), "batchmean"),
                    nn::kl_div(log_softmax(x, 1), log_softmax(t, 1), "sum", /*log_target=*/true)};
    };
    const auto make = [dt](int64_t batch) {
      return Inputs{random_tensor({batch, 5}, dt), random_tensor({batch, 5}, dt),
                    random_tensor({batch}, DType::Int64, 0, 5)};
    };
    const Graph g = expect_replay_equals_function(f, make, {4, 7});
    for (OpId op : {OpId::MseLoss, OpId::L1Loss, OpId::SmoothL1Loss, OpId::HuberLoss, OpId::NllLoss,
                    OpId::CrossEntropy, OpId::BinaryCrossEntropy,
                    OpId::BinaryCrossEntropyWithLogits, OpId::KlDiv})
      EXPECT_TRUE(has_op(g, op)) << op_name(op);
  }
}

// rcuda::conv1d and rcuda::conv2d report padding_end_extra; interpolate's
// recompute_scale_factor changes the sampling positions of a non-integer scale.
TEST(ReplayOps, ConvPaddingEndExtraAndInterpolateRecompute) {
  for (DType dt : kDtypes) {
    const Tensor w1 = random_tensor({3, 2, 2}, dt), w2 = random_tensor({3, 2, 2, 3}, dt);
    const Tensor b = random_tensor({3}, dt);
    const auto f = [&](const Inputs& in) {
      ConvParams p;
      p.padding = {1, 0};
      p.padding_end_extra = {1, 2};
      p.stride = {1, 2};
      const Tensor image = in[1];  // [B, 2, 5, 6]
      return Inputs{rcuda::conv1d(in[0], w1, b, 1, 0, 1, 1, /*padding_end_extra=*/1),
                    rcuda::conv2d(image, w2, b, p),
                    nn::conv2d(image, w2, b, 1, nn::ConvPadding("same")),
                    nn::interpolate(image, {}, {1.7}, "bilinear", false, true),
                    nn::interpolate(image, {}, {1.7}, "bilinear", false, false),
                    nn::interpolate(image, {}, {1.7, 1.3}, "nearest", std::nullopt, true)};
    };
    const auto make = [dt](int64_t batch) {
      return Inputs{random_tensor({batch, 2, 7}, dt), random_tensor({batch, 2, 5, 6}, dt)};
    };
    const Graph g =
        expect_replay_equals_function(f, make, {2, 3}, {{"w1", w1}, {"w2", w2}, {"b", b}});
    int extra = 0, recompute = 0;
    for (const graph::Node& n : g.nodes) {
      extra += n.attrs.has("padding_end_extra");
      recompute += n.attrs.has("recompute_scale_factor");
    }
    EXPECT_EQ(extra, 2);
    EXPECT_EQ(recompute, 3);
  }
}

// fp8 linear's scaling state is not a graph value: a trace refuses the op by name.
TEST(ReplayOps, Fp8LinearIsRefusedByName) {
  nn::Fp8LinearState state{Device(), {4, 0}};
  const Tensor w = random_tensor({16, 16}, DType::Float32, -0.5, 0.5);
  const std::string message = error_message([&] {
    graph::trace(
        [&](const Inputs& in) { return Inputs{nn::fp8_linear(in[0], w, Tensor(), state)}; },
        {random_tensor({16, 16}, DType::Float32)});
  });
  EXPECT_NE(message.find("fp8_linear cannot be recorded in a traced graph"), std::string::npos)
      << message;
}

}  // namespace
}  // namespace rcuda::test
