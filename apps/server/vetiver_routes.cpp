// vetiver's endpoints (the R and Python packages' plumber / FastAPI apps), so that
// vetiver::vetiver_endpoint() and predict() work against rcuda: GET /ping, GET /metadata and
// POST /predict with a data frame as jsonlite writes it.
#include <string>
#include <vector>

#include "http_util.h"
#include "rcuda/ops/copy.h"
#include "routes.h"
#include "tensor_json.h"

namespace rcuda::server {

using nlohmann::json;
using nlohmann::ordered_json;

namespace {

// The model behind /predict: the one named by --vetiver-model, or the only loaded one.
std::shared_ptr<runtime::ServedModel> vetiver_model(ServerContext& context) {
  if (!context.options.vetiver_model.empty())
    return context.repository->find(context.options.vetiver_model);
  const std::vector<std::string> loaded = context.repository->loaded();
  if (loaded.size() != 1)
    throw runtime::InferError(
        runtime::InferError::Status::NotFound,
        "vetiver's endpoints serve one model: " + std::to_string(loaded.size()) +
            " are loaded; name one with --vetiver-model");
  return context.repository->find(loaded.front());
}

const runtime::TensorConfig& single_input(const runtime::ServedModel& model) {
  const auto& inputs = model.config().inputs;
  if (inputs.size() != 1)
    bad_request("/predict serves models of one input; model '" + model.name() + "' has " +
                std::to_string(inputs.size()));
  return inputs.front();
}

double cell(const ordered_json& v, size_t row, const std::string& column) {
  if (v.is_number()) return v.get<double>();
  if (v.is_boolean()) return v.get<bool>() ? 1.0 : 0.0;
  bad_request("row " + std::to_string(row) + ", column " + column + ": " + v.dump() +
              " is not a number");
}

// Rows of numbers from a data frame (array of row objects, columns in the first row's order),
// an array of row arrays, a single row object or a single row array.
std::vector<std::vector<double>> rows_of(const ordered_json& body) {
  std::vector<std::vector<double>> rows;
  const bool one_row = body.is_object() || (body.is_array() && !body.empty() &&
                                            !body.front().is_object() && !body.front().is_array());
  if (!body.is_array() && !body.is_object())
    bad_request("the body is " + std::string(body.type_name()) +
                ", not a data frame (an array of rows)");
  const ordered_json all = one_row ? ordered_json::array({body}) : body;
  std::vector<std::string> columns;  // from the first row object
  for (size_t r = 0; r < all.size(); ++r) {
    const ordered_json& row = all[r];
    std::vector<double> values;
    if (row.is_object()) {
      if (r == 0)
        for (const auto& item : row.items()) columns.push_back(item.key());
      if (row.size() != columns.size())
        bad_request("row " + std::to_string(r) + " has " + std::to_string(row.size()) +
                    " columns, the first row " + std::to_string(columns.size()));
      for (const std::string& column : columns) {
        const auto it = row.find(column);
        if (it == row.end())
          bad_request("row " + std::to_string(r) + " has no column '" + column + "'");
        values.push_back(cell(*it, r, "'" + column + "'"));
      }
    } else if (row.is_array()) {
      for (size_t c = 0; c < row.size(); ++c) values.push_back(cell(row[c], r, std::to_string(c)));
    } else {
      bad_request("row " + std::to_string(r) + " is " + row.type_name() +
                  ", not an object or an array");
    }
    if (!rows.empty() && values.size() != rows.front().size())
      bad_request("row " + std::to_string(r) + " has " + std::to_string(values.size()) +
                  " values, row 0 has " + std::to_string(rows.front().size()));
    rows.push_back(std::move(values));
  }
  if (rows.empty()) bad_request("the data frame has no rows");
  return rows;
}

void predict(ServerContext& context, const httplib::Request& req, httplib::Response& res) {
  ordered_json body;
  try {
    body = ordered_json::parse(req.body);
  } catch (const ordered_json::parse_error& e) {
    bad_request(std::string("malformed JSON in the /predict body: ") + e.what());
  }
  const auto model = vetiver_model(context);
  const runtime::TensorConfig& input = single_input(*model);
  const std::vector<std::vector<double>> rows = rows_of(body);
  const int64_t features = static_cast<int64_t>(rows.front().size());
  if (!input.dims.empty() && input.dims.back() >= 0 && input.dims.back() != features)
    bad_request("each row has " + std::to_string(features) + " values but model '" + model->name() +
                "' takes " + std::to_string(input.dims.back()) + " features");
  Tensor x = Tensor::empty({static_cast<int64_t>(rows.size()), features}, DType::Float64);
  double* p = x.data<double>();
  for (const auto& row : rows)
    for (double v : row) *p++ = v;

  runtime::InferRequest request;
  request.inputs.push_back({input.name, ops::to(x, input.dtype)});
  runtime::InferResponse response = model->submit(std::move(request)).get();
  if (response.outputs.empty())
    throw runtime::InferError(runtime::InferError::Status::Internal, "the model gave no output");

  // One number per row for a single output column, else an array per row.
  const Tensor y = host_contiguous(ops::to(response.outputs.front().value, DType::Float64));
  const int64_t n = y.dim() == 0 ? 1 : y.size(0);
  const int64_t per_row = n == 0 ? 0 : y.numel() / n;
  const double* values = y.data<double>();
  json pred = json::array();
  for (int64_t r = 0; r < n; ++r) {
    if (per_row == 1) {
      pred.push_back(values[r]);
      continue;
    }
    pred.push_back(json(std::vector<double>(values + r * per_row, values + (r + 1) * per_row)));
  }
  send_json(res, 200, json{{".pred", pred}});
}

json metadata(ServerContext& context) {
  const auto model = vetiver_model(context);
  const runtime::ModelConfig& config = model->config();
  // vetiver's ptype is the input prototype: here each input's datatype and shape.
  json ptype = json::object();
  for (const auto& input : config.inputs) {
    std::vector<int64_t> shape;
    if (config.max_batch_size > 0) shape.push_back(-1);
    shape.insert(shape.end(), input.dims.begin(), input.dims.end());
    ptype[input.name] = json{{"datatype", runtime::kserve_datatype(input.dtype)}, {"shape", shape}};
  }
  return json{{"user", json::object()},
              {"version", nullptr},  // a pin's version in vetiver; rcuda serves no pins
              {"url", nullptr},
              {"required_pkgs", {"rcuda"}},
              {"ptype", ptype}};
}

}  // namespace

void add_vetiver_routes(httplib::Server& http, ServerContext& context) {
  http.Get("/ping", guarded(context, [](const httplib::Request&, httplib::Response& res) {
             send_json(res, 200, json{{"ping", "pong"}});
           }));
  http.Get("/metadata",
           guarded(context, [&context](const httplib::Request&, httplib::Response& res) {
             send_json(res, 200, metadata(context));
           }));
  http.Post("/predict",
            guarded(context, [&context](const httplib::Request& req, httplib::Response& res) {
              predict(context, req, res);
            }));
}

}  // namespace rcuda::server
