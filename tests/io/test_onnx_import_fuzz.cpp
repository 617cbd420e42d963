// Fuzzing ONNX import: valid models (tests/onnx_models) with random bytes changed, or random
// fields of the ModelProto changed (op types, attributes, input names, initializer and input
// shapes and types, nodes removed), for a fixed number of rounds. Each must load and run, or be
// refused with rcuda's typed errors: any other exception, a crash or a hang is a failure.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <fstream>
#include <random>
#include <sstream>

#include "io/io_test_util.h"
#include "rcuda/autograd/api.h"
#include "rcuda/io/onnx/import.h"
#include "support/reference.h"

namespace rcuda::test {
namespace {

const std::string kModels = std::string(RCUDA_TESTS_DIR) + "/onnx_models/";
const char* const kFixtures[] = {"mlp", "resnet18", "lstm_lm", "transformer"};

// Loads and runs `bytes` on `input` (and, when the model declares another input shape, on
// zeros of that shape): rcuda's errors are the clean outcome, as is a run.
void load_and_run(const std::string& bytes, const Tensor& input, const std::string& what) {
  try {
    const io::OnnxModel model = io::OnnxModel::load_bytes(bytes, "fuzzed.onnx", "");
    try {
      model.run({input});
    } catch (const Error&) {
    }
    if (model.inputs().size() == 1 && model.inputs()[0].has_shape) {
      Shape shape;
      for (int64_t d : model.inputs()[0].dims)
        shape.push_back(d < 0 ? 2 : std::min<int64_t>(d, 64));
      try {
        model.run({zeros(shape, TensorOptions(model.inputs()[0].dtype))});
      } catch (const Error&) {
      }
    }
  } catch (const Error&) {
  } catch (const std::exception& e) {
    ADD_FAILURE() << what << ": not one of rcuda's errors: " << e.what();
  }
}

std::string mutate_bytes(std::string bytes, std::mt19937_64& rng) {
  auto pick = [&](size_t n) { return static_cast<size_t>(rng() % std::max<size_t>(n, 1)); };
  switch (rng() % 3) {
    case 0:  // a few bytes set to random values
      for (int k = 1 + static_cast<int>(rng() % 8); k > 0; --k)
        bytes[pick(bytes.size())] = static_cast<char>(rng());
      break;
    case 1:  // truncated
      bytes.resize(pick(bytes.size()));
      break;
    default: {  // a chunk repeated
      const size_t at = pick(bytes.size()), len = 1 + pick(64);
      bytes.insert(at, bytes.substr(at, len));
    }
  }
  return bytes;
}

// One random change to a field of the model; the result is still a well-formed protobuf.
void mutate_fields(onnx::ModelProto& m, std::mt19937_64& rng,
                   const std::vector<std::string>& op_types) {
  onnx::GraphProto* g = m.mutable_graph();
  auto pick = [&](int n) {
    return static_cast<int>(rng() % static_cast<uint64_t>(std::max(n, 1)));
  };
  auto small = [&] { return static_cast<int64_t>(rng() % 45) - 4; };
  onnx::NodeProto* node = g->node_size() ? g->mutable_node(pick(g->node_size())) : nullptr;
  switch (rng() % 9) {
    case 0:
      if (node)
        node->set_op_type(op_types[static_cast<size_t>(pick(static_cast<int>(op_types.size())))]);
      break;
    case 1:  // an attribute's numbers
      if (node && node->attribute_size()) {
        onnx::AttributeProto* a = node->mutable_attribute(pick(node->attribute_size()));
        if (a->has_i()) a->set_i(small());
        for (int k = 0; k < a->ints_size(); ++k) a->set_ints(k, small());
        if (a->has_f()) a->set_f(static_cast<float>(small()) / 3);
      }
      break;
    case 2:  // an attribute's declared type
      if (node && node->attribute_size())
        node->mutable_attribute(pick(node->attribute_size()))
            ->set_type(static_cast<onnx::AttributeProto_AttributeType>(1 + pick(9)));
      break;
    case 3:  // an input renamed to another node's input, or dropped
      if (node && node->input_size()) {
        const onnx::NodeProto& other = g->node(pick(g->node_size()));
        if (other.input_size() && rng() % 2)
          node->set_input(pick(node->input_size()), other.input(pick(other.input_size())));
        else
          node->mutable_input()->RemoveLast();
      }
      break;
    case 4:  // an initializer's shape
      if (g->initializer_size()) {
        onnx::TensorProto* t = g->mutable_initializer(pick(g->initializer_size()));
        if (t->dims_size())
          t->set_dims(pick(t->dims_size()), small());
        else
          t->add_dims(small());
      }
      break;
    case 5:  // an initializer's element type
      if (g->initializer_size())
        g->mutable_initializer(pick(g->initializer_size()))->set_data_type(1 + pick(16));
      break;
    case 6:  // the input's declared shape or type
      if (g->input_size()) {
        onnx::TypeProto::Tensor* t = g->mutable_input(0)->mutable_type()->mutable_tensor_type();
        if (rng() % 2 && t->shape().dim_size())
          t->mutable_shape()->mutable_dim(pick(t->shape().dim_size()))->set_dim_value(small());
        else
          t->set_elem_type(1 + pick(16));
      }
      break;
    case 7:  // a node removed
      if (g->node_size()) g->mutable_node()->DeleteSubrange(pick(g->node_size()), 1);
      break;
    default:  // the opset
      if (m.opset_import_size()) m.mutable_opset_import(0)->set_version(small());
  }
}

TEST(OnnxImportFuzz, MutatedBytesGiveCleanErrors) {
  std::mt19937_64 rng(test_seed());
  for (const char* name : kFixtures) {
    const std::string file = std::string(name) + "_torchscript.onnx";
    const std::string bytes = read_bytes(kModels + file);
    const Tensor input = io::load_onnx_tensor(kModels + name + "_input_0.pb");
    for (int round = 0; round < 60; ++round)
      load_and_run(mutate_bytes(bytes, rng), input, file + " round " + std::to_string(round));
  }
}

TEST(OnnxImportFuzz, MutatedFieldsGiveCleanErrors) {
  std::mt19937_64 rng(test_seed());
  const std::vector<std::string> op_types = io::onnx_supported_ops();
  for (const char* name : kFixtures) {
    for (const char* exporter : {"torchscript", "dynamo"}) {
      const std::string file = std::string(name) + "_" + exporter + ".onnx";
      onnx::ModelProto original;
      ASSERT_TRUE(original.ParseFromString(read_bytes(kModels + file)));
      const Tensor input = io::load_onnx_tensor(kModels + name + "_input_0.pb");
      for (int round = 0; round < 40; ++round) {
        onnx::ModelProto m = original;
        for (int k = 1 + static_cast<int>(rng() % 3); k > 0; --k) mutate_fields(m, rng, op_types);
        load_and_run(m.SerializeAsString(), input, file + " round " + std::to_string(round));
      }
    }
  }
}

}  // namespace
}  // namespace rcuda::test
