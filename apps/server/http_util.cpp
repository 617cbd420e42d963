#include "http_util.h"

#include <sys/socket.h>

#include <exception>

#include "rcuda/core/error.h"

namespace rcuda::server {

using runtime::InferError;

void HttpListener::set_listen_backlog(int backlog) { ::listen(svr_sock_, backlog); }

void bad_request(const std::string& what) {
  throw InferError(InferError::Status::BadRequest, what);
}

void send_json(httplib::Response& res, int status, const nlohmann::json& body) {
  res.status = status;
  // Replace invalid UTF-8 (a model or input name echoed from a malformed request) rather than
  // throw while answering.
  res.set_content(body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace),
                  "application/json");
}

void send_error(httplib::Response& res, int status, const std::string& what) {
  send_json(res, status, nlohmann::json{{"error", what}});
}

nlohmann::json parse_json_body(const std::string& text, const std::string& what) {
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    bad_request("malformed JSON in " + what + ": " + e.what());
  }
}

namespace {

// Leaves the in-flight count whichever way the handler ends.
struct InFlight {
  explicit InFlight(ServerContext& context) : context(context) {}
  ~InFlight() {
    std::lock_guard<std::mutex> lock(context.mutex);
    if (--context.in_flight == 0) context.idle.notify_all();
  }
  ServerContext& context;
};

}  // namespace

httplib::Server::Handler guarded(ServerContext& context, RouteHandler handler, bool during_drain) {
  return [&context, handler = std::move(handler), during_drain](const httplib::Request& req,
                                                                httplib::Response& res) {
    {
      std::lock_guard<std::mutex> lock(context.mutex);
      if (context.draining && !during_drain) {
        send_error(res, 503, "server is shutting down");
        return;
      }
      ++context.in_flight;
    }
    InFlight in_flight(context);
    try {
      handler(req, res);
    } catch (const InferError& e) {
      send_error(res, static_cast<int>(e.status), e.what());
    } catch (const nlohmann::json::exception& e) {
      // A field of the wrong JSON type that a route read without checking.
      send_error(res, 400, std::string("bad request: ") + e.what());
    } catch (const OutOfMemoryError& e) {
      send_error(res, 503, e.what());
    } catch (const InternalError& e) {
      send_error(res, 500, e.what());
    } catch (const CudaError& e) {
      send_error(res, 500, e.what());
    } catch (const Error& e) {
      send_error(res, 400, e.what());
    } catch (const std::bad_alloc&) {
      send_error(res, 503, "out of memory while handling the request");
    } catch (const std::exception& e) {
      send_error(res, 500, e.what());
    }
  };
}

std::string path_match(const httplib::Request& req, size_t index) {
  if (index >= req.matches.size() || !req.matches[index].matched) return "";
  return req.matches[index].str();
}

}  // namespace rcuda::server
