// Sustained products with every result checked (stress_run.h), as gpu-burn does it: operand
// sets fill most of the device's memory, every product is compared with the first product of the
// same operands, and a few first products are checked against the host.
#include "stress_run.h"

#include <algorithm>
#include <chrono>
#include <future>
#include <memory>
#include <optional>
#include <thread>

#include "rcuda/autograd/api.h"
#include "rcuda/backend/cuda.h"
#include "rcuda/core/error.h"
#include "rcuda/telemetry/nvml.h"

namespace rcuda::stress {
namespace {

using Clock = std::chrono::steady_clock;

bool stopped(const PhaseContext& c) { return c.should_stop && c.should_stop(); }
void say(const PhaseContext& c, const std::string& line) {
  if (c.log) c.log(line);
}

std::string device_name(Device d) {
  return d.is_cuda() ? "cuda:" + std::to_string(d.index) : std::string("cpu");
}

Clock::time_point after(double seconds) {
  return Clock::now() + std::chrono::duration_cast<Clock::duration>(
                            std::chrono::duration<double>(std::max(seconds, 0.0)));
}

// Seconds the work queued by `work` takes on the device: CUDA events on a GPU (the host may
// run ahead), the host's clock on the CPU (where ops are synchronous).
double timed_seconds(Device device, const std::function<void()>& work) {
  if (device.is_cuda()) return cuda::time_ms(device.index, work) / 1e3;
  const auto start = Clock::now();
  work();
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// One operand set: a [n,n] row-major and b [n,n] stored as b_t [n,n] row-major (b = b_t.t(),
// column-major: the layout cuBLASLt's fp8 kernels need, used for every kind alike), the first
// product and the latest.
struct OperandSet {
  Tensor a, b_t, first, latest;
};

Tensor make_operand(int64_t n, GemmKind kind, Device device) {
  const Tensor values = randn({n, n}, {DType::Float32, device});
  return input_dtype(kind) == DType::Float32 ? values : to(values, input_dtype(kind));
}

Tensor product(GemmKind kind, const OperandSet& s, const Tensor& one) {
  if (kind == GemmKind::Float8) return scaled_mm(s.a, s.b_t.t(), one, one, DType::BFloat16);
  return matmul(s.a, s.b_t.t());
}

// What the host needs to check rows of a set's first product: the rows' operands, b_t and the
// rows of the product, as floats (every input dtype is exact in float).
struct ReferenceData {
  std::vector<float> a_rows, b_t, got;
  int64_t rows = 0, n = 0;
};

std::vector<float> host_floats(const Tensor& t) {
  const Tensor h = contiguous(to(t, Device(DeviceType::CPU), DType::Float32));
  const float* p = h.data<float>();
  return {p, p + h.numel()};
}

ReferenceData reference_data(const OperandSet& s, int rows) {
  ReferenceData d;
  d.n = s.a.size(0);
  d.rows = std::clamp<int64_t>(rows, 1, d.n);
  for (int64_t i = 0; i < d.rows; ++i) {
    const int64_t row = (2 * i + 1) * d.n / (2 * d.rows);  // spread over the matrix
    const std::vector<float> a = host_floats(s.a.narrow(0, row, 1));
    const std::vector<float> got = host_floats(s.first.narrow(0, row, 1));
    d.a_rows.insert(d.a_rows.end(), a.begin(), a.end());
    d.got.insert(d.got.end(), got.begin(), got.end());
  }
  d.b_t = host_floats(s.b_t);
  return d;
}

// Checks the first products of sets [0, count) on the host, one set at a time on a worker
// thread, while the device runs rounds: start_next() between rounds copies the next set's data
// once the worker is free (host memory holds one set's b_t at a time), finish() waits.
class ReferenceChecker {
 public:
  ReferenceChecker(GemmKind kind, int64_t count, int rows)
      : tolerance_(reference_tolerance(kind)), count_(count), rows_(rows) {}

  void start_next(const std::vector<OperandSet>& sets) {
    if (next_ >= count_) return;
    if (pending_.valid()) {
      if (pending_.wait_for(std::chrono::seconds(0)) != std::future_status::ready) return;
      merge(result_, pending_.get());
    }
    auto data =
        std::make_shared<ReferenceData>(reference_data(sets[static_cast<size_t>(next_++)], rows_));
    rows_checked_ = data->rows;
    const Tolerance t = tolerance_;
    pending_ = std::async(std::launch::async, [data, t] {
      return check_rows_parallel(data->a_rows.data(), data->b_t.data(), data->got.data(),
                                 data->rows, data->n, data->n, t);
    });
  }

  // Waits for the worker and checks the sets not reached yet, unless `stop`.
  void finish(const std::vector<OperandSet>& sets, const PhaseContext& context) {
    while (next_ < count_ && !stopped(context)) {
      if (pending_.valid()) merge(result_, pending_.get());
      start_next(sets);
    }
    if (pending_.valid()) merge(result_, pending_.get());
  }

  int64_t sets_checked() const { return next_; }
  int64_t rows_checked() const { return rows_checked_; }
  const ReferenceCheck& result() const { return result_; }

 private:
  Tolerance tolerance_;
  int64_t count_, next_ = 0, rows_checked_ = 0;
  int rows_;
  std::future<ReferenceCheck> pending_;
  ReferenceCheck result_;
};

// Makes up to `wanted` operand sets with their first products; fewer when the device runs out
// of memory (the sizing's estimate of free memory can be optimistic) or the run is stopped.
std::vector<OperandSet> make_sets(GemmKind kind, int64_t n, int64_t wanted, Device device,
                                  const Tensor& one, const PhaseContext& context) {
  std::vector<OperandSet> sets;
  for (int64_t i = 0; i < wanted && !stopped(context); ++i) {
    try {
      OperandSet s;
      s.a = make_operand(n, kind, device);
      s.b_t = make_operand(n, kind, device);
      s.first = product(kind, s, one);
      sets.push_back(std::move(s));
    } catch (const OutOfMemoryError&) {
      // The rounds need a product in flight and a comparison's mask besides the sets: one set
      // fewer leaves room for both.
      if (sets.size() > 1) sets.pop_back();
      if (device.is_cuda()) cuda::empty_cache(device.index);
      say(context, device_name(device) + " gemm " + gemm_name(kind) +
                       ": out of memory while making operand sets; going on with " +
                       std::to_string(sets.size()));
      break;
    }
  }
  return sets;
}

}  // namespace

GemmResult run_gemm_phase(Device device, GemmKind kind, const Plan& plan, uint64_t free_bytes,
                          const PhaseContext& context) {
  GemmResult r;
  r.kind = kind;
  const auto deadline = after(plan.gemm_seconds);
  const std::string what = device_name(device) + " gemm " + gemm_name(kind);
  const OperandSizing sizing = size_operand_sets(free_bytes, plan.memory_fraction, plan.matrix_size,
                                                 input_dtype(kind), output_dtype(kind));
  if (sizing.n == 0) {
    r.skipped = "not enough free device memory (" + std::to_string(free_bytes >> 20) + " MiB)";
    return r;
  }
  const Tensor one = ones({1}, {DType::Float32, device});  // fp8's per-tensor scales
  std::vector<OperandSet> sets = make_sets(kind, sizing.n, sizing.sets, device, one, context);
  if (sets.empty()) {
    r.skipped = stopped(context) ? "stopped" : "out of device memory for one operand set";
    return r;
  }
  const int64_t n = sizing.n;
  r.n = n;
  r.sets = static_cast<int64_t>(sets.size());
  r.bytes = sizing.bytes_per_set * static_cast<uint64_t>(r.sets);
  say(context, what + ": " + std::to_string(r.sets) + " operand sets of " + std::to_string(n) +
                   " x " + std::to_string(n) + " (" + std::to_string(r.bytes >> 20) + " MiB)");

  ReferenceChecker reference(kind, std::min<int64_t>(plan.reference_sets, r.sets),
                             plan.reference_rows);
  Tensor wrong = zeros({}, {DType::Int64, device});
  for (int64_t round = 0; !stopped(context) && (round == 0 || Clock::now() < deadline); ++round) {
    reference.start_next(sets);
    size_t done = 0;
    const double seconds = timed_seconds(device, [&] {
      for (; done < sets.size() && !stopped(context); ++done)
        sets[done].latest = product(kind, sets[done], one);
    });
    for (size_t i = 0; i < done; ++i) {
      if (context.after_product)
        context.after_product(sets[i].latest, round, static_cast<int64_t>(i));
      wrong = add(wrong, count_mismatches(sets[i].latest, sets[i].first));
    }
    r.products += static_cast<int64_t>(done);
    r.seconds += seconds;
  }
  reference.finish(sets, context);
  r.compared_elements = r.products * n * n;
  r.wrong_elements = item(wrong).to_int();  // the one synchronisation of the comparisons
  r.reference = reference.result();
  r.reference_sets = reference.sets_checked();
  r.reference_rows = reference.rows_checked();
  if (r.seconds > 0)
    r.tflops = 2.0 * static_cast<double>(n) * static_cast<double>(n) * static_cast<double>(n) *
               static_cast<double>(r.products) / r.seconds / 1e12;
  char rate[64];
  std::snprintf(rate, sizeof rate, "%.1f TFLOP/s", r.tflops);
  say(context, what + ": " + std::to_string(r.products) + " products, " + rate + ", " +
                   std::to_string(r.wrong_elements + r.reference.wrong) + " wrong elements");
  return r;
}

CopyResult run_device_copy(Device device, const Plan& plan, uint64_t free_bytes,
                           const PhaseContext& context) {
  CopyResult r;
  const auto deadline = after(plan.device_copy_seconds);
  // Two buffers, their comparison's mask (a byte per element) and headroom.
  const uint64_t budget = static_cast<uint64_t>(static_cast<double>(free_bytes) * 0.4);
  const int64_t elements = static_cast<int64_t>(std::min(plan.device_copy_bytes, budget) / 4);
  if (elements < (1 << 18)) {
    r.skipped = "not enough free device memory (" + std::to_string(free_bytes >> 20) + " MiB)";
    return r;
  }
  r.bytes = static_cast<uint64_t>(elements) * 4;
  const Tensor source = rand({elements}, {DType::Float32, device});
  const Tensor target = empty({elements}, {DType::Float32, device});
  copy_(target, source);  // warm-up
  // Enough copies per timed chunk to last about 0.1 s.
  const double once = timed_seconds(device, [&] { copy_(target, source); });
  const int64_t chunk =
      std::clamp<int64_t>(static_cast<int64_t>(0.1 / std::max(once, 1e-6)), 1, 10000);
  Tensor wrong = zeros({}, {DType::Int64, device});
  for (bool first = true; !stopped(context) && (first || Clock::now() < deadline); first = false) {
    r.seconds += timed_seconds(device, [&] {
      for (int64_t i = 0; i < chunk; ++i) copy_(target, source);
    });
    r.copies += chunk;
    wrong = add(wrong, count_mismatches(target, source));
    r.compared_elements += elements;
  }
  r.wrong_elements = item(wrong).to_int();
  if (r.seconds > 0)
    r.gbps = 2.0 * static_cast<double>(r.bytes) * static_cast<double>(r.copies) / r.seconds / 1e9;
  char rate[64];
  std::snprintf(rate, sizeof rate, "%.1f GB/s", r.gbps);
  say(context, device_name(device) + " device copy: " + std::to_string(r.copies) + " copies of " +
                   std::to_string(r.bytes >> 20) + " MiB, " + rate);
  return r;
}

void run_host_copies(int device, const Plan& plan, uint64_t free_bytes, const PhaseContext& context,
                     CopyResult* to_device, CopyResult* to_host) {
  const Device gpu(DeviceType::CUDA, device);
  const uint64_t budget = static_cast<uint64_t>(static_cast<double>(free_bytes) * 0.4);
  const int64_t elements = static_cast<int64_t>(std::min(plan.host_copy_bytes, budget) / 4);
  if (elements < (1 << 18)) {
    to_device->skipped = to_host->skipped =
        "not enough free device memory (" + std::to_string(free_bytes >> 20) + " MiB)";
    return;
  }
  const Tensor original = cuda::pin_memory(rand({elements}));
  const Tensor back = cuda::pin_memory(zeros({elements}));
  const Tensor on_device = empty({elements}, {DType::Float32, gpu});
  const double half = plan.host_copy_seconds / 2;
  // Each direction in chunks of copies lasting about 0.1 s; `copy` copies once.
  const auto run = [&](CopyResult* r, const std::function<void()>& copy) {
    r->bytes = static_cast<uint64_t>(elements) * 4;
    const auto deadline = after(half);
    copy();  // warm-up
    const double once = timed_seconds(gpu, copy);
    const int64_t chunk =
        std::clamp<int64_t>(static_cast<int64_t>(0.1 / std::max(once, 1e-6)), 1, 10000);
    for (bool first = true; !stopped(context) && (first || Clock::now() < deadline);
         first = false) {
      r->seconds += timed_seconds(gpu, [&] {
        for (int64_t i = 0; i < chunk; ++i) copy();
      });
      r->copies += chunk;
    }
    if (r->seconds > 0)
      r->gbps = static_cast<double>(r->bytes) * static_cast<double>(r->copies) / r->seconds / 1e9;
  };
  run(to_device, [&] { copy_(on_device, original); });
  run(to_host, [&] { copy_(back, on_device); });
  // The round trip: what came back is what left.
  to_host->compared_elements = elements;
  to_host->wrong_elements = item(count_mismatches(back, original)).to_int();
  char rates[96];
  std::snprintf(rates, sizeof rates, "%.1f GB/s to the device, %.1f GB/s back", to_device->gbps,
                to_host->gbps);
  say(context, "cuda:" + std::to_string(device) + " host copies of " +
                   std::to_string(to_device->bytes >> 20) + " MiB (pinned): " + rates);
}

namespace {

// A CUDA device's free memory as NVML counts it (all processes), empty without NVML.
std::optional<uint64_t> nvml_free_bytes(const telemetry::Nvml* nvml, int nvml_index) {
  if (!nvml || nvml_index < 0) return std::nullopt;
  const telemetry::GpuSample s = nvml->sample(nvml_index);
  if (!s.memory_total_bytes || !s.memory_used_bytes) return std::nullopt;
  return *s.memory_total_bytes > *s.memory_used_bytes ? *s.memory_total_bytes - *s.memory_used_bytes
                                                      : 0;
}

// Free memory for a phase: NVML's count, else (no NVML, or a MIG instance NVML does not map)
// the device's memory less what this process's pool holds; a phase that finds less memory than
// this makes fewer operand sets (make_sets).
uint64_t free_bytes_of(int device, const telemetry::Nvml* nvml, int nvml_index) {
  if (const std::optional<uint64_t> f = nvml_free_bytes(nvml, nvml_index)) return *f;
  const auto total = static_cast<uint64_t>(cuda::properties(device).total_memory_bytes);
  const uint64_t held = cuda::memory_stats(device).reserved_bytes;
  return total > held ? total - held : 0;
}

// Runs work(i) for i in [0, count) on a thread each and waits for them all, then hands the
// phase's memory back to the driver so that the next phase sizes itself on a clean device.
void on_every_device(const std::vector<GpuReport>& gpus, const std::function<void(size_t)>& work) {
  std::vector<std::thread> threads;
  for (size_t i = 0; i < gpus.size(); ++i) threads.emplace_back(work, i);
  for (std::thread& t : threads) t.join();
  for (const GpuReport& g : gpus) {
    try {
      cuda::empty_cache(g.index);
    } catch (const std::exception&) {  // a device that failed reports it through its phase
    }
  }
}

}  // namespace

Report run_stress(const RunOptions& o) {
  Report report;
  report.level = o.plan.level;
  const auto start = Clock::now();
  std::string why_no_nvml;
  const std::shared_ptr<const telemetry::Nvml> nvml = telemetry::Nvml::open(&why_no_nvml);
  std::vector<int> nvml_indices;
  for (int d : o.devices) {
    const cuda::DeviceProperties p = cuda::properties(d);
    GpuReport g;
    g.index = d;
    g.name = p.name;
    g.uuid = p.uuid;
    g.major = p.major;
    g.minor = p.minor;
    g.total_memory_bytes = p.total_memory_bytes;
    nvml_indices.push_back(nvml ? nvml->index_of_uuid(p.uuid) : -1);
    g.free_memory_bytes = nvml_free_bytes(nvml.get(), nvml_indices.back());
    report.gpus.push_back(std::move(g));
  }
  std::unique_ptr<StressSampler> sampler;
  if (nvml) sampler = std::make_unique<StressSampler>(nvml, nvml_indices, o.sample_interval);
  const PhaseContext& context = o.context;
  // Runs one phase on every GPU; an exception ends that GPU's phase and is reported as its error.
  const auto phase = [&](const char* what, const std::function<void(GpuReport&, int)>& work) {
    say(context, std::string("phase: ") + what);
    on_every_device(report.gpus, [&](size_t i) { work(report.gpus[i], nvml_indices[i]); });
  };
  const auto guarded = [](std::string* error, const std::function<void()>& work) {
    try {
      work();
    } catch (const std::exception& e) {
      *error = e.what();
    }
  };

  for (const GemmKind kind : o.kinds) {
    // TF32 is a process-wide switch: on for the whole TF32 phase on every GPU, off for the
    // others (float32 must be float32), then as it was.
    const bool tf32_before = cuda::allow_tf32();
    cuda::set_allow_tf32(kind == GemmKind::TF32);
    phase(gemm_name(kind), [&](GpuReport& g, int nvml_index) {
      GemmResult r;
      r.kind = kind;
      if (!gemm_supported(kind, g.major, g.minor))
        r.skipped = gemm_unsupported_reason(kind, g.major, g.minor);
      else if (stopped(context))
        r.skipped = "stopped";
      else
        guarded(&r.error, [&] {
          r = run_gemm_phase(Device(DeviceType::CUDA, g.index), kind, o.plan,
                             free_bytes_of(g.index, nvml.get(), nvml_index), context);
        });
      g.gemm.push_back(std::move(r));
    });
    cuda::set_allow_tf32(tf32_before);
  }
  phase("device copy", [&](GpuReport& g, int nvml_index) {
    if (stopped(context)) {
      g.device_copy.skipped = "stopped";
      return;
    }
    guarded(&g.device_copy.error, [&] {
      g.device_copy = run_device_copy(Device(DeviceType::CUDA, g.index), o.plan,
                                      free_bytes_of(g.index, nvml.get(), nvml_index), context);
    });
  });
  phase("host copies", [&](GpuReport& g, int nvml_index) {
    if (stopped(context)) {
      g.host_to_device.skipped = g.device_to_host.skipped = "stopped";
      return;
    }
    guarded(&g.host_to_device.error, [&] {
      run_host_copies(g.index, o.plan, free_bytes_of(g.index, nvml.get(), nvml_index), context,
                      &g.host_to_device, &g.device_to_host);
    });
  });

  if (sampler) {
    sampler->stop();
    const std::vector<TelemetrySummary> summaries = sampler->summaries();
    for (size_t i = 0; i < report.gpus.size(); ++i) {
      report.gpus[i].telemetry = summaries[i];
      if (!summaries[i].available)
        report.gpus[i].telemetry.unavailable_reason =
            "NVML lists no GPU with this UUID (a MIG instance, or a GPU NVML cannot open)";
    }
  } else {
    for (GpuReport& g : report.gpus) g.telemetry.unavailable_reason = why_no_nvml;
  }
  report.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  report.interrupted = stopped(context);
  return report;
}

}  // namespace rcuda::stress
