// The nnf_* functions: one entry point per family of rcuda::nn (layers, activations, losses),
// each a single engine call. Engine messages name the C++ function ("cross_entropy: ..."); the
// glue renames it to the R function the user called ("nnf_cross_entropy: ...").
//
// Note [1-based classes and indices]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// As in torch for R, class targets (nll_loss, cross_entropy), embedding indices, padding_idx and
// ignore_index are 1-based. The glue shifts them by one inside the same call. On the CPU it
// first checks the range itself, so that the message speaks of the values the user passed; on a
// GPU that check would wait for the device, so it is left to the engine (its messages, with
// 0-based values, are prefixed with a reminder of the shift).
#include <string>

#include "nn_glue.h"
#include "rcuda/autograd/funnel.h"
#include "rcuda/nn/fp8_linear.h"

using namespace rcuda;
using namespace rcuda::r;

namespace {

const char* name_of(SEXP x) { return CHAR(STRING_ELT(x, 0)); }
std::string string_arg(SEXP x) { return CHAR(STRING_ELT(x, 0)); }
double real_arg(SEXP x) { return Rf_asReal(x); }

// Note [1-based classes and indices]: the 1-based values of t as the engine's 0-based ones.
// `ignore` (a 1-based ignore_index, or a negative sentinel) is exempt from the range check.
Tensor one_based(const char* op, const char* arg, const Tensor& t, int64_t size, const char* what,
                 std::optional<int64_t> ignore = std::nullopt) {
  RCUDA_CHECK(!is_floating(t.dtype()) && t.dtype() != DType::Bool, DTypeError, op, ": ", arg,
              " must hold integer ", what, " (1 to ", size, "), got a ", dtype_name(t.dtype()),
              " tensor");
  Tensor values = t;
  if (values.dtype() != DType::Int64 && values.dtype() != DType::Int32)
    values = to(values, DType::Int64);  // public: a trace records the conversion
  if (values.device().is_cpu() && values.numel() > 0) {
    autograd::UnobservedGuard unobserved;  // the range check is not part of a traced model
    const Tensor dense = ops::to(ops::contiguous(values), DType::Int64);
    const int64_t* v = dense.data<int64_t>();
    for (int64_t i = 0; i < dense.numel(); ++i) {
      if ((v[i] >= 1 && v[i] <= size) || (ignore && v[i] == *ignore)) continue;
      // torch for R's words follow where its users (and tests) look for them: a 0 is the usual
      // slip of 0-based code, and a class past the end is nll_loss's "Target N is out of bounds".
      std::string torch_words;
      if (v[i] == 0)
        torch_words = " Indexing starts at 1 but found a 0.";
      else if (v[i] > size && std::string(what) == "classes")
        torch_words = detail::concat(" Target ", v[i], " is out of bounds.");
      throw IndexError(detail::concat(
          op, ": ", arg, " holds ", v[i], ", outside 1 to ", size, " (", what,
          " are 1-based, as in torch for R",
          ignore && *ignore > 0 ? detail::concat("; ignore_index is ", *ignore) : std::string(),
          ").", torch_words));
    }
  }
  // Recorded as the shift from R's 1-based values (ONNX export takes it off at the model's
  // inputs, whose indices are 0-based: docs/onnx.md).
  return index_from_one_based(values);
}

template <typename F>
Tensor with_index_hint(const char* op, F&& f) {
  try {
    return f();
  } catch (const IndexError& e) {
    // Unmarked, so conditions.R shifts the engine's 0-based index and dim (Note [1-based
    // messages] in rcuda_r.h).
    throw IndexError(detail::concat(op, ": ", e.what()));
  }
}

// ignore_index as the engine's: 1-based classes shift by one, negative sentinels stay below 0.
int64_t engine_ignore_index(const char* op, SEXP ignore_index) {
  const double v = Rf_asReal(ignore_index);
  RCUDA_CHECK(v != 0 && v == static_cast<double>(static_cast<int64_t>(v)), ValueError, op,
              ": ignore_index must be a 1 based class index (or a negative value that matches "
              "no class), got ",
              v);
  return static_cast<int64_t>(v) - 1;
}

bool is_class_target(const Tensor& target) { return !is_floating(target.dtype()); }

int64_t class_count(const Tensor& input) {
  return input.dim() == 1 ? input.size(0) : input.size(1);
}

}  // namespace

extern "C" SEXP rc_nn_linear(SEXP x, SEXP weight, SEXP bias) {
  RCUDA_BEGIN
  return as_r_function("nnf_linear", "linear", [&] {
    return wrap(nn::linear(unwrap(x), unwrap(weight), optional_tensor(bias)));
  });
  RCUDA_END
}

// kind: the activation's name; a and b its numeric parameters (unused ones ignored), approximate
// gelu's string.
extern "C" SEXP rc_nn_activation(SEXP kind, SEXP x, SEXP a, SEXP b, SEXP approximate) {
  RCUDA_BEGIN
  const std::string k = name_of(kind);
  const std::string r_name = "nnf_" + k;
  return as_r_function(r_name.c_str(), k.c_str(), [&] {
    const Tensor& t = unwrap(x);
    if (k == "relu") return wrap(nn::relu(t));
    if (k == "leaky_relu") return wrap(nn::leaky_relu(t, real_arg(a)));
    if (k == "elu") return wrap(nn::elu(t, real_arg(a)));
    if (k == "gelu") return wrap(nn::gelu(t, string_arg(approximate)));
    if (k == "silu") return wrap(nn::silu(t));
    if (k == "softplus") return wrap(nn::softplus(t, real_arg(a), real_arg(b)));
    if (k == "sigmoid") return wrap(nn::sigmoid(t));
    if (k == "tanh") return wrap(nn::tanh(t));
    if (k == "hardtanh") return wrap(nn::hardtanh(t, real_arg(a), real_arg(b)));
    throw ValueError("nnf: unknown activation \"" + k + "\"");
  });
  RCUDA_END
}

extern "C" SEXP rc_nn_dropout(SEXP x, SEXP p, SEXP training) {
  RCUDA_BEGIN
  return as_r_function("nnf_dropout", "dropout",
                       [&] { return wrap(nn::dropout(unwrap(x), real_arg(p), flag(training))); });
  RCUDA_END
}

extern "C" SEXP rc_nn_layer_norm(SEXP x, SEXP normalized_shape, SEXP weight, SEXP bias, SEXP eps) {
  RCUDA_BEGIN
  return as_r_function("nnf_layer_norm", "layer_norm", [&] {
    return wrap(nn::layer_norm(unwrap(x), shape_arg(normalized_shape), optional_tensor(weight),
                               optional_tensor(bias), real_arg(eps)));
  });
  RCUDA_END
}

// indices and padding_idx are 1-based (padding_idx may count from the end: -1 is the last row).
extern "C" SEXP rc_nn_embedding(SEXP indices, SEXP weight, SEXP padding_idx) {
  RCUDA_BEGIN
  constexpr const char* kOp = "nnf_embedding";
  return as_r_function(kOp, "embedding", [&] {
    const Tensor& w = unwrap(weight);
    RCUDA_CHECK(w.dim() == 2, ShapeError, kOp,
                ": weight must be 2-D [num_embeddings, embedding_dim], got shape ",
                shape_str(w.shape()));
    const int64_t n = w.size(0);
    std::optional<int64_t> padding;
    if (!Rf_isNull(padding_idx)) {
      const double p = Rf_asReal(padding_idx);
      RCUDA_CHECK(p != 0 && p >= -n && p <= n && p == static_cast<double>(static_cast<int64_t>(p)),
                  IndexError, kOp, ": padding_idx must be a row 1 to ", n, " (or -1 to -", n,
                  " from the end), got ", p);
      padding = p > 0 ? static_cast<int64_t>(p) - 1 : static_cast<int64_t>(p);
    }
    const Tensor index = one_based(kOp, "input", unwrap(indices), n, "indices");
    return wrap(with_index_hint(kOp, [&] { return nn::embedding(index, w, padding); }));
  });
  RCUDA_END
}

// kind: "mse", "l1", "smooth_l1" (param: beta) or "huber" (param: delta).
extern "C" SEXP rc_nn_regression_loss(SEXP kind, SEXP input, SEXP target, SEXP reduction,
                                      SEXP param) {
  RCUDA_BEGIN
  const std::string k = name_of(kind);
  const std::string engine = k + "_loss", r_name = "nnf_" + engine;
  return as_r_function(r_name.c_str(), engine.c_str(), [&] {
    const Tensor &x = unwrap(input), &y = unwrap(target);
    const std::string r = string_arg(reduction);
    if (k == "mse") return wrap(nn::mse_loss(x, y, r));
    if (k == "l1") return wrap(nn::l1_loss(x, y, r));
    if (k == "smooth_l1") return wrap(nn::smooth_l1_loss(x, y, r, real_arg(param)));
    if (k == "huber") return wrap(nn::huber_loss(x, y, r, real_arg(param)));
    throw ValueError("nnf: unknown loss \"" + k + "\"");
  });
  RCUDA_END
}

extern "C" SEXP rc_nn_nll_loss(SEXP input, SEXP target, SEXP weight, SEXP ignore_index,
                               SEXP reduction) {
  RCUDA_BEGIN
  constexpr const char* kOp = "nnf_nll_loss";
  return as_r_function(kOp, "nll_loss", [&] {
    const Tensor& x = unwrap(input);
    RCUDA_CHECK(x.dim() >= 1, ShapeError, kOp,
                ": input must be [C], [N, C] or [N, C, d1, ...], got a 0-dim tensor");
    nn::NllLossOptions options;
    options.weight = optional_tensor(weight);
    options.ignore_index = engine_ignore_index(kOp, ignore_index);
    options.reduction = string_arg(reduction);
    const Tensor t = one_based(kOp, "target", unwrap(target), class_count(x), "classes",
                               options.ignore_index + 1);
    return wrap(with_index_hint(kOp, [&] { return nn::nll_loss(x, t, options); }));
  });
  RCUDA_END
}

// target: 1-based classes (an integer tensor) or class probabilities (a floating one).
extern "C" SEXP rc_nn_cross_entropy(SEXP input, SEXP target, SEXP weight, SEXP ignore_index,
                                    SEXP reduction, SEXP label_smoothing) {
  RCUDA_BEGIN
  constexpr const char* kOp = "nnf_cross_entropy";
  return as_r_function(kOp, "cross_entropy", [&] {
    const Tensor& x = unwrap(input);
    RCUDA_CHECK(x.dim() >= 1, ShapeError, kOp,
                ": input must be [C], [N, C] or [N, C, d1, ...], got a 0-dim tensor");
    nn::CrossEntropyOptions options;
    options.weight = optional_tensor(weight);
    options.reduction = string_arg(reduction);
    options.label_smoothing = real_arg(label_smoothing);
    const Tensor& y = unwrap(target);
    if (!is_class_target(y)) {
      // Probabilities: ignore_index does not apply; the engine wants it negative.
      options.ignore_index = -100;
      return wrap(nn::cross_entropy(x, y, options));
    }
    options.ignore_index = engine_ignore_index(kOp, ignore_index);
    const Tensor t =
        one_based(kOp, "target", y, class_count(x), "classes", options.ignore_index + 1);
    return wrap(with_index_hint(kOp, [&] { return nn::cross_entropy(x, t, options); }));
  });
  RCUDA_END
}

extern "C" SEXP rc_nn_bce(SEXP input, SEXP target, SEXP weight, SEXP reduction) {
  RCUDA_BEGIN
  return as_r_function("nnf_binary_cross_entropy", "binary_cross_entropy", [&] {
    return wrap(nn::binary_cross_entropy(unwrap(input), unwrap(target), optional_tensor(weight),
                                         string_arg(reduction)));
  });
  RCUDA_END
}

extern "C" SEXP rc_nn_bce_with_logits(SEXP input, SEXP target, SEXP weight, SEXP reduction,
                                      SEXP pos_weight) {
  RCUDA_BEGIN
  return as_r_function("nnf_binary_cross_entropy_with_logits", "binary_cross_entropy_with_logits",
                       [&] {
                         return wrap(nn::binary_cross_entropy_with_logits(
                             unwrap(input), unwrap(target), optional_tensor(weight),
                             string_arg(reduction), optional_tensor(pos_weight)));
                       });
  RCUDA_END
}

extern "C" SEXP rc_nn_kl_div(SEXP input, SEXP target, SEXP reduction, SEXP log_target) {
  RCUDA_BEGIN
  return as_r_function("nnf_kl_div", "kl_div", [&] {
    return wrap(nn::kl_div(unwrap(input), unwrap(target), string_arg(reduction), flag(log_target)));
  });
  RCUDA_END
}

// nn_fp8_linear's forward: the layer's buffers amax_history [3, H] and scale [3] are adopted
// (the history is updated in place); returns list(output, the scale this step used), which the
// module stores back as its scale buffer.
extern "C" SEXP rc_nn_fp8_linear(SEXP x, SEXP weight, SEXP bias, SEXP amax_history, SEXP scale,
                                 SEXP margin) {
  RCUDA_BEGIN
  return as_r_function("nn_fp8_linear", "fp8_linear", [&]() -> SEXP {
    nn::Fp8LinearState state(unwrap(amax_history), unwrap(scale), Rf_asInteger(margin));
    const Tensor out = nn::fp8_linear(unwrap(x), unwrap(weight), optional_tensor(bias), state);
    SEXP result = PROTECT(Rf_allocVector(VECSXP, 2));
    SET_VECTOR_ELT(result, 0, wrap(out));
    SET_VECTOR_ELT(result, 1, wrap(state.scale()));
    UNPROTECT(1);
    return result;
  });
  RCUDA_END
}
