// rcuda_dist_fault: a training-like loop of all_reduce calls in which rank 1 fails at step 5,
// for tests/dist/dead_rank.sh. The other ranks must throw DistError within the timeout.
//
//   rcuda_dist_fault dead|hung TIMEOUT_S [nocheck]
//     dead: rank 1 kills itself with SIGKILL;  hung: rank 1 sleeps for 4 timeouts.
//     nocheck: the group runs without shape checks (the silent rank is found by probing).
//
// A rank that catches DistError prints "[rank R] DistError after S s: MESSAGE" (S: seconds since
// its step 5 began) and exits with status 3.
#include <signal.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include "rcuda/dist/process_group.h"
#include "rcuda/tensor/tensor.h"

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s dead|hung TIMEOUT_S [nocheck]\n", argv[0]);
    return 2;
  }
  const std::string mode = argv[1];
  const double timeout_s = std::atof(argv[2]);
  rcuda::dist::ProcessGroupOptions options;
  options.timeout = std::chrono::milliseconds(static_cast<long>(timeout_s * 1000));
  options.check_shapes = !(argc > 3 && std::strcmp(argv[3], "nocheck") == 0);
  auto group = rcuda::dist::init_process_group(options);
  const int rank = group->rank();
  rcuda::Tensor grad = rcuda::Tensor::empty({1000}, rcuda::DType::Float32);
  auto step_start = std::chrono::steady_clock::now();
  try {
    for (int step = 1; step <= 8; ++step) {
      step_start = std::chrono::steady_clock::now();
      for (int i = 0; i < 1000; ++i) grad.data<float>()[i] = static_cast<float>(rank + i + step);
      if (step == 5 && rank == 1) {
        std::printf("[rank 1] %s at step 5\n", mode == "dead" ? "dies" : "hangs");
        std::fflush(stdout);
        if (mode == "dead") raise(SIGKILL);
        std::this_thread::sleep_for(std::chrono::duration<double>(4 * timeout_s));
      }
      group->all_reduce(grad, rcuda::dist::ReduceOp::Avg)->wait();
    }
  } catch (const rcuda::dist::DistError& e) {
    const std::chrono::duration<double> waited = std::chrono::steady_clock::now() - step_start;
    std::printf("[rank %d] DistError after %.1f s: %s\n", rank, waited.count(), e.what());
    std::fflush(stdout);
    return 3;
  }
  std::printf("[rank %d] finished every step\n", rank);
  return 0;
}
