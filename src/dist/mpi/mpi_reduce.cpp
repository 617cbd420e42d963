// MPI datatypes and ops for rcuda's dtypes (mpi_reduce.h).
#include "dist/mpi/mpi_reduce.h"

#include <algorithm>
#include <mutex>

#include "dist/mpi/mpi_runtime.h"
#include "rcuda/core/half.h"

namespace rcuda::dist::mpi {

namespace {

// float16 and bfloat16 are reduced in float32 and rounded back at each step, as a GPU's
// half-precision reduction does.
template <float (*ToFloat)(uint16_t), uint16_t (*FromFloat)(float), typename Combine>
void combine_halves(void* in, void* inout, int* length, Combine combine) {
  const auto* a = static_cast<const uint16_t*>(in);
  auto* b = static_cast<uint16_t*>(inout);
  for (int i = 0; i < *length; ++i) b[i] = FromFloat(combine(ToFloat(a[i]), ToFloat(b[i])));
}

float add(float a, float b) { return a + b; }
// NaN wins, as torch.maximum and NCCL's max.
float greater(float a, float b) { return a != a || b != b ? a + b : std::max(a, b); }
float lesser(float a, float b) { return a != a || b != b ? a + b : std::min(a, b); }

template <float (*Combine)(float, float)>
void half_op(void* in, void* inout, int* length, MPI_Datatype*) {
  combine_halves<half_bits_to_float, float_to_half_bits>(in, inout, length, Combine);
}
template <float (*Combine)(float, float)>
void bfloat16_op(void* in, void* inout, int* length, MPI_Datatype*) {
  combine_halves<bfloat16_bits_to_float, float_to_bfloat16_bits>(in, inout, length, Combine);
}

struct HalfOps {
  MPI_Op half[3], bfloat16[3];  // sum, max, min
};

// Created once (MPI_Finalize frees them); called under the MPI lock.
const HalfOps& half_ops() {
  static const HalfOps ops = [] {
    HalfOps o{};
    check(MPI_Op_create(half_op<add>, 1, &o.half[0]), "MPI_Op_create");
    check(MPI_Op_create(half_op<greater>, 1, &o.half[1]), "MPI_Op_create");
    check(MPI_Op_create(half_op<lesser>, 1, &o.half[2]), "MPI_Op_create");
    check(MPI_Op_create(bfloat16_op<add>, 1, &o.bfloat16[0]), "MPI_Op_create");
    check(MPI_Op_create(bfloat16_op<greater>, 1, &o.bfloat16[1]), "MPI_Op_create");
    check(MPI_Op_create(bfloat16_op<lesser>, 1, &o.bfloat16[2]), "MPI_Op_create");
    return o;
  }();
  return ops;
}

template <typename T>
void divide(T* data, int64_t n, double size) {
  for (int64_t i = 0; i < n; ++i) data[i] = static_cast<T>(data[i] / size);
}

}  // namespace

MPI_Datatype reduce_datatype(DType dtype) {
  switch (dtype) {
    case DType::Bool:
    case DType::UInt8:
      return MPI_UINT8_T;
    case DType::Int8:
      return MPI_INT8_T;
    case DType::Int16:
      return MPI_INT16_T;
    case DType::Int32:
      return MPI_INT32_T;
    case DType::Int64:
      return MPI_INT64_T;
    case DType::Float16:
    case DType::BFloat16:
      return MPI_UINT16_T;
    case DType::Float32:
      return MPI_FLOAT;
    case DType::Float64:
      return MPI_DOUBLE;
    case DType::Float8E4M3FN:
    case DType::Float8E5M2:
    case DType::Complex64:
    case DType::Complex128:
      break;
  }
  throw InternalError(std::string("reduce_datatype: ") + dtype_name(dtype) +
                      " passed check_reducible");
}

MPI_Op reduce_mpi_op(DType dtype, ReduceOp op) {
  const int which = op == ReduceOp::Max ? 1 : op == ReduceOp::Min ? 2 : 0;  // Avg: Sum
  if (dtype == DType::Float16) return half_ops().half[which];
  if (dtype == DType::BFloat16) return half_ops().bfloat16[which];
  if (dtype == DType::Bool) return which == 2 ? MPI_MIN : MPI_MAX;
  return which == 1 ? MPI_MAX : which == 2 ? MPI_MIN : MPI_SUM;
}

void divide_in_place(const Tensor& t, int size) {
  const int64_t n = t.numel();
  switch (t.dtype()) {
    case DType::Float32:
      return divide(t.data<float>(), n, size);
    case DType::Float64:
      return divide(t.data<double>(), n, size);
    case DType::Float16: {
      auto* p = t.data<uint16_t>();
      for (int64_t i = 0; i < n; ++i)
        p[i] = float_to_half_bits(static_cast<float>(half_bits_to_float(p[i]) / double(size)));
      return;
    }
    case DType::BFloat16: {
      auto* p = t.data<uint16_t>();
      for (int64_t i = 0; i < n; ++i)
        p[i] =
            float_to_bfloat16_bits(static_cast<float>(bfloat16_bits_to_float(p[i]) / double(size)));
      return;
    }
    default:
      throw InternalError(std::string("divide_in_place: ") + dtype_name(t.dtype()));
  }
}

}  // namespace rcuda::dist::mpi
