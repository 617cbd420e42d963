// `rcuda serve`: the inference server (apps/server) over a model repository, until SIGINT or
// SIGTERM, which drain it: new requests are answered 503, those in flight are answered, then
// it exits 0.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <thread>

#include "commands.h"
#include "rcuda/core/device.h"
#include "server.h"
#include "stop_signal.h"

namespace rcuda::cli {
namespace {
void print_models(server::InferenceServer& server) {
  for (const auto& entry : server.repository().index()) {
    if (entry.state == "READY")
      std::fprintf(stderr, "rcuda serve: model %s version %s: READY\n", entry.name.c_str(),
                   entry.version.c_str());
    else
      std::fprintf(stderr, "rcuda serve: model %s: %s%s%s\n", entry.name.c_str(),
                   entry.state.empty() ? "not loaded" : entry.state.c_str(),
                   entry.reason.empty() ? "" : ": ", entry.reason.c_str());
  }
}
}  // namespace

int serve(const ServeArgs& args) {
  // SIGINT/SIGTERM set a flag that this thread polls, then drains the server from here
  // (stop_signal.h).
  catch_stop_signals();

  server::ServerOptions options;
  options.model_repository = args.model_repository;
  options.host = args.host;
  options.http_port = args.http_port;
  options.metrics_port = args.metrics_port;
  options.max_request_bytes = static_cast<size_t>(args.max_request_bytes);
  options.http_threads = args.http_threads;
  options.model_control_mode = args.model_control_mode;
  options.vetiver_model = args.vetiver_model;
  if (!args.device.empty()) options.repository.default_device = Device::parse(args.device);
  // The pool's statistics need a CUDA context per GPU: only when models may run on one.
  options.allocator_stats = args.device != "cpu";

  server::InferenceServer server(options);
  server.start();
  print_models(server);
  if (server.metrics_port() >= 0)
    std::fprintf(stderr, "rcuda serve: serving http://%s:%d (metrics http://%s:%d/metrics)\n",
                 args.host.c_str(), server.port(), args.host.c_str(), server.metrics_port());
  else
    std::fprintf(stderr, "rcuda serve: serving http://%s:%d (metrics off)\n", args.host.c_str(),
                 server.port());

  while (!stop_requested()) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  std::fprintf(stderr, "rcuda serve: draining (in-flight requests are answered)\n");
  server.drain();
  std::fprintf(stderr, "rcuda serve: stopped\n");
  return 0;
}

}  // namespace rcuda::cli
