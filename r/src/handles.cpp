// Tensors as R external pointers, and keeping GPU memory in step with R's garbage collector.
//
// Note [GC pressure]
// ~~~~~~~~~~~~~~~~~~
// R sees an rcuda_tensor as a few bytes, so it has no reason to collect while the device fills
// with tensors nobody references: in a training loop every step leaves its activations and
// outputs behind in R variables that the next step overwrites. Two things close the gap:
//  1. Bytes of new storage that reach R are counted per device type. When the count since the
//     last collection passes the threshold, the glue runs a minor collection of R's young
//     generation (gc(full = FALSE): the garbage of the last few steps is young). The threshold
//     follows the loop's peak: rcuda.gc_live_fraction (default 0.1) of the bytes allocated
//     just after the previous collection plus the bytes of one training step (3 below; a step
//     holds its new tensors at its peak, as activations saved for backward), at least
//     rcuda.gc_min_bytes (1 MiB), so that unreachable tensors add about a tenth to the peak.
//     GPU memory has a floor of its own, rcuda.gc_cuda_min_bytes (16 MiB), which the time rule
//     may raise up to 4 times: on the H200 a minor collection every second step of the MLP
//     784-512-512-10 loop (about 29 MB live, 2 MB new a step) made its 340 us step 940 us with
//     the 1 MiB floor (620 us with the fraction allowed up to 0.4), while PyTorch's own loop
//     holds about 98 MB, so up to 64 MB of garbage still leaves the loop below PyTorch's peak.
//     The time rule: a minor collection marks from R's roots (the symbol table among them) and
//     the old-to-young references, and does not visit dead objects (only their finalizers
//     run), so its cost hardly depends on the garbage (0.6-0.7 ms in a bare R session on the
//     development VM) and collecting twice as often costs about twice the time.
//     After a collection that took more than rcuda.gc_time_fraction (0.05) of the interval
//     since the one before, the threshold's fraction doubles, at most to
//     rcuda.gc_max_live_fraction (default 0.1, the live fraction itself: memory first; raise it
//     to trade memory for time); after one under a fifth of that share, it halves back.
//     rcuda.gc_threshold caps the threshold (a fraction of device memory; the CPU: 1 GiB). The
//     options are read when the package loads.
//  2. A minor collection does not look at tensors that survived an earlier one (R moved them to
//     an older generation), so when what stays allocated after a minor collection exceeds what
//     the last full collection left by more than the garbage allowed (the largest fraction of
//     it and of a step, plus a threshold), a full collection follows. One that freed less than
//     that found the growth alive (an evaluation loop's activations): the next waits for the
//     time rule while the growth stays within twice that (collect_young()). On host memory the
//     time rule also applies to the garbage allowed: while full collections take more than
//     rcuda.gc_time_fraction of the time since the previous one, the bound doubles, up to 64
//     times and 64 MiB past it, and halves back once they are cheap (R loops over small tensors).
//  3. Where a collection runs decides what it keeps: one in the middle of a step finds that
//     step's activations referenced and moves them to R's older generation, where they outlive
//     the step until R collects that generation. The optimizer's zero_grad() and step() are
//     step boundaries, where little but parameters, optimizer state and the batch is
//     referenced: once one has been seen, a collection due waits for the next
//     (gc_safe_point()), unless new bytes reach kSafePointSlack times the threshold plus a step
//     first (a loop that stopped calling the optimizer), which then collects at once until the
//     next boundary. The bytes between two boundaries of one kind are the step's bytes of 1.
//     rcuda.gc_safe_points = FALSE turns the waiting off.
//  4. An OOM hook (cuda::add_oom_hook) runs a full R_gc() when an allocation fails, before the
//     pool retries. The hook runs inside an engine call made from R, so it is on R's main thread;
//     any other thread (a data loader, a CUDA callback) returns at once, as does a nested call.
//     Host memory gets the same: the glue registers a CPU allocator (RetryingCpuAllocator) that
//     forwards to the engine's and, when an allocation on R's main thread throws
//     OutOfMemoryError, runs the full collection and tries once more.
// Collections run the finalizers below, which drop handles and give memory back to the pool.
//
// Note [Unreferenced tensors are released at step boundaries]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// Collections cost a fixed millisecond or so each (Note [GC pressure]), and a step of a small
// CNN leaves tens of megabytes of activations behind in R handles: collecting often enough to
// keep the peak near PyTorch's would double the step. R counts references, though (REFCNT,
// R >= 4.0): every binding in an environment, list element, attribute, promise value and
// argument list counts one; the finalizer's weak reference counts one more. At the
// optimizer's step boundaries (Note [GC pressure] 3), a handle of large storage (one with a
// finalizer of its own) whose count is back to what it was when the handle was made is
// referenced by no R object: its tensor is dropped there and then, and the memory goes back
// to the pool without a collection. Forward activations become such handles as soon as the
// module's forward() returns (R clears the frame of a call whose environment nobody kept).
// The one value R does not count is an operand waiting on the byte-code interpreter's stack
// while the other operand runs, as `model(x) + train_step()` where train_step() calls the
// optimizer: that handle is released under the expression, and using it is an error that says
// so (never freed memory read: the handle is emptied, not left dangling). Handles kept by
// garbage that R has not collected yet (an old list) still count, and wait for a collection.
// rcuda.release_unreferenced = FALSE turns the release off.
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
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <memory>
#include <thread>
#include <unordered_map>

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

// Note [Unreferenced tensors are released at step boundaries]: the handles of large storage,
// each with R's reference count when it was made, and the tag a released handle carries.
bool release_unreferenced = true;  // rcuda.release_unreferenced
std::unordered_map<SEXP, int> tracked;
SEXP released_tag() {
  static SEXP tag = Rf_install("rcuda_released_at_step_boundary");
  return tag;
}

void finalize_tracked(SEXP ptr) {
  tracked.erase(ptr);
  finalize<Tensor>(ptr);
}

// An external pointer to a new handle: in a batch for small storage, else with its finalizer.
SEXP make_handle(Tensor t) {
  if (t.storage()->nbytes() > kSmallStorageBytes) {
    SEXP ptr = PROTECT(R_MakeExternalPtr(new Tensor(std::move(t)), R_NilValue, R_NilValue));
    R_RegisterCFinalizerEx(ptr, finalize_tracked, TRUE);
    tracked.emplace(ptr, -1);  // wrap() records the count once the handle is complete
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

// Note [GC pressure] 1: per device type, bytes since the last collection and the threshold.
struct Pressure {
  int64_t pending = 0;
  int64_t threshold = -1;       // computed at the first tensor, then after each collection
  int64_t cap = -1;             // CPU: 1 GiB; CUDA: gc_fraction of the device's memory
  double scale = 1;             // the time rule's factor on the live fraction
  int64_t live_after_full = 0;  // allocated just after the last full collection
  std::chrono::steady_clock::time_point last_end = std::chrono::steady_clock::now();
  // The last full collection's end and duration (the time rule for full collections).
  std::chrono::steady_clock::time_point last_full_end = std::chrono::steady_clock::now();
  double last_full_seconds = 0;
  // 0 after a full collection that freed at least the garbage allowed; after one that did not,
  // the growth up to which the next full one waits for the time rule (Note [GC pressure] 2).
  double wait_below = 0;
  // The time rule's factor on the garbage that full collections allow (host memory only).
  double full_scale = 1;
  // Counters for rc_gc_state (benchmarks and tests).
  double young = 0, full = 0, at_safe_point = 0, seconds = 0, released = 0;
  Device device;  // the last one that counted bytes here (the index of a CUDA device)
  // Note [GC pressure] 3: bytes counted in all, that count at the last safe point of each kind,
  // and the bytes of the last whole step (between two safe points of one kind).
  int64_t counted = 0;
  int64_t counted_at[2] = {-1, -1};
  int64_t step_bytes = 0;
};
Pressure pressure[kNumDeviceTypes];
// Options read when the package loads (rc_init; R/zzz.R and the Note).
double gc_fraction = 0.25;        // rcuda.gc_threshold: the cap, a fraction of device memory
double live_fraction = 0.1;       // rcuda.gc_live_fraction: the threshold, of the live bytes
double max_live_fraction = 0.1;   // rcuda.gc_max_live_fraction: how far the time rule may go
int64_t min_threshold = 1 << 20;  // rcuda.gc_min_bytes: the threshold's floor
// rcuda.gc_cuda_min_bytes: the floor for GPU memory, which the time rule may raise up to
// kCudaFloorScale times (Note [GC pressure] 1).
int64_t cuda_min_threshold = int64_t{16} << 20;
constexpr double kCudaFloorScale = 4;
// Host memory: how far the time rule may raise the garbage that full collections allow
// (Note [GC pressure] 2), in factors and at most in bytes.
constexpr double kFullScaleMax = 64;
constexpr double kFullSlackBytes = 64.0 * (1 << 20);
double time_fraction = 0.05;  // rcuda.gc_time_fraction: the time rule's share of time
// Note [GC pressure] 3: once an optimizer has marked a step boundary, a collection due waits for
// the next one, up to this many thresholds of new bytes.
constexpr int64_t kSafePointSlack = 2;
bool safe_points = true;  // rcuda.gc_safe_points
bool safe_points_seen = false;

std::thread::id main_thread;
bool in_gc = false;
int oom_hook_id = -1;

int64_t allocated_bytes(Device device) {
  return device.is_cuda() ? cuda::memory_stats(device.index).allocated_bytes
                          : cpu_allocator().stats().allocated_bytes;
}

void reset_pending() {
  for (Pressure& p : pressure) p.pending = 0;
}

// A full collection: the OOM hook's, when memory has run out.
void collect_full() {
  if (in_gc) return;
  in_gc = true;
  R_gc();
  in_gc = false;
  reset_pending();
}

// The threshold after a collection that left `live` bytes allocated: a fraction of those and of
// a step's new bytes (which the step holds at its peak, as activations saved for backward).
int64_t next_threshold(const Pressure& p, double live) {
  if (!std::isfinite(live_fraction)) return p.cap;
  const double fraction =
      std::min(live_fraction * p.scale, std::max(live_fraction, max_live_fraction));
  const double floor_bytes = p.device.is_cuda() ? static_cast<double>(cuda_min_threshold) * p.scale
                                                : static_cast<double>(min_threshold);
  const double wanted =
      std::max(floor_bytes, fraction * (live + static_cast<double>(p.step_bytes)));
  return static_cast<int64_t>(std::min(static_cast<double>(p.cap), wanted));
}

// A minor collection (R's young generation), then the device's next threshold.
void collect_young(Device device, bool safe_point) {
  if (in_gc) return;
  static SEXP call = [] {
    SEXP c = Rf_lang4(Rf_install("gc"), Rf_ScalarLogical(FALSE), Rf_ScalarLogical(FALSE),
                      Rf_ScalarLogical(FALSE));  // gc(verbose, reset, full)
    R_PreserveObject(c);
    return c;
  }();
  Pressure& p = pressure[static_cast<int>(device.type)];
  const auto start = std::chrono::steady_clock::now();
  in_gc = true;
  Rf_eval(call, R_BaseEnv);
  p.young += 1;
  p.at_safe_point += safe_point;
  // Tensors still referenced at a minor collection move to R's older generations, where later
  // minor collections do not look: when what stays allocated has grown past what the last full
  // collection left by more than the garbage allowed, a full one runs. What stays allocated
  // includes what the running code still references (a collection in the middle of a forward
  // pass over a batch of 1,000 images finds hundreds of megabytes of activations alive), which
  // no full collection frees. After a full one that freed less than the garbage allowed, the
  // next waits until full ones take at most rcuda.gc_time_fraction of the time, so that a loop
  // without step boundaries (an evaluation loop) does not run one after every minor
  // collection; but only while the growth stays within twice what that one found alive (at
  // most the threshold's cap): a loop rebinding a large tensor finds the first one alive, and
  // its dead predecessors then pile up in the older generation past that bound, where a full
  // collection frees them.
  const int64_t after = allocated_bytes(device);
  const double growth = static_cast<double>(after - p.live_after_full);
  const double base_allowed = std::max(live_fraction, max_live_fraction) *
                                  static_cast<double>(p.live_after_full + p.step_bytes) +
                              static_cast<double>(p.threshold);
  // A loop over small CPU tensors (a few hundred kilobytes, as in R code that transforms data)
  // leaves each result promoted by the minor collection that found it bound, and a full
  // collection (tens of milliseconds with a large R heap) then followed every second minor one:
  // 400 additions of 1e5 doubles took 3.8 s, 3.5 s of it in 95 full collections. So while full
  // collections take more than the time rule's share since the previous one, host memory lets
  // the older generation hold more garbage, doubling up to kFullScaleMax times the usual bound
  // and kFullSlackBytes past it (0.3 s for that loop).
  const double allowed = device.is_cuda()
                             ? base_allowed
                             : std::max(base_allowed, std::min(base_allowed * p.full_scale,
                                                               base_allowed + kFullSlackBytes));
  const double since_full =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - p.last_full_end).count();
  if (growth > allowed &&
      (growth > p.wait_below || p.last_full_seconds <= time_fraction * since_full)) {
    const auto full_start = std::chrono::steady_clock::now();
    R_gc();
    p.full += 1;
    p.live_after_full = allocated_bytes(device);
    const bool useful = static_cast<double>(after - p.live_after_full) >= allowed;
    p.wait_below =
        useful ? 0 : std::min(static_cast<double>(p.cap), std::max(p.wait_below, 2 * growth));
    const auto previous_end = p.last_full_end;
    p.last_full_end = std::chrono::steady_clock::now();
    p.last_full_seconds = std::chrono::duration<double>(p.last_full_end - full_start).count();
    const double interval_full =
        std::chrono::duration<double>(p.last_full_end - previous_end).count();
    if (p.last_full_seconds > time_fraction * interval_full)
      p.full_scale = std::min(p.full_scale * 2, kFullScaleMax);
    else if (p.last_full_seconds < 0.2 * time_fraction * interval_full)
      p.full_scale = std::max(p.full_scale / 2, 1.0);
  }
  in_gc = false;
  const auto end = std::chrono::steady_clock::now();
  const double took = std::chrono::duration<double>(end - start).count();
  const double interval = std::chrono::duration<double>(end - p.last_end).count();
  p.seconds += took;
  p.last_end = end;
  if (took > time_fraction * interval)
    p.scale = std::min(p.scale * 2, std::max(max_live_fraction / live_fraction,
                                             device.is_cuda() ? kCudaFloorScale : 1.0));
  else if (took < 0.2 * time_fraction * interval)
    p.scale = std::max(p.scale / 2, 1.0);
  p.threshold = next_threshold(p, static_cast<double>(allocated_bytes(device)));
  reset_pending();
}

// Note [GC pressure] 4, for host memory. Storage keeps the allocator that made it, so tensors
// made before registration free through the engine's allocator directly; both paths end there.
class RetryingCpuAllocator final : public Allocator {
 public:
  void* allocate(size_t nbytes) override {
    try {
      return cpu_allocator().allocate(nbytes);
    } catch (const OutOfMemoryError&) {
      if (std::this_thread::get_id() != main_thread || in_gc) throw;
    }
    collect_full();
    return cpu_allocator().allocate(nbytes);
  }
  void deallocate(void* ptr, size_t nbytes) override { cpu_allocator().deallocate(ptr, nbytes); }
  Device device() const override { return cpu_allocator().device(); }
  MemoryStats stats() const override { return cpu_allocator().stats(); }
  void reset_peak() override { cpu_allocator().reset_peak(); }
};

Allocator& retrying_cpu_allocator(int /*device_index*/) {
  // Never destroyed: storage made through it may outlive the package's unload hooks.
  static RetryingCpuAllocator* allocator = new RetryingCpuAllocator();
  return *allocator;
}

Pressure& pressure_for(Device device) {
  Pressure& p = pressure[static_cast<int>(device.type)];
  if (p.cap < 0) {
    p.cap = device.is_cuda()
                ? static_cast<int64_t>(
                      gc_fraction *
                      static_cast<double>(cuda::properties(device.index).total_memory_bytes))
                : int64_t{1} << 30;
    const int64_t floor_bytes = device.is_cuda() ? cuda_min_threshold : min_threshold;
    p.threshold = std::isfinite(live_fraction) ? std::min(p.cap, floor_bytes) : p.cap;
  }
  return p;
}

void account(const Tensor& t) {
  // A view shares its storage: count bytes only the first time storage reaches R.
  if (t.storage().use_count() > 1) return;
  const Device device = t.device();
  Pressure& p = pressure_for(device);
  p.device = device;
  const auto bytes = static_cast<int64_t>(t.storage()->nbytes());
  p.pending += bytes;
  p.counted += bytes;
  if (p.pending <= p.threshold) return;
  // Note [GC pressure] 3: wait for the optimizer's next call, within the slack.
  if (safe_points_seen && p.pending <= kSafePointSlack * (p.threshold + p.step_bytes)) return;
  safe_points_seen = false;  // they stopped coming: collect where thresholds pass until one does
  collect_young(device, false);
}

// Note [Unreferenced tensors are released at step boundaries]. The bytes that go back to the
// pool come off the collector's count: they are no longer garbage waiting for it.
void release_unreferenced_handles() {
  for (auto it = tracked.begin(); it != tracked.end();) {
    SEXP ptr = it->first;
    if (it->second < 0 || REFCNT(ptr) > it->second) {
      ++it;
      continue;
    }
    auto* t = static_cast<Tensor*>(R_ExternalPtrAddr(ptr));
    if (t != nullptr && t->defined() && t->storage().use_count() == 1) {
      Pressure& p = pressure[static_cast<int>(t->device().type)];
      p.pending = std::max<int64_t>(0, p.pending - static_cast<int64_t>(t->storage()->nbytes()));
      p.released += 1;
    }
    R_ClearExternalPtr(ptr);
    delete t;
    R_SetExternalPtrTag(ptr, released_tag());
    it = tracked.erase(it);
  }
}

}  // namespace

// Note [GC pressure] 3.
void gc_safe_point(int kind) {
  if (std::this_thread::get_id() != main_thread) return;
  if (release_unreferenced) release_unreferenced_handles();
  if (!safe_points || kind == kReleaseOnly) return;
  safe_points_seen = true;
  for (Pressure& p : pressure) {
    int64_t& at = p.counted_at[kind];
    if (at >= 0) p.step_bytes = p.counted - at;
    at = p.counted;
    // A threshold set when more was allocated (before a full collection, or the user's gc())
    // comes down now rather than at the next collection; once a step (reading CUDA's pool
    // statistics costs two driver calls).
    if (p.threshold >= 0 && kind == 1)
      p.threshold =
          std::min(p.threshold, next_threshold(p, static_cast<double>(allocated_bytes(p.device))));
  }
  for (Pressure& p : pressure) {
    if (p.threshold >= 0 && p.pending > p.threshold) {
      collect_young(p.device, true);
      return;  // collect_young reset every device's count
    }
  }
}

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
  const auto it = tracked.find(ptr);
  if (it != tracked.end()) it->second = REFCNT(ptr);  // the finalizer's weak reference
  UNPROTECT(1);
  return ptr;
}

bool is_tensor(SEXP x) { return TYPEOF(x) == EXTPTRSXP && Rf_inherits(x, "rcuda_tensor"); }

SEXP wrap_tensors(const std::vector<Tensor>& tensors) {
  SEXP out = PROTECT(Rf_allocVector(VECSXP, static_cast<R_xlen_t>(tensors.size())));
  for (size_t i = 0; i < tensors.size(); ++i)
    SET_VECTOR_ELT(out, static_cast<R_xlen_t>(i), wrap(tensors[i]));
  UNPROTECT(1);
  return out;
}

SEXP list_element(SEXP list, const char* name) {
  SEXP names = Rf_getAttrib(list, R_NamesSymbol);
  if (names == R_NilValue) return R_NilValue;
  for (R_xlen_t i = 0; i < Rf_xlength(list); ++i)
    if (std::strcmp(CHAR(STRING_ELT(names, i)), name) == 0) return VECTOR_ELT(list, i);
  return R_NilValue;
}

SEXP wrap_named_tensors(const std::vector<std::pair<std::string, Tensor>>& tensors) {
  std::vector<Tensor> values;
  SEXP names = PROTECT(Rf_allocVector(STRSXP, static_cast<R_xlen_t>(tensors.size())));
  for (size_t i = 0; i < tensors.size(); ++i) {
    values.push_back(tensors[i].second);
    SET_STRING_ELT(names, static_cast<R_xlen_t>(i), Rf_mkCharCE(tensors[i].first.c_str(), CE_UTF8));
  }
  SEXP out = PROTECT(wrap_tensors(values));
  Rf_setAttrib(out, R_NamesSymbol, names);
  UNPROTECT(2);
  return out;
}

std::vector<Tensor> unwrap_tensors(SEXP list, const std::string& op, const char* what) {
  RCUDA_CHECK(TYPEOF(list) == VECSXP, ValueError, op, ": ", what, " must be a list of tensors");
  std::vector<Tensor> out;
  for (R_xlen_t i = 0; i < Rf_xlength(list); ++i) {
    SEXP t = VECTOR_ELT(list, i);
    RCUDA_CHECK(is_tensor(t), ValueError, op, ": ", what, " ", i + 1, " is not a tensor (got an R ",
                Rf_type2char(TYPEOF(t)), ")");
    out.push_back(unwrap(t));
  }
  return out;
}

const Tensor& unwrap(SEXP x) {
  if (!is_tensor(x))
    throw ValueError("expected an rcuda_tensor, got an R " + std::string(Rf_type2char(TYPEOF(x))));
  auto* t = static_cast<Tensor*>(R_ExternalPtrAddr(x));
  if (t == nullptr && R_ExternalPtrTag(x) == released_tag())
    throw ValueError(
        "the tensor was released at an optimizer step, when no R variable, list or argument "
        "referenced it (it was a temporary waiting beside a call that ran the optimizer, as "
        "`model(x) + step()`): assign it to a variable first, or set "
        "options(rcuda.release_unreferenced = FALSE) before library(rcuda)");
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
// `options`: list(threshold, live_fraction, max_live_fraction, min_bytes, time_fraction,
// safe_points, cuda_min_bytes, release_unreferenced), the rcuda.gc_* options (R/zzz.R); the
// elements missing keep their defaults.
extern "C" SEXP rc_init(SEXP options) {
  RCUDA_BEGIN
  main_thread = std::this_thread::get_id();
  const auto option = [&](int i, double fallback) {
    return Rf_xlength(options) > i && !Rf_isNull(VECTOR_ELT(options, i))
               ? Rf_asReal(VECTOR_ELT(options, i))
               : fallback;
  };
  gc_fraction = option(0, 0.25);
  live_fraction = option(1, 0.1);  // Inf: only the cap triggers a collection
  max_live_fraction = std::max(live_fraction, option(2, live_fraction));
  min_threshold = static_cast<int64_t>(std::max(0.0, option(3, 1 << 20)));
  time_fraction = option(4, 0.05);
  safe_points = option(5, 1) != 0;
  cuda_min_threshold = static_cast<int64_t>(std::max(0.0, option(6, 16 << 20)));
  release_unreferenced = option(7, 1) != 0;
  safe_points_seen = false;
  for (Pressure& p : pressure) p = Pressure();
  if (oom_hook_id < 0) {
    oom_hook_id = cuda::add_oom_hook([](int, size_t) {
      if (std::this_thread::get_id() != main_thread) return;
      collect_full();
    });
  }
  register_allocator(DeviceType::CPU, &retrying_cpu_allocator);
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
      {"cpu_pending_bytes"_nm = static_cast<double>(pressure[0].pending),
       "cuda_pending_bytes"_nm = static_cast<double>(pressure[1].pending),
       "cpu_threshold_bytes"_nm = static_cast<double>(pressure[0].threshold),
       "cuda_threshold_bytes"_nm = static_cast<double>(pressure[1].threshold),
       "cpu_step_bytes"_nm = static_cast<double>(pressure[0].step_bytes),
       "cuda_step_bytes"_nm = static_cast<double>(pressure[1].step_bytes),
       "cpu_allocated_bytes"_nm = static_cast<double>(cpu_allocator().stats().allocated_bytes),
       "cpu_peak_bytes"_nm = static_cast<double>(cpu_allocator().stats().peak_allocated_bytes),
       "cpu_young_collections"_nm = pressure[0].young,
       "cuda_young_collections"_nm = pressure[1].young,
       "cpu_full_collections"_nm = pressure[0].full, "cuda_full_collections"_nm = pressure[1].full,
       "cpu_released_tensors"_nm = pressure[0].released,
       "cuda_released_tensors"_nm = pressure[1].released,
       "safe_point_collections"_nm = pressure[0].at_safe_point + pressure[1].at_safe_point,
       "gc_seconds"_nm = pressure[0].seconds + pressure[1].seconds});
  RCUDA_END
}

// Restarts the CPU allocator's peak (cuda_reset_peak_memory_stats() for CUDA devices).
extern "C" SEXP rc_gc_reset_cpu_peak() {
  RCUDA_BEGIN
  cpu_allocator().reset_peak();
  return R_NilValue;
  RCUDA_END
}
