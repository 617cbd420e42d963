// KServe v2 REST, as Triton implements it: health, server and model metadata, model config,
// inference (JSON and binary tensors) and the model repository extension.
#include <set>
#include <utility>
#include <vector>

#include "http_util.h"
#include "routes.h"
#include "tensor_json.h"

#ifndef RCUDA_VERSION_STRING
#define RCUDA_VERSION_STRING "unknown"
#endif

namespace rcuda::server {

using nlohmann::json;
using runtime::InferError;

namespace {

constexpr const char* kHeaderLength = "Inference-Header-Content-Length";
// {m} and the optional /versions/{v} of every model route.
constexpr const char* kModelPath = R"(/v2/models/([^/]+)(?:/versions/([^/]+))?)";

std::string model_route(const char* tail) { return std::string(kModelPath) + tail; }

std::shared_ptr<runtime::ServedModel> find_model(ServerContext& context,
                                                 const httplib::Request& req) {
  return context.repository->find(path_match(req, 1), path_match(req, 2));
}

json tensor_metadata(const runtime::TensorConfig& tensor, bool batched) {
  std::vector<int64_t> shape;
  if (batched) shape.push_back(-1);
  shape.insert(shape.end(), tensor.dims.begin(), tensor.dims.end());
  return json{{"name", tensor.name},
              {"datatype", runtime::kserve_datatype(tensor.dtype)},
              {"shape", shape}};
}

void model_metadata(ServerContext& context, const httplib::Request& req, httplib::Response& res) {
  const auto model = find_model(context, req);
  const runtime::ModelConfig& config = model->config();
  json versions = json::array();
  for (int64_t v : context.repository->versions(model->name()))
    versions.push_back(std::to_string(v));
  json inputs = json::array(), outputs = json::array();
  for (const auto& t : config.inputs)
    inputs.push_back(tensor_metadata(t, config.max_batch_size > 0));
  for (const auto& t : config.outputs)
    outputs.push_back(tensor_metadata(t, config.max_batch_size > 0));
  send_json(res, 200,
            json{{"name", model->name()},
                 {"versions", versions},
                 {"platform", "onnx"},
                 {"inputs", inputs},
                 {"outputs", outputs}});
}

// What the response should hold besides the runtime's request.
struct ParsedInfer {
  runtime::InferRequest request;
  bool id_given = false;
  bool binary_output_default = false;                       // the request's "binary_data_output"
  std::vector<std::pair<std::string, bool>> binary_output;  // per listed output
  bool wants_binary(const std::string& name) const {
    for (const auto& [n, binary] : binary_output)
      if (n == name) return binary;
    return binary_output_default;
  }
};

const json* object_field(const json& parent, const char* key, const std::string& where) {
  const auto it = parent.find(key);
  if (it == parent.end()) return nullptr;
  if (!it->is_object()) bad_request(where + key + " is " + it->type_name() + ", not an object");
  return &*it;
}

bool bool_parameter(const json& parameters, const char* key, const std::string& where) {
  const auto it = parameters.find(key);
  if (it == parameters.end()) return false;
  if (!it->is_boolean())
    bad_request(where + "parameters." + key + " is " + it->type_name() + ", not a boolean");
  return it->get<bool>();
}

void parse_request_parameters(const json& root, ParsedInfer& parsed) {
  const json* parameters = object_field(root, "parameters", "");
  if (!parameters) return;
  parsed.binary_output_default = bool_parameter(*parameters, "binary_data_output", "");
  const auto timeout = parameters->find("timeout");
  if (timeout != parameters->end()) {
    if (!timeout->is_number_integer() || timeout->get<int64_t>() < 0)
      bad_request("parameters.timeout = " + timeout->dump() +
                  " is not a number of microseconds (a non-negative integer)");
    parsed.request.timeout_microseconds = timeout->get<int64_t>();
  }
}

void parse_inputs(const json& root, const std::string& body, const SplitBody& split,
                  ParsedInfer& parsed) {
  const auto inputs = root.find("inputs");
  if (inputs == root.end() || !inputs->is_array() || inputs->empty())
    bad_request("inputs is missing, not an array or empty");
  size_t offset = split.json_size;  // next unread byte of the binary part
  std::set<std::string> seen;
  for (size_t i = 0; i < inputs->size(); ++i) {
    const json& input = (*inputs)[i];
    const TensorHeader header = parse_tensor_header(input, i);
    if (!seen.insert(header.name).second) bad_request(header.where + " is given twice");
    const json* parameters = object_field(input, "parameters", header.where + ".");
    const auto binary_size = parameters ? parameters->find("binary_data_size") : input.end();
    const bool binary = parameters && binary_size != parameters->end();
    const bool has_data = input.contains("data");
    if (binary == has_data)
      bad_request(header.where + " needs either data or parameters.binary_data_size");
    if (!binary) {
      parsed.request.inputs.push_back({header.name, tensor_from_json_data(header, input["data"])});
      continue;
    }
    if (!binary_size->is_number_unsigned())
      bad_request(header.where + ": parameters.binary_data_size = " + binary_size->dump() +
                  " is not a size");
    if (!split.has_binary_part)
      bad_request(header.where + ": parameters.binary_data_size is given but the request has no " +
                  kHeaderLength + " header");
    const uint64_t size = binary_size->get<uint64_t>();
    const size_t left = split.json_size + split.binary_size - offset;
    if (size > left)
      bad_request(header.where + ": parameters.binary_data_size = " + std::to_string(size) +
                  " but only " + std::to_string(left) + " bytes of binary data are left");
    parsed.request.inputs.push_back(
        {header.name, tensor_from_bytes(header, body.data() + offset, static_cast<size_t>(size))});
    offset += static_cast<size_t>(size);
  }
  if (offset != split.json_size + split.binary_size)
    bad_request("the binary part has " +
                std::to_string(split.json_size + split.binary_size - offset) +
                " bytes more than the inputs' binary_data_size add up to");
}

void parse_outputs(const json& root, ParsedInfer& parsed) {
  const auto outputs = root.find("outputs");
  if (outputs == root.end()) return;
  if (!outputs->is_array()) bad_request("outputs is not an array");
  for (size_t i = 0; i < outputs->size(); ++i) {
    const json& output = (*outputs)[i];
    const std::string where = "outputs[" + std::to_string(i) + "]";
    if (!output.is_object()) bad_request(where + " is not an object");
    const auto name = output.find("name");
    if (name == output.end() || !name->is_string())
      bad_request(where + ".name is missing or not a string");
    bool binary = parsed.binary_output_default;
    if (const json* parameters = object_field(output, "parameters", where + ".")) {
      if (parameters->contains("classification"))
        bad_request(where + ".parameters.classification is not supported");
      if (parameters->contains("binary_data"))
        binary = bool_parameter(*parameters, "binary_data", where + ".");
    }
    parsed.request.outputs.push_back(name->get<std::string>());
    parsed.binary_output.emplace_back(name->get<std::string>(), binary);
  }
}

ParsedInfer parse_infer(const httplib::Request& req) {
  const SplitBody split = split_binary_body(req.body, req.get_header_value(kHeaderLength));
  json root;
  try {
    root = json::parse(req.body.begin(), req.body.begin() + static_cast<long>(split.json_size));
  } catch (const json::parse_error& e) {
    bad_request(std::string("malformed JSON in the inference request: ") + e.what());
  }
  if (!root.is_object()) bad_request("the inference request is not a JSON object");
  ParsedInfer parsed;
  if (const auto id = root.find("id"); id != root.end()) {
    if (!id->is_string()) bad_request("id is " + std::string(id->type_name()) + ", not a string");
    parsed.request.id = id->get<std::string>();
    parsed.id_given = true;
  }
  parse_request_parameters(root, parsed);
  parse_outputs(root, parsed);
  parse_inputs(root, req.body, split, parsed);
  return parsed;
}

void infer(ServerContext& context, const httplib::Request& req, httplib::Response& res) {
  ParsedInfer parsed = parse_infer(req);
  const auto model = find_model(context, req);
  const bool id_given = parsed.id_given;
  runtime::InferResponse response = model->submit(std::move(parsed.request)).get();

  json out{{"model_name", response.model_name}, {"model_version", response.model_version}};
  if (id_given) out["id"] = response.id;
  json outputs = json::array();
  std::string binary;
  for (const runtime::NamedTensor& output : response.outputs) {
    if (!parsed.wants_binary(output.name)) {
      outputs.push_back(tensor_to_json(output));
      continue;
    }
    const std::string bytes = tensor_bytes(output.value);
    json header = tensor_header_json(output);
    header["parameters"] = json{{"binary_data_size", bytes.size()}};
    outputs.push_back(std::move(header));
    binary += bytes;
  }
  out["outputs"] = std::move(outputs);
  if (binary.empty()) {
    send_json(res, 200, out);
    return;
  }
  std::string text = out.dump(-1, ' ', false, json::error_handler_t::replace);
  res.status = 200;
  res.set_header(kHeaderLength, std::to_string(text.size()));
  res.set_content(text + binary, "application/octet-stream");
}

json repository_index(ServerContext& context, const httplib::Request& req) {
  bool ready_only = false;
  if (!req.body.empty()) {
    const json body = parse_json_body(req.body, "the repository index request");
    if (!body.is_object()) bad_request("the repository index request is not a JSON object");
    if (const auto ready = body.find("ready"); ready != body.end()) {
      if (!ready->is_boolean())
        bad_request("ready is " + std::string(ready->type_name()) + ", not a boolean");
      ready_only = ready->get<bool>();
    }
  }
  json rows = json::array();
  for (const auto& entry : context.repository->index()) {
    if (ready_only && entry.state != "READY") continue;
    json row{{"name", entry.name}};
    if (!entry.version.empty()) row["version"] = entry.version;
    if (!entry.state.empty()) row["state"] = entry.state;
    if (!entry.reason.empty()) row["reason"] = entry.reason;
    rows.push_back(std::move(row));
  }
  return rows;
}

void check_model_control(ServerContext& context, const char* action) {
  if (context.options.model_control_mode != "explicit")
    bad_request(std::string("cannot ") + action +
                " models: model control is off (start the server with "
                "--model-control-mode explicit)");
}

void check_load_request(const httplib::Request& req) {
  if (req.body.empty()) return;
  const json body = parse_json_body(req.body, "the load request");
  if (!body.is_object()) bad_request("the load request is not a JSON object");
  const json* parameters = object_field(body, "parameters", "");
  if (parameters && !parameters->empty())
    bad_request(
        "parameters (a config or files sent with the load request) are not supported: "
        "edit the model's folder in the repository, then load it");
}

}  // namespace

void add_kserve_routes(httplib::Server& http, ServerContext& context) {
  auto route = [&context](RouteHandler handler, bool during_drain = false) {
    return guarded(context, std::move(handler), during_drain);
  };
  http.Get("/v2/health/live",
           route([](const httplib::Request&, httplib::Response& res) { res.status = 200; }, true));
  http.Get("/v2/health/ready", route(
                                   [&context](const httplib::Request&, httplib::Response& res) {
                                     std::lock_guard<std::mutex> lock(context.mutex);
                                     if (context.draining)
                                       send_error(res, 400, "server is shutting down");
                                     else
                                       res.status = 200;
                                   },
                                   true));
  http.Get("/v2", route([](const httplib::Request&, httplib::Response& res) {
             send_json(res, 200,
                       json{{"name", "rcuda"},
                            {"version", RCUDA_VERSION_STRING},
                            {"extensions",
                             {"binary_tensor_data", "model_repository", "model_configuration",
                              "parameters"}}});
           }));
  http.Get(kModelPath, route([&context](const httplib::Request& req, httplib::Response& res) {
             model_metadata(context, req, res);
           }));
  http.Get(model_route("/ready"),
           route([&context](const httplib::Request& req, httplib::Response& res) {
             try {
               find_model(context, req);
               res.status = 200;
             } catch (const InferError& e) {
               // Ready is a yes/no: 4xx is "no" (KServe), 400 as Triton answers it.
               send_error(res, 400, e.what());
             }
           }));
  http.Get(model_route("/config"),
           route([&context](const httplib::Request& req, httplib::Response& res) {
             res.status = 200;
             res.set_content(find_model(context, req)->config().to_json(), "application/json");
           }));
  http.Post(model_route("/infer"),
            route([&context](const httplib::Request& req, httplib::Response& res) {
              infer(context, req, res);
            }));
  http.Post("/v2/repository/index",
            route([&context](const httplib::Request& req, httplib::Response& res) {
              send_json(res, 200, repository_index(context, req));
            }));
  http.Post(R"(/v2/repository/models/([^/]+)/load)",
            route([&context](const httplib::Request& req, httplib::Response& res) {
              check_model_control(context, "load");
              check_load_request(req);
              context.repository->load(path_match(req, 1));
              res.status = 200;
            }));
  http.Post(R"(/v2/repository/models/([^/]+)/unload)",
            route([&context](const httplib::Request& req, httplib::Response& res) {
              check_model_control(context, "unload");
              context.repository->unload(path_match(req, 1));
              res.status = 200;
            }));
}

}  // namespace rcuda::server
