// Files that are not valid safetensors: each is a FileError naming the path and what is wrong.
#include "io/io_test_util.h"
#include "rcuda/io/safetensors.h"

namespace rcuda::test {
namespace {

// Loads `bytes` from a file and expects a FileError whose message has the path and `reason`.
void expect_corrupt(const std::string& path, const std::string& bytes, const std::string& reason) {
  SCOPED_TRACE(reason);
  write_bytes(path, bytes);
  try {
    io::load_safetensors(path);
    ADD_FAILURE() << "loaded a corrupt file; expected an error mentioning \"" << reason << "\"";
  } catch (const FileError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find(path), std::string::npos) << message;
    EXPECT_NE(message.find(reason), std::string::npos) << message;
  }
}

const std::string kTwoTensors = R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                                R"("b":{"dtype":"U8","shape":[2,2],"data_offsets":[8,12]}})";

TEST_F(SafetensorsTest, TruncatedFilesAreErrors) {
  const std::string path = file("model.safetensors");
  io::save_safetensors(path, {{"a", random_tensor({4, 4}, DType::Float32)},
                              {"b", random_tensor({3}, DType::Int64)}});
  const std::string whole = read_bytes(path);
  uint64_t header_size = 0;
  for (int i = 7; i >= 0; --i) header_size = header_size << 8 | static_cast<uint8_t>(whole[i]);
  const std::string cut = path + ".cut";
  for (size_t n : {size_t{0}, size_t{5}})
    expect_corrupt(cut, whole.substr(0, n), "fewer than the 8 of the header size");
  for (size_t n : {size_t{8}, size_t{20}, static_cast<size_t>(8 + header_size - 1)})
    expect_corrupt(cut, whole.substr(0, n), "truncated file");
  for (size_t n : {static_cast<size_t>(8 + header_size), whole.size() - 1})
    expect_corrupt(cut, whole.substr(0, n), "truncated file");
}

TEST_F(SafetensorsTest, MissingFileNamesThePath) {
  try {
    io::load_safetensors(file("absent.safetensors"));
    FAIL() << "expected FileError";
  } catch (const FileError& e) {
    EXPECT_NE(std::string(e.what()).find(file("absent.safetensors")), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("cannot open"), std::string::npos) << e.what();
  }
  EXPECT_THROW(io::load_safetensors(dir_.string()), FileError);  // a folder
}

TEST_F(SafetensorsTest, BadHeadersAreErrors) {
  const std::string path = file("bad.safetensors");
  const std::string data(12, '\0');
  expect_corrupt(path, raw_file(R"({"a":{"dtype":"F32",)", data), "not valid JSON");
  expect_corrupt(path, raw_file("[1, 2]", ""), "must be a JSON object");
  expect_corrupt(path, size_prefix(uint64_t{1} << 40) + "{}", "over the format's limit");
  expect_corrupt(
      path,
      raw_file(R"({"a":{"dtype":"U64","shape":[1],"data_offsets":[0,8]}})", std::string(8, '\0')),
      "is not one rcuda reads");
  expect_corrupt(path, raw_file(R"({"a":{"dtype":"F32","shape":[2]}})", data),
                 "no \"data_offsets\"");
  expect_corrupt(
      path,
      raw_file(R"({"a":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", std::string(8, '\0')),
      "non-negative integer");
  expect_corrupt(path, raw_file(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0]}})", data),
                 "must be [begin, end]");
  expect_corrupt(
      path,
      raw_file(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", std::string(8, '\0')),
      "needs 12 bytes but data_offsets span 8");
  expect_corrupt(path,
                 raw_file(R"({"a":{"dtype":"F32","shape":[4294967296,4294967296,4294967296],)"
                          R"("data_offsets":[0,8]}})",
                          std::string(8, '\0')),
                 "more than 2^64");
  expect_corrupt(path, raw_file(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}})", data),
                 "end before they begin");
  expect_corrupt(path, raw_file(R"({"__metadata__":{"k":1}})", ""), "must be a string");
}

TEST_F(SafetensorsTest, OffsetsMustTileTheData) {
  const std::string path = file("offsets.safetensors");
  expect_corrupt(path,
                 raw_file(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                          R"("b":{"dtype":"U8","shape":[4],"data_offsets":[4,8]}})",
                          std::string(8, '\0')),
                 "overlaps tensor");
  expect_corrupt(path,
                 raw_file(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                          R"("b":{"dtype":"U8","shape":[4],"data_offsets":[8,12]}})",
                          std::string(12, '\0')),
                 "belong to no tensor");
  expect_corrupt(path, raw_file(kTwoTensors, std::string(16, '\0')), "trailing bytes");
  expect_corrupt(path, raw_file(kTwoTensors, std::string(10, '\0')), "truncated file");
  // An empty tensor may sit between two others, but not inside one.
  write_bytes(path, raw_file(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                             R"("e":{"dtype":"F32","shape":[0],"data_offsets":[4,4]},)"
                             R"("b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                             std::string(8, '\0')));
  EXPECT_EQ(io::load_safetensors(path).tensors.size(), 3u);
  expect_corrupt(path,
                 raw_file(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                          R"("e":{"dtype":"F32","shape":[0],"data_offsets":[4,4]}})",
                          std::string(8, '\0')),
                 "overlaps tensor");
}

TEST_F(SafetensorsTest, BoolBytesMustBeZeroOrOne) {
  const std::string header = R"({"m":{"dtype":"BOOL","shape":[3],"data_offsets":[0,3]}})";
  expect_corrupt(file("bool.safetensors"), raw_file(header, std::string("\x01\x00\x02", 3)),
                 "byte 2 is 2");
  write_bytes(file("bool.safetensors"), raw_file(header, std::string("\x01\x00\x01", 3)));
  EXPECT_EQ(to_doubles(io::load_safetensors(file("bool.safetensors")).tensors.at(0).second),
            (std::vector<double>{1, 0, 1}));
}

}  // namespace
}  // namespace rcuda::test
