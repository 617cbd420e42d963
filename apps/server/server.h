// The HTTP inference server behind `rcuda serve` (docs/serving.md): KServe v2 REST as Triton
// speaks it (JSON and binary tensors, model metadata and config, the repository extension),
// vetiver's /ping, /metadata and /predict, and Prometheus metrics on a second port.
//
//   server::ServerOptions options;
//   options.model_repository = "models";
//   options.http_port = 0;                 // any free port
//   server::InferenceServer server(options);
//   server.start();                        // loads the models, listens on background threads
//   ... http://127.0.0.1:<server.port()>/v2/models/mlp/infer ...
//   server.drain();                        // new requests 503, in-flight ones answered, stopped
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "rcuda/runtime/repository.h"

namespace rcuda::server {

struct ServerOptions {
  std::string model_repository;           // the folder laid out as runtime/repository.h says
  runtime::RepositoryOptions repository;  // the default device of models
  std::string host = "127.0.0.1";
  int http_port = 8000;     // 0: any free port (port() says which)
  int metrics_port = 8002;  // 0: any free port; -1: no metrics port
  // A larger body is answered 413 before it is read into memory.
  size_t max_request_bytes = size_t{64} << 20;
  // cpp-httplib holds one thread per open (keep-alive) connection, and dynamic batching needs
  // many requests in flight at once: the pool bounds the connections served concurrently.
  int http_threads = 256;
  // The model behind /predict; "": the only loaded model.
  std::string vetiver_model;
  // Triton's names: "none" loads every model at start and refuses the repository's load and
  // unload; "explicit" loads none at start, only through POST /v2/repository/models/{m}/load.
  std::string model_control_mode = "none";
  // Export the process's CUDA pool statistics on the metrics port (creates a CUDA context per
  // GPU: leave off when the models run on the CPU).
  bool allocator_stats = false;
  int nvml_interval_ms = 1000;  // GPU metrics sampling, when NVML loads
};

class InferenceServer {
 public:
  // Checks the options (ValueError naming the option and value); starts nothing.
  explicit InferenceServer(ServerOptions options);
  ~InferenceServer();  // drain() when still serving
  InferenceServer(const InferenceServer&) = delete;
  InferenceServer& operator=(const InferenceServer&) = delete;

  // Loads the models (model_control_mode "none"; a model that fails its load is reported by the
  // repository's index and the others serve), binds both ports and serves them on background
  // threads. Error naming the address when a port cannot be bound.
  void start();

  int port() const;          // the HTTP port bound (after start)
  int metrics_port() const;  // the metrics port bound, or -1 when off
  bool ready() const;        // started and not draining
  runtime::ModelRepository& repository();
  const ServerOptions& options() const;

  // Stops taking requests (new ones are answered 503 "server is shutting down", health/ready
  // 400), waits for those in flight to be answered, stops both listeners and every model.
  // Idempotent; returns when everything has stopped.
  void drain();

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace rcuda::server
