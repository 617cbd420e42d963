// NvmlSampler: the background sampling thread (rcuda/telemetry/sampler.h).
#include "rcuda/telemetry/sampler.h"

namespace rcuda::telemetry {

NvmlSampler::NvmlSampler(std::shared_ptr<const Nvml> nvml, std::chrono::milliseconds interval)
    : nvml_(std::move(nvml)), interval_(interval) {
  latest_ = nvml_->sample_all();
  rounds_ = 1;
  thread_ = std::thread([this] { run(); });
}

NvmlSampler::~NvmlSampler() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void NvmlSampler::run() {
  auto next = std::chrono::steady_clock::now() + interval_;
  std::unique_lock<std::mutex> lock(mutex_);
  while (!wake_.wait_until(lock, next, [this] { return stopping_; })) {
    lock.unlock();
    // NVML is called without the lock: a slow NVML delays the next sample, never a reader.
    std::vector<GpuSample> fresh = nvml_->sample_all();
    lock.lock();
    latest_ = std::move(fresh);
    ++rounds_;
    next += interval_;
    const auto now = std::chrono::steady_clock::now();
    if (next < now) next = now + interval_;  // fell behind: skip, do not burst
  }
}

std::vector<GpuSample> NvmlSampler::latest() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return latest_;
}

int64_t NvmlSampler::samples_taken() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return rounds_;
}

}  // namespace rcuda::telemetry
