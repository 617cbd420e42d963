// CudaBackend::gemm and CudaBackend::scaled_gemm through cuBLASLt (cublasLtMatmul).
//
// Note [cuBLASLt row-major products]
// cuBLASLt multiplies column-major matrices, each optionally transposed (op T). A row-major
// rcuda matrix with leading dimension ld is, read column-major with the same ld, its own
// transpose. So a column-major output is computed as D = op(a) op(b), and a row-major one as
// D^T = op(b^T) op(a^T); each operand's op follows from its own layout: N when the matrix
// cuBLASLt multiplies is column-major in memory, T when it is row-major (Note [BLAS operand
// layouts] in cpu/gemm.cpp describes the same two layouts). Transposed views therefore cost
// nothing; operands in neither layout (stepped slices, stride-0 matrix dims) are first copied
// contiguous, and an output in neither layout is computed into a temporary and copied back.
// Batch dims map to cuBLASLt's strided batch (a batch stride of 0 repeats one matrix).
// For fp8 the same mapping turns cuBLASLt's "TN" requirement into a row-major a and a
// column-major b (Note [fp8 operand layouts] in src/ops/linalg.cpp).
//
// Note [cuBLASLt plans]
// A plan (the descriptors and the heuristic's algorithm) is built once per configuration, keyed
// by everything the heuristic sees, and kept by the calling thread: a small product is
// host-bound, and creating four descriptors and querying the heuristic cost more than the
// product. Per call only the pointers (bias, fp8 scales) are set on the thread's own descriptor.
// The heuristic's answers are also shared between threads (one query per configuration per
// process). The workspace the algorithm asks for (at most kMaxWorkspaceBytes) is a tensor from
// the stream-ordered pool, so reusing it costs nothing and graph capture works.
#include "backend/cuda/cublaslt.h"

#include <algorithm>
#include <array>
#include <climits>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/kernels/copy.h"
#include "backend/cuda/runtime.h"
#include "backend/once.h"
#include "rcuda/backend/cuda.h"

namespace rcuda::cuda {

void throw_cublas_error(cublasStatus_t status, const char* call, const char* file, int line) {
  throw CudaError(std::string(call) + " failed: " + cublasLtGetStatusName(status) + " (" +
                  cublasLtGetStatusString(status) + ") at " + file + ":" + std::to_string(line));
}

namespace {

struct Handles {
  backend::OnceValue<cublasLtHandle_t> handle[kMaxDevices];  // Note [Made once, read often]
};

Handles& handles() {
  static Handles* h = new Handles();  // never destroyed: handles outlive statics
  return *h;
}

}  // namespace

cublasLtHandle_t lt_handle(int device) {
  RCUDA_CHECK(device >= 0 && device < kMaxDevices, DeviceError, "cuBLASLt: cuda:", device,
              " is outside the ", kMaxDevices, " devices rcuda supports");
  return handles().handle[device].get([&] {
    DeviceGuard guard(device);
    cublasLtHandle_t handle = nullptr;
    RCUDA_CUBLAS_CHECK(cublasLtCreate(&handle));
    return handle;
  });
}

namespace {

// PyTorch's cuBLAS workspace on Hopper; large products pick split-K or stream-K kernels with it.
constexpr size_t kMaxWorkspaceBytes = size_t{32} << 20;
// cuBLASLt's batch count is an int32 and grids index batches in gridDim.z (at most 65535), so
// longer batches run in chunks.
constexpr int64_t kMaxBatchCount = 65535;

// ---- Descriptors, owned ----

class MatmulDesc {
 public:
  MatmulDesc(cublasComputeType_t compute, cudaDataType_t scale_type) {
    RCUDA_CUBLAS_CHECK(cublasLtMatmulDescCreate(&desc_, compute, scale_type));
  }
  ~MatmulDesc() { cublasLtMatmulDescDestroy(desc_); }
  MatmulDesc(const MatmulDesc&) = delete;
  MatmulDesc& operator=(const MatmulDesc&) = delete;
  template <typename T>
  void set(cublasLtMatmulDescAttributes_t attribute, const T& value) {
    RCUDA_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(desc_, attribute, &value, sizeof(T)));
  }
  cublasLtMatmulDesc_t get() const { return desc_; }

 private:
  cublasLtMatmulDesc_t desc_ = nullptr;
};

class MatrixLayout {
 public:
  MatrixLayout(cudaDataType_t type, int64_t rows, int64_t cols, int64_t ld, int64_t batch,
               int64_t batch_stride) {
    RCUDA_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&layout_, type, static_cast<uint64_t>(rows),
                                                  static_cast<uint64_t>(cols), ld));
    if (batch > 1) {
      const int32_t count = static_cast<int32_t>(batch);
      RCUDA_CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(
          layout_, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof(count)));
      RCUDA_CUBLAS_CHECK(
          cublasLtMatrixLayoutSetAttribute(layout_, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                                           &batch_stride, sizeof(batch_stride)));
    }
  }
  ~MatrixLayout() { cublasLtMatrixLayoutDestroy(layout_); }
  MatrixLayout(const MatrixLayout&) = delete;
  MatrixLayout& operator=(const MatrixLayout&) = delete;
  cublasLtMatrixLayout_t get() const { return layout_; }

 private:
  cublasLtMatrixLayout_t layout_ = nullptr;
};

class Preference {
 public:
  Preference() { RCUDA_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref_)); }
  ~Preference() { cublasLtMatmulPreferenceDestroy(pref_); }
  Preference(const Preference&) = delete;
  Preference& operator=(const Preference&) = delete;
  template <typename T>
  void set(cublasLtMatmulPreferenceAttributes_t attribute, const T& value) {
    RCUDA_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref_, attribute, &value, sizeof(T)));
  }
  cublasLtMatmulPreference_t get() const { return pref_; }

 private:
  cublasLtMatmulPreference_t pref_ = nullptr;
};

// ---- One cublasLtMatmul problem ----

// A matrix as cuBLASLt reads it: column-major rows x cols with leading dimension ld (for an
// operand: as stored, i.e. before `op` is applied), matrices batch_stride elements apart.
struct LtMatrix {
  cudaDataType_t type = CUDA_R_32F;
  cublasOperation_t op = CUBLAS_OP_N;  // operands only
  int64_t rows = 0, cols = 0, ld = 1, batch_stride = 0;
  void* data = nullptr;
};

// D = alpha * scale_a * scale_b * op(A) op(B) + beta * D, in place (C is D).
struct LtProblem {
  int device = 0;
  cublasComputeType_t compute = CUBLAS_COMPUTE_32F;
  cudaDataType_t scale_type = CUDA_R_32F;
  LtMatrix a, b, d;
  int64_t batch = 1;
  const void* alpha = nullptr;  // host values of scale_type
  const void* beta = nullptr;
  const void* scale_a = nullptr;  // fp8 only: device float32 scales of A and B
  const void* scale_b = nullptr;
  const void* bias = nullptr;  // D's type, one per row of D (cuBLASLt's bias epilogue), or none
  // BIAS adds bias; BGRADB writes into it the sums of B over K, one per column of D.
  cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
};

size_t type_size(cudaDataType_t type) {
  switch (type) {
    case CUDA_R_64F:
      return 8;
    case CUDA_R_32F:
      return 4;
    case CUDA_R_16F:
    case CUDA_R_16BF:
      return 2;
    default:
      return 1;  // fp8
  }
}

// The alignment in bytes (up to 16, what vectorised kernels need) that every matrix of the
// batch has. The heuristic never sees the pointers and assumes 256 unless told, so a view that
// starts mid-row could otherwise get a kernel whose 16-byte loads its address does not allow.
uint32_t alignment(const LtMatrix& m, int64_t batch) {
  uintptr_t bits = reinterpret_cast<uintptr_t>(m.data);
  if (batch > 1) bits |= static_cast<uintptr_t>(m.batch_stride) * type_size(m.type);
  uint32_t align = 1;
  while (align < 16 && (bits & align) == 0) align <<= 1;
  return align;
}

struct CachedAlgo {
  cublasLtMatmulAlgo_t algo;
  size_t workspace_bytes;
  bool found;  // false: the heuristic has no algorithm for the problem
};

// Everything the heuristic sees of a problem (its pointers only through their alignment).
using ProblemKey = std::array<int64_t, 28>;

ProblemKey problem_key(const LtProblem& p) {
  ProblemKey key{
      p.device,
      p.compute,
      p.scale_type,
      p.batch,
      alignment(p.a, p.batch),
      alignment(p.b, p.batch),
      alignment(p.d, p.batch),
      p.scale_a != nullptr,
      p.epilogue,
      p.bias != nullptr
          ? alignment(LtMatrix{p.d.type, CUBLAS_OP_N, 0, 0, 1, 0, const_cast<void*>(p.bias)}, 1)
          : 0};
  size_t i = 10;
  for (const LtMatrix* m : {&p.a, &p.b, &p.d})
    for (int64_t v : {int64_t{m->type}, int64_t{m->op}, m->rows, m->cols, m->ld,
                      p.batch > 1 ? m->batch_stride : 0})
      key[i++] = v;
  return key;
}

struct AlgoCache {
  std::mutex mutex;
  std::map<ProblemKey, CachedAlgo> entries;
};

AlgoCache& algo_cache() {
  static AlgoCache* c = new AlgoCache();
  return *c;
}

std::string describe(const LtProblem& p) {
  auto matrix = [](const LtMatrix& m) {
    return detail::concat(m.rows, "x", m.cols, " ld ", m.ld, " type ", static_cast<int>(m.type),
                          m.op == CUBLAS_OP_T ? " (T)" : "");
  };
  return detail::concat("A ", matrix(p.a), ", B ", matrix(p.b), ", D ", matrix(p.d), ", batch ",
                        p.batch, ", compute type ", static_cast<int>(p.compute));
}

// Note [No split-K for tiny products]
// For a product with a tiny output (an inference batch of a few rows through a small layer, as
// the MLP's 8 x 10 last layer), the heuristic may split K and add a reduction kernel: two
// launches where one would do, and in a CUDA graph each node costs about a microsecond of its own
// beyond its work (the b8 MLP's 8 x 512 x 10 product was a 4.8 us product and a 3.4 us
// reduction under Nsight Compute). Such products take the heuristic's best algorithm that does
// not split K, when it offers one.
constexpr int kHeuristicResults = 8;
constexpr int64_t kTinyOutputElements = 4096;

int32_t split_k_of(const cublasLtMatmulAlgo_t& algo) {
  int32_t split = 1;
  size_t written = 0;
  if (cublasLtMatmulAlgoConfigGetAttribute(&algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &split,
                                           sizeof(split), &written) != CUBLAS_STATUS_SUCCESS)
    return 1;
  return split;
}

int pick_algo(const LtProblem& p, const cublasLtMatmulHeuristicResult_t* results, int found) {
  if (p.d.rows * p.d.cols * p.batch > kTinyOutputElements || split_k_of(results[0].algo) <= 1)
    return 0;
  for (int i = 1; i < found; ++i)
    if (results[i].state == CUBLAS_STATUS_SUCCESS && split_k_of(results[i].algo) <= 1) return i;
  return 0;
}

// The heuristic's best algorithm for p, from the cache when p's configuration was seen before;
// found is false when it has none (a fused epilogue the problem's types or layouts lack).
CachedAlgo find_algo(const LtProblem& p, const ProblemKey& key, const MatmulDesc& desc,
                     const MatrixLayout& a, const MatrixLayout& b, const MatrixLayout& d) {
  const uint32_t align_a = static_cast<uint32_t>(key[4]), align_b = static_cast<uint32_t>(key[5]),
                 align_d = static_cast<uint32_t>(key[6]);
  AlgoCache& cache = algo_cache();
  {
    std::lock_guard<std::mutex> lock(cache.mutex);
    const auto it = cache.entries.find(key);
    if (it != cache.entries.end()) return it->second;
  }
  Preference pref;
  pref.set(CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, uint64_t{kMaxWorkspaceBytes});
  pref.set(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, align_a);
  pref.set(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, align_b);
  pref.set(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, align_d);
  pref.set(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, align_d);
  std::array<cublasLtMatmulHeuristicResult_t, kHeuristicResults> results{};
  int found = 0;
  const cublasStatus_t status = cublasLtMatmulAlgoGetHeuristic(
      lt_handle(p.device), desc.get(), a.get(), b.get(), d.get(), d.get(), pref.get(),
      static_cast<int>(results.size()), results.data(), &found);
  if (status != CUBLAS_STATUS_NOT_SUPPORTED) RCUDA_CUBLAS_CHECK(status);
  const bool any = status == CUBLAS_STATUS_SUCCESS && found > 0;
  const cublasLtMatmulHeuristicResult_t& result =
      any ? results[static_cast<size_t>(pick_algo(p, results.data(), found))] : results[0];
  const CachedAlgo entry{result.algo, result.workspaceSize, any};
  std::lock_guard<std::mutex> lock(cache.mutex);
  cache.entries.emplace(key, entry);
  return entry;
}

// Note [cuBLASLt plans]
struct Plan {
  Plan(const LtProblem& p, const ProblemKey& key)
      : desc(p.compute, p.scale_type),
        a(p.a.type, p.a.rows, p.a.cols, p.a.ld, p.batch, p.a.batch_stride),
        b(p.b.type, p.b.rows, p.b.cols, p.b.ld, p.batch, p.b.batch_stride),
        d(p.d.type, p.d.rows, p.d.cols, p.d.ld, p.batch, p.d.batch_stride) {
    desc.set(CUBLASLT_MATMUL_DESC_TRANSA, static_cast<int32_t>(p.a.op));
    desc.set(CUBLASLT_MATMUL_DESC_TRANSB, static_cast<int32_t>(p.b.op));
    if (p.scale_a != nullptr) desc.set(CUBLASLT_MATMUL_DESC_FAST_ACCUM, int8_t{0});  // torch's
    if (p.epilogue != CUBLASLT_EPILOGUE_DEFAULT)
      desc.set(CUBLASLT_MATMUL_DESC_EPILOGUE, p.epilogue);
    // The heuristic sees the epilogue but not the pointers: set them to something first.
    set_pointers(p);
    algo = find_algo(p, key, desc, a, b, d);
  }
  void set_pointers(const LtProblem& p) {
    if (p.scale_a != nullptr) {  // use_fast_accum=False above
      desc.set(CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, p.scale_a);
      desc.set(CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, p.scale_b);
    }
    if (p.bias != nullptr) desc.set(CUBLASLT_MATMUL_DESC_BIAS_POINTER, p.bias);
  }
  MatmulDesc desc;
  MatrixLayout a, b, d;
  CachedAlgo algo{};
};

// The calling thread's plan for p (built on first use; the cache is dropped whole when it
// holds kMaxPlans, which only a program of ever-changing shapes reaches).
Plan& plan_for(const LtProblem& p) {
  constexpr size_t kMaxPlans = 1024;
  thread_local std::map<ProblemKey, std::unique_ptr<Plan>> plans;
  const ProblemKey key = problem_key(p);
  const auto it = plans.find(key);
  if (it != plans.end()) {
    it->second->set_pointers(p);
    return *it->second;
  }
  if (plans.size() >= kMaxPlans) plans.clear();
  auto plan = std::make_unique<Plan>(p, key);
  return *plans.emplace(key, std::move(plan)).first->second;
}

// Runs p with p.batch <= kMaxBatchCount; false, running nothing, when the heuristic has no
// algorithm for a fused epilogue; CudaError when it has none for a plain product.
bool run_chunk(const LtProblem& p) {
  Plan& plan = plan_for(p);
  const CachedAlgo& algo = plan.algo;
  if (!algo.found) {
    RCUDA_CHECK(p.epilogue == CUBLASLT_EPILOGUE_BGRADB, CudaError,
                "cublasLtMatmulAlgoGetHeuristic found no algorithm for ", describe(p));
    return false;
  }
  // Freed stream-ordered when this returns: the pool hands the same block to the next call.
  Tensor workspace;
  if (algo.workspace_bytes > 0)
    workspace = Tensor::empty({static_cast<int64_t>(algo.workspace_bytes)}, DType::UInt8,
                              Device(DeviceType::CUDA, p.device));
  RCUDA_CUBLAS_CHECK(cublasLtMatmul(lt_handle(p.device), plan.desc.get(), p.alpha, p.a.data,
                                    plan.a.get(), p.b.data, plan.b.get(), p.beta, p.d.data,
                                    plan.d.get(), p.d.data, plan.d.get(), &algo.algo,
                                    workspace.defined() ? workspace.data_ptr() : nullptr,
                                    algo.workspace_bytes, current_stream(p.device)));
  return true;
}

void* advance(const LtMatrix& m, int64_t batches) {
  return static_cast<char*>(m.data) +
         batches * m.batch_stride * static_cast<int64_t>(type_size(m.type));
}

// Runs p on the device's current stream, the batch in chunks of kMaxBatchCount (a fused
// bias-gradient epilogue only in one chunk). False as run_chunk.
bool lt_matmul(const LtProblem& p) {
  if (p.batch <= kMaxBatchCount) return run_chunk(p);
  for (int64_t start = 0; start < p.batch; start += kMaxBatchCount) {
    LtProblem chunk = p;
    chunk.batch = std::min(kMaxBatchCount, p.batch - start);
    chunk.a.data = advance(p.a, start);
    chunk.b.data = advance(p.b, start);
    chunk.d.data = advance(p.d, start);
    run_chunk(chunk);
  }
  return true;
}

// ---- Layouts of rcuda matrices ----

// A rows x cols matrix that is row-major (unit column stride) or column-major (unit row stride)
// with leading dimension ld; strides of size-1 dims do not matter.
struct MatrixView {
  bool row_major;
  int64_t ld;
};

std::optional<MatrixView> matrix_view(int64_t rows, int64_t cols, int64_t row_stride,
                                      int64_t col_stride) {
  const int64_t min_row_ld = std::max<int64_t>(1, cols), min_col_ld = std::max<int64_t>(1, rows);
  if ((col_stride == 1 || cols == 1) && (rows == 1 || row_stride >= min_row_ld))
    return MatrixView{true, rows == 1 ? min_row_ld : row_stride};
  if ((row_stride == 1 || rows == 1) && (cols == 1 || col_stride >= min_col_ld))
    return MatrixView{false, cols == 1 ? min_col_ld : col_stride};
  return std::nullopt;
}

// Of the matrices of a [B, rows, cols] tensor.
std::optional<MatrixView> matrix_view(const Tensor& t) {
  return matrix_view(t.size(1), t.size(2), t.stride(1), t.stride(2));
}

// t when its matrices have a cuBLASLt layout, else a contiguous copy; a batch stride of 0 is
// kept (one matrix copied, not B).
Tensor lt_operand(const Tensor& t) {
  if (matrix_view(t)) return t;
  const int64_t batch = t.size(0);
  const int64_t copies = t.stride(0) == 0 ? 1 : batch;
  Tensor tmp = Tensor::empty({copies, t.size(1), t.size(2)}, t.dtype(), t.device());
  device_copy(tmp, t.narrow(0, 0, copies));
  return copies == batch ? tmp : tmp.expand({batch, t.size(1), t.size(2)});
}

// The operand cuBLASLt multiplies as a rows x cols matrix: t's matrices (transposed when
// `transposed`, i.e. t holds the cols x rows matrix whose transpose is multiplied).
LtMatrix lt_matrix(const Tensor& t, bool transposed, int64_t rows, int64_t cols,
                   cudaDataType_t type, int64_t batch) {
  MatrixView view = *matrix_view(t);
  if (transposed) view.row_major = !view.row_major;
  LtMatrix m;
  m.type = type;
  m.op = view.row_major ? CUBLAS_OP_T : CUBLAS_OP_N;
  m.rows = view.row_major ? cols : rows;
  m.cols = view.row_major ? rows : cols;
  m.ld = view.ld;
  m.batch_stride = batch > 1 ? t.stride(0) : 0;
  m.data = t.data_ptr();
  return m;
}

void check_sizes(const char* op, int64_t m, int64_t n, int64_t k) {
  RCUDA_CHECK(m <= INT_MAX && n <= INT_MAX && k <= INT_MAX, ValueError, op, ": sizes M=", m,
              ", N=", n, ", K=", k, " exceed cuBLASLt's 32-bit limit (", INT_MAX, ")");
}

struct GemmTypes {
  cudaDataType_t data;
  cublasComputeType_t compute;
  cudaDataType_t scale;
};

GemmTypes gemm_types(DType dtype) {
  switch (dtype) {
    case DType::Float32:
      return {CUDA_R_32F, allow_tf32() ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F,
              CUDA_R_32F};
    case DType::Float16:
      return {CUDA_R_16F, CUBLAS_COMPUTE_32F, CUDA_R_32F};
    case DType::BFloat16:
      return {CUDA_R_16BF, CUBLAS_COMPUTE_32F, CUDA_R_32F};
    case DType::Float64:
      return {CUDA_R_64F, CUBLAS_COMPUTE_64F, CUDA_R_64F};
    default:
      throw DTypeError(std::string("gemm: expected float16, bfloat16, float32 or float64, got ") +
                       dtype_name(dtype));
  }
}

// K == 0: the product is empty, so out = beta * out (zeros when beta == 0, NaN included).
void scale_output(Backend& backend, const Tensor& out, double beta) {
  if (beta == 0) {
    backend.fill(out, 0.0);
    return;
  }
  if (beta == 1) return;
  const Tensor factor = Tensor::empty({}, out.dtype(), out.device());
  backend.fill(factor, beta);
  backend.binary(BinaryOp::Mul, out, out, factor.expand(out.shape()));
}

// out = alpha a b + beta out through cublasLtMatmul. With an epilogue, out must be a contiguous
// [1,M,N]: BIAS adds bias [N] to every row of out; BGRADB writes into bias [M] the row sums of a
// (the sums over the product's K; see linear_weight_grad). False, having run nothing, when
// cuBLASLt has no algorithm for a BGRADB problem.
bool gemm_lt(const Tensor& out, const Tensor& a, const Tensor& b, double alpha, double beta,
             const GemmTypes& types, const void* bias,
             cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_DEFAULT) {
  const int64_t batch = out.size(0), m = out.size(1), n = out.size(2), k = a.size(2);
  const int device = out.device().index;

  const Tensor a_lt = lt_operand(a), b_lt = lt_operand(b);
  // The output needs a temporary when it is in neither layout (or one matrix repeated over the
  // batch); its old values are only read when beta != 0.
  const bool direct = matrix_view(out) && (batch == 1 || out.stride(0) != 0);
  Tensor c = out;
  if (!direct) {
    c = Tensor::empty({batch, m, n}, out.dtype(), out.device());
    if (beta != 0) device_copy(c, out);
  }

  // Note [cuBLASLt row-major products]
  const MatrixView c_view = *matrix_view(c);
  LtProblem p;
  p.device = device;
  p.compute = types.compute;
  p.scale_type = types.scale;
  p.batch = batch;
  if (c_view.row_major) {  // D^T [N,M] = b^T a^T
    p.a = lt_matrix(b_lt, true, n, k, types.data, batch);
    p.b = lt_matrix(a_lt, true, k, m, types.data, batch);
    p.d = {types.data, CUBLAS_OP_N, n, m, c_view.ld, batch > 1 ? c.stride(0) : 0, c.data_ptr()};
  } else {  // D [M,N] = a b
    p.a = lt_matrix(a_lt, false, m, k, types.data, batch);
    p.b = lt_matrix(b_lt, false, k, n, types.data, batch);
    p.d = {types.data, CUBLAS_OP_N, m, n, c_view.ld, batch > 1 ? c.stride(0) : 0, c.data_ptr()};
  }
  const float alpha32 = static_cast<float>(alpha), beta32 = static_cast<float>(beta);
  const bool doubles = types.scale == CUDA_R_64F;
  p.alpha = doubles ? static_cast<const void*>(&alpha) : &alpha32;
  p.beta = doubles ? static_cast<const void*>(&beta) : &beta32;
  RCUDA_CHECK(bias == nullptr || (direct && c_view.row_major && batch == 1), InternalError,
              "linear: the bias epilogue needs a contiguous output");
  p.bias = bias;
  p.epilogue = epilogue;
  if (!lt_matmul(p)) return false;
  if (!direct) device_copy(out, c);
  return true;
}

}  // namespace

void CudaBackend::gemm(const Tensor& out, const Tensor& a, const Tensor& b, double alpha,
                       double beta) {
  const int64_t batch = out.size(0), m = out.size(1), n = out.size(2), k = a.size(2);
  const GemmTypes types = gemm_types(out.dtype());
  if (batch == 0 || m == 0 || n == 0) return;
  const int device = out.device().index;
  DeviceGuard guard(device);
  if (k == 0) {
    scale_output(*this, out, beta);
    return;
  }
  check_sizes("gemm", m, n, k);
  gemm_lt(out, a, b, alpha, beta, types, nullptr);
}

void CudaBackend::linear(const Tensor& out, const Tensor& x, const Tensor& weight,
                         const Tensor& bias) {
  const int64_t m = out.size(0), n = out.size(1), k = x.size(1);
  const GemmTypes types = gemm_types(out.dtype());
  if (m == 0 || n == 0) return;
  const Tensor out3 = out.unsqueeze(0), x3 = x.unsqueeze(0), w3 = weight.t().unsqueeze(0);
  // The epilogue adds one bias per row of cuBLASLt's D, which is a row-major out's column
  // (Note [cuBLASLt row-major products]); float64 products have no epilogue in cuBLASLt.
  const bool epilogue = bias.defined() && k > 0 && out.dtype() != DType::Float64 &&
                        out.is_contiguous() && bias.is_contiguous() &&
                        reinterpret_cast<uintptr_t>(bias.data_ptr()) % 16 == 0;
  if (!epilogue) {
    if (bias.defined()) copy(out, bias.expand(out.shape()));
    gemm(out3, x3, w3, 1.0, bias.defined() ? 1.0 : 0.0);
    return;
  }
  DeviceGuard guard(out.device().index);
  check_sizes("linear", m, n, k);
  gemm_lt(out3, x3, w3, 1.0, 0.0, types, bias.data_ptr(), CUBLASLT_EPILOGUE_BIAS);
}

// grad_weight [N,K] = grad_out^T x with grad_bias in the same kernel: in the row-major mapping
// (Note [cuBLASLt row-major products]) cuBLASLt's D is grad_weight^T [K,N] = x^T grad_out, its B
// is grad_out [M,N] and the GEMM's K is M, so BGRADB's sums of B over K, one per column of D,
// are grad_out's column sums: grad_bias.
bool CudaBackend::linear_weight_grad(const Tensor& grad_weight, const Tensor& grad_bias,
                                     const Tensor& grad_out, const Tensor& x) {
  const int64_t n = grad_weight.size(0), k = grad_weight.size(1), m = x.size(0);
  if (grad_weight.dtype() == DType::Float64 || m == 0 || n == 0 || k == 0 ||
      !grad_weight.is_contiguous() || !grad_bias.is_contiguous() ||
      reinterpret_cast<uintptr_t>(grad_bias.data_ptr()) % 16 != 0)
    return false;
  DeviceGuard guard(grad_weight.device().index);
  check_sizes("linear_weight_grad", n, k, m);
  return gemm_lt(grad_weight.unsqueeze(0), grad_out.t().unsqueeze(0), x.unsqueeze(0), 1.0, 0.0,
                 gemm_types(grad_weight.dtype()), grad_bias.data_ptr(), CUBLASLT_EPILOGUE_BGRADB);
}

// ---- float8 scaled products ----

namespace {

void check_fp8_capability(int device) {
  int major = 0, minor = 0;
  RCUDA_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  RCUDA_CUDA_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device));
  RCUDA_CHECK(major * 10 + minor >= 89, DeviceError,
              "scaled_mm: float8 matrix products need a GPU of compute capability 8.9 or newer "
              "(Ada, Hopper or later), but cuda:",
              device, " has compute capability ", major, ".", minor);
}

bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15u) == 0; }

// A 2-D float8 operand whose dim k_dim is contiguous (Note [fp8 operand layouts]), with a
// 16-byte aligned address and leading dimension, as cuBLASLt's fp8 kernels need: t itself when
// it is, else a copy in that layout.
Tensor fp8_operand(const Tensor& t, int k_dim) {
  const int other = 1 - k_dim;
  const int64_t ld = t.size(other) == 1 ? t.size(k_dim) : t.stride(other);
  if (t.stride(k_dim) == 1 && ld >= t.size(k_dim) && ld % 16 == 0 && aligned16(t.data_ptr()))
    return t;
  const Tensor packed = Tensor::empty({t.size(other), t.size(k_dim)}, t.dtype(), t.device());
  Tensor view = k_dim == 1 ? packed : packed.t();
  device_copy(view, t);
  return view;
}

int64_t fp8_ld(const Tensor& t, int k_dim) {
  const int other = 1 - k_dim;
  return t.size(other) == 1 ? t.size(k_dim) : t.stride(other);
}

cudaDataType_t cuda_type(DType dtype) {
  switch (dtype) {
    case DType::Float8E4M3FN:
      return CUDA_R_8F_E4M3;
    case DType::Float8E5M2:
      return CUDA_R_8F_E5M2;
    case DType::Float16:
      return CUDA_R_16F;
    case DType::BFloat16:
      return CUDA_R_16BF;
    case DType::Float32:
      return CUDA_R_32F;
    default:
      throw DTypeError(std::string("scaled_gemm: unsupported dtype ") + dtype_name(dtype));
  }
}

// cuBLASLt answers CUBLAS_STATUS_NOT_SUPPORTED for a scale pointer that is not 16-byte aligned
// (an element of a scale vector, as fp8_linear's were at first): such a scale is copied into a
// one-element tensor of its own, which the pool aligns (a 4-byte stream-ordered copy).
Tensor aligned_scale(const Tensor& scale) {
  if (aligned16(scale.data_ptr())) return scale;
  const Tensor copy = Tensor::empty({}, DType::Float32, scale.device());
  device_copy(copy, scale);
  return copy;
}

}  // namespace

void CudaBackend::scaled_gemm(const Tensor& out, const Tensor& a, const Tensor& b,
                              const Tensor& scale_a, const Tensor& scale_b, const Tensor& bias) {
  const int64_t m = out.size(0), n = out.size(1), k = a.size(1);
  if (m == 0 || n == 0) return;
  const int device = out.device().index;
  DeviceGuard guard(device);
  check_fp8_capability(device);
  if (k == 0) {
    if (bias.defined())
      copy(out, bias.expand({m, n}));
    else
      fill(out, 0.0);
    return;
  }
  check_sizes("scaled_mm", m, n, k);
  const Tensor a_lt = fp8_operand(a, 1), b_lt = fp8_operand(b, 0);
  // D^T [N,M] column-major is out [M,N] row-major; its rows must be 16-byte aligned too.
  const int64_t out_ld = m == 1 ? n : out.stride(0);
  const bool direct = (out.stride(1) == 1 || n == 1) && out_ld >= n && aligned16(out.data_ptr()) &&
                      (out_ld * static_cast<int64_t>(out.element_size())) % 16 == 0;
  const Tensor c = direct ? out : Tensor::empty({m, n}, out.dtype(), out.device());

  // Note [cuBLASLt row-major products]: D^T = b^T a^T, "TN" in cuBLASLt's terms, each operand
  // stored K-major; cuBLASLt's A is b, so A's scale is scale_b.
  LtProblem p;
  p.device = device;
  p.compute = CUBLAS_COMPUTE_32F;
  p.scale_type = CUDA_R_32F;
  p.a = {cuda_type(b.dtype()), CUBLAS_OP_T, k, n, fp8_ld(b_lt, 0), 0, b_lt.data_ptr()};
  p.b = {cuda_type(a.dtype()), CUBLAS_OP_N, k, m, fp8_ld(a_lt, 1), 0, a_lt.data_ptr()};
  p.d = {cuda_type(out.dtype()), CUBLAS_OP_N, n, m, direct ? out_ld : n, 0, c.data_ptr()};
  const float one = 1.0f, zero = 0.0f;
  p.alpha = &one;
  p.beta = &zero;
  const Tensor sa = aligned_scale(scale_a), sb = aligned_scale(scale_b);
  p.scale_a = sb.data_ptr();
  p.scale_b = sa.data_ptr();
  // The bias goes in the epilogue (one per row of cuBLASLt's D, a column of out) for 16-bit
  // outputs, whose fp8 kernels take a bias of the output's type; float32 outputs add it after.
  const bool epilogue =
      bias.defined() && out.dtype() != DType::Float32 && aligned16(bias.data_ptr());
  if (epilogue) {
    p.epilogue = CUBLASLT_EPILOGUE_BIAS;
    p.bias = bias.data_ptr();
  }
  lt_matmul(p);
  if (!direct) device_copy(out, c);
  if (bias.defined() && !epilogue) binary(BinaryOp::Add, out, out, bias.expand({m, n}));
}

}  // namespace rcuda::cuda
