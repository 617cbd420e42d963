// A served model's throughput in the process, without HTTP (bench/serve_load.sh puts it beside
// the server's): the model of a repository loaded as `rcuda serve` loads it (runtime/), and
// --threads threads each submitting requests of --rows rows back to back for --seconds.
//   bench_served REPO MODEL [--threads 64] [--rows 1] [--seconds 10]
// Prints <model>_inprocess_t<threads>_r<rows>_rows_per_s, the mean batch and the p50/p99 latency
// of a request in milliseconds.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "rcuda/autograd/api.h"
#include "rcuda/runtime/repository.h"

namespace {

using Clock = std::chrono::steady_clock;

}  // namespace

int main(int argc, char** argv) {
  using namespace rcuda;
  if (argc < 3) {
    std::fprintf(stderr,
                 "usage: bench_served REPO MODEL [--threads 64] [--rows 1] [--seconds 10]\n");
    return 2;
  }
  const std::string repo_dir = argv[1], name = argv[2];
  int threads = 64;
  int64_t rows = 1;
  double seconds = 10;
  for (int a = 3; a < argc; ++a) {
    const std::string arg = argv[a];
    auto next = [&] { return std::string(a + 1 < argc ? argv[++a] : "0"); };
    if (arg == "--threads")
      threads = std::stoi(next());
    else if (arg == "--rows")
      rows = std::stoll(next());
    else if (arg == "--seconds")
      seconds = std::stod(next());
  }
  runtime::ModelRepository repo(repo_dir);
  repo.load(name);
  const std::shared_ptr<runtime::ServedModel> model = repo.find(name);
  const runtime::ModelConfig& config = model->config();

  // One request's inputs: random values of each input's dtype and shape, `rows` rows.
  std::vector<runtime::NamedTensor> inputs;
  for (const runtime::TensorConfig& in : config.inputs) {
    Shape shape;
    if (config.max_batch_size > 0) shape.push_back(rows);
    for (int64_t d : in.dims) shape.push_back(d < 0 ? 1 : d);
    inputs.push_back({in.name, to(randn(shape), in.dtype)});
  }
  auto request = [&] {
    runtime::InferRequest r;
    r.inputs = inputs;
    return r;
  };
  for (int i = 0; i < 5; ++i) model->infer(request());  // warm-up: plans, captures, pools

  const runtime::ModelStats before = model->stats();
  std::atomic<bool> stop{false};
  std::vector<std::vector<double>> latencies(static_cast<size_t>(threads));
  std::vector<std::thread> workers;
  const auto start = Clock::now();
  for (int t = 0; t < threads; ++t)
    workers.emplace_back([&, t] {
      while (!stop.load(std::memory_order_relaxed)) {
        const auto s = Clock::now();
        model->infer(request());
        latencies[static_cast<size_t>(t)].push_back(
            std::chrono::duration<double, std::milli>(Clock::now() - s).count());
      }
    });
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  stop = true;
  for (std::thread& w : workers) w.join();
  const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  const runtime::ModelStats after = model->stats();

  std::vector<double> all;
  for (const auto& l : latencies) all.insert(all.end(), l.begin(), l.end());
  std::sort(all.begin(), all.end());
  const auto pct = [&](double p) {
    return all.empty() ? 0.0 : all[std::min(all.size() - 1, static_cast<size_t>(p * all.size()))];
  };
  const double runs = static_cast<double>(after.execution_count - before.execution_count);
  const double done_rows = static_cast<double>(after.inference_count - before.inference_count);
  const std::string tag =
      name + "_inprocess_t" + std::to_string(threads) + "_r" + std::to_string(rows);
  std::printf("%s_rows_per_s: %.1f\n", tag.c_str(), done_rows / elapsed);
  std::printf("%s_mean_batch: %.2f\n", tag.c_str(), runs > 0 ? done_rows / runs : 0.0);
  std::printf("%s_p50_ms: %.3f\n", tag.c_str(), pct(0.50));
  std::printf("%s_p99_ms: %.3f\n", tag.c_str(), pct(0.99));
  return 0;
}
