// The server's contract: every endpoint's status codes and JSON shapes as KServe v2 / Triton
// define them, inference results against io::OnnxModel::run of the same file, vetiver's
// endpoints, and the metrics port's counters against the requests sent.
#include <atomic>
#include <regex>
#include <thread>

#include "server_test_util.h"

namespace rcuda::server::test {
namespace {

std::vector<float> floats_of(const json& data) { return data.get<std::vector<float>>(); }

TEST(ServerContract, HealthAndServerMetadata) {
  ServerFixture f;
  auto c = f.client();
  EXPECT_EQ(c.Get("/v2/health/live")->status, 200);
  EXPECT_EQ(c.Get("/v2/health/ready")->status, 200);
  auto r = c.Get("/v2");
  ASSERT_EQ(r->status, 200);
  const json meta = json::parse(r->body);
  EXPECT_EQ(meta["name"], "rcuda");
  EXPECT_TRUE(meta["version"].is_string());
  EXPECT_TRUE(meta["extensions"].is_array());
  EXPECT_NE(std::find(meta["extensions"].begin(), meta["extensions"].end(), "binary_tensor_data"),
            meta["extensions"].end());
  EXPECT_TRUE(f.server->ready());
}

TEST(ServerContract, ModelMetadataReadyAndConfig) {
  ServerFixture f;
  auto c = f.client();
  for (const char* path : {"/v2/models/mlp", "/v2/models/mlp/versions/1"}) {
    auto r = c.Get(path);
    ASSERT_EQ(r->status, 200) << path << ": " << r->body;
    const json m = json::parse(r->body);
    EXPECT_EQ(m["name"], "mlp");
    EXPECT_EQ(m["versions"], json::array({"1"}));
    EXPECT_EQ(m["platform"], "onnx");
    EXPECT_EQ(m["inputs"],
              json::parse(R"([{"name": "x", "datatype": "FP32", "shape": [-1, 16]}])"));
    EXPECT_EQ(m["outputs"],
              json::parse(R"([{"name": "output", "datatype": "FP32", "shape": [-1, 4]}])"));
  }
  EXPECT_EQ(c.Get("/v2/models/mlp/ready")->status, 200);
  EXPECT_EQ(c.Get("/v2/models/mlp/versions/1/ready")->status, 200);
  EXPECT_EQ(c.Get("/v2/models/mlp/versions/2/ready")->status, 400);
  EXPECT_EQ(c.Get("/v2/models/nope/ready")->status, 400);

  for (const char* path : {"/v2/models/mlp/config", "/v2/models/mlp/versions/1/config"}) {
    auto r = c.Get(path);
    ASSERT_EQ(r->status, 200) << r->body;
    const json config = json::parse(r->body);
    EXPECT_EQ(config["name"], "mlp");
    EXPECT_EQ(config["max_batch_size"], 8);
    EXPECT_TRUE(config["input"].is_array());
  }
  auto missing = c.Get("/v2/models/nope");
  EXPECT_EQ(missing->status, 404);
  EXPECT_NE(error_of(missing).find("nope"), std::string::npos) << missing->body;
  EXPECT_EQ(c.Get("/v2/models/mlp/versions/7")->status, 404);
}

TEST(ServerContract, InferJsonMatchesReferenceAndEchoesId) {
  ServerFixture f;
  auto c = f.client();
  for (int rows : {1, 3, 8}) {
    const std::vector<float> x = random_rows(rows, 100 + rows);
    auto r = c.Post("/v2/models/mlp/infer", infer_json(x, "req-" + std::to_string(rows)).dump(),
                    "application/json");
    ASSERT_EQ(r->status, 200) << r->body;
    EXPECT_EQ(r->get_header_value("Content-Type"), "application/json");
    const json out = json::parse(r->body);
    EXPECT_EQ(out["id"], "req-" + std::to_string(rows));
    EXPECT_EQ(out["model_name"], "mlp");
    EXPECT_EQ(out["model_version"], "1");
    ASSERT_EQ(out["outputs"].size(), 1u);
    EXPECT_EQ(out["outputs"][0]["name"], "output");
    EXPECT_EQ(out["outputs"][0]["datatype"], "FP32");
    EXPECT_EQ(out["outputs"][0]["shape"], json::array({rows, kOutputs}));
    expect_close(floats_of(out["outputs"][0]["data"]), reference(x));
  }
  // Without an id, none is echoed; a versioned route answers the same.
  const std::vector<float> x = random_rows(2, 7);
  auto r = c.Post("/v2/models/mlp/versions/1/infer", infer_json(x).dump(), "application/json");
  ASSERT_EQ(r->status, 200) << r->body;
  const json out = json::parse(r->body);
  EXPECT_FALSE(out.contains("id"));
  expect_close(floats_of(out["outputs"][0]["data"]), reference(x));
}

TEST(ServerContract, InferBodySentAsAForm) {
  // curl -d's default content type: a JSON body over cpp-httplib's 8 KiB form limit still works.
  ServerFixture f;
  auto c = f.client();
  const std::vector<float> x = random_rows(4, 17);
  const std::string body = infer_json(x).dump() + std::string(10000, ' ');
  auto r = c.Post("/v2/models/mlp/infer", body, "application/x-www-form-urlencoded");
  ASSERT_EQ(r->status, 200) << r->body;
  expect_close(floats_of(json::parse(r->body)["outputs"][0]["data"]), reference(x));
}

TEST(ServerContract, InferNestedDataAndSelectedOutputs) {
  ServerFixture f;
  auto c = f.client();
  const std::vector<float> x = random_rows(2, 11);
  json body = infer_json(x);
  json nested = json::array();
  for (int r = 0; r < 2; ++r)
    nested.push_back(
        std::vector<float>(x.begin() + r * kFeatures, x.begin() + (r + 1) * kFeatures));
  body["inputs"][0]["data"] = nested;
  body["outputs"] = json::array({{{"name", "output"}}});
  auto r = c.Post("/v2/models/mlp/infer", body.dump(), "application/json");
  ASSERT_EQ(r->status, 200) << r->body;
  const json out = json::parse(r->body);
  ASSERT_EQ(out["outputs"].size(), 1u);
  expect_close(floats_of(out["outputs"][0]["data"]), reference(x));

  body["outputs"] = json::array({{{"name", "logits"}}});
  auto bad = c.Post("/v2/models/mlp/infer", body.dump(), "application/json");
  EXPECT_EQ(bad->status, 400);
  EXPECT_NE(error_of(bad).find("logits"), std::string::npos) << bad->body;
}

TEST(ServerContract, InferBinaryRequestAndResponse) {
  ServerFixture f;
  auto c = f.client();
  const std::vector<float> x = random_rows(5, 21);
  const std::vector<float> want = reference(x);

  // Binary input, JSON output.
  auto r = post_binary(c, "/v2/models/mlp/infer", infer_binary(x, false));
  ASSERT_EQ(r->status, 200) << r->body;
  expect_close(floats_of(json::parse(r->body)["outputs"][0]["data"]), want);

  // Binary input and output (the request's binary_data_output).
  r = post_binary(c, "/v2/models/mlp/infer", infer_binary(x, true));
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(r->get_header_value("Content-Type"), "application/octet-stream");
  const size_t header_length = std::stoul(r->get_header_value("Inference-Header-Content-Length"));
  const json out = json::parse(r->body.substr(0, header_length));
  const json& output = out["outputs"][0];
  EXPECT_FALSE(output.contains("data"));
  EXPECT_EQ(output["shape"], json::array({5, kOutputs}));
  const size_t size = output["parameters"]["binary_data_size"].get<size_t>();
  ASSERT_EQ(size, want.size() * sizeof(float));
  ASSERT_EQ(r->body.size(), header_length + size);
  std::vector<float> got(want.size());
  std::memcpy(got.data(), r->body.data() + header_length, size);
  expect_close(got, want);

  // JSON input, binary output asked per output.
  json body = infer_json(x);
  body["outputs"] = json::array({{{"name", "output"}, {"parameters", {{"binary_data", true}}}}});
  r = c.Post("/v2/models/mlp/infer", body.dump(), "application/json");
  ASSERT_EQ(r->status, 200) << r->body;
  const size_t length = std::stoul(r->get_header_value("Inference-Header-Content-Length"));
  std::memcpy(got.data(), r->body.data() + length, got.size() * sizeof(float));
  expect_close(got, want);
}

TEST(ServerContract, RepositoryIndexLoadUnload) {
  ServerFixture f("explicit", /*broken_model=*/true);
  auto c = f.client();
  auto index = [&] {
    auto r = c.Post("/v2/repository/index", "", "application/json");
    EXPECT_EQ(r->status, 200) << r->body;
    return json::parse(r->body);
  };
  // explicit: nothing is loaded at start.
  json rows = index();
  ASSERT_EQ(rows.size(), 2u) << rows;
  for (const json& row : rows) {
    EXPECT_TRUE(row["name"] == "mlp" || row["name"] == "broken") << row;
    EXPECT_NE(row.value("state", ""), "READY") << row;
  }
  const std::vector<float> x = random_rows(2, 31);
  EXPECT_EQ(c.Post("/v2/models/mlp/infer", infer_json(x).dump(), "application/json")->status, 404);

  ASSERT_EQ(c.Post("/v2/repository/models/mlp/load", "", "application/json")->status, 200);
  auto r = c.Post("/v2/models/mlp/infer", infer_json(x).dump(), "application/json");
  ASSERT_EQ(r->status, 200) << r->body;
  expect_close(floats_of(json::parse(r->body)["outputs"][0]["data"]), reference(x));
  auto ready = c.Post("/v2/repository/index", R"({"ready": true})", "application/json");
  EXPECT_EQ(json::parse(ready->body),
            json::parse(R"([{"name": "mlp", "version": "1", "state": "READY"}])"));

  // A model that fails its load: 400 with the reason; the index keeps it.
  auto broken = c.Post("/v2/repository/models/broken/load", "", "application/json");
  EXPECT_EQ(broken->status, 400);
  EXPECT_NE(error_of(broken).find("broken"), std::string::npos) << broken->body;
  bool reason_kept = false;
  for (const json& row : index())
    if (row["name"] == "broken")
      reason_kept = row.value("state", "") == "UNAVAILABLE" && row.contains("reason");
  EXPECT_TRUE(reason_kept);
  EXPECT_EQ(c.Post("/v2/repository/models/nope/load", "", "application/json")->status, 404);

  ASSERT_EQ(c.Post("/v2/repository/models/mlp/unload", "", "application/json")->status, 200);
  EXPECT_EQ(c.Post("/v2/models/mlp/infer", infer_json(x).dump(), "application/json")->status, 404);
  EXPECT_EQ(c.Get("/v2/models/mlp/ready")->status, 400);
  EXPECT_EQ(c.Post("/v2/repository/models/mlp/unload", "", "application/json")->status, 404);
  ASSERT_EQ(c.Post("/v2/repository/models/mlp/load", "{}", "application/json")->status, 200);
  r = c.Post("/v2/models/mlp/infer", infer_json(x).dump(), "application/json");
  ASSERT_EQ(r->status, 200) << r->body;
  expect_close(floats_of(json::parse(r->body)["outputs"][0]["data"]), reference(x));
}

TEST(ServerContract, ModelControlNoneRefusesLoadAndUnload) {
  ServerFixture f("none");
  auto c = f.client();
  for (const char* path : {"/v2/repository/models/mlp/load", "/v2/repository/models/mlp/unload"}) {
    auto r = c.Post(path, "", "application/json");
    EXPECT_EQ(r->status, 400) << path;
    EXPECT_NE(error_of(r).find("--model-control-mode explicit"), std::string::npos) << r->body;
  }
  EXPECT_EQ(c.Get("/v2/models/mlp/ready")->status, 200);
}

TEST(ServerContract, Vetiver) {
  ServerFixture f;
  auto c = f.client();
  auto ping = c.Get("/ping");
  ASSERT_EQ(ping->status, 200);
  EXPECT_EQ(json::parse(ping->body), json::parse(R"({"ping": "pong"})"));

  auto meta = c.Get("/metadata");
  ASSERT_EQ(meta->status, 200) << meta->body;
  const json m = json::parse(meta->body);
  EXPECT_EQ(m["user"], json::object());
  EXPECT_TRUE(m["version"].is_null());
  EXPECT_TRUE(m["url"].is_null());
  EXPECT_EQ(m["required_pkgs"], json::array({"rcuda"}));
  EXPECT_EQ(m["ptype"]["x"]["shape"], json::array({-1, 16}));

  const std::vector<float> x = random_rows(3, 41);
  const std::vector<float> want = reference(x);
  json plain = json::array();
  for (int r = 0; r < 3; ++r)
    plain.push_back(std::vector<float>(x.begin() + r * kFeatures, x.begin() + (r + 1) * kFeatures));
  // A data frame as jsonlite writes it: an array of row objects. Its keys sort in another order
  // than the columns' (f16, f15, ..., f1): columns go by their position in the row.
  // (Written by hand: nlohmann::json would sort the keys.)
  std::string frame_text = "[";
  for (int r = 0; r < 3; ++r) {
    frame_text += r ? ",{" : "{";
    // Row 1 lists its columns backwards: later rows are matched to the first's by name.
    for (int i = 0; i < kFeatures; ++i) {
      const int k = r == 1 ? kFeatures - 1 - i : i;
      frame_text += (i ? "," : "") + std::string("\"f") + std::to_string(kFeatures - k) +
                    "\":" + json(x[r * kFeatures + k]).dump();
    }
    frame_text += "}";
  }
  frame_text += "]";
  for (const std::string& body : {frame_text, plain.dump()}) {
    auto r = c.Post("/predict", body, "application/json");
    ASSERT_EQ(r->status, 200) << r->body;
    const json pred = json::parse(r->body)[".pred"];
    ASSERT_EQ(pred.size(), 3u);
    std::vector<float> got;
    for (const json& row : pred) {
      ASSERT_EQ(row.size(), static_cast<size_t>(kOutputs));
      for (const json& v : row) got.push_back(v.get<float>());
    }
    expect_close(got, want);
  }
  // A single row.
  auto one = c.Post("/predict", plain[0].dump(), "application/json");
  ASSERT_EQ(one->status, 200) << one->body;
  EXPECT_EQ(json::parse(one->body)[".pred"].size(), 1u);
}

double metric_value(const std::string& text, const std::string& name) {
  const std::regex line("^" + name + R"(\{[^}]*model="mlp"[^}]*\} ([0-9.e+]+)$)",
                        std::regex::multiline);
  std::smatch m;
  if (!std::regex_search(text, m, line)) return -1;
  return std::stod(m[1].str());
}

TEST(ServerContract, MetricsCountRequests) {
  ServerFixture f;
  auto c = f.client();
  const int requests = 6;
  for (int i = 0; i < requests; ++i) {
    const std::vector<float> x = random_rows(2, 50 + i);
    ASSERT_EQ(c.Post("/v2/models/mlp/infer", infer_json(x).dump(), "application/json")->status,
              200);
  }
  json bad = infer_json(random_rows(1, 1));
  bad["inputs"][0]["shape"] = {1, 15};
  bad["inputs"][0]["data"] = std::vector<float>(15, 0.f);
  EXPECT_EQ(c.Post("/v2/models/mlp/infer", bad.dump(), "application/json")->status, 400);

  httplib::Client m("127.0.0.1", f.server->metrics_port());
  auto r = m.Get("/metrics");
  ASSERT_EQ(r->status, 200);
  EXPECT_EQ(r->get_header_value("Content-Type").rfind("text/plain; version=0.0.4", 0), 0u);
  const std::string& text = r->body;
  EXPECT_NE(text.find("rcuda_build_info{"), std::string::npos);
  EXPECT_EQ(metric_value(text, "rcuda_inference_request_success_total"), requests) << text;
  EXPECT_EQ(metric_value(text, "rcuda_inference_inferences_total"), 2 * requests) << text;
  const double executions = metric_value(text, "rcuda_inference_executions_total");
  EXPECT_GE(executions, 1) << text;
  EXPECT_LE(executions, requests) << text;
  EXPECT_EQ(m.Get("/nope")->status, 404);
}

TEST(ServerContract, ConcurrentRequestsAreAnsweredCorrectly) {
  // Many connections in flight at once (one server thread each), batched by the runtime.
  ServerFixture f;
  constexpr int kClients = 16, kEach = 5;
  std::vector<std::thread> clients;
  std::atomic<int> correct{0};
  for (int t = 0; t < kClients; ++t)
    clients.emplace_back([&, t] {
      auto c = f.client();
      for (int i = 0; i < kEach; ++i) {
        const std::vector<float> x = random_rows(1, 1000 * t + i);
        auto r = c.Post("/v2/models/mlp/infer", infer_json(x).dump(), "application/json");
        if (!r || r->status != 200) {
          ADD_FAILURE() << "client " << t << " request " << i << ": "
                        << (r ? std::to_string(r->status) + " " + r->body
                              : "no response: " + httplib::to_string(r.error()));
          continue;
        }
        const auto got = floats_of(json::parse(r->body)["outputs"][0]["data"]);
        const auto want = reference(x);
        bool same = got.size() == want.size();
        for (size_t k = 0; same && k < got.size(); ++k) same = std::fabs(got[k] - want[k]) <= 1e-6;
        correct += same;
      }
    });
  for (auto& t : clients) t.join();
  EXPECT_EQ(correct, kClients * kEach);
  httplib::Client m("127.0.0.1", f.server->metrics_port());
  const std::string text = m.Get("/metrics")->body;
  EXPECT_EQ(metric_value(text, "rcuda_inference_request_success_total"), kClients * kEach);
  EXPECT_LE(metric_value(text, "rcuda_inference_executions_total"), kClients * kEach);
}

TEST(ServerContract, UnknownRouteIsJson404) {
  ServerFixture f;
  auto c = f.client();
  auto r = c.Get("/v2/nothing/here");
  EXPECT_EQ(r->status, 404);
  EXPECT_NE(error_of(r).find("/v2/nothing/here"), std::string::npos) << r->body;
}

}  // namespace
}  // namespace rcuda::server::test
