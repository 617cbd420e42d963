// Every bad request is a 4xx whose error names the field (never a crash or a 5xx), and the
// server answers a correct request correctly afterwards.
#include "server_test_util.h"

namespace rcuda::server::test {
namespace {

struct BadCase {
  const char* what;
  std::string body;
  int status;
  const char* names;  // a part of the error message
  std::string path = "/v2/models/mlp/infer";
  httplib::Headers headers = {};
};

json valid() { return infer_json(random_rows(2, 3)); }

json with(const char* pointer, const json& value) {
  json body = valid();
  body[json::json_pointer(pointer)] = value;
  return body;
}

json without(const std::string& key) {
  json body = valid();
  body["inputs"][0].erase(key);
  return body;
}

std::vector<BadCase> bad_cases() {
  std::vector<BadCase> cases;
  cases.push_back({"malformed JSON", R"({"inputs": [)", 400, "malformed JSON"});
  cases.push_back({"not an object", "[1, 2]", 400, "not a JSON object"});
  cases.push_back({"no inputs", "{}", 400, "inputs"});
  cases.push_back({"inputs not an array", R"({"inputs": 3})", 400, "inputs"});
  cases.push_back({"no name", without("name").dump(), 400, "inputs[0].name"});
  cases.push_back({"no datatype", without("datatype").dump(), 400, "datatype"});
  cases.push_back({"no shape", without("shape").dump(), 400, "shape"});
  cases.push_back({"no data", without("data").dump(), 400, "data"});
  cases.push_back({"unknown datatype", with("/inputs/0/datatype", "FP128").dump(), 400, "FP128"});
  cases.push_back({"BYTES", with("/inputs/0/datatype", "BYTES").dump(), 400, "datatype"});
  cases.push_back(
      {"wrong datatype for the model", with("/inputs/0/datatype", "FP64").dump(), 400, "x"});
  cases.push_back({"negative dim", with("/inputs/0/shape", {-2, 16}).dump(), 400, "shape[0]"});
  cases.push_back({"dim not a number", with("/inputs/0/shape", {"2", 16}).dump(), 400, "shape[0]"});
  cases.push_back(
      {"data shorter than shape", with("/inputs/0/shape", {3, 16}).dump(), 400, "needs 48"});
  cases.push_back({"shape the model refuses", with("/inputs/0/shape", {4, 8}).dump(), 400, "x"});
  cases.push_back({"string in data", with("/inputs/0/data/5", "nan").dump(), 400, "data[5]"});
  cases.push_back({"unknown input name", with("/inputs/0/name", "image").dump(), 400, "image"});
  json twice = valid();
  twice["inputs"].push_back(twice["inputs"][0]);
  cases.push_back({"input given twice", twice.dump(), 400, "twice"});
  cases.push_back(
      {"unknown output", with("/outputs", {{{"name", "logits"}}}).dump(), 400, "logits"});
  cases.push_back({"outputs not an array", with("/outputs", "output").dump(), 400, "outputs"});
  cases.push_back({"id not a string", with("/id", 5).dump(), 400, "id"});
  cases.push_back({"timeout not an integer", with("/parameters", {{"timeout", "soon"}}).dump(), 400,
                   "parameters.timeout"});
  cases.push_back({"binary_data_output not a bool",
                   with("/parameters", {{"binary_data_output", 1}}).dump(), 400,
                   "binary_data_output"});
  json big = infer_json(random_rows(kMaxBatch + 1, 4));
  cases.push_back({"batch above max_batch_size", big.dump(), 400, "max_batch_size"});
  cases.push_back({"unknown model", valid().dump(), 404, "nope", "/v2/models/nope/infer"});
  cases.push_back({"unknown version", valid().dump(), 404, "7", "/v2/models/mlp/versions/7/infer"});

  // Binary tensors.
  const std::vector<float> x = random_rows(2, 5);
  BinaryRequest b = infer_binary(x, false);
  cases.push_back({"binary part shorter than binary_data_size",
                   b.body.substr(0, b.body.size() - 4),
                   400,
                   "inputs[0] ('x')",
                   "/v2/models/mlp/infer",
                   {{"Inference-Header-Content-Length", std::to_string(b.header_length)}}});
  cases.push_back({"binary part longer than binary_data_size",
                   b.body + "1234",
                   400,
                   "4 bytes more",
                   "/v2/models/mlp/infer",
                   {{"Inference-Header-Content-Length", std::to_string(b.header_length)}}});
  json wrong_size = json::parse(b.body.substr(0, b.header_length));
  wrong_size["inputs"][0]["parameters"]["binary_data_size"] = 100;
  std::string wrong_body = wrong_size.dump();
  const size_t wrong_length = wrong_body.size();
  wrong_body += std::string(100, '\0');
  cases.push_back({"binary_data_size disagrees with shape",
                   wrong_body,
                   400,
                   "inputs[0] ('x')",
                   "/v2/models/mlp/infer",
                   {{"Inference-Header-Content-Length", std::to_string(wrong_length)}}});
  cases.push_back({"header length beyond the body",
                   b.body,
                   400,
                   "Inference-Header-Content-Length",
                   "/v2/models/mlp/infer",
                   {{"Inference-Header-Content-Length", std::to_string(b.body.size() + 1)}}});
  cases.push_back({"header length not a number",
                   b.body,
                   400,
                   "Inference-Header-Content-Length",
                   "/v2/models/mlp/infer",
                   {{"Inference-Header-Content-Length", "twelve"}}});
  cases.push_back({"binary_data_size without the header", b.body.substr(0, b.header_length), 400,
                   "Inference-Header-Content-Length"});

  // Repository and vetiver.
  cases.push_back({"index body not JSON", "{", 400, "malformed JSON", "/v2/repository/index"});
  cases.push_back({"predict: not JSON", "[1,", 400, "malformed JSON", "/predict"});
  cases.push_back({"predict: a string cell", R"([{"a": 1, "b": "NA"}])", 400, "'b'", "/predict"});
  cases.push_back({"predict: rows of different width", "[[1, 2], [1]]", 400, "row 1", "/predict"});
  cases.push_back({"predict: wrong feature count", "[[1, 2, 3]]", 400, "16 features", "/predict"});
  cases.push_back({"predict: no rows", "[]", 400, "no rows", "/predict"});
  return cases;
}

TEST(ServerBadInput, EachCaseIsA4xxNamingTheField) {
  ServerFixture f;
  auto c = f.client();
  int checked = 0;
  for (const BadCase& bad : bad_cases()) {
    auto r = c.Post(bad.path.c_str(), bad.headers, bad.body, "application/json");
    ASSERT_TRUE(r) << bad.what << ": no response (" << httplib::to_string(r.error()) << ")";
    EXPECT_EQ(r->status, bad.status) << bad.what << ": " << r->body;
    EXPECT_NE(error_of(r).find(bad.names), std::string::npos)
        << bad.what << ": the error should name '" << bad.names << "': " << r->body;
    ++checked;
  }
  EXPECT_GE(checked, 35);

  // Still serving, and correctly.
  const std::vector<float> x = random_rows(3, 99);
  auto r = c.Post("/v2/models/mlp/infer", infer_json(x).dump(), "application/json");
  ASSERT_EQ(r->status, 200) << r->body;
  expect_close(json::parse(r->body)["outputs"][0]["data"].get<std::vector<float>>(), reference(x));
}

TEST(ServerBadInput, OversizedBodyIs413) {
  TempRepository repository;
  ServerOptions o = test_options(repository.dir());
  o.max_request_bytes = 2048;
  InferenceServer server(o);
  server.start();
  httplib::Client c("127.0.0.1", server.port());
  const std::vector<float> x = random_rows(kMaxBatch, 6);  // 8 x 16 floats: over 2 KiB as JSON
  const std::string body = infer_json(x).dump();
  ASSERT_GT(body.size(), 2048u);
  auto r = c.Post("/v2/models/mlp/infer", body, "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 413);
  EXPECT_NE(error_of(r).find("max-request-bytes"), std::string::npos) << r->body;
  const std::vector<float> small = random_rows(1, 8);
  auto ok = c.Post("/v2/models/mlp/infer", infer_json(small).dump(), "application/json");
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200) << ok->body;
}

TEST(ServerBadInput, VetiverWithSeveralModelsNamesTheOption) {
  TempRepository repository;
  fs::create_directories(fs::path(repository.dir()) / "mlp2" / "1");
  fs::copy_file(mlp_path(), fs::path(repository.dir()) / "mlp2" / "1" / "model.onnx");
  InferenceServer server(test_options(repository.dir()));
  server.start();
  httplib::Client c("127.0.0.1", server.port());
  auto r = c.Post("/predict", "[[1]]", "application/json");
  EXPECT_EQ(r->status, 404);
  EXPECT_NE(error_of(r).find("--vetiver-model"), std::string::npos) << r->body;
}

TEST(ServerBadInput, OptionsAreChecked) {
  ServerOptions o;
  EXPECT_THROW(InferenceServer{o}, ValueError);  // no repository
  o.model_repository = "/tmp";
  o.model_control_mode = "poll";
  EXPECT_THROW(InferenceServer{o}, ValueError);
  o.model_control_mode = "none";
  o.http_threads = 0;
  EXPECT_THROW(InferenceServer{o}, ValueError);
}

}  // namespace
}  // namespace rcuda::server::test
