// A process group of N ranks inside one process, for testing what runs above the process groups
// (the data-parallel reducer) without MPI: each rank is a thread, and the ranks meet in a
// FakeWorld. A collective blocks until every rank has called it; the last to arrive computes the
// result for all of them in the tensors' own dtype (summing in rank order, so that results are
// deterministic), then every rank returns a finished Work. Ranks that disagree on the collective,
// its shapes or dtypes all get a DistError, as a real group's; a rank left waiting longer than the
// world's timeout (a peer that threw, or a different number of calls) gets one too, so a failing
// test ends rather than hangs. CPU tensors only (it reports the MPI backend).
//
//   std::vector<std::string> errors = run_ranks(3, [&](int rank, GroupPtr group) { ... });
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "rcuda/dist/process_group.h"
#include "rcuda/ops/copy.h"
#include "rcuda/ops/elementwise.h"

namespace rcuda::test {

using GroupPtr = std::shared_ptr<dist::ProcessGroup>;

class FakeWorld {
 public:
  enum class Kind { AllReduce, Broadcast, AllGather, Barrier };
  struct Call {
    Kind kind = Kind::Barrier;
    Tensor out, in;  // all_reduce and broadcast: `out` only
    dist::ReduceOp op = dist::ReduceOp::Sum;
    int root = 0;
  };

  explicit FakeWorld(int size, std::chrono::milliseconds timeout = std::chrono::seconds(30))
      : size_(size), timeout_(timeout), calls_(static_cast<size_t>(size)) {}
  int size() const { return size_; }
  // Collectives every rank has finished so far.
  int64_t completed() {
    std::lock_guard<std::mutex> lock(mutex_);
    return completed_;
  }

  void run(int rank, const Call& call) {
    std::unique_lock<std::mutex> lock(mutex_);
    const uint64_t generation = generation_;
    calls_[static_cast<size_t>(rank)] = call;
    if (++arrived_ == size_) {
      error_.clear();
      try {
        compute();
      } catch (const std::exception& e) {
        error_ = e.what();
      }
      for (Call& c : calls_) c = Call();
      arrived_ = 0;
      ++generation_;
      ++completed_;
      changed_.notify_all();
    } else if (!changed_.wait_for(lock, timeout_, [&] { return generation_ != generation; })) {
      throw dist::DistError("fake group: rank " + std::to_string(rank) +
                            " waited too long for the other ranks");
    }
    if (!error_.empty()) throw dist::DistError("fake group: " + error_);
  }

 private:
  // With the lock held, every rank's call present.
  void compute() {
    const Call& first = calls_[0];
    for (int r = 1; r < size_; ++r) {
      const Call& c = calls_[static_cast<size_t>(r)];
      if (c.kind != first.kind || c.root != first.root || c.op != first.op)
        throw std::runtime_error("ranks 0 and " + std::to_string(r) +
                                 " called different collectives");
      for (const auto& [a, b] : {std::make_pair(first.out, c.out), std::make_pair(first.in, c.in)})
        if (a.defined() && (a.shape() != b.shape() || a.dtype() != b.dtype()))
          throw std::runtime_error(
              "ranks 0 and " + std::to_string(r) + " disagree: " + shape_str(a.shape()) + " " +
              dtype_name(a.dtype()) + " vs " + shape_str(b.shape()) + " " + dtype_name(b.dtype()));
    }
    switch (first.kind) {
      case Kind::AllReduce: {
        if (first.op != dist::ReduceOp::Sum && first.op != dist::ReduceOp::Avg)
          throw std::runtime_error("only sum and avg are reduced by the fake group");
        Tensor total = ops::clone(first.out);
        for (int r = 1; r < size_; ++r) total = ops::add(total, calls_[static_cast<size_t>(r)].out);
        if (first.op == dist::ReduceOp::Avg) total = ops::div(total, static_cast<double>(size_));
        for (const Call& c : calls_) ops::copy_(c.out, total);
        break;
      }
      case Kind::Broadcast: {
        const Tensor value = ops::clone(calls_[static_cast<size_t>(first.root)].out);
        for (const Call& c : calls_) ops::copy_(c.out, value);
        break;
      }
      case Kind::AllGather: {
        const int64_t n = first.in.dim() == 0 ? 1 : first.in.shape()[0];
        for (const Call& c : calls_)
          for (int q = 0; q < size_; ++q)
            ops::copy_(c.out.slice(0, q * n, (q + 1) * n), calls_[static_cast<size_t>(q)].in);
        break;
      }
      case Kind::Barrier:
        break;
    }
  }

  const int size_;
  const std::chrono::milliseconds timeout_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<Call> calls_;
  int arrived_ = 0;
  uint64_t generation_ = 0;
  int64_t completed_ = 0;
  std::string error_;
};

class FakeGroup : public dist::ProcessGroup {
 public:
  FakeGroup(std::shared_ptr<FakeWorld> world, int rank) : world_(std::move(world)), rank_(rank) {}
  dist::Backend backend() const override { return dist::Backend::Mpi; }
  int rank() const override { return rank_; }
  int size() const override { return world_->size(); }

  std::shared_ptr<dist::Work> all_reduce(const Tensor& t, dist::ReduceOp op) override {
    return run({FakeWorld::Kind::AllReduce, t, Tensor(), op, 0});
  }
  std::shared_ptr<dist::Work> broadcast(const Tensor& t, int root) override {
    return run({FakeWorld::Kind::Broadcast, t, Tensor(), dist::ReduceOp::Sum, root});
  }
  std::shared_ptr<dist::Work> all_gather(const Tensor& out, const Tensor& in) override {
    return run({FakeWorld::Kind::AllGather, out, in, dist::ReduceOp::Sum, 0});
  }
  std::shared_ptr<dist::Work> reduce_scatter(const Tensor&, const Tensor&,
                                             dist::ReduceOp) override {
    throw ValueError("fake group: reduce_scatter is not implemented");
  }
  std::shared_ptr<dist::Work> barrier() override { return run({}); }

 private:
  struct Done : dist::Work {
    void wait() override {}
    bool completed() override { return true; }
  };
  std::shared_ptr<dist::Work> run(const FakeWorld::Call& call) {
    for (const Tensor& t : {call.out, call.in})
      if (t.defined() && (!t.device().is_cpu() || !t.is_contiguous()))
        throw ValueError("fake group: collectives take contiguous CPU tensors");
    world_->run(rank_, call);
    return std::make_shared<Done>();
  }

  std::shared_ptr<FakeWorld> world_;
  int rank_;
};

// Runs body(rank, group) on `size` threads, one per rank of a new world; returns each rank's
// exception message ("" where none was thrown).
inline std::vector<std::string> run_ranks(int size,
                                          const std::function<void(int, const GroupPtr&)>& body,
                                          std::shared_ptr<FakeWorld> world = nullptr) {
  if (!world) world = std::make_shared<FakeWorld>(size);
  std::vector<std::string> errors(static_cast<size_t>(size));
  std::vector<std::thread> threads;
  threads.reserve(static_cast<size_t>(size));
  for (int r = 0; r < size; ++r) {
    threads.emplace_back([&, r] {
      try {
        body(r, std::make_shared<FakeGroup>(world, r));
      } catch (const std::exception& e) {
        errors[static_cast<size_t>(r)] = e.what();
      }
    });
  }
  for (std::thread& t : threads) t.join();
  return errors;
}

}  // namespace rcuda::test
