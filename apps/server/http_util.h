// What every route shares: the server's state, JSON answers and errors, and the guard that
// each handler runs under (drain, in-flight count, exceptions mapped to status codes).
#pragma once

#include <httplib.h>

#include <condition_variable>
#include <functional>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>

#include "rcuda/runtime/model.h"
#include "rcuda/runtime/repository.h"
#include "server.h"

namespace rcuda::server {

struct ServerContext {
  ServerOptions options;
  runtime::ModelRepository* repository = nullptr;
  bool started = false;
  // Note [Draining]
  // A handler enters only while not draining and counts itself in flight under `mutex`, so that
  // drain() can flip `draining` and then wait for the count to reach zero: every request that
  // got in is answered before the listeners stop, and every later one is answered 503.
  std::mutex mutex;
  std::condition_variable idle;
  bool draining = false;
  int in_flight = 0;
};

// Note [Listen backlog]
// cpp-httplib listens with a backlog of 5 (CPPHTTPLIB_LISTEN_BACKLOG, fixed when Debian built the
// shared library): a burst of new connections beyond it (a client opening 16 at once) overflows
// the accept queue, and the kernel drops the handshakes, which clients see as stalls of a second
// or failed reads. listen() again on the bound socket sets a larger backlog (Linux updates it in
// place).
class HttpListener : public httplib::Server {
 public:
  void set_listen_backlog(int backlog);
};

// A request the client must fix: answered with `status` and {"error": what}.
[[noreturn]] void bad_request(const std::string& what);

void send_json(httplib::Response& res, int status, const nlohmann::json& body);
void send_error(httplib::Response& res, int status, const std::string& what);

// Parses a request body (or its JSON part); 400 naming the position of a syntax error.
nlohmann::json parse_json_body(const std::string& text, const std::string& what);

// Runs `handler` as a route: 503 while draining (unless `during_drain`), counted in flight
// otherwise; InferError answers its status, another rcuda error 400 (a bad value the library
// refused), anything else 500; the body is always {"error": "..."}.
using RouteHandler = std::function<void(const httplib::Request&, httplib::Response&)>;
httplib::Server::Handler guarded(ServerContext& context, RouteHandler handler,
                                 bool during_drain = false);

// The path parameter of a route's regex (1-based); "" when the optional group did not match.
std::string path_match(const httplib::Request& req, size_t index);

}  // namespace rcuda::server
