// sparse_mm through cuSPARSE's generic SpMM (Note [Sparse matrix product] in
// rcuda/backend/backend.h): a COO descriptor over the two index rows (64-bit) and the values,
// row-major dense descriptors over `dense` and `out`, on the current stream. The workspace comes
// from the device's stream-ordered pool, so nothing here waits for the GPU.
#include <cusparse.h>

#include <mutex>

#include "backend/cuda/runtime.h"
#include "cuda_backend.h"
#include "rcuda/core/error.h"

namespace rcuda::cuda {
namespace {

[[noreturn]] void throw_cusparse_error(cusparseStatus_t status, const char* call, const char* file,
                                       int line) {
  throw CudaError(detail::concat(call, " failed with cuSPARSE status ", static_cast<int>(status),
                                 " (", cusparseGetErrorString(status), ") at ", file, ":", line));
}

#define RCUDA_CUSPARSE_CHECK(call)                                           \
  do {                                                                       \
    const cusparseStatus_t rcuda_sparse_status_ = (call);                    \
    if (rcuda_sparse_status_ != CUSPARSE_STATUS_SUCCESS)                     \
      throw_cusparse_error(rcuda_sparse_status_, #call, __FILE__, __LINE__); \
  } while (0)

// One handle per device, made on first use; a handle follows one stream at a time, so a call
// holds the device's lock while it points the handle at the caller's stream and queues.
struct SparseHandles {
  cusparseHandle_t handle[kMaxDevices] = {};
  std::once_flag once[kMaxDevices];
  std::mutex lock[kMaxDevices];
};
SparseHandles& sparse_handles() {
  static SparseHandles* h = new SparseHandles();  // never destroyed: handles outlive statics
  return *h;
}

// Descriptors destroyed on every path out (a failing call throws).
struct Descriptors {
  cusparseSpMatDescr_t sparse = nullptr;
  cusparseDnMatDescr_t dense = nullptr, out = nullptr;
  ~Descriptors() {
    if (sparse) cusparseDestroySpMat(sparse);
    if (dense) cusparseDestroyDnMat(dense);
    if (out) cusparseDestroyDnMat(out);
  }
};

}  // namespace

void CudaBackend::sparse_mm(const Tensor& out, const Tensor& rows, const Tensor& cols,
                            const Tensor& values, const Tensor& dense, bool transpose) {
  const int device = out.device().index;
  check_device_index(device, "sparse_mm");
  DeviceGuard guard(device);
  RCUDA_CHECK(out.dtype() == DType::Float32 || out.dtype() == DType::Float64, InternalError,
              "sparse_mm: the CUDA primitive got ", dtype_name(out.dtype()),
              "; ops pass float32 or float64");
  const cudaDataType type = out.dtype() == DType::Float32 ? CUDA_R_32F : CUDA_R_64F;
  const int64_t nnz = values.numel(), k = out.size(1);
  // S's own shape: op(S) is [out rows, dense rows].
  const int64_t s_rows = transpose ? dense.size(0) : out.size(0);
  const int64_t s_cols = transpose ? out.size(0) : dense.size(0);

  SparseHandles& h = sparse_handles();
  std::call_once(h.once[device], [&] { RCUDA_CUSPARSE_CHECK(cusparseCreate(&h.handle[device])); });
  std::lock_guard<std::mutex> lock(h.lock[device]);
  cusparseHandle_t handle = h.handle[device];
  RCUDA_CUSPARSE_CHECK(cusparseSetStream(handle, current_stream(device)));

  Descriptors d;
  RCUDA_CUSPARSE_CHECK(cusparseCreateCoo(&d.sparse, s_rows, s_cols, nnz, rows.data_ptr(),
                                         cols.data_ptr(), values.data_ptr(), CUSPARSE_INDEX_64I,
                                         CUSPARSE_INDEX_BASE_ZERO, type));
  RCUDA_CUSPARSE_CHECK(cusparseCreateDnMat(&d.dense, dense.size(0), k, k, dense.data_ptr(), type,
                                           CUSPARSE_ORDER_ROW));
  RCUDA_CUSPARSE_CHECK(
      cusparseCreateDnMat(&d.out, out.size(0), k, k, out.data_ptr(), type, CUSPARSE_ORDER_ROW));

  // alpha and beta on the host, in the compute type.
  const float alpha_f = 1, beta_f = 0;
  const double alpha_d = 1, beta_d = 0;
  const void* alpha = type == CUDA_R_32F ? static_cast<const void*>(&alpha_f) : &alpha_d;
  const void* beta = type == CUDA_R_32F ? static_cast<const void*>(&beta_f) : &beta_d;
  const cusparseOperation_t op_s =
      transpose ? CUSPARSE_OPERATION_TRANSPOSE : CUSPARSE_OPERATION_NON_TRANSPOSE;
  const cusparseOperation_t op_dense = CUSPARSE_OPERATION_NON_TRANSPOSE;

  size_t workspace_bytes = 0;
  RCUDA_CUSPARSE_CHECK(cusparseSpMM_bufferSize(handle, op_s, op_dense, alpha, d.sparse, d.dense,
                                               beta, d.out, type, CUSPARSE_SPMM_ALG_DEFAULT,
                                               &workspace_bytes));
  // Stream-ordered: freed when this function returns, reused only by later work on the stream.
  const Tensor workspace =
      Tensor::empty({static_cast<int64_t>(workspace_bytes > 0 ? workspace_bytes : 1)}, DType::UInt8,
                    out.device());
  RCUDA_CUSPARSE_CHECK(cusparseSpMM(handle, op_s, op_dense, alpha, d.sparse, d.dense, beta, d.out,
                                    type, CUSPARSE_SPMM_ALG_DEFAULT, workspace.data_ptr()));
}

}  // namespace rcuda::cuda
