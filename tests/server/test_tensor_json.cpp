// The tensor codecs alone (no server): KServe JSON and binary tensors to CPU tensors and back,
// for every datatype, against values written by hand.
#include <gtest/gtest.h>

#include <cstring>
#include <nlohmann/json.hpp>

#include "rcuda/runtime/model.h"
#include "tensor_json.h"

namespace rcuda::server {
namespace {

using nlohmann::json;

TensorHeader header(const char* datatype, Shape shape) {
  return parse_tensor_header(json{{"name", "t"}, {"datatype", datatype}, {"shape", shape}}, 0);
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const runtime::InferError& e) {
    EXPECT_EQ(e.status, runtime::InferError::Status::BadRequest);
    return e.what();
  }
  return "(no error)";
}

TEST(TensorJson, EveryDatatypeRoundTrips) {
  const json ints = {0, 1, -2, 3, 4, -5};
  const json floats = {0.5, -1.25, 2.0, 3.5, -4.75, 1024.0};
  const json bools = {true, false, true, true, false, false};
  struct Case {
    const char* datatype;
    DType dtype;
    json data;
  };
  const Case cases[] = {
      {"BOOL", DType::Bool, bools},     {"UINT8", DType::UInt8, {0, 1, 2, 3, 4, 255}},
      {"INT8", DType::Int8, ints},      {"INT16", DType::Int16, ints},
      {"INT32", DType::Int32, ints},    {"INT64", DType::Int64, ints},
      {"FP16", DType::Float16, floats}, {"BF16", DType::BFloat16, floats},
      {"FP32", DType::Float32, floats}, {"FP64", DType::Float64, floats}};
  for (const Case& c : cases) {
    const TensorHeader h = header(c.datatype, {2, 3});
    EXPECT_EQ(h.dtype, c.dtype) << c.datatype;
    const Tensor t = tensor_from_json_data(h, c.data);
    EXPECT_EQ(t.shape(), (Shape{2, 3}));
    const json back = tensor_to_json({"t", t});
    EXPECT_EQ(back["datatype"], c.datatype);
    EXPECT_EQ(back["shape"], json::array({2, 3}));
    EXPECT_EQ(back["data"], c.data) << c.datatype;  // these values are exact in every dtype

    // Binary: the same bytes back, and the same tensor from them.
    const std::string bytes = tensor_bytes(t);
    EXPECT_EQ(bytes.size(), 6 * element_size(c.dtype));
    const Tensor again = tensor_from_bytes(h, bytes.data(), bytes.size());
    EXPECT_EQ(tensor_to_json({"t", again})["data"], c.data) << c.datatype;
  }
}

TEST(TensorJson, NestedDataIsRowMajor) {
  const Tensor t = tensor_from_json_data(header("INT32", {2, 2}), json::parse("[[1, 2], [3, 4]]"));
  EXPECT_EQ(tensor_to_json({"t", t})["data"], json::parse("[1, 2, 3, 4]"));
}

TEST(TensorJson, ErrorsNameTheField) {
  EXPECT_NE(error_of([] { header("FP8", {1}); }).find("inputs[0] ('t').datatype"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              parse_tensor_header(json{{"datatype", "FP32"}, {"shape", {1}}}, 2);
            }).find("inputs[2].name"),
            std::string::npos);
  EXPECT_NE(error_of([] { header("FP32", {1, -3}); }).find("shape[1]"), std::string::npos);
  EXPECT_NE(error_of([] {
              header("FP32", {1 << 30, 1 << 30, 1 << 30});
            }).find("too large"),
            std::string::npos);
  const std::string count = error_of([] {
    tensor_from_json_data(header("FP32", {2, 2}), json{1, 2, 3});
  });
  EXPECT_NE(count.find("3 elements but shape [2, 2] needs 4"), std::string::npos) << count;
  EXPECT_NE(error_of([] {
              tensor_from_json_data(header("INT8", {1}), json{300});
            }).find("out of range for INT8"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              tensor_from_json_data(header("INT32", {1}), json{1.5});
            }).find("not an integer"),
            std::string::npos);
  EXPECT_NE(
      error_of([] { tensor_from_json_data(header("BOOL", {1}), json{2}); }).find("not a boolean"),
      std::string::npos);
  EXPECT_NE(error_of([] { tensor_from_json_data(header("FP32", {1}), json{"1"}); }).find("data[0]"),
            std::string::npos);
  std::string deep = "1";
  for (int i = 0; i < 100; ++i) deep = "[" + deep + "]";
  EXPECT_NE(error_of([&] {
              tensor_from_json_data(header("FP32", {1}), json::parse(deep));
            }).find("nested deeper"),
            std::string::npos);
  const std::string size = error_of([] {
    const char bytes[8] = {};
    tensor_from_bytes(header("FP32", {3}), bytes, 8);
  });
  EXPECT_NE(size.find("binary_data_size = 8 but shape and datatype need 12"), std::string::npos)
      << size;
}

TEST(TensorJson, BinaryBodySplit) {
  const SplitBody whole = split_binary_body("{\"a\":1}", "");
  EXPECT_EQ(whole.json_size, 7u);
  EXPECT_FALSE(whole.has_binary_part);
  const SplitBody split = split_binary_body("{\"a\":1}abcd", "7");
  EXPECT_EQ(split.json_size, 7u);
  EXPECT_EQ(split.binary_size, 4u);
  EXPECT_TRUE(split.has_binary_part);
  for (const char* bad : {"12", "-1", "x", "99999999999999999999999"})
    EXPECT_NE(error_of([&] {
                split_binary_body("{\"a\":1}abcd", bad);
              }).find("Inference-Header-Content-Length"),
              std::string::npos)
        << bad;
}

}  // namespace
}  // namespace rcuda::server
