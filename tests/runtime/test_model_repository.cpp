// The model repository (rcuda/runtime/repository.h) over temporary folders: a broken model fails
// alone with its reason, version policies pick the right folders, load/unload/find, and the
// rcuda_inference_* metrics of the served models.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "rcuda/runtime/repository.h"
#include "rcuda/telemetry/metrics.h"
#include "runtime/runtime_test_util.h"

namespace rcuda::test {
namespace {

using runtime::InferError;
using runtime::InferRequest;
using runtime::ModelRepository;
using Status = InferError::Status;

const char* const kBatchedConfig = R"({"max_batch_size": 8})";

runtime::RepositoryOptions on_the_cpu() {
  runtime::RepositoryOptions options;
  options.default_device = Device(DeviceType::CPU);
  return options;
}

InferRequest request_of(const Tensor& x) {
  InferRequest r;
  r.inputs.push_back({"x", x});
  return r;
}

const ModelRepository::Entry* entry(const std::vector<ModelRepository::Entry>& index,
                                    const std::string& name) {
  for (const ModelRepository::Entry& e : index)
    if (e.name == name) return &e;
  return nullptr;
}

class RuntimeRepository : public RuntimeFolderTest {};

TEST_F(RuntimeRepository, ABrokenModelFailsAloneWithItsReason) {
  add_version("good", 1);
  write("good/config.json", kBatchedConfig);
  add_version("bad_config", 1);
  write("bad_config/config.json", R"({"max_batch_size": 8, "dynamic_batchng": {}})");
  add_version("bad_json", 1);
  write("bad_json/config.json", "{\n  \"max_batch_size\": 8,\n}");
  add_version("other_name", 1);
  write("other_name/config.json", R"({"name": "good"})");
  std::filesystem::create_directories(dir_ / "no_file" / "1");
  std::filesystem::create_directories(dir_ / "no_version" / "latest");
  write("broken/1/model.onnx", "not an onnx file");

  ModelRepository repo(dir_.string(), on_the_cpu());
  EXPECT_EQ(repo.load_all(), 1);
  EXPECT_EQ(repo.loaded(), (std::vector<std::string>{"good"}));
  const std::vector<ModelRepository::Entry> index = repo.index();
  ASSERT_EQ(index.size(), 7u);
  const ModelRepository::Entry* good = entry(index, "good");
  ASSERT_NE(good, nullptr);
  EXPECT_EQ(good->version, "1");
  EXPECT_EQ(good->state, "READY");
  const std::vector<std::pair<std::string, std::vector<std::string>>> reasons = {
      {"bad_config", {"model 'bad_config'", "unknown field 'dynamic_batchng'"}},
      {"bad_json", {"model 'bad_json'", "not valid JSON", "line 3"}},
      {"other_name", {"'name'", "'good'", "'other_name'"}},
      {"no_file", {"no model file", "model.onnx"}},
      {"no_version", {"no version folder"}},
      {"broken", {"model 'broken' version 1", "model.onnx"}},
  };
  for (const auto& [name, parts] : reasons) {
    const ModelRepository::Entry* e = entry(index, name);
    ASSERT_NE(e, nullptr) << name;
    EXPECT_EQ(e->state, "UNAVAILABLE") << name;
    EXPECT_EQ(e->version, "") << name;
    for (const std::string& part : parts)
      EXPECT_TRUE(contains(e->reason, part)) << name << ": " << e->reason;
    const Refusal missing = refusal([&, n = name] { repo.find(n); });
    EXPECT_EQ(missing.status, Status::NotFound) << name;
    EXPECT_TRUE(contains(missing.message, "model '" + name + "' is not loaded")) << missing.message;
  }

  // The good one serves, and answers as its file's model run alone.
  const io::OnnxModel reference = io::OnnxModel::load(mlp_path());
  const Tensor x = random_tensor({3, 16}, DType::Float32);
  const auto served = repo.find("good");
  EXPECT_EQ(served->version(), 1);
  EXPECT_EQ(served->devices(), (std::vector<Device>{Device()}));
  EXPECT_LE(
      relative_error(served->infer(request_of(x)).outputs[0].value, reference_output(reference, x)),
      1e-6);
  EXPECT_EQ(repo.find("good", "1"), served);
  const Refusal no_version = refusal([&] { repo.find("good", "2"); });
  EXPECT_EQ(no_version.status, Status::NotFound);
  EXPECT_TRUE(contains(no_version.message, "version '2'")) << no_version.message;
  EXPECT_EQ(refusal([&] { repo.find("nothing"); }).status, Status::NotFound);
}

TEST_F(RuntimeRepository, VersionPoliciesPickTheirFolders) {
  for (int v : {1, 2, 3, 10}) add_version("m", v);
  std::filesystem::create_directories(dir_ / "m" / "0");       // not a positive integer
  std::filesystem::create_directories(dir_ / "m" / "backup");  // not a version
  ModelRepository repo(dir_.string(), on_the_cpu());
  const std::vector<std::pair<std::string, std::vector<int64_t>>> cases = {
      {"{}", {10}},
      {R"({"version_policy": {"latest": {"num_versions": 2}}})", {10, 3}},
      {R"({"version_policy": {"latest": {"num_versions": 9}}})", {10, 3, 2, 1}},
      {R"({"version_policy": {"all": {}}})", {10, 3, 2, 1}},
      {R"({"version_policy": {"specific": {"versions": [2, 1]}}})", {2, 1}},
  };
  for (const auto& [config, expected] : cases) {
    write("m/config.json", config);
    repo.load("m");  // a reload replaces the versions
    EXPECT_EQ(repo.versions("m"), expected) << config;
    EXPECT_EQ(repo.find("m")->version(), expected.front()) << config;
    EXPECT_EQ(repo.find("m", std::to_string(expected.back()))->version(), expected.back());
    std::vector<std::string> rows;
    for (const ModelRepository::Entry& e : repo.index()) rows.push_back(e.version + e.state);
    EXPECT_EQ(rows.size(), expected.size()) << config;
  }
  write("m/config.json", R"({"version_policy": {"specific": {"versions": [4]}}})");
  const Refusal failed = refusal([&] { repo.load("m"); });
  EXPECT_EQ(failed.status, Status::BadRequest);
  EXPECT_TRUE(contains(failed.message, "version 4")) << failed.message;
  // A failed reload leaves the served versions serving.
  EXPECT_EQ(repo.versions("m"), (std::vector<int64_t>{2, 1}));
}

TEST_F(RuntimeRepository, LoadUnloadAndFind) {
  add_version("m", 1, "dynamo");
  write("m/config.json", kBatchedConfig);
  ModelRepository repo(dir_.string(), on_the_cpu());
  EXPECT_EQ(repo.index().size(), 1u);
  EXPECT_EQ(repo.index()[0].state, "");  // never loaded
  EXPECT_TRUE(repo.loaded().empty());
  EXPECT_EQ(refusal([&] { repo.find("m"); }).status, Status::NotFound);
  EXPECT_EQ(refusal([&] { repo.load("absent"); }).status, Status::NotFound);
  EXPECT_EQ(refusal([&] { repo.load("../m"); }).status, Status::NotFound);

  repo.load("m");
  const auto held = repo.find("m");
  EXPECT_EQ(repo.loaded(), (std::vector<std::string>{"m"}));
  repo.unload("m");
  EXPECT_TRUE(repo.loaded().empty());
  const Refusal gone = refusal([&] { repo.find("m"); });
  EXPECT_EQ(gone.status, Status::NotFound);
  EXPECT_TRUE(contains(gone.message, "unloaded")) << gone.message;
  EXPECT_EQ(repo.index()[0].state, "UNAVAILABLE");
  EXPECT_EQ(repo.index()[0].reason, "unloaded");
  EXPECT_EQ(refusal([&] { repo.unload("m"); }).status, Status::NotFound);
  // A model held across its unload is stopped: it refuses new requests.
  const Refusal stopped = refusal([&] {
    held->submit(request_of(random_tensor({1, 16}, DType::Float32)));
  });
  EXPECT_EQ(stopped.status, Status::Unavailable);

  repo.load("m");
  EXPECT_EQ(repo.index()[0].state, "READY");
  EXPECT_EQ(repo.find("m")
                ->infer(request_of(random_tensor({2, 16}, DType::Float32)))
                .outputs[0]
                .value.shape(),
            (Shape{2, 4}));
  repo.stop_all();
  EXPECT_EQ(refusal([&] {
              repo.find("m")->submit(request_of(random_tensor({1, 16}, DType::Float32)));
            }).status,
            Status::Unavailable);
}

TEST_F(RuntimeRepository, ExportsEachVersionsStatisticsAsMetrics) {
  add_version("m", 1);
  add_version("m", 2);
  write("m/config.json", R"({"max_batch_size": 8, "version_policy": {"all": {}}})");
  ModelRepository repo(dir_.string(), on_the_cpu());
  ASSERT_EQ(repo.load_all(), 1);
  telemetry::Registry registry;
  repo.export_metrics(registry);

  const auto v2 = repo.find("m");
  v2->infer(request_of(random_tensor({3, 16}, DType::Float32)));
  v2->infer(request_of(random_tensor({1, 16}, DType::Float32)));
  EXPECT_THROW(v2->infer(request_of(random_tensor({1, 15}, DType::Float32))), InferError);
  repo.find("m", "1")->infer(request_of(random_tensor({5, 16}, DType::Float32)));

  const std::string text = telemetry::prometheus_text(registry);
  const std::string m2 = "{model=\"m\",version=\"2\"}", m1 = "{model=\"m\",version=\"1\"}";
  for (const std::string& line :
       {"rcuda_inference_request_success_total" + m2 + " 2",
        "rcuda_inference_request_failure_total" + m2 + " 1",
        "rcuda_inference_inferences_total" + m2 + " 4",
        "rcuda_inference_executions_total" + m2 + " 2",
        "rcuda_inference_pending_requests" + m2 + " 0",
        "rcuda_inference_request_success_total" + m1 + " 1",
        "rcuda_inference_request_failure_total" + m1 + " 0",
        "rcuda_inference_inferences_total" + m1 + " 5",
        "rcuda_inference_executions_total" + m1 + " 1",
        "rcuda_inference_request_duration_seconds_total" + m2,
        "rcuda_inference_queue_duration_seconds_total" + m2,
        "rcuda_inference_compute_input_duration_seconds_total" + m2,
        "rcuda_inference_compute_infer_duration_seconds_total" + m2,
        "rcuda_inference_compute_output_duration_seconds_total" + m2,
        std::string("# TYPE rcuda_inference_request_duration_seconds_total counter")})
    EXPECT_TRUE(contains(text, line)) << line << "\n" << text;
  // The seconds are the microseconds of the model's own statistics.
  const runtime::ModelStats s = v2->stats();
  const std::string prefix = "rcuda_inference_request_duration_seconds_total" + m2 + " ";
  const size_t at = text.find(prefix);
  ASSERT_NE(at, std::string::npos);
  EXPECT_NEAR(std::stod(text.substr(at + prefix.size())), 1e-6 * s.request_duration_us, 1e-9);
  EXPECT_TRUE(contains(telemetry::openmetrics_text(registry),
                       "# UNIT rcuda_inference_request_duration_seconds seconds"));

  repo.unload("m");
  const std::string after = telemetry::prometheus_text(registry);
  EXPECT_FALSE(contains(after, "model=\"m\"")) << after;
}

}  // namespace
}  // namespace rcuda::test
