// The MPI backend: nonblocking MPI collectives on CPU tensors, each a Work that polls MPI_Test
// until the group's deadline (Note [Deadlines]).
//
// Note [Deadlines]
// MPI does not notice that a peer died or stopped answering: a collective waits for it for ever.
// Every wait here polls with a deadline, the group's timeout after the call. When it passes, the
// group is failed and each waiting rank asks every other whether it is alive (a probe message
// answered by every rank that reaches the same point, within a grace period); those that do not
// answer are named: "rank 1 did not answer within 5 s (all_reduce #3)". Requests to dead ranks
// stay pending and their buffers are kept for ever; MPI is then not finalised at exit.
#include "dist/mpi/mpi_group.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "dist/mpi/mpi_reduce.h"
#include "dist/mpi/mpi_runtime.h"

namespace rcuda::dist::mpi {

using Clock = std::chrono::steady_clock;

namespace {

constexpr int kFingerprintTag = 1;
constexpr int kProbeTag = 2;

}  // namespace

struct MpiGroup::State {
  MPI_Comm data = MPI_COMM_NULL;     // collectives
  MPI_Comm control = MPI_COMM_NULL;  // fingerprints, probes, bootstrap bytes
  int rank = 0, size = 1;
  std::chrono::milliseconds timeout{0};
  bool check_shapes = true;
  int64_t sequence = 0;
  std::string failure;  // "" while healthy
  // Requests and buffers abandoned to failed or dropped collectives (Note [Deadlines]).
  std::vector<MPI_Request> abandoned;
  std::vector<std::shared_ptr<void>> kept;

  // Under the MPI lock.
  void throw_if_failed() const {
    if (!failure.empty())
      throw DistError("the process group failed earlier and cannot be used: " + failure);
  }
  void fail(const std::string& why) {
    if (failure.empty()) failure = why;
    if (!abandoned.empty()) leave_unfinalised();
  }

  // The ranks that do not answer a probe within the grace period (Note [Deadlines]).
  std::vector<int> silent_ranks();
  // DistError for a deadline passed in `call`, naming the silent ranks when it can.
  [[noreturn]] void throw_timeout(const std::string& call, std::vector<int> silent);
};

std::vector<int> MpiGroup::State::silent_ranks() {
  auto probe = std::make_shared<std::vector<int>>(size, rank);
  std::vector<MPI_Request> receives(size, MPI_REQUEST_NULL);
  {
    std::lock_guard<std::mutex> lock(mpi_mutex());
    for (int r = 0; r < size; ++r) {
      if (r == rank) continue;
      MPI_Request send = MPI_REQUEST_NULL;
      MPI_Isend(&(*probe)[rank], 1, MPI_INT, r, kProbeTag, control, &send);
      abandoned.push_back(send);
      MPI_Irecv(&(*probe)[r], 1, MPI_INT, r, kProbeTag, control, &receives[r]);
    }
  }
  kept.push_back(probe);
  const auto grace =
      std::clamp(timeout / 4, std::chrono::milliseconds(500), std::chrono::milliseconds(3000));
  std::vector<bool> answered(size, false);
  answered[rank] = true;
  poll_until(
      [&] {
        bool all = true;
        for (int r = 0; r < size; ++r) {
          if (answered[r]) continue;
          int flag = 0;
          if (MPI_Test(&receives[r], &flag, MPI_STATUS_IGNORE) != MPI_SUCCESS) flag = 0;
          answered[r] = flag != 0;
          all = all && answered[r];
        }
        return all;
      },
      Clock::now() + grace);
  std::vector<int> silent;
  for (int r = 0; r < size; ++r) {
    if (!answered[r]) {
      silent.push_back(r);
      abandoned.push_back(receives[r]);
    }
  }
  return silent;
}

void MpiGroup::State::throw_timeout(const std::string& call, std::vector<int> silent) {
  std::ostringstream why;
  if (silent.empty()) {
    why << call << " did not complete within " << seconds_text(timeout)
        << ", though every rank answered: the ranks called different collectives (turn "
           "check_shapes on to find which)";
  } else {
    why << (silent.size() > 1 ? "ranks " : "rank ");
    for (size_t i = 0; i < silent.size(); ++i) why << (i ? ", " : "") << silent[i];
    why << " did not answer within " << seconds_text(timeout) << " (" << call
        << "): it died or stopped calling collectives";
  }
  {
    std::lock_guard<std::mutex> lock(mpi_mutex());
    fail(why.str());
  }
  throw DistError(why.str());
}

namespace {

// A pending MPI collective (Note [Deadlines]).
class MpiWork final : public Work {
 public:
  MpiWork(std::shared_ptr<MpiGroup::State> state, MPI_Request request, std::string call,
          std::vector<Tensor> buffers, std::function<void()> finish)
      : state_(std::move(state)),
        request_(request),
        call_(std::move(call)),
        buffers_(std::move(buffers)),
        finish_(std::move(finish)),
        deadline_(Clock::now() + state_->timeout) {}

  ~MpiWork() override {
    if (!done_ && !finalised()) abandon();
  }

  void wait() override {
    if (done_) return;
    std::string error;
    const bool finished = poll_until([&] { return test(&error); }, deadline_);
    if (!error.empty()) throw DistError(error);
    if (!finished) {
      abandon();
      state_->throw_timeout(call_, state_->silent_ranks());
    }
    finish();
  }

  bool completed() override {
    if (done_) return true;
    std::string error;
    bool finished = false;
    {
      std::lock_guard<std::mutex> lock(mpi_mutex());
      finished = test(&error);
    }
    if (!error.empty()) throw DistError(error);
    if (finished) finish();
    return finished;
  }

 private:
  // Under the MPI lock. An MPI error or an earlier failure of the group ends the wait.
  bool test(std::string* error) {
    int flag = 0;
    const int rc = MPI_Test(&request_, &flag, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS) {
      *error = call_ + ": " + error_text(rc);
      state_->fail(*error);
      return true;
    }
    if (!flag && !state_->failure.empty()) {
      *error = call_ + " cannot complete: the process group failed: " + state_->failure;
      return true;
    }
    return flag != 0;
  }

  // Unfinished for good (timed out) or dropped: MPI still owns the buffers, which stay alive
  // with the request.
  void abandon() {
    std::lock_guard<std::mutex> lock(mpi_mutex());
    state_->abandoned.push_back(request_);
    for (Tensor& t : buffers_) state_->kept.push_back(t.storage());
    buffers_.clear();
    done_ = true;
  }

  void finish() {
    done_ = true;
    if (finish_) finish_();
    buffers_.clear();
  }

  std::shared_ptr<MpiGroup::State> state_;
  MPI_Request request_;
  std::string call_;
  std::vector<Tensor> buffers_;
  std::function<void()> finish_;
  Clock::time_point deadline_;
  bool done_ = false;
};

int message_count(Collective c, const Tensor& t, int64_t elements) {
  RCUDA_CHECK(elements <= INT32_MAX, ValueError, collective_name(c), ": ", t.numel(),
              " elements of ", dtype_name(t.dtype()),
              " exceed MPI's count of 2^31 - 1 per call; split the tensor");
  return static_cast<int>(elements);
}

bool overlap(const Tensor& a, const Tensor& b) {
  const auto* pa = static_cast<const char*>(a.data_ptr());
  const auto* pb = static_cast<const char*>(b.data_ptr());
  const size_t na = a.numel() * a.element_size(), nb = b.numel() * b.element_size();
  return na && nb && pa < pb + nb && pb < pa + na;
}

}  // namespace

MpiGroup::MpiGroup(const ProcessGroupOptions& options, const LaunchInfo& launch)
    : state_(std::make_shared<State>()) {
  RCUDA_CHECK(options.timeout.count() > 0, ValueError,
              "init_process_group: timeout must be positive, got ", options.timeout.count(), " ms");
  ensure_initialised();
  state_->timeout = options.timeout;
  state_->check_shapes = options.check_shapes;
  std::unique_lock<std::mutex> lock(mpi_mutex());
  int world_rank = 0, world_size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world_size);
  RCUDA_CHECK(world_rank == launch.rank && world_size == launch.world_size, DistError,
              "init_process_group: the launcher (", launch.launcher, ") makes this rank ",
              launch.rank, " of ", launch.world_size, ", but MPI sees rank ", world_rank, " of ",
              world_size,
              ": the ranks meet over MPI, so start them with mpirun, srun or `rcuda launch`");
  state_->rank = world_rank;
  state_->size = world_size;
  // Two duplicates of the world: collectives on one, the host exchanges on the other, so that
  // neither matches the other's messages. Errors come back as codes (DistError), not aborts.
  MPI_Request requests[2];
  check(MPI_Comm_idup(MPI_COMM_WORLD, &state_->data, &requests[0]), "MPI_Comm_idup");
  check(MPI_Comm_idup(MPI_COMM_WORLD, &state_->control, &requests[1]), "MPI_Comm_idup");
  lock.unlock();
  const bool met = poll_until(
      [&] {
        int flag = 0;
        MPI_Testall(2, requests, &flag, MPI_STATUSES_IGNORE);
        return flag != 0;
      },
      Clock::now() + state_->timeout);
  lock.lock();
  if (!met) {
    state_->fail("init_process_group: the ranks did not all start within " +
                 seconds_text(state_->timeout));
    throw DistError(state_->failure);
  }
  MPI_Comm_set_errhandler(state_->data, MPI_ERRORS_RETURN);
  MPI_Comm_set_errhandler(state_->control, MPI_ERRORS_RETURN);
}

MpiGroup::~MpiGroup() {
  std::lock_guard<std::mutex> lock(mpi_mutex());
  if (finalised()) return;
  if (!state_->abandoned.empty()) {
    int flag = 0;
    MPI_Testall(static_cast<int>(state_->abandoned.size()), state_->abandoned.data(), &flag,
                MPI_STATUSES_IGNORE);
    if (!flag) return;  // still pending: the communicators must outlive them
  }
  MPI_Comm_free(&state_->data);
  MPI_Comm_free(&state_->control);
}

int MpiGroup::rank() const { return state_->rank; }
int MpiGroup::size() const { return state_->size; }

void MpiGroup::fail(const std::string& why) {
  std::lock_guard<std::mutex> lock(mpi_mutex());
  state_->fail(why);
}

void MpiGroup::agree(const Fingerprint& mine, const std::string& call) {
  State& s = *state_;
  const int n = s.size;
  auto all = std::make_shared<std::vector<Fingerprint>>(n, mine);
  std::vector<MPI_Request> sends(n, MPI_REQUEST_NULL), receives(n, MPI_REQUEST_NULL);
  {
    std::lock_guard<std::mutex> lock(mpi_mutex());
    s.throw_if_failed();
    for (int r = 0; r < n; ++r) {
      if (r == s.rank) continue;
      check(MPI_Isend(&(*all)[s.rank], Fingerprint::kWords, MPI_INT64_T, r, kFingerprintTag,
                      s.control, &sends[r]),
            call + ": MPI_Isend");
      check(MPI_Irecv(&(*all)[r], Fingerprint::kWords, MPI_INT64_T, r, kFingerprintTag, s.control,
                      &receives[r]),
            call + ": MPI_Irecv");
    }
  }
  std::vector<bool> arrived(n, false);
  arrived[s.rank] = true;
  std::string error;
  const bool met = poll_until(
      [&] {
        bool every = true;
        for (int r = 0; r < n; ++r) {
          if (arrived[r]) continue;
          int flag = 0;
          const int rc = MPI_Test(&receives[r], &flag, MPI_STATUS_IGNORE);
          if (rc != MPI_SUCCESS) {
            error = call + ": receiving rank " + std::to_string(r) + "'s call: " + error_text(rc);
            return true;
          }
          arrived[r] = flag != 0;
          every = every && arrived[r];
        }
        if (!every) return false;
        int flag = 0;
        MPI_Testall(n, sends.data(), &flag, MPI_STATUSES_IGNORE);
        return flag != 0;
      },
      Clock::now() + s.timeout);
  if (!error.empty() || !met) {
    std::lock_guard<std::mutex> lock(mpi_mutex());
    s.kept.push_back(all);
    for (int r = 0; r < n; ++r) {
      if (sends[r] != MPI_REQUEST_NULL) s.abandoned.push_back(sends[r]);
      if (!arrived[r]) s.abandoned.push_back(receives[r]);
    }
  }
  if (!error.empty()) {
    fail(error);
    throw DistError(error);
  }
  if (!met) {
    std::vector<int> silent;
    for (int r = 0; r < n; ++r)
      if (!arrived[r]) silent.push_back(r);
    s.throw_timeout(call, silent);
  }
  const std::string differ = compare_fingerprints(*all);
  if (!differ.empty()) {
    const std::string why = call + " on rank " + std::to_string(s.rank) + ": " + differ;
    fail(why);
    throw DistError(why);
  }
}

void MpiGroup::broadcast_bytes(void* data, size_t n, int root, const std::string& call) {
  auto t = Tensor::empty({static_cast<int64_t>(n)}, DType::UInt8);
  if (state_->rank == root) std::memcpy(t.data_ptr(), data, n);
  broadcast(t, root)->wait();
  std::memcpy(data, t.data_ptr(), n);
}

std::shared_ptr<Work> MpiGroup::all_reduce(const Tensor& t, ReduceOp op) {
  const Collective c = Collective::AllReduce;
  check_tensor(c, "tensor", t, DeviceType::CPU, Backend::Mpi);
  check_reducible(c, op, t.dtype());
  const int count = message_count(c, t, t.numel());
  const std::string call = call_name(c, ++state_->sequence);
  if (state_->check_shapes)
    agree(make_fingerprint(c, state_->sequence, op, -1, t.dtype(), t.shape(), -1), call);
  MPI_Request request = MPI_REQUEST_NULL;
  {
    std::lock_guard<std::mutex> lock(mpi_mutex());
    state_->throw_if_failed();
    check(MPI_Iallreduce(MPI_IN_PLACE, t.data_ptr(), count, reduce_datatype(t.dtype()),
                         reduce_mpi_op(t.dtype(), op), state_->data, &request),
          call + ": MPI_Iallreduce");
  }
  std::function<void()> finish;
  if (op == ReduceOp::Avg) finish = [t, size = state_->size] { divide_in_place(t, size); };
  return std::make_shared<MpiWork>(state_, request, call, std::vector<Tensor>{t}, finish);
}

std::shared_ptr<Work> MpiGroup::broadcast(const Tensor& t, int root) {
  const Collective c = Collective::Broadcast;
  check_tensor(c, "tensor", t, DeviceType::CPU, Backend::Mpi);
  check_root(c, root, state_->size);
  const int count = message_count(c, t, t.numel() * t.element_size());
  const std::string call = call_name(c, ++state_->sequence);
  if (state_->check_shapes)
    agree(make_fingerprint(c, state_->sequence, ReduceOp::Sum, root, t.dtype(), t.shape(), -1),
          call);
  MPI_Request request = MPI_REQUEST_NULL;
  {
    std::lock_guard<std::mutex> lock(mpi_mutex());
    state_->throw_if_failed();
    check(MPI_Ibcast(t.data_ptr(), count, MPI_BYTE, root, state_->data, &request),
          call + ": MPI_Ibcast");
  }
  return std::make_shared<MpiWork>(state_, request, call, std::vector<Tensor>{t}, nullptr);
}

std::shared_ptr<Work> MpiGroup::all_gather(const Tensor& out, const Tensor& in) {
  const Collective c = Collective::AllGather;
  check_tensor(c, "out", out, DeviceType::CPU, Backend::Mpi);
  check_tensor(c, "in", in, DeviceType::CPU, Backend::Mpi);
  check_gather_shapes(c, out, "out", in, "in", state_->size);
  const int count = message_count(c, in, in.numel() * in.element_size());
  message_count(c, out, out.numel() * out.element_size());
  const size_t chunk = static_cast<size_t>(count);
  // `in` may be this rank's own rows of `out` (MPI_IN_PLACE); any other overlap is refused.
  const bool in_place =
      chunk && in.data_ptr() == static_cast<char*>(out.data_ptr()) + chunk * state_->rank;
  RCUDA_CHECK(in_place || !overlap(out, in), ValueError,
              "all_gather: in overlaps out other than as out's rows of this rank (", state_->rank,
              "); pass separate tensors");
  const std::string call = call_name(c, ++state_->sequence);
  if (state_->check_shapes)
    agree(make_fingerprint(c, state_->sequence, ReduceOp::Sum, -1, in.dtype(), in.shape(),
                           out.numel()),
          call);
  MPI_Request request = MPI_REQUEST_NULL;
  {
    std::lock_guard<std::mutex> lock(mpi_mutex());
    state_->throw_if_failed();
    check(MPI_Iallgather(in_place ? MPI_IN_PLACE : in.data_ptr(), count, MPI_BYTE, out.data_ptr(),
                         count, MPI_BYTE, state_->data, &request),
          call + ": MPI_Iallgather");
  }
  return std::make_shared<MpiWork>(state_, request, call, std::vector<Tensor>{out, in}, nullptr);
}

std::shared_ptr<Work> MpiGroup::reduce_scatter(const Tensor& out, const Tensor& in, ReduceOp op) {
  const Collective c = Collective::ReduceScatter;
  check_tensor(c, "out", out, DeviceType::CPU, Backend::Mpi);
  check_tensor(c, "in", in, DeviceType::CPU, Backend::Mpi);
  check_gather_shapes(c, in, "in", out, "out", state_->size);
  check_reducible(c, op, out.dtype());
  const int count = message_count(c, out, out.numel());
  message_count(c, in, in.numel());
  RCUDA_CHECK(!overlap(out, in), ValueError,
              "reduce_scatter: out overlaps in; pass separate tensors");
  const std::string call = call_name(c, ++state_->sequence);
  if (state_->check_shapes)
    agree(make_fingerprint(c, state_->sequence, op, -1, in.dtype(), in.shape(), out.numel()), call);
  MPI_Request request = MPI_REQUEST_NULL;
  {
    std::lock_guard<std::mutex> lock(mpi_mutex());
    state_->throw_if_failed();
    check(
        MPI_Ireduce_scatter_block(in.data_ptr(), out.data_ptr(), count, reduce_datatype(in.dtype()),
                                  reduce_mpi_op(in.dtype(), op), state_->data, &request),
        call + ": MPI_Ireduce_scatter_block");
  }
  std::function<void()> finish;
  if (op == ReduceOp::Avg) finish = [out, size = state_->size] { divide_in_place(out, size); };
  return std::make_shared<MpiWork>(state_, request, call, std::vector<Tensor>{out, in}, finish);
}

std::shared_ptr<Work> MpiGroup::barrier() {
  const Collective c = Collective::Barrier;
  const std::string call = call_name(c, ++state_->sequence);
  if (state_->check_shapes)
    agree(make_fingerprint(c, state_->sequence, ReduceOp::Sum, -1, DType::UInt8, {}, -1), call);
  MPI_Request request = MPI_REQUEST_NULL;
  {
    std::lock_guard<std::mutex> lock(mpi_mutex());
    state_->throw_if_failed();
    check(MPI_Ibarrier(state_->data, &request), call + ": MPI_Ibarrier");
  }
  return std::make_shared<MpiWork>(state_, request, call, std::vector<Tensor>{}, nullptr);
}

}  // namespace rcuda::dist::mpi
