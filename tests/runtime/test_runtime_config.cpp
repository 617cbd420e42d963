// config.json (rcuda/runtime/config.h): every field read into its value, defaults, the errors a
// bad file gets (each naming the model and the field), to_json read back to the same config, and
// the Triton/KServe names of the dtypes.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "rcuda/backend/cuda.h"
#include "rcuda/runtime/config.h"
#include "runtime/runtime_test_util.h"

namespace rcuda::test {
namespace {

using runtime::ModelConfig;
using runtime::VersionPolicy;

const char* const kFullConfig = R"({
  "name": "mlp",
  "platform": "onnxruntime_onnx",
  "max_batch_size": 64,
  "input":  [{"name": "x", "data_type": "TYPE_FP32", "dims": [784]},
             {"name": "mask", "data_type": "TYPE_BOOL", "dims": ["-1", 3]}],
  "output": [{"name": "y", "data_type": "TYPE_FP16", "dims": [10]}],
  "dynamic_batching": {
    "max_queue_delay_microseconds": 500,
    "preferred_batch_size": [32, 16],
    "default_queue_policy": {"max_queue_size": 256, "default_timeout_microseconds": 7000,
                             "timeout_action": "REJECT", "allow_timeout_override": false}
  },
  "instance_group": [{"count": 2, "kind": "KIND_GPU", "gpus": [0, 1]},
                     {"count": 1, "kind": "KIND_CPU"},
                     {"device": "cuda:3"},
                     {"kind": "KIND_AUTO", "count": 3}],
  "version_policy": {"specific": {"versions": [3, 1]}},
  "default_model_filename": "net.onnx",
  "cuda_graphs": [8, 1]
})";

void expect_full_config(const ModelConfig& c) {
  EXPECT_EQ(c.name, "mlp");
  EXPECT_EQ(c.max_batch_size, 64);
  ASSERT_EQ(c.inputs.size(), 2u);
  EXPECT_EQ(c.inputs[0].name, "x");
  EXPECT_EQ(c.inputs[0].dtype, DType::Float32);
  EXPECT_EQ(c.inputs[0].dims, (std::vector<int64_t>{784}));
  EXPECT_EQ(c.inputs[1].name, "mask");
  EXPECT_EQ(c.inputs[1].dtype, DType::Bool);
  EXPECT_EQ(c.inputs[1].dims, (std::vector<int64_t>{-1, 3}));
  ASSERT_EQ(c.outputs.size(), 1u);
  EXPECT_EQ(c.outputs[0].name, "y");
  EXPECT_EQ(c.outputs[0].dtype, DType::Float16);
  EXPECT_EQ(c.outputs[0].dims, (std::vector<int64_t>{10}));
  ASSERT_TRUE(c.dynamic_batching.has_value());
  EXPECT_EQ(c.dynamic_batching->max_queue_delay_microseconds, 500);
  EXPECT_EQ(c.dynamic_batching->preferred_batch_size, (std::vector<int64_t>{16, 32}));
  const runtime::QueuePolicy& p = c.dynamic_batching->default_queue_policy;
  EXPECT_EQ(p.max_queue_size, 256);
  EXPECT_EQ(p.default_timeout_microseconds, 7000);
  EXPECT_FALSE(p.allow_timeout_override);
  EXPECT_EQ(c.queue_policy().max_queue_size, 256);
  ASSERT_EQ(c.instance_groups.size(), 4u);
  EXPECT_EQ(c.instance_groups[0].count, 2);
  EXPECT_EQ(c.instance_groups[0].devices,
            (std::vector<Device>{Device(DeviceType::CUDA, 0), Device(DeviceType::CUDA, 1)}));
  EXPECT_EQ(c.instance_groups[1].count, 1);
  EXPECT_EQ(c.instance_groups[1].devices, (std::vector<Device>{Device(DeviceType::CPU)}));
  EXPECT_EQ(c.instance_groups[2].devices, (std::vector<Device>{Device(DeviceType::CUDA, 3)}));
  EXPECT_EQ(c.instance_groups[3].count, 3);
  EXPECT_TRUE(c.instance_groups[3].devices.empty());  // KIND_AUTO: the default device
  EXPECT_EQ(c.version_policy.kind, VersionPolicy::Kind::Specific);
  EXPECT_EQ(c.version_policy.versions, (std::vector<int64_t>{1, 3}));
  EXPECT_EQ(c.default_model_filename, "net.onnx");
  // Sorted, with max_batch_size added.
  EXPECT_EQ(c.cuda_graphs, (std::vector<int64_t>{1, 8, 64}));
}

TEST(RuntimeConfig, EveryFieldIsRead) {
  expect_full_config(ModelConfig::parse(kFullConfig, "mlp"));
}

TEST(RuntimeConfig, DefaultsWhenLeftOut) {
  const ModelConfig c = ModelConfig::parse("{}", "m");
  EXPECT_EQ(c.name, "m");
  EXPECT_EQ(c.max_batch_size, 0);
  EXPECT_TRUE(c.inputs.empty());
  EXPECT_TRUE(c.outputs.empty());
  EXPECT_FALSE(c.dynamic_batching.has_value());
  EXPECT_TRUE(c.instance_groups.empty());
  EXPECT_EQ(c.version_policy.kind, VersionPolicy::Kind::Latest);
  EXPECT_EQ(c.version_policy.num_versions, 1);
  EXPECT_EQ(c.default_model_filename, "model.onnx");
  EXPECT_TRUE(c.cuda_graphs.empty());
  EXPECT_EQ(c.queue_policy().max_queue_size, 0);
  EXPECT_EQ(c.queue_policy().default_timeout_microseconds, 0);

  const ModelConfig latest =
      ModelConfig::parse(R"({"version_policy": {"latest": {"num_versions": 2}}})", "m");
  EXPECT_EQ(latest.version_policy.kind, VersionPolicy::Kind::Latest);
  EXPECT_EQ(latest.version_policy.num_versions, 2);
  const ModelConfig all = ModelConfig::parse(R"({"version_policy": {"all": {}}})", "m");
  EXPECT_EQ(all.version_policy.kind, VersionPolicy::Kind::All);
  const ModelConfig batching =
      ModelConfig::parse(R"({"max_batch_size": 4, "dynamic_batching": {}})", "m");
  ASSERT_TRUE(batching.dynamic_batching.has_value());
  EXPECT_EQ(batching.dynamic_batching->max_queue_delay_microseconds, 0);
  EXPECT_TRUE(batching.dynamic_batching->default_queue_policy.allow_timeout_override);
}

struct BadConfig {
  const char* json;
  std::vector<std::string> parts;  // each must be in the message
};

TEST(RuntimeConfig, ErrorsNameTheModelAndTheField) {
  const std::vector<BadConfig> cases = {
      {R"({"max_batch_sise": 4})", {"unknown field 'max_batch_sise'", "max_batch_size"}},
      {R"({"max_batch_size": 4, "dynamic_batching": {"preferred_batch_sizes": [2]}})",
       {"unknown field 'dynamic_batching.preferred_batch_sizes'"}},
      {R"({"max_batch_size": -1})", {"'max_batch_size'", "-1"}},
      {R"({"max_batch_size": "many"})", {"'max_batch_size'", "\"many\""}},
      {R"({"max_batch_size": 2.5})", {"'max_batch_size'", "2.5"}},
      {R"({"name": "other"})", {"'name'", "'other'", "'m'"}},
      {R"({"max_batch_size": 8, "dynamic_batching": {"default_queue_policy":
           {"timeout_action": "DELAY"}}})",
       {"'dynamic_batching.default_queue_policy.timeout_action'", "DELAY", "never run late"}},
      {R"({"max_batch_size": 8, "dynamic_batching": {"preferred_batch_size": [4, 9]}})",
       {"'dynamic_batching.preferred_batch_size[1]'", "[1, 8]", "9"}},
      {R"({"dynamic_batching": {}})", {"'dynamic_batching'", "max_batch_size is 0"}},
      {R"({"input": [{"name": "x", "data_type": "TYPE_STRING", "dims": [1]}]})",
       {"'input[0].data_type'", "TYPE_STRING"}},
      {R"({"input": [{"name": "x", "data_type": "TYPE_FP32"}]})", {"'input[0]'", "'dims'"}},
      {R"({"output": [{"name": "y", "data_type": "TYPE_FP32", "dims": [0]}]})",
       {"'output[0].dims'", "got 0"}},
      {R"({"input": [{"name": "x", "data_type": "TYPE_FP32", "dims": [1]},
                     {"name": "x", "data_type": "TYPE_FP32", "dims": [1]}]})",
       {"'input[1].name'", "twice"}},
      {R"({"instance_group": [{"kind": "KIND_MODEL"}]})",
       {"'instance_group[0].kind'", "KIND_MODEL"}},
      {R"({"instance_group": [{"kind": "KIND_CPU", "gpus": [0]}]})", {"'instance_group[0].gpus'"}},
      {R"({"instance_group": [{"device": "tpu"}]})", {"'instance_group[0].device'", "tpu"}},
      {R"({"instance_group": [{"count": 0}]})", {"'instance_group[0].count'", "got 0"}},
      {R"({"version_policy": {"latest": {"num_versions": 1}, "all": {}}})",
       {"'version_policy'", "exactly one"}},
      {R"({"version_policy": {"all": {"x": 1}}})", {"unknown field 'version_policy.all.x'"}},
      {R"({"version_policy": {"specific": {"versions": [0]}}})",
       {"'version_policy.specific.versions[0]'"}},
      {R"({"cuda_graphs": [1]})", {"'cuda_graphs'", "max_batch_size"}},
      {R"({"max_batch_size": 4, "cuda_graphs": [5]})", {"'cuda_graphs[0]'", "5"}},
      {R"({"default_model_filename": "../x.onnx"})", {"'default_model_filename'", "../x.onnx"}},
      {R"({"backend": "tensorrt"})", {"'backend'", "tensorrt"}},
      {R"([1, 2])", {"JSON object"}},
      {"{\n  \"max_batch_size\": 4,\n  \"input\": [\n}", {"not valid JSON", "line 4"}},
  };
  for (const BadConfig& c : cases) {
    const std::string e = error_message([&] { ModelConfig::parse(c.json, "m"); });
    EXPECT_TRUE(contains(e, "model 'm'")) << c.json << "\n" << e;
    for (const std::string& part : c.parts) EXPECT_TRUE(contains(e, part)) << c.json << "\n" << e;
    EXPECT_THROW(ModelConfig::parse(c.json, "m"), ValueError) << c.json;
  }
}

TEST(RuntimeConfig, KindGpuWithoutGpusTakesEveryVisibleGpu) {
  const int n = cuda::device_count();
  const char* json = R"({"instance_group": [{"kind": "KIND_GPU"}]})";
  if (n == 0) {
    const std::string e = error_message([&] { ModelConfig::parse(json, "m"); });
    EXPECT_TRUE(contains(e, "'instance_group[0].kind'")) << e;
    EXPECT_TRUE(contains(e, "no CUDA device")) << e;
    return;
  }
  const ModelConfig c = ModelConfig::parse(json, "m");
  ASSERT_EQ(c.instance_groups.size(), 1u);
  EXPECT_EQ(c.instance_groups[0].devices.size(), static_cast<size_t>(n));
}

TEST(RuntimeConfig, ToJsonReadsBackToTheSameConfig) {
  const ModelConfig c = ModelConfig::parse(kFullConfig, "mlp");
  const ModelConfig back = ModelConfig::parse(c.to_json(), "mlp");
  expect_full_config(back);
  // A config built in C++ (no parse): its Latest policy and an empty batching block.
  ModelConfig made;
  made.name = "made";
  made.max_batch_size = 2;
  made.dynamic_batching.emplace();
  made.version_policy.num_versions = 3;
  const ModelConfig made_back = ModelConfig::parse(made.to_json(), "made");
  EXPECT_EQ(made_back.max_batch_size, 2);
  ASSERT_TRUE(made_back.dynamic_batching.has_value());
  EXPECT_TRUE(made_back.dynamic_batching->preferred_batch_size.empty());
  EXPECT_EQ(made_back.version_policy.kind, VersionPolicy::Kind::Latest);
  EXPECT_EQ(made_back.version_policy.num_versions, 3);
  EXPECT_TRUE(made_back.cuda_graphs.empty());
}

TEST(RuntimeConfig, TritonAndKServeDTypeNames) {
  const std::vector<std::pair<DType, std::string>> names = {
      {DType::Bool, "BOOL"},    {DType::UInt8, "UINT8"},   {DType::Int8, "INT8"},
      {DType::Int16, "INT16"},  {DType::Int32, "INT32"},   {DType::Int64, "INT64"},
      {DType::Float16, "FP16"}, {DType::BFloat16, "BF16"}, {DType::Float32, "FP32"},
      {DType::Float64, "FP64"}};
  for (const auto& [dtype, name] : names) {
    EXPECT_EQ(runtime::kserve_datatype(dtype), name);
    EXPECT_EQ(runtime::triton_type_name(dtype), "TYPE_" + name);
    EXPECT_EQ(runtime::dtype_from_kserve(name), dtype);
    EXPECT_EQ(runtime::dtype_from_triton_type("TYPE_" + name), dtype);
  }
  for (const char* name : {"BYTES", "UINT16", "UINT32", "UINT64", "FP8", "fp32", "TYPE_FP32"}) {
    const std::string e = error_message([&] { runtime::dtype_from_kserve(name); });
    EXPECT_TRUE(contains(e, std::string("'") + name + "'")) << e;
  }
  for (const char* name : {"TYPE_STRING", "TYPE_UINT32", "FP32", "TYPE_"}) {
    const std::string e = error_message([&] { runtime::dtype_from_triton_type(name); });
    EXPECT_TRUE(contains(e, std::string("'") + name + "'")) << e;
  }
  EXPECT_THROW(runtime::kserve_datatype(DType::Complex64), DTypeError);
  EXPECT_THROW(runtime::triton_type_name(DType::Float8E4M3FN), DTypeError);
}

}  // namespace
}  // namespace rcuda::test
