// Replay of the tensor ops: elementwise, conversions, views, reductions, products, indexing.
#include "rcuda/autograd/api.h"
#include "rcuda/core/error.h"
#include "replay.h"

namespace rcuda::graph::replay {

int64_t integer(const Attributes& a, const char* name, OpId op) { return a.get<int64_t>(name, op); }

std::vector<int64_t> integers(const Attributes& a, const char* name, OpId op) {
  return a.get<std::vector<int64_t>>(name, op);
}

double number(const Attributes& a, const char* name, OpId op) {
  const AttributeValue* v = a.find(name);
  if (v != nullptr) {
    if (const auto* i = std::get_if<int64_t>(v)) return static_cast<double>(*i);
    if (const auto* b = std::get_if<bool>(v)) return *b ? 1.0 : 0.0;
  }
  return a.get<double>(name, op);
}

bool flag(const Attributes& a, const char* name, OpId op, bool fallback) {
  return a.has(name) ? a.get<bool>(name, op) : fallback;
}

std::string text(const Attributes& a, const char* name, OpId op, const std::string& fallback) {
  return a.has(name) ? a.get<std::string>(name, op) : fallback;
}

Scalar scalar(const Attributes& a, const char* name, OpId op) {
  const AttributeValue* v = a.find(name);
  if (v != nullptr) {
    if (const auto* i = std::get_if<int64_t>(v)) return Scalar(*i);
    if (const auto* b = std::get_if<bool>(v)) return Scalar(*b);
  }
  return Scalar(a.get<double>(name, op));
}

Scalar operand(const Attributes& a, OpId op) { return scalar(a, "other", op); }

const Tensor& input(const Tensors& in, size_t i, OpId op) {
  RCUDA_CHECK(i < in.size(), ValueError, "graph: ", op_name(op), " needs input ", i + 1,
              " but the node has ", in.size());
  return in[i];
}

Tensor optional_input(const Tensors& in, size_t i) { return i < in.size() ? in[i] : Tensor(); }

namespace {

std::optional<Scalar> optional_number(const Attributes& a, const char* name, OpId op) {
  if (!a.has(name)) return std::nullopt;
  return Scalar(number(a, name, op));
}

// 0 in a recorded shape is the input's size at that dim (docs/graph.md, Shapes).
Shape resolve_shape(const Tensor& x, std::vector<int64_t> shape) {
  for (size_t d = 0; d < shape.size() && static_cast<int64_t>(d) < x.dim(); ++d)
    if (shape[d] == 0) shape[d] = x.size(static_cast<int64_t>(d));
  return Shape(shape.begin(), shape.end());
}

}  // namespace

Tensors unary(OpId op, const Tensors& in, const Attributes& a) {
  const Tensor& x = input(in, 0, op);
  switch (op) {
    case OpId::Gelu:
      return {gelu(x, text(a, "approximate", op, "none"))};
    case OpId::Clamp:
      return {clamp(x, optional_number(a, "min", op), optional_number(a, "max", op))};
    case OpId::LeakyRelu:
      return {leaky_relu(x, number(a, "negative_slope", op))};
    case OpId::Elu:
      return {elu(x, number(a, "alpha", op))};
    case OpId::Softplus:
      return {softplus(x, number(a, "beta", op), number(a, "threshold", op))};
    case OpId::Hardtanh:
      return {hardtanh(x, number(a, "min_val", op), number(a, "max_val", op))};
    default:
      return {unary_op(op, x)};
  }
}

Tensors binary(OpId op, const Tensors& in, const Attributes& a) {
  const Tensor& x = input(in, 0, op);
  if (a.has("other")) {
    const Scalar n = operand(a, op);
    if (flag(a, "number_first", op, false)) return {binary_op(op, n, x)};
    if (op == OpId::Pow) return {pow(x, n)};
    return {binary_op(op, x, n)};
  }
  const Tensor& y = input(in, 1, op);
  if (a.has("alpha")) {
    const double alpha = number(a, "alpha", op);
    if (op == OpId::Add) return {add(x, y, alpha)};
    if (op == OpId::Sub) return {sub(x, y, alpha)};
  }
  return {binary_op(op, x, y)};
}

Tensors where(OpId op, const Tensors& in, const Attributes&) {
  return {rcuda::where(input(in, 0, op), input(in, 1, op), input(in, 2, op))};
}

Tensors inplace(OpId op, const Tensors& in, const Attributes& a) {
  const Tensor& self = input(in, 0, op);
  switch (op) {
    case OpId::AddInplace:
      add_(self, input(in, 1, op), a.has("alpha") ? number(a, "alpha", op) : 1.0);
      break;
    case OpId::MulInplace:
      mul_(self, input(in, 1, op));
      break;
    case OpId::CopyInplace:
      copy_(self, input(in, 1, op));
      break;
    case OpId::FillInplace:
      fill_(self, number(a, "value", op));
      break;
    case OpId::UniformInplace:
      uniform_(self, number(a, "low", op), number(a, "high", op));
      break;
    case OpId::NormalInplace:
      normal_(self, number(a, "mean", op), number(a, "std", op));
      break;
    default:
      throw InternalError(std::string("graph: no in-place replay for ") + op_name(op));
  }
  return {self};
}

Tensors conversion(OpId op, const Tensors& in, const Attributes& a) {
  const Tensor& x = input(in, 0, op);
  switch (op) {
    case OpId::To: {
      const bool has_dtype = a.has("dtype"), has_device = a.has("device");
      if (has_dtype && has_device)
        return {to(x, Device::parse(text(a, "device", op, "")),
                   dtype_from_name(text(a, "dtype", op, "")))};
      if (has_device) return {to(x, Device::parse(text(a, "device", op, "")))};
      return {to(x, dtype_from_name(text(a, "dtype", op, "")))};
    }
    case OpId::Contiguous:
      if (text(a, "memory_format", op, "contiguous") == "channels_last")
        return {contiguous(x, MemoryFormat::ChannelsLast)};
      return {contiguous(x)};
    case OpId::Clone:
      return {clone(x)};
    case OpId::Reshape:
      return {reshape(x, resolve_shape(x, integers(a, "shape", op)))};
    case OpId::Flatten:
      return {flatten(x, integer(a, "start_dim", op), integer(a, "end_dim", op))};
    default:
      throw InternalError(std::string("graph: no conversion replay for ") + op_name(op));
  }
}

Tensors view(OpId op, const Tensors& in, const Attributes& a) {
  const Tensor& x = input(in, 0, op);
  switch (op) {
    case OpId::View:
      return {x.view(resolve_shape(x, integers(a, "shape", op)))};
    case OpId::Permute:
      return {x.permute(integers(a, "dims", op))};
    case OpId::Transpose:
      return {x.transpose(integer(a, "dim0", op), integer(a, "dim1", op))};
    case OpId::Slice:
      return {x.slice(integer(a, "dim", op), integer(a, "start", op), integer(a, "end", op),
                      integer(a, "step", op))};
    case OpId::Select:
      return {x.select(integer(a, "dim", op), integer(a, "index", op))};
    case OpId::Expand:
      return {x.expand(resolve_shape(x, integers(a, "shape", op)))};
    case OpId::Diagonal:
      return {x.diagonal(integer(a, "offset", op), integer(a, "dim1", op), integer(a, "dim2", op))};
    case OpId::AsStrided: {
      const auto size = integers(a, "size", op), stride = integers(a, "stride", op);
      return {x.as_strided(Shape(size.begin(), size.end()), Strides(stride.begin(), stride.end()),
                           integer(a, "storage_offset", op))};
    }
    default:
      throw InternalError(std::string("graph: no view replay for ") + op_name(op));
  }
}

Tensors reduction(OpId op, const Tensors& in, const Attributes& a) {
  const Tensor& x = input(in, 0, op);
  const auto dims = [&] { return a.has("dims") ? integers(a, "dims", op) : Dims{}; };
  const bool keepdim = flag(a, "keepdim", op, false);
  switch (op) {
    case OpId::Sum: {
      std::optional<DType> dtype;
      if (a.has("dtype")) dtype = dtype_from_name(text(a, "dtype", op, ""));
      return {sum(x, dims(), keepdim, dtype)};
    }
    case OpId::Mean:
      return {mean(x, dims(), keepdim)};
    case OpId::Prod:
      return {prod(x, dims(), keepdim)};
    case OpId::Max:
    case OpId::Min: {
      if (!a.has("dim")) return {op == OpId::Max ? max(x) : min(x)};
      auto [values, indices] = op == OpId::Max ? max(x, integer(a, "dim", op), keepdim)
                                               : min(x, integer(a, "dim", op), keepdim);
      return {values, indices};
    }
    case OpId::Var:
      return {var(x, dims(), number(a, "correction", op), keepdim)};
    case OpId::Std:
      return {rcuda::std(x, dims(), number(a, "correction", op), keepdim)};
    case OpId::Norm:
      return {norm(x, number(a, "p", op), dims(), keepdim)};
    case OpId::Logsumexp:
      return {logsumexp(x, dims(), keepdim)};
    case OpId::Softmax:
      return {softmax(x, integer(a, "dim", op))};
    case OpId::LogSoftmax:
      return {log_softmax(x, integer(a, "dim", op))};
    case OpId::Cumsum:
      return {cumsum(x, integer(a, "dim", op))};
    case OpId::Cumprod:
      return {cumprod(x, integer(a, "dim", op))};
    case OpId::All:
      return {all(x, dims(), keepdim)};
    case OpId::Any:
      return {any(x, dims(), keepdim)};
    case OpId::Argmax:
    case OpId::Argmin: {
      std::optional<int64_t> dim;
      if (a.has("dim")) dim = integer(a, "dim", op);
      return {op == OpId::Argmax ? argmax(x, dim, keepdim) : argmin(x, dim, keepdim)};
    }
    default:
      throw InternalError(std::string("graph: no reduction replay for ") + op_name(op));
  }
}

Tensors product(OpId op, const Tensors& in, const Attributes& a) {
  const Tensor& x = input(in, 0, op);
  switch (op) {
    case OpId::Matmul:
      return {matmul(x, input(in, 1, op))};
    case OpId::Mm:
      return {mm(x, input(in, 1, op))};
    case OpId::Bmm:
      return {bmm(x, input(in, 1, op))};
    case OpId::Addmm:
      return {addmm(x, input(in, 1, op), input(in, 2, op), number(a, "beta", op),
                    number(a, "alpha", op))};
    default:
      throw InternalError(std::string("graph: no product replay for ") + op_name(op));
  }
}

Tensors indexing(OpId op, const Tensors& in, const Attributes& a) {
  switch (op) {
    case OpId::Cat:
      return {cat(in, integer(a, "dim", op))};
    case OpId::Stack:
      return {stack(in, integer(a, "dim", op))};
    case OpId::IndexSelect:
      return {index_select(input(in, 0, op), integer(a, "dim", op), input(in, 1, op))};
    case OpId::Gather:
      return {gather(input(in, 0, op), integer(a, "dim", op), input(in, 1, op))};
    case OpId::MaskedFill:
      return {masked_fill(input(in, 0, op), input(in, 1, op), scalar(a, "value", op))};
    default:
      throw InternalError(std::string("graph: no indexing replay for ") + op_name(op));
  }
}

}  // namespace rcuda::graph::replay
