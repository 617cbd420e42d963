#include "metrics.h"

#include <chrono>

#include "rcuda/core/error.h"
#include "rcuda/telemetry/nvml.h"

namespace rcuda::server {

MetricsEndpoint::MetricsEndpoint(const ServerOptions& options,
                                 const runtime::ModelRepository& repository) {
  telemetry::export_build_info(registry_);
  std::string why;
  std::shared_ptr<const telemetry::Nvml> nvml = telemetry::Nvml::open(&why);
  registry_.gauge("rcuda_nvml_available", "1 when NVML loaded and GPU metrics are exported.")
      .set(nvml ? 1 : 0);
  if (nvml) {
    sampler_ = std::make_unique<telemetry::NvmlSampler>(
        nvml, std::chrono::milliseconds(options.nvml_interval_ms));
    telemetry::NvmlSampler* sampler = sampler_.get();
    registry_.add_collector(
        [sampler](telemetry::Registry& r) { telemetry::export_gpu_samples(r, sampler->latest()); });
  }
  if (options.allocator_stats)
    registry_.add_collector([](telemetry::Registry& r) { telemetry::export_allocator_stats(r); });
  repository.export_metrics(registry_);

  http_.new_task_queue = [] { return new httplib::ThreadPool(4); };
  http_.Get("/metrics", [this](const httplib::Request& req, httplib::Response& res) {
    if (telemetry::wants_openmetrics(req.get_header_value("Accept")))
      res.set_content(telemetry::openmetrics_text(registry_), telemetry::kOpenMetricsContentType);
    else
      res.set_content(telemetry::prometheus_text(registry_), telemetry::kPrometheusContentType);
  });
}

MetricsEndpoint::~MetricsEndpoint() { stop(); }

int MetricsEndpoint::start(const std::string& host, int port) {
  return bind_and_serve(http_, host, port, thread_, "metrics");
}

void MetricsEndpoint::stop() {
  if (!thread_.joinable()) return;
  http_.stop();
  thread_.join();
}

int bind_and_serve(HttpListener& http, const std::string& host, int port, std::thread& thread,
                   const char* what) {
  const int bound =
      port == 0 ? http.bind_to_any_port(host) : (http.bind_to_port(host, port) ? port : -1);
  if (bound < 0)
    throw Error(std::string("rcuda serve: cannot listen for ") + what + " on " + host + ":" +
                std::to_string(port) + " (in use, or not an address of this host)");
  http.set_listen_backlog(1024);  // the kernel caps it at net.core.somaxconn
  thread = std::thread([&http] { http.listen_after_bind(); });
  // stop() is a no-op until the server runs: wait for it, so that a stop right after start
  // cannot be lost.
  for (int i = 0; i < 5000 && !http.is_running(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return bound;
}

}  // namespace rcuda::server
