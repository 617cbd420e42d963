// The metrics port: Prometheus text (or OpenMetrics on request) at /metrics, with the
// repository's per-model rcuda_inference_* figures, GPU readings from NVML when it loads (as
// `rcuda exporter` serves them) and, when asked, the CUDA pool's statistics.
#pragma once

#include <httplib.h>

#include <memory>
#include <string>
#include <thread>

#include "http_util.h"
#include "rcuda/runtime/repository.h"
#include "rcuda/telemetry/metrics.h"
#include "rcuda/telemetry/sampler.h"
#include "server.h"

namespace rcuda::server {

class MetricsEndpoint {
 public:
  // The repository must outlive the endpoint.
  MetricsEndpoint(const ServerOptions& options, const runtime::ModelRepository& repository);
  ~MetricsEndpoint();  // stop()
  MetricsEndpoint(const MetricsEndpoint&) = delete;
  MetricsEndpoint& operator=(const MetricsEndpoint&) = delete;

  // Binds `host`:`port` (0: any free port) and serves on a background thread; returns the port.
  // Error naming the address when it cannot bind.
  int start(const std::string& host, int port);
  void stop();
  telemetry::Registry& registry() { return registry_; }

 private:
  telemetry::Registry registry_;
  std::unique_ptr<telemetry::NvmlSampler> sampler_;
  HttpListener http_;
  std::thread thread_;
};

// Binds `http` to host:port (0: any free port) with a wide listen backlog (Note [Listen
// backlog]), returning the port; Error naming the address when it cannot. Then serves it on
// `thread` and returns once it accepts connections.
int bind_and_serve(HttpListener& http, const std::string& host, int port, std::thread& thread,
                   const char* what);

}  // namespace rcuda::server
