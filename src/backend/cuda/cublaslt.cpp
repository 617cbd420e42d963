// cuBLASLt's handles and the planning and running of one cublasLtMatmul problem (LtProblem,
// backend/cuda/cublaslt_matmul.h): descriptors, the heuristic's algorithm, cached per
// configuration. The products built on it are in cublaslt_gemm.cpp and cublaslt_fp8.cpp.
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
#include <string>

#include "backend/cuda/cublaslt_matmul.h"
#include "backend/cuda/cuda_backend.h"
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

}  // namespace

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

void check_sizes(const char* op, int64_t m, int64_t n, int64_t k) {
  RCUDA_CHECK(m <= INT_MAX && n <= INT_MAX && k <= INT_MAX, ValueError, op, ": sizes M=", m,
              ", N=", n, ", K=", k, " exceed cuBLASLt's 32-bit limit (", INT_MAX, ")");
}

}  // namespace rcuda::cuda
