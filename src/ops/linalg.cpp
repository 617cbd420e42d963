// Matrix product front ends: dtype and shape checks, torch.matmul's rank rules and batch
// broadcasting, output allocation, then Backend::gemm on [B,M,K] x [B,K,N] views; scaled_mm
// (float8 with per-tensor scales) checks cuBLASLt's fp8 constraints and calls
// Backend::scaled_gemm.
//
// Broadcast batch dims stay stride-0 views: gemm takes one batch stride per operand, so the
// batch dims are collapsed into one where the strides allow it and looped over where they do
// not ([2,1,M,K] x [3,K,N] runs 2 gemm calls of batch 3, with a's batch stride 0).
#include "rcuda/ops/linalg.h"

#include <string>
#include <vector>

#include "ops_util.h"
#include "rcuda/ops/copy.h"
#include "rcuda/ops/reduction.h"

namespace rcuda::ops {
namespace {

using ops::backend_of;

void check_operands(const char* op, const Tensor& a, const Tensor& b) {
  ops::check_same_device(op, {a, b});
  RCUDA_CHECK(a.dtype() == b.dtype(), DTypeError, op,
              ": expected both operands to have the same dtype, got ", dtype_name(a.dtype()),
              " and ", dtype_name(b.dtype()));
  RCUDA_CHECK(is_floating(a.dtype()), DTypeError, op, ": expected floating operands, got ",
              dtype_name(a.dtype()),
              " (convert first, e.g. to(x, DType::Float32); integer matrix products are not "
              "supported)");
  RCUDA_CHECK(!is_float8(a.dtype()), DTypeError, op, ": ", dtype_name(a.dtype()),
              " operands need per-tensor scales: use scaled_mm");
}

void check_inner_sizes(const char* op, const Tensor& a, const Tensor& b, int64_t ka, int64_t kb) {
  RCUDA_CHECK(ka == kb, ShapeError, op, ": shapes ", shape_str(a.shape()), " and ",
              shape_str(b.shape()), " cannot be multiplied (", ka, " != ", kb, ")");
}

Shape leading(const Shape& s, size_t n) { return Shape(s.begin(), s.begin() + n); }

// Stride of dims [begin, end) of t viewed as one dim, or false when no single stride does.
bool collapsed_stride(const Tensor& t, size_t begin, size_t end, int64_t* stride) {
  const Shape sizes(t.shape().begin() + begin, t.shape().begin() + end);
  const Strides strides(t.strides().begin() + begin, t.strides().begin() + end);
  Strides collapsed;
  if (!compute_view_strides(sizes, strides, {numel(sizes)}, &collapsed)) return false;
  *stride = collapsed[0];
  return true;
}

// out[...] = alpha * a[...] @ b[...] + beta * out[...] for operands already expanded to a
// common batch shape (any number of batch dims, possibly none).
void batched_gemm(const Tensor& out, const Tensor& a, const Tensor& b, double alpha, double beta) {
  if (out.numel() == 0) return;
  Backend& backend = backend_of(out);
  const size_t nb = static_cast<size_t>(out.dim() - 2);
  if (nb == 0) {
    backend.gemm(out.unsqueeze(0), a.unsqueeze(0), b.unsqueeze(0), alpha, beta);
    return;
  }
  // The longest suffix of batch dims that collapses in all three operands is one gemm call.
  const Tensor* operands[3] = {&out, &a, &b};
  int64_t inner_strides[3] = {0, 0, 0};
  size_t split = nb - 1;
  for (size_t j = nb - 1;; --j) {
    int64_t s[3];
    bool ok = true;
    for (int i = 0; i < 3 && ok; ++i) ok = collapsed_stride(*operands[i], j, nb, &s[i]);
    if (!ok) break;
    split = j;
    for (int i = 0; i < 3; ++i) inner_strides[i] = s[i];
    if (j == 0) break;
  }
  const Shape batch = leading(out.shape(), nb);
  const int64_t inner = numel(Shape(batch.begin() + split, batch.end()));
  const int64_t outer = numel(leading(batch, split));
  std::vector<int64_t> index(split, 0);
  for (int64_t o = 0; o < outer; ++o) {
    Tensor views[3];
    for (int i = 0; i < 3; ++i) {
      const Tensor& t = *operands[i];
      int64_t offset = t.offset();
      for (size_t d = 0; d < split; ++d) offset += index[d] * t.strides()[d];
      views[i] = t.as_strided({inner, t.size(-2), t.size(-1)},
                              {inner_strides[i], t.stride(-2), t.stride(-1)}, offset);
    }
    backend.gemm(views[0], views[1], views[2], alpha, beta);
    for (size_t d = split; d-- > 0;) {
      if (++index[d] < batch[d]) break;
      index[d] = 0;
    }
  }
}

// a [..., M, K] (3-D or more) times one matrix b [K, N] as a single [rows, K] x [K, N] gemm,
// as torch folds it; undefined when a's batch and row dims do not form one strided dim.
Tensor folded_product(const Tensor& a, const Tensor& b) {
  const size_t nd = static_cast<size_t>(a.dim());
  int64_t row_stride = 0;
  if (!collapsed_stride(a, 0, nd - 1, &row_stride)) return Tensor();
  const int64_t rows = numel(leading(a.shape(), nd - 1)), k = a.size(-1);
  const Tensor a2 = a.as_strided({rows, k}, {row_stride, a.stride(-1)}, a.offset());
  Tensor out = Tensor::empty({rows, b.size(1)}, a.dtype(), a.device());
  batched_gemm(out, a2, b, 1.0, 0.0);
  return out;
}

}  // namespace

Tensor matmul(const Tensor& a, const Tensor& b) {
  check_operands("matmul", a, b);
  const int64_t da = a.dim(), db = b.dim();
  RCUDA_CHECK(da >= 1 && db >= 1, ShapeError,
              "matmul: both operands need at least 1 dim, got shapes ", shape_str(a.shape()),
              " and ", shape_str(b.shape()));
  check_inner_sizes("matmul", a, b, a.size(-1), db == 1 ? b.size(0) : b.size(-2));

  // 1-D operands become matrices ([K] -> [1, K] on the left, [K, 1] on the right); the added
  // dim is left out of the result's shape.
  const Tensor am = da == 1 ? a.unsqueeze(0) : a;
  const Tensor bm = db == 1 ? b.unsqueeze(1) : b;
  const size_t nba = static_cast<size_t>(am.dim() - 2), nbb = static_cast<size_t>(bm.dim() - 2);
  const Shape batch =
      broadcast_shapes(leading(am.shape(), nba), leading(bm.shape(), nbb), "matmul");
  const int64_t m = am.size(-2), k = am.size(-1), n = bm.size(-1);
  Shape result_shape = batch;
  if (da >= 2) result_shape.push_back(m);
  if (db >= 2) result_shape.push_back(n);

  if (da >= 3 && db <= 2) {
    const Tensor folded = folded_product(am, bm);
    if (folded.defined()) return folded.view(result_shape);
  }
  Shape a_shape = batch, b_shape = batch, out_shape = batch;
  a_shape.insert(a_shape.end(), {m, k});
  b_shape.insert(b_shape.end(), {k, n});
  out_shape.insert(out_shape.end(), {m, n});
  Tensor out = Tensor::empty(out_shape, a.dtype(), a.device());
  batched_gemm(out, am.expand(a_shape), bm.expand(b_shape), 1.0, 0.0);
  return out.view(result_shape);
}

Tensor mm(const Tensor& a, const Tensor& b) {
  check_operands("mm", a, b);
  RCUDA_CHECK(a.dim() == 2 && b.dim() == 2, ShapeError, "mm: expected 2-D matrices, got shapes ",
              shape_str(a.shape()), " and ", shape_str(b.shape()));
  check_inner_sizes("mm", a, b, a.size(1), b.size(0));
  Tensor out = Tensor::empty({a.size(0), b.size(1)}, a.dtype(), a.device());
  batched_gemm(out, a, b, 1.0, 0.0);
  return out;
}

Tensor bmm(const Tensor& a, const Tensor& b) {
  check_operands("bmm", a, b);
  RCUDA_CHECK(a.dim() == 3 && b.dim() == 3, ShapeError, "bmm: expected 3-D tensors, got shapes ",
              shape_str(a.shape()), " and ", shape_str(b.shape()));
  RCUDA_CHECK(a.size(0) == b.size(0), ShapeError, "bmm: batch sizes of shapes ",
              shape_str(a.shape()), " and ", shape_str(b.shape()), " differ (", a.size(0),
              " != ", b.size(0), ")");
  check_inner_sizes("bmm", a, b, a.size(2), b.size(1));
  Tensor out = Tensor::empty({a.size(0), a.size(1), b.size(2)}, a.dtype(), a.device());
  batched_gemm(out, a, b, 1.0, 0.0);
  return out;
}

Tensor addmm(const Tensor& input, const Tensor& a, const Tensor& b, const Scalar& beta,
             const Scalar& alpha) {
  check_operands("addmm", a, b);
  ops::check_same_device("addmm", {input, a});
  RCUDA_CHECK(input.dtype() == a.dtype(), DTypeError,
              "addmm: expected input and matrices to have the same dtype, got ",
              dtype_name(input.dtype()), " and ", dtype_name(a.dtype()));
  RCUDA_CHECK(a.dim() == 2 && b.dim() == 2, ShapeError, "addmm: expected 2-D matrices, got shapes ",
              shape_str(a.shape()), " and ", shape_str(b.shape()));
  check_inner_sizes("addmm", a, b, a.size(1), b.size(0));
  const Shape out_shape = {a.size(0), b.size(1)};
  bool broadcasts = input.dim() <= 2;
  for (int64_t d = 1; d <= input.dim() && broadcasts; ++d) {
    const int64_t have = input.size(-d), want = out_shape[2 - d];
    broadcasts = have == want || have == 1;
  }
  RCUDA_CHECK(broadcasts, ShapeError, "addmm: input of shape ", shape_str(input.shape()),
              " cannot be broadcast to the product's shape ", shape_str(out_shape));

  Tensor out = Tensor::empty(out_shape, a.dtype(), a.device());
  if (out.numel() == 0) return out;
  // beta == 0 ignores input entirely (NaN and inf included), as torch.addmm.
  const double beta_value = beta.to_double();
  if (beta_value != 0) backend_of(out).copy(out, input.expand(out_shape));
  batched_gemm(out, a, b, alpha.to_double(), beta_value);
  return out;
}

Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  check_operands("linear", x, weight);
  if (bias.defined()) {
    ops::check_same_device("linear", {bias, x});
    RCUDA_CHECK(bias.dtype() == x.dtype(), DTypeError, "linear: bias is ", dtype_name(bias.dtype()),
                " but input is ", dtype_name(x.dtype()));
  }
  RCUDA_CHECK(x.dim() == 2 && weight.dim() == 2 && x.size(1) == weight.size(1), ShapeError,
              "linear: expected x [M,K] and weight [N,K], got shapes ", shape_str(x.shape()),
              " and ", shape_str(weight.shape()));
  RCUDA_CHECK(!bias.defined() || (bias.dim() == 1 && bias.size(0) == weight.size(0)), ShapeError,
              "linear: expected bias [", weight.size(0), "], got shape ", shape_str(bias.shape()));
  Tensor out = Tensor::empty({x.size(0), weight.size(0)}, x.dtype(), x.device());
  if (out.numel() == 0) return out;
  backend_of(out).linear(out, x, weight, bias.defined() ? contiguous(bias) : bias);
  return out;
}

LinearWeightGrads linear_weight_grads(const Tensor& grad_out, const Tensor& x) {
  check_operands("linear_weight_grads", grad_out, x);
  RCUDA_CHECK(grad_out.dim() == 2 && x.dim() == 2 && grad_out.size(0) == x.size(0), ShapeError,
              "linear_weight_grads: expected grad_out [M,N] and x [M,K], got shapes ",
              shape_str(grad_out.shape()), " and ", shape_str(x.shape()));
  const Tensor weight = Tensor::empty({grad_out.size(1), x.size(1)}, x.dtype(), x.device());
  const Tensor bias = Tensor::empty({grad_out.size(1)}, x.dtype(), x.device());
  if (x.size(0) > 0 && backend_of(x).linear_weight_grad(weight, bias, grad_out, x))
    return {weight, bias};
  return {mm(grad_out.t(), x), sum(grad_out, {0})};
}

// Note [fp8 operand layouts]
// cuBLASLt's fp8 kernels take only the "TN" problem: in its column-major terms A transposed and
// B not, i.e. both operands stored with K as the contiguous dim. For row-major rcuda tensors
// (out^T = b^T a^T) that means a [M,K] row-major and b [K,N] column-major, K and N multiples
// of 16 (the CUDA backend copies an operand whose address or leading dimension is not 16-byte
// aligned; that copy keeps the layout). torch._scaled_mm refuses other layouts rather than copying
// behind the caller's back (an fp8 weight is prepared once, as w.t() of a row-major [N,K] w), and
// so does scaled_mm, on every device, so that code tested on the CPU runs unchanged on the GPU.
namespace {

void check_scaled_mm_scale(const char* arg, const Tensor& scale) {
  RCUDA_CHECK(scale.dtype() == DType::Float32 && scale.numel() == 1, DTypeError, "scaled_mm: ", arg,
              " must be a float32 tensor with one element (a per-tensor scale), got ",
              dtype_name(scale.dtype()), " of shape ", shape_str(scale.shape()));
}

// The scale as the 0-dim tensor Backend::scaled_gemm takes.
Tensor scalar_view(const Tensor& scale) { return scale.as_strided({}, {}, scale.offset()); }

}  // namespace

Tensor scaled_mm(const Tensor& a, const Tensor& b, const Tensor& scale_a, const Tensor& scale_b,
                 DType out_dtype, const Tensor& bias) {
  ops::check_same_device("scaled_mm", {a, b, scale_a, scale_b});
  RCUDA_CHECK(is_float8(a.dtype()) && is_float8(b.dtype()), DTypeError,
              "scaled_mm: expected float8 operands (float8_e4m3fn or float8_e5m2), got ",
              dtype_name(a.dtype()), " and ", dtype_name(b.dtype()),
              " (convert first, e.g. to(x, DType::Float8E4M3FN), or use matmul)");
  RCUDA_CHECK(!(a.dtype() == DType::Float8E5M2 && b.dtype() == DType::Float8E5M2), DTypeError,
              "scaled_mm: float8_e5m2 x float8_e5m2 is not supported (cuBLASLt multiplies "
              "e4m3fn x e4m3fn, e4m3fn x e5m2 and e5m2 x e4m3fn)");
  check_scaled_mm_scale("scale_a", scale_a);
  check_scaled_mm_scale("scale_b", scale_b);
  RCUDA_CHECK(
      out_dtype == DType::BFloat16 || out_dtype == DType::Float16 || out_dtype == DType::Float32,
      DTypeError, "scaled_mm: out_dtype must be bfloat16, float16 or float32, got ",
      dtype_name(out_dtype));
  RCUDA_CHECK(a.dim() == 2 && b.dim() == 2, ShapeError,
              "scaled_mm: expected 2-D matrices, got shapes ", shape_str(a.shape()), " and ",
              shape_str(b.shape()));
  check_inner_sizes("scaled_mm", a, b, a.size(1), b.size(0));
  const int64_t m = a.size(0), k = a.size(1), n = b.size(1);
  RCUDA_CHECK(k % 16 == 0 && n % 16 == 0, ShapeError,
              "scaled_mm: K and N must be multiples of 16 (cuBLASLt's fp8 kernels require it), "
              "got a ",
              shape_str(a.shape()), " and b ", shape_str(b.shape()), " (K=", k, ", N=", n,
              "); pad the operands with zeros");
  // Note [fp8 operand layouts]
  RCUDA_CHECK((a.stride(1) == 1 || k <= 1) && (m <= 1 || a.stride(0) >= k), ValueError,
              "scaled_mm: a must be row-major (a.stride(1) == 1, rows not overlapping), "
              "got a of shape ",
              shape_str(a.shape()), " with strides ", shape_str(a.strides()),
              "; pass contiguous(a)");
  RCUDA_CHECK((b.stride(0) == 1 || k <= 1) && (n <= 1 || b.stride(1) >= k), ValueError,
              "scaled_mm: b must be column-major (b.stride(0) == 1), as cuBLASLt's fp8 kernels "
              "read both operands K-major, got b of shape ",
              shape_str(b.shape()), " with strides ", shape_str(b.strides()),
              "; pass b = contiguous(b.t()).t() (for a weight w [N,K]: b = w.t())");

  Tensor bias_out;
  if (bias.defined()) {
    ops::check_same_device("scaled_mm", {a, bias});
    RCUDA_CHECK(bias.dim() == 1 && bias.size(0) == n, ShapeError,
                "scaled_mm: bias must have shape [N] = [", n, "], got ", shape_str(bias.shape()));
    ops::check_floating("scaled_mm", "bias", bias);
    ops::check_not_float8("scaled_mm", bias);
    bias_out = contiguous(ops::cast(bias, out_dtype));
  }
  Tensor out = Tensor::empty({m, n}, out_dtype, a.device());
  if (out.numel() == 0) return out;
  Backend& backend = backend_of(out);
  if (k == 0) {
    if (bias_out.defined())
      backend.copy(out, bias_out.expand({m, n}));
    else
      backend.fill(out, 0.0);
    return out;
  }
  backend.scaled_gemm(out, a, b, scalar_view(scale_a), scalar_view(scale_b), bias_out);
  return out;
}

}  // namespace rcuda::ops
