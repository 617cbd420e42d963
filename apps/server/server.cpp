#include "server.h"

#include <httplib.h>

#include <thread>

#include "http_util.h"
#include "metrics.h"
#include "rcuda/core/error.h"
#include "routes.h"

namespace rcuda::server {

struct InferenceServer::Impl {
  ServerContext context;
  std::unique_ptr<runtime::ModelRepository> repository;
  HttpListener http;
  std::thread http_thread;
  std::unique_ptr<MetricsEndpoint> metrics;
  int port = -1;
  int metrics_port = -1;
  bool stopped = false;
};

namespace {

void check_options(const ServerOptions& o) {
  auto fail = [](const std::string& what) { throw ValueError("rcuda serve: " + what); };
  if (o.model_repository.empty()) fail("model_repository is empty: give the repository's folder");
  if (o.model_control_mode != "none" && o.model_control_mode != "explicit")
    fail("model_control_mode = '" + o.model_control_mode + "': none or explicit");
  if (o.http_port < 0 || o.http_port > 65535)
    fail("http_port = " + std::to_string(o.http_port) + ": 0 (any) to 65535");
  if (o.metrics_port < -1 || o.metrics_port > 65535)
    fail("metrics_port = " + std::to_string(o.metrics_port) + ": -1 (off), 0 (any) to 65535");
  if (o.http_threads < 1) fail("http_threads = " + std::to_string(o.http_threads) + ": at least 1");
  if (o.max_request_bytes == 0) fail("max_request_bytes = 0: at least 1");
  if (o.nvml_interval_ms < 10) fail("nvml_interval_ms = " + std::to_string(o.nvml_interval_ms));
}

// Answers what no route answered (404) or what cpp-httplib refused before routing (413 for a
// body over the limit, 400 for a malformed request) as JSON, as the routes answer errors.
void json_errors(httplib::Server& http, size_t max_request_bytes) {
  http.set_error_handler([max_request_bytes](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return;  // a route's own error
    std::string what;
    if (res.status == 404)
      what = "no route for " + req.method + " " + req.path;
    else if (res.status == 413)
      what = "the request body is larger than the server's limit of " +
             std::to_string(max_request_bytes) + " bytes (--max-request-bytes)";
    else
      what = "malformed HTTP request (status " + std::to_string(res.status) + ")";
    send_error(res, res.status, what);
  });
}

// Note [Form-encoded bodies]
// `curl -d @request.json` sends Content-Type application/x-www-form-urlencoded, and cpp-httplib
// parses such a body as a form, refusing one over 8 KiB with 413 whatever the payload limit.
// No route here takes a form: the header is dropped before the body is read, so that these
// bodies are read as the JSON they are. (The request is cpp-httplib's own non-const object, handed
// to this hook as const.)
void ignore_form_encoding(httplib::Server& http) {
  http.set_pre_routing_handler([](const httplib::Request& req, httplib::Response&) {
    if (req.get_header_value("Content-Type") == "application/x-www-form-urlencoded")
      const_cast<httplib::Request&>(req).headers.erase("Content-Type");
    return httplib::Server::HandlerResponse::Unhandled;
  });
}

}  // namespace

InferenceServer::InferenceServer(ServerOptions options) : impl_(std::make_unique<Impl>()) {
  check_options(options);
  impl_->context.options = std::move(options);
}

InferenceServer::~InferenceServer() { drain(); }

void InferenceServer::start() {
  Impl& s = *impl_;
  if (s.context.started) throw ValueError("rcuda serve: start() called twice");
  const ServerOptions& o = s.context.options;
  s.repository = std::make_unique<runtime::ModelRepository>(o.model_repository, o.repository);
  if (o.model_control_mode == "none") s.repository->load_all();
  s.context.repository = s.repository.get();

  const size_t threads = static_cast<size_t>(o.http_threads);
  s.http.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  s.http.set_payload_max_length(o.max_request_bytes);
  // Clients (Triton's, perf_analyzer) keep a connection for many requests; httplib's default
  // closes it after 5.
  s.http.set_keep_alive_max_count(100000);
  // httplib writes a response's headers and body in separate sends; with Nagle's algorithm on,
  // the body waits for the client's delayed ACK (40 ms on Linux) on every request.
  s.http.set_tcp_nodelay(true);
  json_errors(s.http, o.max_request_bytes);
  ignore_form_encoding(s.http);
  add_kserve_routes(s.http, s.context);
  add_vetiver_routes(s.http, s.context);

  if (o.metrics_port >= 0) {
    s.metrics = std::make_unique<MetricsEndpoint>(o, *s.repository);
    s.metrics_port = s.metrics->start(o.host, o.metrics_port);
  }
  try {
    s.port = bind_and_serve(s.http, o.host, o.http_port, s.http_thread, "HTTP");
  } catch (...) {
    if (s.metrics) s.metrics->stop();
    throw;
  }
  std::lock_guard<std::mutex> lock(s.context.mutex);
  s.context.started = true;
}

int InferenceServer::port() const { return impl_->port; }
int InferenceServer::metrics_port() const { return impl_->metrics_port; }

bool InferenceServer::ready() const {
  std::lock_guard<std::mutex> lock(impl_->context.mutex);
  return impl_->context.started && !impl_->context.draining;
}

runtime::ModelRepository& InferenceServer::repository() {
  if (!impl_->repository) throw ValueError("rcuda serve: repository() before start()");
  return *impl_->repository;
}

const ServerOptions& InferenceServer::options() const { return impl_->context.options; }

void InferenceServer::drain() {
  Impl& s = *impl_;
  {
    // Note [Draining] (http_util.h): from here on handlers answer 503; wait for those inside.
    std::unique_lock<std::mutex> lock(s.context.mutex);
    if (s.stopped) return;
    s.stopped = true;
    s.context.draining = true;
    s.context.idle.wait(lock, [&] { return s.context.in_flight == 0; });
  }
  if (s.http_thread.joinable()) {
    s.http.stop();  // closes the listener; connection threads finish their current response
    s.http_thread.join();
  }
  if (s.metrics) s.metrics->stop();
  if (s.repository) s.repository->stop_all();
}

}  // namespace rcuda::server
