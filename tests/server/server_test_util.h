// What the server tests share: a temporary model repository holding tests/onnx_models' MLP
// (x: [batch, 16] float32 -> output: [batch, 4]), a server on 127.0.0.1 with free ports, JSON
// and binary request builders, and the reference: io::OnnxModel::run of the same file.
#pragma once

#include <gtest/gtest.h>
#include <httplib.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "rcuda/io/onnx/import.h"
#include "server.h"

namespace rcuda::server::test {

using nlohmann::json;
namespace fs = std::filesystem;

constexpr int kFeatures = 16;
constexpr int kOutputs = 4;
constexpr int kMaxBatch = 8;

inline std::string mlp_path() {
  return std::string(RCUDA_TESTS_DIR) + "/onnx_models/mlp_torchscript.onnx";
}

// DIR/mlp/1/model.onnx with a config of max_batch_size 8 and dynamic batching; DIR/broken/1/
// holds a file that is no model (its load fails, the others serve).
class TempRepository {
 public:
  TempRepository() {
    static int counter = 0;
    dir_ = fs::temp_directory_path() /
           ("rcuda-server-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
    fs::create_directories(dir_ / "mlp" / "1");
    fs::copy_file(mlp_path(), dir_ / "mlp" / "1" / "model.onnx");
    std::ofstream(dir_ / "mlp" / "config.json")
        << R"({"max_batch_size": 8, "dynamic_batching": {"max_queue_delay_microseconds": 2000}})";
  }
  ~TempRepository() {
    std::error_code ignored;
    fs::remove_all(dir_, ignored);
  }
  void add_broken_model() {
    fs::create_directories(dir_ / "broken" / "1");
    std::ofstream(dir_ / "broken" / "1" / "model.onnx") << "not an onnx file";
  }
  std::string dir() const { return dir_.string(); }

 private:
  fs::path dir_;
};

inline ServerOptions test_options(const std::string& repository) {
  ServerOptions o;
  o.model_repository = repository;
  o.repository.default_device = Device(DeviceType::CPU);
  o.http_port = 0;
  o.metrics_port = 0;
  o.http_threads = 32;
  return o;
}

// Random rows of x, as float32 values.
inline std::vector<float> random_rows(int rows, uint32_t seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> normal;
  std::vector<float> x(static_cast<size_t>(rows) * kFeatures);
  for (float& v : x) v = normal(gen);
  return x;
}

// The reference: the same ONNX file run in-process, row-major [rows, 4].
inline std::vector<float> reference(const std::vector<float>& x) {
  static const io::OnnxModel model = io::OnnxModel::load(mlp_path());
  const int64_t rows = static_cast<int64_t>(x.size()) / kFeatures;
  Tensor input = Tensor::empty({rows, kFeatures}, DType::Float32);
  std::memcpy(input.data_ptr(), x.data(), x.size() * sizeof(float));
  const Tensor y = model.run({input}).at(0);
  return std::vector<float>(y.data<float>(), y.data<float>() + y.numel());
}

inline json infer_json(const std::vector<float>& x, const std::string& id = "") {
  json body{{"inputs",
             {{{"name", "x"},
               {"datatype", "FP32"},
               {"shape", {static_cast<int64_t>(x.size()) / kFeatures, kFeatures}},
               {"data", x}}}}};
  if (!id.empty()) body["id"] = id;
  return body;
}

// A binary request: JSON header, then the raw float32 bytes of x.
struct BinaryRequest {
  std::string body;
  size_t header_length = 0;
};
inline BinaryRequest infer_binary(const std::vector<float>& x, bool binary_output) {
  json header{{"inputs",
               {{{"name", "x"},
                 {"datatype", "FP32"},
                 {"shape", {static_cast<int64_t>(x.size()) / kFeatures, kFeatures}},
                 {"parameters", {{"binary_data_size", x.size() * sizeof(float)}}}}}}};
  if (binary_output) header["parameters"] = {{"binary_data_output", true}};
  BinaryRequest r;
  r.body = header.dump();
  r.header_length = r.body.size();
  r.body.append(reinterpret_cast<const char*>(x.data()), x.size() * sizeof(float));
  return r;
}

inline httplib::Result post_binary(httplib::Client& client, const std::string& path,
                                   const BinaryRequest& r) {
  httplib::Headers headers{{"Inference-Header-Content-Length", std::to_string(r.header_length)}};
  return client.Post(path.c_str(), headers, r.body, "application/octet-stream");
}

inline void expect_close(const std::vector<float>& got, const std::vector<float>& want,
                         double tolerance = 1e-6) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_NEAR(got[i], want[i], tolerance) << "element " << i;
}

// The "error" of a JSON error body ("" when there is none).
inline std::string error_of(const httplib::Result& r) {
  if (!r) return "(no response)";
  const json body = json::parse(r->body, nullptr, false);
  if (body.is_discarded() || !body.is_object() || !body.contains("error") ||
      !body["error"].is_string())
    return "";
  return body["error"].get<std::string>();
}

// A started server over a fresh repository, and a client for it.
struct ServerFixture {
  explicit ServerFixture(const std::string& control_mode = "none", bool broken_model = false)
      : repository() {
    if (broken_model) repository.add_broken_model();
    ServerOptions o = test_options(repository.dir());
    o.model_control_mode = control_mode;
    server = std::make_unique<InferenceServer>(o);
    server->start();
  }
  httplib::Client client() const {
    httplib::Client c("127.0.0.1", server->port());
    c.set_read_timeout(30, 0);
    return c;
  }
  TempRepository repository;
  std::unique_ptr<InferenceServer> server;
};

}  // namespace rcuda::server::test
