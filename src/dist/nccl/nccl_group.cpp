// The NCCL backend: collectives on the calling thread's current CUDA stream, each a Work that
// the current stream can wait on, and a watchdog that aborts the communicator when NCCL reports
// an error or a collective passes the group's timeout (Note [NCCL watchdog]).
//
// Note [NCCL watchdog]
// A collective on the GPU whose peer died never finishes: its kernel spins, and so would any
// host wait behind it. The communicator is made nonblocking (ncclConfig_t.blocking = 0), and a
// thread per group polls, ten times a second, ncclCommGetAsyncError and the event recorded after
// each collective. On an error, or when a collective is still running past its deadline (the
// group's timeout after its launch), it calls ncclCommAbort, which ends the spinning kernels, and
// records why; every later call and wait() of the group throws DistError with that reason. NCCL
// itself names no rank; with check_shapes on, every call first exchanges fingerprints over MPI
// (the bootstrap group), and a rank that stops calling collectives is named there.
#include "dist/nccl/nccl_group.h"

#include <cuda_runtime.h>
#include <nccl.h>

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "backend/cuda/runtime.h"
#include "dist/collective.h"
#include "dist/mpi/mpi_group.h"
#include "rcuda/backend/cuda.h"

namespace rcuda::dist::nccl {

namespace {

using Clock = std::chrono::steady_clock;

std::string nccl_text(ncclResult_t r, ncclComm_t comm) {
  std::string text = ncclGetErrorString(r);
  const char* last = comm ? ncclGetLastError(comm) : nullptr;
  if (last && *last) text += std::string(" (") + last + ")";
  return text;
}

// An event recorded after a collective, destroyed when neither its Work nor the watchdog needs it.
struct Event {
  cudaEvent_t event = nullptr;
  explicit Event(int device) {
    cuda::DeviceGuard guard(device);
    RCUDA_CUDA_CHECK(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
  }
  ~Event() { cudaEventDestroy(event); }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
};

// What the group, its works and its watchdog share.
struct Shared {
  std::mutex mutex;
  std::condition_variable wake;
  ncclComm_t comm = nullptr;
  int device = 0;
  std::chrono::milliseconds timeout{0};
  std::string failure;  // "" while healthy
  bool aborted = false, stop = false;
  struct Pending {
    std::shared_ptr<Event> event;
    Clock::time_point deadline;
    std::string call;
  };
  std::vector<Pending> pending;

  // Under the mutex.
  void fail(const std::string& why) {
    if (failure.empty()) failure = why;
    if (!aborted && comm) {
      ncclCommAbort(comm);  // ends the kernels waiting on dead peers
      aborted = true;
    }
  }
  void throw_if_failed() const {
    if (!failure.empty())
      throw DistError("the process group failed earlier and cannot be used: " + failure);
  }
};

void watch(const std::shared_ptr<Shared>& shared) {
  cudaSetDevice(shared->device);
  std::unique_lock<std::mutex> lock(shared->mutex);
  while (!shared->stop) {
    shared->wake.wait_for(lock, std::chrono::milliseconds(100));
    if (shared->stop || shared->aborted) continue;
    ncclResult_t state = ncclSuccess;
    ncclCommGetAsyncError(shared->comm, &state);
    if (state != ncclSuccess && state != ncclInProgress) {
      shared->fail("NCCL reported an error: " + nccl_text(state, shared->comm) +
                   "; a rank may have died");
      continue;
    }
    const auto now = Clock::now();
    auto& pending = shared->pending;
    for (size_t i = 0; i < pending.size();) {
      const cudaError_t done = cudaEventQuery(pending[i].event->event);
      if (done == cudaSuccess) {
        pending[i] = std::move(pending.back());
        pending.pop_back();
        continue;
      }
      if (done != cudaErrorNotReady) {
        shared->fail(pending[i].call + ": " + cudaGetErrorString(done));
        break;
      }
      if (now > pending[i].deadline) {
        shared->fail(pending[i].call + " did not complete within " + seconds_text(shared->timeout) +
                     ": a rank died or stopped answering (NCCL names no rank; with check_shapes "
                     "on, a rank that stops calling collectives is named)");
        break;
      }
      ++i;
    }
  }
}

class NcclWork final : public Work {
 public:
  NcclWork(std::shared_ptr<Shared> shared, std::shared_ptr<Event> event)
      : shared_(std::move(shared)), event_(std::move(event)) {}

  void wait() override {
    {
      std::lock_guard<std::mutex> lock(shared_->mutex);
      shared_->throw_if_failed();
    }
    cuda::DeviceGuard guard(shared_->device);
    RCUDA_CUDA_CHECK(cudaStreamWaitEvent(cuda::current_stream(shared_->device), event_->event, 0));
  }

  bool completed() override {
    {
      std::lock_guard<std::mutex> lock(shared_->mutex);
      shared_->throw_if_failed();
    }
    const cudaError_t done = cudaEventQuery(event_->event);
    if (done == cudaErrorNotReady) return false;
    RCUDA_CUDA_CHECK(done);
    return true;
  }

 private:
  std::shared_ptr<Shared> shared_;
  std::shared_ptr<Event> event_;
};

// NCCL's type for a reduction; DTypeError for int16, which NCCL lacks.
ncclDataType_t nccl_type(Collective c, DType dtype) {
  switch (dtype) {
    case DType::Bool:
    case DType::UInt8:
      return ncclUint8;
    case DType::Int8:
      return ncclInt8;
    case DType::Int32:
      return ncclInt32;
    case DType::Int64:
      return ncclInt64;
    case DType::Float16:
      return ncclFloat16;
    case DType::BFloat16:
      return ncclBfloat16;
    case DType::Float32:
      return ncclFloat32;
    case DType::Float64:
      return ncclFloat64;
    default:
      throw DTypeError(std::string(collective_name(c)) + ": the nccl backend cannot reduce " +
                       dtype_name(dtype) + " tensors (broadcast and all_gather move any dtype)");
  }
}

// A bool sum is a logical or, as its max (torch's NCCL backend does the same).
ncclRedOp_t nccl_op(ReduceOp op, DType dtype) {
  switch (op) {
    case ReduceOp::Sum:
      return dtype == DType::Bool ? ncclMax : ncclSum;
    case ReduceOp::Avg:
      return ncclAvg;
    case ReduceOp::Max:
      return ncclMax;
    case ReduceOp::Min:
      return ncclMin;
  }
  return ncclSum;
}

size_t byte_count(const Tensor& t) { return static_cast<size_t>(t.numel()) * t.element_size(); }

class NcclGroup final : public ProcessGroup {
 public:
  NcclGroup(const ProcessGroupOptions& options, const LaunchInfo& launch)
      : control_(std::make_shared<mpi::MpiGroup>(options, launch)),
        shared_(std::make_shared<Shared>()),
        check_shapes_(options.check_shapes) {
    const int devices = cuda::device_count();
    RCUDA_CHECK(devices > 0, DeviceError,
                "init_process_group: the nccl backend needs a GPU: ", cuda::unavailable_reason());
    RCUDA_CHECK(launch.local_rank < devices, ValueError, "init_process_group: local rank ",
                launch.local_rank, " takes GPU ", launch.local_rank, ", but ", devices,
                " GPUs are visible; start at most ", devices, " ranks per machine");
    shared_->device = launch.local_rank;
    shared_->timeout = options.timeout;
    cuda::set_device(shared_->device);

    ncclUniqueId id{};
    if (control_->rank() == 0) check(ncclGetUniqueId(&id), "init_process_group: ncclGetUniqueId");
    control_->broadcast_bytes(&id, sizeof(id), 0, "init_process_group (NCCL's unique id)");
    {
      cuda::DeviceGuard guard(shared_->device);
      ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
      config.blocking = 0;  // every call returns; the watchdog can abort (Note [NCCL watchdog])
      ncclResult_t r =
          ncclCommInitRankConfig(&shared_->comm, control_->size(), id, control_->rank(), &config);
      if (r == ncclInProgress) r = wait_ready("init_process_group");
      if (r != ncclSuccess) {
        const std::string why =
            "init_process_group: ncclCommInitRankConfig: " + nccl_text(r, shared_->comm);
        std::lock_guard<std::mutex> lock(shared_->mutex);
        shared_->fail(why);
        throw DistError(why);
      }
    }
    barrier_buffer_ = Tensor::empty({1}, DType::Float32, Device(DeviceType::CUDA, shared_->device));
    watchdog_ = std::thread(watch, shared_);
  }

  ~NcclGroup() override {
    {
      std::lock_guard<std::mutex> lock(shared_->mutex);
      shared_->stop = true;
    }
    shared_->wake.notify_all();
    if (watchdog_.joinable()) watchdog_.join();
    std::lock_guard<std::mutex> lock(shared_->mutex);
    if (shared_->aborted || !shared_->comm) return;  // an aborted communicator is freed
    // Finalise (flushes pending work) within the timeout, else abort; never throw here.
    ncclResult_t r = ncclCommFinalize(shared_->comm);
    const auto deadline = Clock::now() + shared_->timeout;
    while (r == ncclInProgress && Clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      ncclCommGetAsyncError(shared_->comm, &r);
    }
    if (r == ncclSuccess)
      ncclCommDestroy(shared_->comm);
    else
      ncclCommAbort(shared_->comm);
  }

  Backend backend() const override { return Backend::Nccl; }
  int rank() const override { return control_->rank(); }
  int size() const override { return control_->size(); }

  std::shared_ptr<Work> all_reduce(const Tensor& t, ReduceOp op) override {
    const Collective c = Collective::AllReduce;
    check_tensor(c, "tensor", t, DeviceType::CUDA, Backend::Nccl);
    check_device(c, "tensor", t);
    check_reducible(c, op, t.dtype());
    const ncclDataType_t type = nccl_type(c, t.dtype());
    const std::string call = begin(c, op, -1, t.dtype(), t.shape(), -1);
    return enqueue(call, [&](ncclComm_t comm, cudaStream_t stream) {
      return ncclAllReduce(t.data_ptr(), t.data_ptr(), static_cast<size_t>(t.numel()), type,
                           nccl_op(op, t.dtype()), comm, stream);
    });
  }

  std::shared_ptr<Work> broadcast(const Tensor& t, int root) override {
    const Collective c = Collective::Broadcast;
    check_tensor(c, "tensor", t, DeviceType::CUDA, Backend::Nccl);
    check_device(c, "tensor", t);
    check_root(c, root, size());
    const std::string call = begin(c, ReduceOp::Sum, root, t.dtype(), t.shape(), -1);
    return enqueue(call, [&](ncclComm_t comm, cudaStream_t stream) {
      return ncclBroadcast(t.data_ptr(), t.data_ptr(), byte_count(t), ncclUint8, root, comm,
                           stream);
    });
  }

  std::shared_ptr<Work> all_gather(const Tensor& out, const Tensor& in) override {
    const Collective c = Collective::AllGather;
    check_tensor(c, "out", out, DeviceType::CUDA, Backend::Nccl);
    check_tensor(c, "in", in, DeviceType::CUDA, Backend::Nccl);
    check_device(c, "out", out);
    check_gather_shapes(c, out, "out", in, "in", size());
    const std::string call = begin(c, ReduceOp::Sum, -1, in.dtype(), in.shape(), out.numel());
    return enqueue(call, [&](ncclComm_t comm, cudaStream_t stream) {
      return ncclAllGather(in.data_ptr(), out.data_ptr(), byte_count(in), ncclUint8, comm, stream);
    });
  }

  std::shared_ptr<Work> reduce_scatter(const Tensor& out, const Tensor& in, ReduceOp op) override {
    const Collective c = Collective::ReduceScatter;
    check_tensor(c, "out", out, DeviceType::CUDA, Backend::Nccl);
    check_tensor(c, "in", in, DeviceType::CUDA, Backend::Nccl);
    check_device(c, "out", out);
    check_gather_shapes(c, in, "in", out, "out", size());
    check_reducible(c, op, out.dtype());
    const ncclDataType_t type = nccl_type(c, out.dtype());
    const std::string call = begin(c, op, -1, in.dtype(), in.shape(), out.numel());
    return enqueue(call, [&](ncclComm_t comm, cudaStream_t stream) {
      return ncclReduceScatter(in.data_ptr(), out.data_ptr(), static_cast<size_t>(out.numel()),
                               type, nccl_op(op, out.dtype()), comm, stream);
    });
  }

  // NCCL has no barrier: a one-element all_reduce on the current stream, as torch's.
  std::shared_ptr<Work> barrier() override {
    const std::string call =
        begin(Collective::Barrier, ReduceOp::Sum, -1, DType::UInt8, Shape{}, -1);
    return enqueue(call, [&](ncclComm_t comm, cudaStream_t stream) {
      return ncclAllReduce(barrier_buffer_.data_ptr(), barrier_buffer_.data_ptr(), 1, ncclFloat32,
                           ncclSum, comm, stream);
    });
  }

 private:
  static void check(ncclResult_t r, const std::string& call) {
    if (r != ncclSuccess) throw DistError(call + ": " + nccl_text(r, nullptr));
  }

  void check_device(Collective c, const char* argument, const Tensor& t) const {
    RCUDA_CHECK(t.device().index == shared_->device, DeviceError, collective_name(c), ": ",
                argument, " is on ", t.device().str(),
                ", but this rank's group is on cuda:", shared_->device,
                " (the GPU of its local rank)");
  }

  // The call's name, after the ranks agree on it (Note [Collective fingerprints]).
  std::string begin(Collective c, ReduceOp op, int root, DType dtype, const Shape& shape,
                    int64_t out_numel) {
    {
      std::lock_guard<std::mutex> lock(shared_->mutex);
      shared_->throw_if_failed();
    }
    ++sequence_;
    const std::string call = call_name(c, sequence_);
    if (check_shapes_) {
      try {
        control_->agree(make_fingerprint(c, sequence_, op, root, dtype, shape, out_numel), call);
      } catch (const DistError& e) {
        std::lock_guard<std::mutex> lock(shared_->mutex);
        shared_->fail(e.what());
        throw;
      }
    }
    return call;
  }

  // Waits (the caller holds no lock) until a nonblocking call has been enqueued.
  ncclResult_t wait_ready(const std::string& call) {
    const auto deadline = Clock::now() + shared_->timeout;
    ncclResult_t state = ncclInProgress;
    while (state == ncclInProgress) {
      ncclCommGetAsyncError(shared_->comm, &state);
      if (state != ncclInProgress) break;
      if (Clock::now() > deadline) {
        std::lock_guard<std::mutex> lock(shared_->mutex);
        shared_->fail(call + ": NCCL was not ready within " + seconds_text(shared_->timeout) +
                      " (a rank did not start or stopped answering)");
        throw DistError(shared_->failure);
      }
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
    return state;
  }

  std::shared_ptr<Work> enqueue(const std::string& call,
                                const std::function<ncclResult_t(ncclComm_t, cudaStream_t)>& run) {
    cuda::DeviceGuard guard(shared_->device);
    cudaStream_t stream = cuda::current_stream(shared_->device);
    ncclResult_t r = run(shared_->comm, stream);
    if (r == ncclInProgress) r = wait_ready(call);
    if (r != ncclSuccess) {
      std::lock_guard<std::mutex> lock(shared_->mutex);
      shared_->fail(call + ": " + nccl_text(r, shared_->comm));
      throw DistError(shared_->failure);
    }
    auto event = std::make_shared<Event>(shared_->device);
    RCUDA_CUDA_CHECK(cudaEventRecord(event->event, stream));
    {
      std::lock_guard<std::mutex> lock(shared_->mutex);
      shared_->pending.push_back({event, Clock::now() + shared_->timeout, call});
    }
    return std::make_shared<NcclWork>(shared_, event);
  }

  std::shared_ptr<mpi::MpiGroup> control_;  // the bootstrap: unique id, fingerprints
  std::shared_ptr<Shared> shared_;
  bool check_shapes_;
  int64_t sequence_ = 0;
  Tensor barrier_buffer_;
  std::thread watchdog_;
};

}  // namespace

bool is_built() { return true; }

std::shared_ptr<ProcessGroup> make_group(const ProcessGroupOptions& options,
                                         const LaunchInfo& launch) {
  return std::make_shared<NcclGroup>(options, launch);
}

}  // namespace rcuda::dist::nccl
