// dist_* (R/distributed.R) and nn_distributed_data_parallel() (R/nn-distributed.R) over the
// engine's rcuda::dist: the default process group, its collectives as pending works behind
// external pointers, and the data-parallel reducer with its no_sync guards.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "rcuda/dist/data_parallel.h"
#include "rcuda/dist/process_group.h"
#include "rcuda_r.h"

using namespace rcuda;
using namespace rcuda::r;

namespace {

std::string string_arg(SEXP x) { return CHAR(STRING_ELT(x, 0)); }

dist::ProcessGroup& default_group_or_throw(const char* op) {
  auto group = dist::default_group();
  RCUDA_CHECK(group != nullptr, ValueError, op,
              ": the default process group has not been initialized; call "
              "dist_init_process_group() first");
  return *group;
}

dist::ReduceOp reduce_op_arg(SEXP op) {
  const std::string name = string_arg(op);
  if (name == "sum") return dist::ReduceOp::Sum;
  if (name == "avg") return dist::ReduceOp::Avg;
  if (name == "max") return dist::ReduceOp::Max;
  if (name == "min") return dist::ReduceOp::Min;
  throw InternalError("rc_dist_collective: unknown reduce op " + name);
}

// Parameters or buffers by name: a named list of tensors, as $named_parameters() gives.
std::vector<std::pair<std::string, Tensor>> named_tensors_arg(SEXP list, const char* what) {
  const std::vector<Tensor> tensors = unwrap_tensors(list, "nn_distributed_data_parallel", what);
  SEXP names = Rf_getAttrib(list, R_NamesSymbol);
  std::vector<std::pair<std::string, Tensor>> out;
  for (size_t i = 0; i < tensors.size(); ++i) {
    std::string name = Rf_isNull(names) ? std::to_string(i + 1)
                                        : CHAR(STRING_ELT(names, static_cast<R_xlen_t>(i)));
    out.emplace_back(std::move(name), tensors[i]);
  }
  return out;
}

// An option the R side always sets (nn-distributed.R).
SEXP ddp_option(SEXP options, const char* name) {
  SEXP value = list_element(options, name);
  if (value == R_NilValue) throw InternalError(std::string("rc_ddp_new: options has no ") + name);
  return value;
}

using WorkHandle = std::shared_ptr<dist::Work>;

dist::DataParallel& reducer_of(SEXP ptr) {
  return external_object<dist::DataParallel>(
      ptr,
      "nn_distributed_data_parallel: the reducer is gone (the module was saved with saveRDS and "
      "read back, or fit() released the wrapper it made); wrap the module again");
}

}  // namespace

// backend: "mpi" or "nccl"; timeout_ms: a double of milliseconds.
extern "C" SEXP rc_dist_init(SEXP backend, SEXP timeout_ms) {
  RCUDA_BEGIN
  dist::ProcessGroupOptions options;
  options.backend = string_arg(backend) == "nccl" ? dist::Backend::Nccl : dist::Backend::Mpi;
  options.timeout = std::chrono::milliseconds(static_cast<int64_t>(Rf_asReal(timeout_ms)));
  dist::init_process_group(options);
  return R_NilValue;
  RCUDA_END
}

// NULL before dist_init_process_group() and after dist_destroy_process_group(), else
// list(rank, world_size, backend).
extern "C" SEXP rc_dist_state() {
  RCUDA_BEGIN
  auto group = dist::default_group();
  if (group == nullptr) return R_NilValue;
  cpp11::writable::list out({cpp11::as_sexp(group->rank()), cpp11::as_sexp(group->size()),
                             cpp11::as_sexp(dist::backend_name(group->backend()))});
  out.names() = {"rank", "world_size", "backend"};
  return out;
  RCUDA_END
}

extern "C" SEXP rc_dist_launch_info() {
  RCUDA_BEGIN
  const dist::LaunchInfo info = dist::launch_info();
  cpp11::writable::list out({cpp11::as_sexp(info.rank), cpp11::as_sexp(info.world_size),
                             cpp11::as_sexp(info.local_rank), cpp11::as_sexp(info.local_world_size),
                             cpp11::as_sexp(info.launcher.c_str())});
  out.names() = {"rank", "world_size", "local_rank", "local_world_size", "launcher"};
  return out;
  RCUDA_END
}

extern "C" SEXP rc_dist_destroy() {
  RCUDA_BEGIN
  dist::destroy_process_group();
  return R_NilValue;
  RCUDA_END
}

// kind: "all_reduce" (tensors = list(t), op), "broadcast" (list(t), root), "all_gather"
// (list(out, in)) or "barrier" (list()). Returns the pending work; R waits for it through
// rc_dist_work.
extern "C" SEXP rc_dist_collective(SEXP kind, SEXP tensors, SEXP op, SEXP root) {
  RCUDA_BEGIN
  const std::string k = string_arg(kind);
  const std::string name = "dist_" + k;
  dist::ProcessGroup& group = default_group_or_throw(name.c_str());
  const std::vector<Tensor> ts = unwrap_tensors(tensors, name, "tensor");
  WorkHandle work;
  if (k == "all_reduce") {
    work = group.all_reduce(ts.at(0), reduce_op_arg(op));
  } else if (k == "broadcast") {
    work = group.broadcast(ts.at(0), Rf_asInteger(root));
  } else if (k == "all_gather") {
    work = group.all_gather(ts.at(0), ts.at(1));
  } else if (k == "barrier") {
    work = group.barrier();
  } else {
    throw InternalError("rc_dist_collective: unknown collective " + k);
  }
  return external_pointer(std::make_unique<WorkHandle>(std::move(work)));
  RCUDA_END
}

// what: "wait" (NULL once done; DistError when the collective failed or timed out) or
// "completed" (TRUE or FALSE, without blocking).
extern "C" SEXP rc_dist_work(SEXP ptr, SEXP what) {
  RCUDA_BEGIN
  WorkHandle& work = external_object<WorkHandle>(ptr, "dist: the work handle is gone");
  if (string_arg(what) == "completed") return Rf_ScalarLogical(work->completed());
  work->wait();
  return R_NilValue;
  RCUDA_END
}

// parameters, buffers: named lists of tensors; options: list(bucket_bytes,
// find_unused_parameters, broadcast_buffers).
extern "C" SEXP rc_ddp_new(SEXP parameters, SEXP buffers, SEXP options) {
  RCUDA_BEGIN
  auto group = dist::default_group();
  RCUDA_CHECK(group != nullptr, ValueError,
              "nn_distributed_data_parallel: the default process group has not been "
              "initialized; call dist_init_process_group() first");
  dist::DataParallelOptions o;
  o.bucket_bytes = static_cast<int64_t>(Rf_asReal(ddp_option(options, "bucket_bytes")));
  o.first_bucket_bytes = std::min(o.first_bucket_bytes, o.bucket_bytes);
  o.find_unused_parameters = Rf_asLogical(ddp_option(options, "find_unused_parameters")) == TRUE;
  o.broadcast_buffers = Rf_asLogical(ddp_option(options, "broadcast_buffers")) == TRUE;
  return external_pointer(std::make_unique<dist::DataParallel>(
      std::move(group), named_tensors_arg(parameters, "parameter"),
      named_tensors_arg(buffers, "buffer"), o));
  RCUDA_END
}

// what: "before_forward", "buckets" (a list of character vectors) or "free" (the reducer and
// its hooks dropped now; the pointer is cleared).
extern "C" SEXP rc_ddp_call(SEXP ptr, SEXP what) {
  RCUDA_BEGIN
  const std::string w = string_arg(what);
  if (w == "free") {
    if (TYPEOF(ptr) == EXTPTRSXP) {
      auto* held = static_cast<dist::DataParallel*>(R_ExternalPtrAddr(ptr));
      R_ClearExternalPtr(ptr);
      delete held;
    }
    return R_NilValue;
  }
  dist::DataParallel& ddp = reducer_of(ptr);
  if (w == "before_forward") {
    ddp.before_forward();
    return R_NilValue;
  }
  if (w == "buckets") {
    const auto buckets = ddp.buckets();
    cpp11::writable::list out(static_cast<R_xlen_t>(buckets.size()));
    for (size_t i = 0; i < buckets.size(); ++i) {
      cpp11::writable::strings names(static_cast<R_xlen_t>(buckets[i].size()));
      for (size_t j = 0; j < buckets[i].size(); ++j)
        names[static_cast<R_xlen_t>(j)] = buckets[i][j];
      out[static_cast<R_xlen_t>(i)] = names;
    }
    return out;
  }
  throw InternalError("rc_ddp_call: unknown call " + w);
  RCUDA_END
}

// rc_ddp_no_sync(reducer, NULL) opens a no_sync region and returns its token;
// rc_ddp_no_sync(NULL, token) ends it. The token keeps the reducer's pointer alive (its
// protected value), so that a token R collects late never outlives the reducer it guards.
extern "C" SEXP rc_ddp_no_sync(SEXP ptr, SEXP token) {
  RCUDA_BEGIN
  if (Rf_isNull(token)) {
    dist::DataParallel& ddp = reducer_of(ptr);
    auto guard = std::make_unique<dist::DataParallel::NoSync>(ddp);
    SEXP out = PROTECT(R_MakeExternalPtr(guard.get(), R_NilValue, ptr));
    guard.release();
    R_RegisterCFinalizerEx(
        out,
        [](SEXP p) {
          auto* held = static_cast<dist::DataParallel::NoSync*>(R_ExternalPtrAddr(p));
          R_ClearExternalPtr(p);
          delete held;
        },
        TRUE);
    UNPROTECT(1);
    return out;
  }
  if (TYPEOF(token) == EXTPTRSXP) {
    auto* guard = static_cast<dist::DataParallel::NoSync*>(R_ExternalPtrAddr(token));
    R_ClearExternalPtr(token);
    delete guard;
  }
  return R_NilValue;
  RCUDA_END
}
