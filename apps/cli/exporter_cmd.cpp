// `rcuda exporter`: Prometheus metrics over HTTP at /metrics (OpenMetrics when the Accept
// header asks for it). NVML is sampled on a background thread (telemetry::NvmlSampler); a
// scrape formats the latest sample and never waits on NVML. Loopback only unless --bind.
#include <httplib.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <memory>
#include <thread>

#include "commands.h"
#include "rcuda/telemetry/metrics.h"
#include "rcuda/telemetry/sampler.h"
#include "stop_signal.h"

namespace rcuda::cli {
int exporter(const ExporterArgs& args) {
  // SIGINT/SIGTERM set a flag that a small thread polls to stop the server (stop_signal.h).
  catch_stop_signals();

  telemetry::Registry registry;
  telemetry::export_build_info(registry);
  std::string why;
  std::shared_ptr<const telemetry::Nvml> nvml = telemetry::Nvml::open(&why);
  registry.gauge("rcuda_nvml_available", "1 when NVML loaded and GPU metrics are exported.")
      .set(nvml ? 1 : 0);
  std::unique_ptr<telemetry::NvmlSampler> sampler;
  if (nvml) {
    sampler =
        std::make_unique<telemetry::NvmlSampler>(nvml, std::chrono::milliseconds(args.interval_ms));
    telemetry::NvmlSampler* s = sampler.get();
    registry.add_collector(
        [s](telemetry::Registry& r) { telemetry::export_gpu_samples(r, s->latest()); });
  } else {
    std::fprintf(stderr, "rcuda exporter: no GPU metrics: %s\n", why.c_str());
  }
  if (args.allocator_stats)
    registry.add_collector([](telemetry::Registry& r) { telemetry::export_allocator_stats(r); });

  httplib::Server server;
  server.Get("/metrics", [&](const httplib::Request& req, httplib::Response& res) {
    if (telemetry::wants_openmetrics(req.get_header_value("Accept")))
      res.set_content(telemetry::openmetrics_text(registry), telemetry::kOpenMetricsContentType);
    else
      res.set_content(telemetry::prometheus_text(registry), telemetry::kPrometheusContentType);
  });
  int port = args.port;
  if (port == 0) {
    port = server.bind_to_any_port(args.bind);
  } else if (!server.bind_to_port(args.bind, port)) {
    port = -1;
  }
  if (port < 0) {
    std::fprintf(
        stderr, "rcuda exporter: cannot listen on %s:%d (in use, or not an address of this host)\n",
        args.bind.c_str(), args.port);
    return 1;
  }
  std::fprintf(stderr, "rcuda exporter: serving http://%s:%d/metrics\n", args.bind.c_str(), port);

  std::atomic<bool> listening_done{false};
  std::thread stopper([&] {
    while (!stop_requested() && !listening_done)
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    server.stop();
  });
  const bool ok = server.listen_after_bind();
  listening_done = true;
  stopper.join();
  std::fprintf(stderr, "rcuda exporter: stopped\n");
  return ok ? 0 : 1;
}

}  // namespace rcuda::cli
