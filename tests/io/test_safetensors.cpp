// save_safetensors / load_safetensors: round trips of every dtype, empty and 0-d tensors, views,
// the bytes on disk against the format read by hand, and the atomic replacement of files.
#include <algorithm>
#include <nlohmann/json.hpp>

#include "io/io_test_util.h"
#include "rcuda/io/safetensors.h"

namespace rcuda::test {
namespace {

using io::load_safetensors;
using io::save_safetensors;

constexpr DType kAllDTypes[] = {DType::Bool,    DType::UInt8,        DType::Int8,
                                DType::Int16,   DType::Int32,        DType::Int64,
                                DType::Float16, DType::BFloat16,     DType::Float32,
                                DType::Float64, DType::Float8E4M3FN, DType::Float8E5M2};

// The bytes of t's elements in row-major order, read through its strides by hand.
std::string element_bytes(const Tensor& t) {
  std::string out;
  const int64_t es = static_cast<int64_t>(t.element_size());
  const char* base = static_cast<const char*>(t.storage()->data());
  std::vector<int64_t> index(static_cast<size_t>(t.dim()), 0);
  for (int64_t i = 0; i < t.numel(); ++i) {
    int64_t off = t.offset();
    for (int64_t d = 0; d < t.dim(); ++d) off += index[d] * t.strides()[d];
    out.append(base + off * es, static_cast<size_t>(es));
    for (int64_t d = t.dim() - 1; d >= 0; --d) {
      if (++index[d] < t.shape()[d]) break;
      index[d] = 0;
    }
  }
  return out;
}

void expect_same_tensor(const Tensor& actual, const Tensor& expected, const std::string& name) {
  SCOPED_TRACE(name);
  EXPECT_EQ(actual.dtype(), expected.dtype());
  EXPECT_EQ(actual.shape(), expected.shape());
  EXPECT_TRUE(actual.device().is_cpu());
  EXPECT_EQ(element_bytes(actual), element_bytes(expected));  // bit for bit
}

TEST_F(SafetensorsTest, EveryDTypeRoundTripsBitForBit) {
  io::NamedTensors tensors;
  for (DType dtype : kAllDTypes)
    tensors.emplace_back(std::string("t_") + dtype_name(dtype),
                         random_tensor({3, 1 + static_cast<int64_t>(tensors.size())}, dtype));
  const io::Metadata metadata = {{"format", "pt"}, {"note", "caf\xc3\xa9 \"quoted\""}};
  save_safetensors(file("all.safetensors"), tensors, metadata);

  const io::SafetensorsContents back = load_safetensors(file("all.safetensors"));
  ASSERT_EQ(back.tensors.size(), tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) {
    EXPECT_EQ(back.tensors[i].first, tensors[i].first);  // in the order given
    expect_same_tensor(back.tensors[i].second, tensors[i].second, tensors[i].first);
  }
  EXPECT_EQ(back.metadata, metadata);
}

TEST_F(SafetensorsTest, EmptyAndZeroDimTensorsRoundTrip) {
  const io::NamedTensors tensors = {
      {"rows0", random_tensor({0, 3}, DType::Float32)},
      {"scalar", random_tensor({}, DType::Float64)},
      {"middle0", random_tensor({2, 0, 4}, DType::Int64)},
      {"one", random_tensor({1}, DType::Bool)},
  };
  save_safetensors(file("empty.safetensors"), tensors);
  const io::SafetensorsContents back = load_safetensors(file("empty.safetensors"));
  ASSERT_EQ(back.tensors.size(), tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) {
    EXPECT_EQ(back.tensors[i].first, tensors[i].first);
    expect_same_tensor(back.tensors[i].second, tensors[i].second, tensors[i].first);
  }
  EXPECT_TRUE(back.metadata.empty());

  save_safetensors(file("none.safetensors"), {});
  EXPECT_TRUE(load_safetensors(file("none.safetensors")).tensors.empty());
}

TEST_F(SafetensorsTest, ViewsAreSavedAsTheirValues) {
  const Tensor base = random_tensor({4, 6}, DType::Float32);
  const io::NamedTensors views = {
      {"transposed", transposed_copy(random_tensor({5, 3}, DType::Float64))},
      {"stepped", base.slice(1, 1, 6, 2)},
      {"row", base.select(0, 2)},
      {"broadcast", random_tensor({1, 3}, DType::Int32).expand({4, 3})},
      {"offset", base.narrow(0, 1, 2)},
  };
  for (const auto& [name, view] : views) ASSERT_FALSE(view.is_contiguous() && view.offset() == 0);
  save_safetensors(file("views.safetensors"), views);
  const io::SafetensorsContents back = load_safetensors(file("views.safetensors"));
  ASSERT_EQ(back.tensors.size(), views.size());
  for (size_t i = 0; i < views.size(); ++i) {
    expect_same_tensor(back.tensors[i].second, views[i].second, views[i].first);
    EXPECT_TRUE(back.tensors[i].second.is_contiguous());
  }
}

// The file against the format's description, parsed here without rcuda's reader.
TEST_F(SafetensorsTest, FileIsTheFormatByteForByte) {
  const Tensor a = random_tensor({2, 3}, DType::Float16);
  const Tensor b = transposed_copy(random_tensor({3, 2}, DType::Int64));
  save_safetensors(file("layout.safetensors"), {{"a", a}, {"b", b}}, {{"format", "pt"}});
  const std::string bytes = read_bytes(file("layout.safetensors"));
  ASSERT_GE(bytes.size(), 8u);
  uint64_t header_size = 0;
  for (int i = 7; i >= 0; --i) header_size = header_size << 8 | static_cast<uint8_t>(bytes[i]);
  EXPECT_EQ((8 + header_size) % 8, 0u) << "data starts 8-byte aligned";
  const std::string a_bytes = element_bytes(a), b_bytes = element_bytes(b);
  ASSERT_EQ(bytes.size(), 8 + header_size + a_bytes.size() + b_bytes.size());

  const nlohmann::json header = nlohmann::json::parse(bytes.substr(8, header_size));
  EXPECT_EQ(header["__metadata__"], nlohmann::json({{"format", "pt"}}));
  EXPECT_EQ(header["a"]["dtype"], "F16");
  EXPECT_EQ(header["a"]["shape"], nlohmann::json({2, 3}));
  EXPECT_EQ(header["a"]["data_offsets"], nlohmann::json({0, 12}));
  EXPECT_EQ(header["b"]["dtype"], "I64");
  EXPECT_EQ(header["b"]["shape"], nlohmann::json({3, 2}));
  EXPECT_EQ(header["b"]["data_offsets"], nlohmann::json({12, 60}));
  EXPECT_EQ(header.size(), 3u);
  const std::string data = bytes.substr(8 + header_size);
  EXPECT_EQ(data.substr(0, 12), a_bytes);
  EXPECT_EQ(data.substr(12), b_bytes);  // row-major, little-endian (this host's order)
}

TEST_F(SafetensorsTest, DTypeCodesAreTheFormats) {
  const std::pair<DType, const char*> codes[] = {{DType::Float64, "F64"},
                                                 {DType::Float32, "F32"},
                                                 {DType::Float16, "F16"},
                                                 {DType::BFloat16, "BF16"},
                                                 {DType::Int64, "I64"},
                                                 {DType::Int32, "I32"},
                                                 {DType::Int16, "I16"},
                                                 {DType::Int8, "I8"},
                                                 {DType::UInt8, "U8"},
                                                 {DType::Bool, "BOOL"},
                                                 {DType::Float8E4M3FN, "F8_E4M3"},
                                                 {DType::Float8E5M2, "F8_E5M2"}};
  for (const auto& [dtype, code] : codes) EXPECT_STREQ(io::safetensors_dtype_code(dtype), code);
}

// Note [Safetensors dtypes]: I8 and I16 are read as int8 and int16; the unsigned codes without
// an rcuda dtype are widened, every value kept.
TEST_F(SafetensorsTest, NarrowIntegerCodes) {
  std::string data;
  const int8_t i8[] = {-128, 127, -1};
  const int16_t i16[] = {-32768, 32767, -2};
  const uint16_t u16[] = {0, 65535, 40000};
  const uint32_t u32[] = {0, 4294967295u, 3000000000u};
  data.append(reinterpret_cast<const char*>(i8), sizeof(i8));
  data.append(reinterpret_cast<const char*>(i16), sizeof(i16));
  data.append(reinterpret_cast<const char*>(u16), sizeof(u16));
  data.append(reinterpret_cast<const char*>(u32), sizeof(u32));
  const std::string header = R"({"i8":{"dtype":"I8","shape":[3],"data_offsets":[0,3]},)"
                             R"("i16":{"dtype":"I16","shape":[3],"data_offsets":[3,9]},)"
                             R"("u16":{"dtype":"U16","shape":[3],"data_offsets":[9,15]},)"
                             R"("u32":{"dtype":"U32","shape":[3],"data_offsets":[15,27]}})";
  write_bytes(file("narrow.safetensors"), raw_file(header, data));
  const io::SafetensorsContents back = load_safetensors(file("narrow.safetensors"));
  ASSERT_EQ(back.tensors.size(), 4u);
  const std::vector<std::vector<double>> expected = {
      {-128, 127, -1}, {-32768, 32767, -2}, {0, 65535, 40000}, {0, 4294967295.0, 3000000000.0}};
  const DType dtypes[] = {DType::Int8, DType::Int16, DType::Int32, DType::Int64};
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(back.tensors[i].second.dtype(), dtypes[i]) << back.tensors[i].first;
    EXPECT_EQ(to_doubles(back.tensors[i].second), expected[i]) << back.tensors[i].first;
  }
}

// int8 and int16 tensors are saved as I8 and I16, byte for byte, and come back unchanged.
TEST_F(SafetensorsTest, Int8AndInt16RoundTrip) {
  const Tensor i8 = tensor_of({-128, 127, -1, 0, 5, -77}, {2, 3}, DType::Int8);
  const Tensor i16 = tensor_of({-32768, 32767, -2, 0, 1000, -300}, {3, 2}, DType::Int16);
  const std::string path = file("int8_int16.safetensors");
  io::save_safetensors(path, {{"i8", i8}, {"i16", i16}, {"i16_t", i16.t()}});
  const std::string bytes = read_bytes(path);
  EXPECT_NE(bytes.find(R"("dtype":"I8")"), std::string::npos);
  EXPECT_NE(bytes.find(R"("dtype":"I16")"), std::string::npos);
  const io::SafetensorsContents back = load_safetensors(path);
  ASSERT_EQ(back.tensors.size(), 3u);
  for (const auto& [name, original] :
       std::vector<std::pair<std::string, Tensor>>{{"i8", i8}, {"i16", i16}, {"i16_t", i16.t()}}) {
    SCOPED_TRACE(name);
    const auto it = std::find_if(back.tensors.begin(), back.tensors.end(),
                                 [&](const auto& entry) { return entry.first == name; });
    ASSERT_NE(it, back.tensors.end());
    EXPECT_EQ(it->second.dtype(), original.dtype());
    EXPECT_EQ(it->second.shape(), original.shape());
    EXPECT_EQ(to_doubles(it->second), to_doubles(original));
  }
}

TEST_F(SafetensorsTest, TensorsComeInTheOrderOfTheirBytes) {
  // The header lists "late" first; its bytes come second.
  std::string data(8, '\0');
  data[0] = 1;
  data[4] = 2;
  const std::string header = R"({"late":{"dtype":"I32","shape":[1],"data_offsets":[4,8]},)"
                             R"("early":{"dtype":"I32","shape":[1],"data_offsets":[0,4]}})";
  write_bytes(file("order.safetensors"), raw_file(header, data));
  const io::SafetensorsContents back = load_safetensors(file("order.safetensors"));
  ASSERT_EQ(back.tensors.size(), 2u);
  EXPECT_EQ(back.tensors[0].first, "early");
  EXPECT_EQ(to_doubles(back.tensors[0].second), std::vector<double>{1});
  EXPECT_EQ(back.tensors[1].first, "late");
  EXPECT_EQ(to_doubles(back.tensors[1].second), std::vector<double>{2});
}

TEST_F(SafetensorsTest, SavingReplacesTheFileAndLeavesNothingElse) {
  const std::string path = file("model.safetensors");
  save_safetensors(path, {{"w", random_tensor({100}, DType::Float32)}});
  const Tensor second = random_tensor({2}, DType::Int64);
  save_safetensors(path, {{"v", second}});
  const io::SafetensorsContents back = load_safetensors(path);
  ASSERT_EQ(back.tensors.size(), 1u);
  EXPECT_EQ(back.tensors[0].first, "v");
  expect_same_tensor(back.tensors[0].second, second, "v");
  size_t entries = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir_)) {
    ++entries;
    EXPECT_EQ(entry.path().filename(), "model.safetensors") << "a temporary file was left";
  }
  EXPECT_EQ(entries, 1u);
}

TEST_F(SafetensorsTest, BadArgumentsAreRefusedBeforeTheFileIsTouched) {
  const std::string path = file("keep.safetensors");
  const Tensor kept = random_tensor({3}, DType::Float32);
  save_safetensors(path, {{"kept", kept}});
  const Tensor t = random_tensor({2}, DType::Float32);
  EXPECT_THROW(save_safetensors(path, {{"x", t}, {"x", t}}), ValueError);
  EXPECT_THROW(save_safetensors(path, {{"__metadata__", t}}), ValueError);
  EXPECT_THROW(save_safetensors(path, {{"undefined", Tensor()}}), ValueError);
  EXPECT_THROW(save_safetensors(path, {{"bad\xff", t}}), ValueError);  // not UTF-8
  expect_same_tensor(load_safetensors(path).tensors.at(0).second, kept, "kept");

  try {
    save_safetensors(file("no/such/folder/x.safetensors"), {{"x", t}});
    FAIL() << "expected FileError";
  } catch (const FileError& e) {
    EXPECT_NE(std::string(e.what()).find(file("no/such/folder/x.safetensors")), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace rcuda::test
