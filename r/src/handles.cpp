// Tensors as R external pointers, and keeping GPU memory in step with R's garbage collector.
//
// Note [GC pressure]
// ~~~~~~~~~~~~~~~~~~
// R sees an rcuda_tensor as a few bytes, so it has no reason to collect while the device fills
// with tensors nobody references. Two things close the gap:
//  1. Bytes of new storage are counted per device type; when the count since the last
//     collection passes a threshold (option rcuda.gc_threshold, a fraction of device memory,
//     read when the package loads) the glue runs R_gc() before handing the tensor to R.
//  2. An OOM hook (cuda::add_oom_hook) runs R_gc() when an allocation fails, before the pool
//     retries. The hook runs inside an engine call made from R, so it is on R's main thread;
//     any other thread (a data loader, a CUDA callback) returns at once, as does a nested call.
// Collections run the finalizers below, which drop handles and give memory back to the pool.
//
// Note [Small tensors share a finalizer]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// Each R finalizer costs a weak reference, which R's collector keeps alive for one collection
// more than the object and then runs in a context of its own: about 2.5 us per tensor on the
// development VM, as much as the rest of `a + b` on one-element tensors. So handles whose
// storage is small (kSmallStorageBytes: scalars, arithmetic on a few elements) are kept in
// batches of kBatchSize: the batch's external pointer carries the one finalizer, and each
// tensor's external pointer keeps its batch alive through its `prot` field. A batch is freed
// once it is full and none of its tensors is reachable, so small tensors that are no longer
// referenced may hold at most the current batch plus, per live small tensor, one batch of other
// small storages (64 x 256 bytes) for a while. The storage decides, not the tensor: a small view
// of a large tensor gets a finalizer of its own, so that it never keeps the large memory alive.
#include <atomic>
#include <memory>
#include <thread>

#include "rcuda_r.h"

namespace rcuda::r {
namespace {

SEXP tensor_class() {
  static SEXP cls = [] {
    SEXP c = Rf_mkString("rcuda_tensor");
    R_PreserveObject(c);
    return c;
  }();
  return cls;
}

// Deletes what an external pointer owns (a Tensor, or a Batch of them), once.
template <typename T>
void finalize(SEXP ptr) {
  auto* owned = static_cast<T*>(R_ExternalPtrAddr(ptr));
  if (owned == nullptr) return;
  R_ClearExternalPtr(ptr);
  delete owned;  // noexcept: Storage's destructor gives the bytes back
}

// Note [Small tensors share a finalizer].
constexpr size_t kSmallStorageBytes = 256;
constexpr int kBatchSize = 64;

struct Batch {
  Tensor handles[kBatchSize];
  int used = 0;
};

// The batch being filled, kept reachable by a preserved list until the next one replaces it.
SEXP filling_batch() {
  static SEXP holder = [] {
    SEXP h = Rf_allocVector(VECSXP, 1);
    R_PreserveObject(h);
    return h;
  }();
  SEXP current = VECTOR_ELT(holder, 0);
  auto* batch = current == R_NilValue ? nullptr : static_cast<Batch*>(R_ExternalPtrAddr(current));
  if (batch != nullptr && batch->used < kBatchSize) return current;
  auto fresh = std::make_unique<Batch>();
  current = PROTECT(R_MakeExternalPtr(fresh.get(), R_NilValue, R_NilValue));
  fresh.release();
  // Not run when R exits (onexit FALSE): tensors still referenced then point into the batch.
  R_RegisterCFinalizerEx(current, finalize<Batch>, FALSE);
  SET_VECTOR_ELT(holder, 0, current);
  UNPROTECT(1);
  return current;
}

// An external pointer to a new handle: in a batch for small storage, else with its finalizer.
SEXP make_handle(Tensor t) {
  if (t.storage()->nbytes() > kSmallStorageBytes) {
    SEXP ptr = PROTECT(R_MakeExternalPtr(new Tensor(std::move(t)), R_NilValue, R_NilValue));
    R_RegisterCFinalizerEx(ptr, finalize<Tensor>, TRUE);
    UNPROTECT(1);
    return ptr;
  }
  SEXP batch = PROTECT(filling_batch());
  auto* b = static_cast<Batch*>(R_ExternalPtrAddr(batch));
  Tensor* handle = &b->handles[b->used++];
  *handle = std::move(t);
  SEXP ptr = R_MakeExternalPtr(handle, R_NilValue, batch);
  UNPROTECT(1);
  return ptr;
}

// Note [GC pressure] 1: bytes since the last collection, per device type.
int64_t pending_bytes[kNumDeviceTypes] = {0, 0};
int64_t threshold_bytes[kNumDeviceTypes] = {int64_t{1} << 30,
                                            -1};  // CPU: 1 GiB; CUDA: -1, computed on first use
double gc_fraction = 0.25;

std::thread::id main_thread;
bool in_gc = false;
int oom_hook_id = -1;

void collect() {
  if (in_gc) return;
  in_gc = true;
  R_gc();
  in_gc = false;
  for (int64_t& p : pending_bytes) p = 0;
}

int64_t threshold_for(Device device) {
  int64_t& limit = threshold_bytes[static_cast<int>(device.type)];
  if (limit < 0) {
    const double total = static_cast<double>(cuda::properties(device.index).total_memory_bytes);
    limit = static_cast<int64_t>(gc_fraction * total);
  }
  return limit;
}

void account(const Tensor& t) {
  // A view shares its storage: count bytes only the first time storage reaches R.
  if (t.storage().use_count() > 1) return;
  const Device device = t.device();
  int64_t& pending = pending_bytes[static_cast<int>(device.type)];
  pending += static_cast<int64_t>(t.storage()->nbytes());
  if (pending > threshold_for(device)) collect();
}

}  // namespace

SEXP wrap(Tensor t) {
  SEXP ptr;
  if (t.defined()) {
    account(t);
    ptr = PROTECT(make_handle(std::move(t)));
  } else {
    // Note [Undefined tensors]: no storage to count or batch by; a handle of its own.
    ptr = PROTECT(R_MakeExternalPtr(new Tensor(), R_NilValue, R_NilValue));
    R_RegisterCFinalizerEx(ptr, finalize<Tensor>, TRUE);
  }
  Rf_setAttrib(ptr, R_ClassSymbol, tensor_class());
  SET_S4_OBJECT(ptr);  // Note [Operator dispatch] in R/s4.R
  UNPROTECT(1);
  return ptr;
}

bool is_tensor(SEXP x) { return TYPEOF(x) == EXTPTRSXP && Rf_inherits(x, "rcuda_tensor"); }

const Tensor& unwrap(SEXP x) {
  if (!is_tensor(x))
    throw ValueError("expected an rcuda_tensor, got an R " + std::string(Rf_type2char(TYPEOF(x))));
  auto* t = static_cast<Tensor*>(R_ExternalPtrAddr(x));
  if (t == nullptr)
    throw ValueError("the tensor was freed (an external pointer saved and restored?)");
  if (!t->defined())
    throw ValueError(
        "the tensor is undefined (as the $grad of a tensor that has no gradient yet); "
        "check it with is_undefined_tensor()");
  return *t;
}

bool is_undefined(SEXP x) {
  if (!is_tensor(x)) return false;
  auto* t = static_cast<Tensor*>(R_ExternalPtrAddr(x));
  return t != nullptr && !t->defined();
}

Tensor optional_tensor(SEXP x) {
  if (Rf_isNull(x) || is_undefined(x)) return Tensor();
  return unwrap(x);
}

[[noreturn]] void signal_error(const char* kind, const char* message) {
  SEXP ns = PROTECT(R_FindNamespace(Rf_mkString("rcuda")));
  SEXP call = PROTECT(Rf_lang3(Rf_install("engine_error"), Rf_mkString(kind ? kind : "Error"),
                               Rf_mkString(message)));
  Rf_eval(call, ns);  // stop()s
  UNPROTECT(2);
  Rf_error("%s", message);  // not reached
}

}  // namespace rcuda::r

using namespace rcuda;
using namespace rcuda::r;

// Called from .onLoad: remembers the main thread, sets the threshold, registers the OOM hook.
extern "C" SEXP rc_init(SEXP fraction) {
  RCUDA_BEGIN
  main_thread = std::this_thread::get_id();
  gc_fraction = Rf_asReal(fraction);
  threshold_bytes[static_cast<int>(DeviceType::CUDA)] = -1;
  if (oom_hook_id < 0) {
    oom_hook_id = cuda::add_oom_hook([](int, size_t) {
      if (std::this_thread::get_id() != main_thread) return;
      collect();
    });
  }
  return R_NilValue;
  RCUDA_END
}

extern "C" SEXP rc_unload() {
  RCUDA_BEGIN
  if (oom_hook_id >= 0) cuda::remove_oom_hook(oom_hook_id);
  oom_hook_id = -1;
  return R_NilValue;
  RCUDA_END
}

// Bytes counted since the last collection, and the thresholds (for tests and diagnostics).
extern "C" SEXP rc_gc_state() {
  RCUDA_BEGIN
  using namespace cpp11::literals;
  return cpp11::writable::list(
      {"cpu_pending_bytes"_nm = static_cast<double>(pending_bytes[0]),
       "cuda_pending_bytes"_nm = static_cast<double>(pending_bytes[1]),
       "cpu_threshold_bytes"_nm = static_cast<double>(threshold_bytes[0]),
       "cuda_threshold_bytes"_nm = static_cast<double>(threshold_bytes[1]),
       "cpu_allocated_bytes"_nm = static_cast<double>(cpu_allocator().stats().allocated_bytes)});
  RCUDA_END
}
