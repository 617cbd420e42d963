// A served model (rcuda/runtime/model.h) on the mlp fixture: every response equals the model's
// own io::OnnxModel::run of that request's input alone, whether it ran alone or in a batch with
// others; the batcher's rules (preferred sizes, a full batch, the delay), the queue's limits
// (full, timeouts, stop), and the errors a bad request or a failing run is answered with.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "rcuda/backend/cuda.h"
#include "rcuda/ops/copy.h"
#include "rcuda/runtime/model.h"
#include "runtime/runtime_test_util.h"
#include "support/devices.h"

namespace rcuda::test {
namespace {

using runtime::InferError;
using runtime::InferRequest;
using runtime::InferResponse;
using runtime::ModelConfig;
using runtime::ServedModel;
using Status = InferError::Status;

constexpr double kTolerance = 1e-6;

ModelConfig mlp_config(int64_t max_batch_size, bool dynamic, Device device = Device()) {
  ModelConfig c;
  c.name = "mlp";
  c.max_batch_size = max_batch_size;
  if (dynamic) {
    c.dynamic_batching.emplace();
    c.dynamic_batching->max_queue_delay_microseconds = 2000;
  }
  c.instance_groups.push_back({1, {device}});
  return c;
}

InferRequest request_of(const Tensor& x, const std::string& id = "") {
  InferRequest r;
  r.id = id;
  r.inputs.push_back({"x", x});
  return r;
}

// Polls until `done` (a queue state the test waits for), failing after 10 s.
void wait_until(const std::function<bool()>& done) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!done()) {
    ASSERT_LT(std::chrono::steady_clock::now(), end) << "the model never reached the state";
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

TEST(RuntimeServedModel, CompletesItsConfigFromTheFile) {
  for (const char* exporter : {"torchscript", "dynamo"}) {
    const auto served = ServedModel::load(mlp_config(8, false), mlp_path(exporter), 1);
    const ModelConfig& c = served->config();
    ASSERT_EQ(c.inputs.size(), 1u) << exporter;
    EXPECT_EQ(c.inputs[0].name, "x");
    EXPECT_EQ(c.inputs[0].dtype, DType::Float32);
    EXPECT_EQ(c.inputs[0].dims, (std::vector<int64_t>{16}));
    ASSERT_EQ(c.outputs.size(), 1u);
    EXPECT_EQ(c.outputs[0].dims, (std::vector<int64_t>{4}));
    EXPECT_EQ(served->name(), "mlp");
    EXPECT_EQ(served->version(), 1);
    EXPECT_EQ(served->devices(), (std::vector<Device>{Device()}));
    EXPECT_TRUE(served->captured().empty());
  }
  // Unbatched: the file's dims as they are, the symbolic batch as -1.
  const auto unbatched = ServedModel::load(mlp_config(0, false), mlp_path(), 1);
  EXPECT_EQ(unbatched->config().inputs[0].dims, (std::vector<int64_t>{-1, 16}));
}

TEST(RuntimeServedModel, SingleRequestsMatchTheModelRunAlone) {
  for (const char* exporter : {"torchscript", "dynamo"}) {
    const io::OnnxModel reference = io::OnnxModel::load(mlp_path(exporter));
    const auto served = ServedModel::load(mlp_config(8, true), mlp_path(exporter), 3);
    for (int64_t rows : {1, 3, 8}) {
      const Tensor x = random_tensor({rows, 16}, DType::Float32);
      const InferResponse r = served->infer(request_of(x, "req-" + std::to_string(rows)));
      EXPECT_EQ(r.id, "req-" + std::to_string(rows));
      EXPECT_EQ(r.model_name, "mlp");
      EXPECT_EQ(r.model_version, "3");
      ASSERT_EQ(r.outputs.size(), 1u);
      EXPECT_EQ(r.outputs[0].name, served->config().outputs[0].name);
      EXPECT_TRUE(r.outputs[0].value.device().is_cpu());
      ASSERT_EQ(r.outputs[0].value.shape(), (Shape{rows, 4}));
      EXPECT_LE(relative_error(r.outputs[0].value, reference_output(reference, x)), kTolerance)
          << exporter << " rows " << rows;
    }
    const runtime::ModelStats s = served->stats();
    EXPECT_EQ(s.request_success, 3u);
    EXPECT_EQ(s.inference_count, 12u);
    EXPECT_EQ(s.execution_count, 3u);
    EXPECT_EQ(s.pending_request_count, 0);
  }
}

// `threads` clients each send `per_thread` requests of 1 to 4 rows, one after the other; every
// response must hold its own request's rows.
void expect_concurrent_requests_answered(ServedModel& served, int threads, int per_thread,
                                         uint64_t* total_rows) {
  const io::OnnxModel reference = io::OnnxModel::load(mlp_path());
  std::uniform_int_distribution<int64_t> row_count(1, 4);
  std::vector<std::vector<Tensor>> inputs(threads), expected(threads);
  *total_rows = 0;
  for (int t = 0; t < threads; ++t)
    for (int i = 0; i < per_thread; ++i) {
      const int64_t rows = row_count(rng());
      inputs[t].push_back(random_tensor({rows, 16}, DType::Float32));
      expected[t].push_back(reference_output(reference, inputs[t].back()));
      *total_rows += static_cast<uint64_t>(rows);
    }
  std::vector<std::string> problems(threads);
  std::vector<double> worst(threads, 0.0);
  std::vector<std::thread> clients;
  for (int t = 0; t < threads; ++t)
    clients.emplace_back([&, t] {
      for (int i = 0; i < per_thread; ++i) {
        const std::string id = std::to_string(t) + "/" + std::to_string(i);
        try {
          const InferResponse r = served.infer(request_of(inputs[t][i], id));
          if (r.id != id || r.outputs.size() != 1 ||
              r.outputs[0].value.shape() != expected[t][i].shape()) {
            problems[t] = "request " + id + ": wrong id, outputs or shape";
            return;
          }
          worst[t] = std::max(worst[t], relative_error(r.outputs[0].value, expected[t][i]));
        } catch (const std::exception& e) {
          problems[t] = "request " + id + ": " + e.what();
          return;
        }
      }
    });
  for (std::thread& c : clients) c.join();
  for (int t = 0; t < threads; ++t) {
    EXPECT_EQ(problems[t], "") << "client " << t;
    EXPECT_LE(worst[t], kTolerance) << "client " << t;
  }
}

TEST(RuntimeServedModel, ConcurrentRequestsAreBatchedAndEachGetsItsOwnRows) {
  ModelConfig config = mlp_config(8, true);
  config.instance_groups[0].count = 2;
  const auto served = ServedModel::load(config, mlp_path(), 1);
  EXPECT_EQ(served->devices().size(), 2u);
  uint64_t rows = 0;
  expect_concurrent_requests_answered(*served, 16, 20, &rows);
  const runtime::ModelStats s = served->stats();
  EXPECT_EQ(s.request_success, 320u);
  EXPECT_EQ(s.request_failure, 0u);
  EXPECT_EQ(s.inference_count, rows);
  EXPECT_LT(s.execution_count, 320u);  // requests shared batches
  EXPECT_GT(s.execution_count, 0u);
  EXPECT_EQ(s.pending_request_count, 0);
  EXPECT_GE(s.request_duration_us, s.queue_duration_us);
}

TEST(RuntimeServedModel, WithoutDynamicBatchingEachRequestRunsAlone) {
  const auto served = ServedModel::load(mlp_config(8, false), mlp_path(), 1);
  uint64_t rows = 0;
  expect_concurrent_requests_answered(*served, 4, 10, &rows);
  const runtime::ModelStats s = served->stats();
  EXPECT_EQ(s.request_success, 40u);
  EXPECT_EQ(s.execution_count, 40u);
  EXPECT_EQ(s.inference_count, rows);
}

TEST(RuntimeServedModel, NonContiguousInput) {
  const io::OnnxModel reference = io::OnnxModel::load(mlp_path());
  const auto served = ServedModel::load(mlp_config(8, true), mlp_path(), 1);
  const Tensor x = random_tensor({5, 16}, DType::Float32);
  const Tensor view = transposed_copy(x);
  ASSERT_FALSE(view.is_contiguous());
  const InferResponse r = served->infer(request_of(view));
  EXPECT_LE(relative_error(r.outputs[0].value, reference_output(reference, x)), kTolerance);
  // A row slice with an offset, too.
  const Tensor rows = random_tensor({6, 16}, DType::Float32).slice(0, 2, 6, 2);
  const InferResponse sliced = served->infer(request_of(rows));
  EXPECT_LE(
      relative_error(sliced.outputs[0].value, reference_output(reference, ops::contiguous(rows))),
      kTolerance);
}

TEST(RuntimeServedModel, BadRequestsNameTheField) {
  const auto served = ServedModel::load(mlp_config(8, true), mlp_path(), 1);
  const Tensor x = random_tensor({2, 16}, DType::Float32);
  struct Case {
    const char* what;
    InferRequest request;
    std::vector<std::string> parts;
  };
  std::vector<Case> cases;
  InferRequest r = request_of(x);
  r.inputs[0].name = "z";
  cases.push_back({"unknown input", r, {"model 'mlp'", "unknown input 'z'", "x"}});
  cases.push_back({"missing input", InferRequest{}, {"missing input 'x'"}});
  r = request_of(x);
  r.inputs.push_back({"x", x});
  cases.push_back({"duplicate input", r, {"input 'x'", "twice"}});
  cases.push_back(
      {"dtype", request_of(random_tensor({2, 16}, DType::Float64)), {"input 'x'", "FP64", "FP32"}});
  cases.push_back(
      {"rank", request_of(random_tensor({16}, DType::Float32)), {"input 'x'", "[16]", "[-1, 16]"}});
  cases.push_back({"size",
                   request_of(random_tensor({2, 17}, DType::Float32)),
                   {"input 'x'", "[2, 17]", "[-1, 16]"}});
  cases.push_back({"batch",
                   request_of(random_tensor({9, 16}, DType::Float32)),
                   {"input 'x'", "9 rows", "max_batch_size 8"}});
  cases.push_back(
      {"no rows", request_of(Tensor::empty({0, 16}, DType::Float32)), {"input 'x'", "0 rows"}});
  r = request_of(x);
  r.outputs = {"logits"};
  cases.push_back({"unknown output", r, {"unknown output 'logits'", "output"}});
  for (Case& c : cases) {
    const Refusal e = refusal([&] { served->submit(c.request); });
    EXPECT_EQ(e.status, Status::BadRequest) << c.what << ": " << e.message;
    for (const std::string& part : c.parts)
      EXPECT_TRUE(contains(e.message, part)) << c.what << ": " << e.message;
  }
  const runtime::ModelStats s = served->stats();
  EXPECT_EQ(s.request_failure, cases.size());
  EXPECT_EQ(s.request_success, 0u);
  EXPECT_EQ(s.execution_count, 0u);
}

// With a long delay, the worker holds the first request while it waits for more: the second
// waits in the queue, the third finds it full. stop() runs what is held and queued at once.
TEST(RuntimeServedModel, FullQueueIsUnavailableAndStopAnswersTheQueue) {
  const io::OnnxModel reference = io::OnnxModel::load(mlp_path());
  ModelConfig config = mlp_config(8, true);
  config.dynamic_batching->max_queue_delay_microseconds = 60'000'000;
  config.dynamic_batching->default_queue_policy.max_queue_size = 1;
  const auto served = ServedModel::load(config, mlp_path(), 1);
  const Tensor a = random_tensor({1, 16}, DType::Float32);
  const Tensor b = random_tensor({2, 16}, DType::Float32);
  std::future<InferResponse> first = served->submit(request_of(a));
  wait_until([&] { return served->stats().pending_request_count == 0; });
  std::future<InferResponse> second = served->submit(request_of(b));
  EXPECT_EQ(served->stats().pending_request_count, 1);
  const Refusal full = refusal([&] { served->submit(request_of(a)); });
  EXPECT_EQ(full.status, Status::Unavailable);
  EXPECT_TRUE(contains(full.message, "model 'mlp' queue is full (1 requests)")) << full.message;
  EXPECT_EQ(first.wait_for(std::chrono::milliseconds(0)), std::future_status::timeout);

  served->stop();
  ASSERT_EQ(first.wait_for(std::chrono::seconds(0)), std::future_status::ready);
  ASSERT_EQ(second.wait_for(std::chrono::seconds(0)), std::future_status::ready);
  EXPECT_LE(relative_error(first.get().outputs[0].value, reference_output(reference, a)),
            kTolerance);
  EXPECT_LE(relative_error(second.get().outputs[0].value, reference_output(reference, b)),
            kTolerance);
  const runtime::ModelStats s = served->stats();
  EXPECT_EQ(s.execution_count, 1u);  // the two ran as one batch
  EXPECT_EQ(s.inference_count, 3u);
  EXPECT_EQ(s.request_failure, 1u);

  const Refusal stopped = refusal([&] { served->submit(request_of(a)); });
  EXPECT_EQ(stopped.status, Status::Unavailable);
  EXPECT_TRUE(contains(stopped.message, "stopping")) << stopped.message;
}

TEST(RuntimeServedModel, BatchRunsAtOnceAtAPreferredSizeOrAFullBatch) {
  const io::OnnxModel reference = io::OnnxModel::load(mlp_path());
  for (const bool preferred : {true, false}) {
    ModelConfig config = mlp_config(preferred ? 8 : 3, true);
    config.dynamic_batching->max_queue_delay_microseconds = 60'000'000;
    if (preferred) config.dynamic_batching->preferred_batch_size = {3, 6};
    const auto served = ServedModel::load(config, mlp_path(), 1);
    const Tensor a = random_tensor({1, 16}, DType::Float32);
    const Tensor b = random_tensor({2, 16}, DType::Float32);
    std::future<InferResponse> first = served->submit(request_of(a));
    wait_until([&] { return served->stats().pending_request_count == 0; });
    std::future<InferResponse> second = served->submit(request_of(b));
    // 1 + 2 rows: a preferred size (3), or max_batch_size 3: no waiting for the delay.
    ASSERT_EQ(second.wait_for(std::chrono::seconds(10)), std::future_status::ready);
    EXPECT_LE(relative_error(first.get().outputs[0].value, reference_output(reference, a)),
              kTolerance);
    EXPECT_LE(relative_error(second.get().outputs[0].value, reference_output(reference, b)),
              kTolerance);
    EXPECT_EQ(served->stats().execution_count, 1u) << "preferred " << preferred;
  }
}

TEST(RuntimeServedModel, TimedOutRequestIsAnsweredAndNeverRuns) {
  ModelConfig config = mlp_config(8, true);
  config.dynamic_batching->max_queue_delay_microseconds = 60'000'000;
  config.dynamic_batching->default_queue_policy.default_timeout_microseconds = 1000;
  const auto served = ServedModel::load(config, mlp_path(), 1);
  const Tensor x = random_tensor({2, 16}, DType::Float32);
  std::future<InferResponse> answer = served->submit(request_of(x));  // the policy's 1000 us
  ASSERT_EQ(answer.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  const Refusal e = refusal([&] { answer.get(); });
  EXPECT_EQ(e.status, Status::Unavailable);
  EXPECT_TRUE(contains(e.message, "timed out after 1000 us in the queue")) << e.message;
  InferRequest own = request_of(x);
  own.timeout_microseconds = 2500;  // the policy allows a request its own
  const Refusal e2 = refusal([&] { served->infer(own); });
  EXPECT_TRUE(contains(e2.message, "timed out after 2500 us")) << e2.message;
  const runtime::ModelStats s = served->stats();
  EXPECT_EQ(s.request_failure, 2u);
  EXPECT_EQ(s.inference_count, 0u);
  EXPECT_EQ(s.execution_count, 0u);
}

TEST(RuntimeServedModel, UnbatchedModelRunsEachRequestAsGiven) {
  const io::OnnxModel reference = io::OnnxModel::load(mlp_path("dynamo"));
  const auto served = ServedModel::load(mlp_config(0, false), mlp_path("dynamo"), 1);
  for (int64_t rows : {1, 7, 20}) {
    const Tensor x = random_tensor({rows, 16}, DType::Float32);
    const InferResponse r = served->infer(request_of(x));
    EXPECT_LE(relative_error(r.outputs[0].value, reference_output(reference, x)), kTolerance);
  }
  EXPECT_EQ(served->stats().inference_count, 3u);  // one per request, as Triton counts
}

// A model that runs only at 2 rows: Reshape of x [batch, 4] to the constant [2, 4].
std::string two_row_model(bool symbolic_batch) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  onnx::OperatorSetIdProto* opset = m.add_opset_import();
  opset->set_domain("");
  opset->set_version(17);
  onnx::GraphProto* g = m.mutable_graph();
  g->set_name("two_rows");
  auto declare = [&](onnx::ValueInfoProto* v, const char* name) {
    v->set_name(name);
    onnx::TypeProto::Tensor* t = v->mutable_type()->mutable_tensor_type();
    t->set_elem_type(onnx::TensorProto::FLOAT);
    if (symbolic_batch)
      t->mutable_shape()->add_dim()->set_dim_param("batch");
    else
      t->mutable_shape()->add_dim()->set_dim_value(2);
    t->mutable_shape()->add_dim()->set_dim_value(4);
  };
  declare(g->add_input(), "x");
  declare(g->add_output(), "y");
  onnx::TensorProto* shape = g->add_initializer();
  shape->set_name("shape");
  shape->set_data_type(onnx::TensorProto::INT64);
  shape->add_dims(2);
  shape->add_int64_data(2);
  shape->add_int64_data(4);
  onnx::NodeProto* node = g->add_node();
  node->set_name("to_two_rows");
  node->set_op_type("Reshape");
  node->add_input("x");
  node->add_input("shape");
  node->add_output("y");
  return m.SerializeAsString();
}

class RuntimeServedModelFiles : public RuntimeFolderTest {};

TEST_F(RuntimeServedModelFiles, AFailedRunIsInternalForEveryRequestOfItsBatch) {
  write("two_rows.onnx", two_row_model(true));
  ModelConfig config = mlp_config(4, false);
  config.name = "two";
  const auto served = ServedModel::load(config, path("two_rows.onnx"), 1);
  const Tensor ok = random_tensor({2, 4}, DType::Float32);
  InferRequest good;
  good.inputs.push_back({"x", ok});
  EXPECT_EQ(to_doubles(served->infer(good).outputs[0].value), to_doubles(ok));
  InferRequest bad;
  bad.inputs.push_back({"x", random_tensor({3, 4}, DType::Float32)});
  const Refusal e = refusal([&] { served->infer(bad); });
  EXPECT_EQ(e.status, Status::Internal);
  EXPECT_TRUE(contains(e.message, "model 'two' version 1 failed to run")) << e.message;
  EXPECT_TRUE(contains(e.message, "to_two_rows")) << e.message;
  EXPECT_EQ(served->stats().request_failure, 1u);
  EXPECT_EQ(served->stats().request_success, 1u);
}

TEST_F(RuntimeServedModelFiles, AConfigDisagreeingWithTheFileFailsTheLoad) {
  struct Case {
    const char* what;
    std::function<void(ModelConfig&)> change;
    std::vector<std::string> parts;
  };
  const std::vector<Case> cases = {
      {"dtype",
       [](ModelConfig& c) {
         c.inputs.push_back({"x", DType::Float64, {16}});
       },
       {"input 'x'", "TYPE_FP64", "float32"}},
      {"dims",
       [](ModelConfig& c) {
         c.inputs.push_back({"x", DType::Float32, {17}});
       },
       {"input 'x'", "[17]", "[16]"}},
      {"name",
       [](ModelConfig& c) {
         c.outputs.push_back({"logits", DType::Float32, {4}});
       },
       {"output 'logits'", "output"}},
  };
  for (const Case& c : cases) {
    ModelConfig config = mlp_config(8, false);
    c.change(config);
    const std::string e = error_message([&] { ServedModel::load(config, mlp_path(), 2); });
    EXPECT_TRUE(contains(e, "model 'mlp' version 2")) << c.what << ": " << e;
    for (const std::string& part : c.parts) EXPECT_TRUE(contains(e, part)) << c.what << ": " << e;
  }
  // A batched model needs a symbolic first dim.
  write("fixed.onnx", two_row_model(false));
  const std::string fixed =
      error_message([&] { ServedModel::load(mlp_config(4, false), path("fixed.onnx"), 1); });
  EXPECT_TRUE(contains(fixed, "max_batch_size is 4")) << fixed;
  EXPECT_TRUE(contains(fixed, "[2, 4]")) << fixed;
  EXPECT_THROW(ServedModel::load(mlp_config(4, false), path("missing.onnx"), 1), FileError);
}

// On the GPU: instances on CUDA, CUDA graphs captured at load for 1, 4 and 8 rows, batches padded
// up to those sizes; every response equals the CPU model's run of its input alone.
TEST(RuntimeServedModel, CudaResponsesMatchTheCpuModel) {
  RCUDA_REQUIRE_CUDA();
  const io::OnnxModel reference = io::OnnxModel::load(mlp_path());
  ModelConfig config = mlp_config(8, true, kCuda);
  config.cuda_graphs = {1, 4, 8};
  const auto served = ServedModel::load(config, mlp_path(), 1);
  EXPECT_EQ(served->devices(), (std::vector<Device>{kCuda}));
  const std::vector<std::string> captured = served->captured();
  EXPECT_EQ(captured.size(), 3u);
  for (const std::string& c : captured) EXPECT_FALSE(contains(c, "eagerly")) << c;
  for (int64_t rows : {1, 3, 6, 8}) {
    const Tensor x = random_tensor({rows, 16}, DType::Float32);
    const InferResponse r = served->infer(request_of(x));
    EXPECT_TRUE(r.outputs[0].value.device().is_cpu());
    ASSERT_EQ(r.outputs[0].value.shape(), (Shape{rows, 4}));
    EXPECT_LE(relative_error(r.outputs[0].value, reference_output(reference, x)),
              backend_tolerance(DType::Float32))
        << "rows " << rows;
  }
  EXPECT_EQ(served->captured().size(), 3u);  // padded batches replayed the captured sizes
  // Concurrent requests of 1 to 3 rows: batches padded to 2 or 8 rows.
  ModelConfig concurrent = mlp_config(8, true, kCuda);
  concurrent.cuda_graphs = {2, 8};
  const auto batched = ServedModel::load(concurrent, mlp_path(), 1);
  std::vector<Tensor> inputs, outputs(32);
  std::vector<std::string> problems(32);
  uint64_t rows = 0;
  for (int i = 0; i < 32; ++i) {
    inputs.push_back(random_tensor({1 + i % 3, 16}, DType::Float32));
    rows += static_cast<uint64_t>(1 + i % 3);
  }
  std::vector<std::thread> clients;
  for (int i = 0; i < 32; ++i)
    clients.emplace_back([&, i] {
      try {
        outputs[i] = batched->infer(request_of(inputs[i])).outputs[0].value;
      } catch (const std::exception& e) {
        problems[i] = e.what();
      }
    });
  for (std::thread& c : clients) c.join();
  for (int i = 0; i < 32; ++i) {
    ASSERT_EQ(problems[i], "") << "request " << i;
    EXPECT_LE(relative_error(outputs[i], reference_output(reference, inputs[i])),
              backend_tolerance(DType::Float32))
        << "request " << i;
  }
  EXPECT_EQ(batched->stats().inference_count, rows);
}

}  // namespace
}  // namespace rcuda::test
