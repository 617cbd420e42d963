// Reading safetensors files. Nothing in a file is trusted until checked: every size, offset and
// code is validated against the file before any allocation it implies, and each failure says
// which tensor and which rule (the reference implementation's rules: the tensors' byte ranges
// tile the data exactly, in any order).
#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>

#include "io/safetensors_format.h"
#include "rcuda/io/safetensors.h"
#include "rcuda/ops/copy.h"

namespace rcuda::io {
namespace {

constexpr const char* kOp = "load_safetensors";
using json = nlohmann::ordered_json;

struct Entry {
  std::string name;
  const detail::FileDType* dtype = nullptr;
  Shape shape;
  uint64_t begin = 0, end = 0;
};

class InputFile {
 public:
  explicit InputFile(const std::string& path) : path_(path) {
    file_.reset(std::fopen(path.c_str(), "rb"));
    if (!file_) fail(std::string("cannot open the file (") + std::strerror(errno) + ")");
    struct stat st {};
    if (::fstat(::fileno(file_.get()), &st) != 0 || !S_ISREG(st.st_mode))
      fail("not a regular file");
    size_ = static_cast<uint64_t>(st.st_size);
  }
  uint64_t size() const { return size_; }

  // Reads exactly nbytes from the current position.
  void read(void* out, size_t nbytes, const std::string& what) {
    if (nbytes > 0 && std::fread(out, 1, nbytes, file_.get()) != nbytes)
      fail("could not read " + what + " (the file changed while being read?)");
  }

  [[noreturn]] void fail(const std::string& what) const { detail::file_error(kOp, path_, what); }

 private:
  struct Closer {
    void operator()(std::FILE* f) const { std::fclose(f); }
  };
  std::string path_;
  std::unique_ptr<std::FILE, Closer> file_;
  uint64_t size_ = 0;
};

uint64_t read_header_size(InputFile& file) {
  if (file.size() < 8)
    file.fail("the file has " + std::to_string(file.size()) +
              " bytes, fewer than the 8 of the header size (truncated or not safetensors)");
  uint8_t bytes[8];
  file.read(bytes, sizeof(bytes), "the header size");
  uint64_t size = 0;
  for (int b = 7; b >= 0; --b) size = size << 8 | bytes[b];
  if (size > detail::kMaxHeaderBytes)
    file.fail("the header size is " + std::to_string(size) + " bytes, over the format's limit of " +
              std::to_string(detail::kMaxHeaderBytes) + " (corrupt or not safetensors)");
  if (size > file.size() - 8)
    file.fail("the header size is " + std::to_string(size) + " bytes but only " +
              std::to_string(file.size() - 8) + " bytes follow the 8-byte size (truncated file?)");
  return size;
}

uint64_t unsigned_value(const InputFile& file, const json& v, const std::string& what) {
  if (!v.is_number_unsigned() && !(v.is_number_integer() && v.get<int64_t>() >= 0))
    file.fail(what + " must be a non-negative integer, got " + v.dump());
  return v.get<uint64_t>();
}

Entry parse_entry(const InputFile& file, const std::string& name, const json& info) {
  const std::string where = "tensor \"" + name + "\"";
  if (!info.is_object()) file.fail(where + ": expected an object, got " + info.dump());
  for (const char* key : {"dtype", "shape", "data_offsets"})
    if (!info.contains(key)) file.fail(where + ": no \"" + key + "\"");
  Entry e;
  e.name = name;
  const json& dtype = *info.find("dtype");  // (find, not [], binds no temporary key)
  if (!dtype.is_string()) file.fail(where + ": dtype must be a string, got " + dtype.dump());
  e.dtype = detail::find_file_dtype(dtype.get<std::string>());
  if (e.dtype == nullptr)
    file.fail(where + ": dtype " + dtype.dump() +
              " is not one rcuda reads (F64 F32 F16 BF16 F8_E4M3 F8_E5M2 I64 I32 I16 I8 U32 U16 "
              "U8 BOOL)");
  const json& shape = *info.find("shape");
  if (!shape.is_array()) file.fail(where + ": shape must be an array, got " + shape.dump());
  // The element count, checked against overflow before it sizes anything.
  uint64_t count = 1;
  bool overflow = false;
  for (const json& s : shape) {
    const uint64_t size = unsigned_value(file, s, where + ": each size in shape");
    if (size > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
      file.fail(where + ": size " + std::to_string(size) + " in shape is too large");
    e.shape.push_back(static_cast<int64_t>(size));
    if (size != 0 && count > std::numeric_limits<uint64_t>::max() / size) overflow = true;
    count *= size;
  }
  const json& offsets = *info.find("data_offsets");
  if (!offsets.is_array() || offsets.size() != 2)
    file.fail(where + ": data_offsets must be [begin, end], got " + offsets.dump());
  e.begin = unsigned_value(file, offsets[0], where + ": data_offsets[0]");
  e.end = unsigned_value(file, offsets[1], where + ": data_offsets[1]");
  if (e.end < e.begin)
    file.fail(where + ": data_offsets [" + std::to_string(e.begin) + ", " + std::to_string(e.end) +
              "] end before they begin");
  const uint64_t span = e.end - e.begin;
  if (!overflow && count != 0 && count > std::numeric_limits<uint64_t>::max() / e.dtype->file_bytes)
    overflow = true;
  if (overflow || count * e.dtype->file_bytes != span)
    file.fail(
        where + ": shape " + shape.dump() + " of " + e.dtype->code + " needs " +
        (overflow ? std::string("more than 2^64") : std::to_string(count * e.dtype->file_bytes)) +
        " bytes but data_offsets span " + std::to_string(span));
  return e;
}

// The ranges must tile [0, data_bytes) exactly: sorted by begin, each starts where the previous
// ended. Empty tensors may sit anywhere a range starts or ends.
void check_layout(const InputFile& file, std::vector<Entry>& entries, uint64_t data_bytes) {
  std::stable_sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  uint64_t covered = 0;
  const Entry* last = nullptr;
  for (const Entry& e : entries) {
    if (e.begin < covered)
      file.fail("tensor \"" + e.name + "\" (bytes " + std::to_string(e.begin) + " to " +
                std::to_string(e.end) + ") overlaps tensor \"" + last->name + "\" (bytes " +
                std::to_string(last->begin) + " to " + std::to_string(last->end) + ")");
    if (e.begin > covered)
      file.fail("bytes " + std::to_string(covered) + " to " + std::to_string(e.begin) +
                " of the data belong to no tensor (invalid data_offsets)");
    if (e.end > covered) {
      covered = e.end;
      last = &e;
    } else if (last == nullptr) {
      last = &e;
    }
  }
  if (covered < data_bytes)
    file.fail("the tensors end at byte " + std::to_string(covered) + " of the data but it has " +
              std::to_string(data_bytes) + " bytes (trailing bytes)");
  if (covered > data_bytes)
    file.fail("tensor \"" + last->name + "\" ends at byte " + std::to_string(covered) +
              " but the data has only " + std::to_string(data_bytes) + " bytes (truncated file?)");
}

template <typename From, typename To>
void widen(const uint8_t* in, To* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    From v;
    std::memcpy(&v, in + i * sizeof(From), sizeof(From));
    out[i] = static_cast<To>(v);
  }
}

Tensor read_tensor(InputFile& file, const Entry& e) {
  Tensor t = Tensor::empty(e.shape, e.dtype->dtype);
  const int64_t n = t.numel();
  const std::string what = "the bytes of tensor \"" + e.name + "\"";
  if (e.dtype->file_bytes == t.element_size()) {
    file.read(t.data_ptr(), e.end - e.begin, what);
  } else {
    std::vector<uint8_t> raw(e.end - e.begin);
    file.read(raw.data(), raw.size(), what);
    const std::string code = e.dtype->code;
    if (code == "U16") widen<uint16_t>(raw.data(), t.data<int32_t>(), n);
    if (code == "U32") widen<uint32_t>(raw.data(), t.data<int64_t>(), n);
  }
  if (t.dtype() == DType::Bool) {
    const uint8_t* bytes = static_cast<const uint8_t*>(t.data_ptr());
    for (int64_t i = 0; i < n; ++i)
      if (bytes[i] > 1)
        file.fail("tensor \"" + e.name + "\" is BOOL but its byte " + std::to_string(i) + " is " +
                  std::to_string(bytes[i]) + " (only 0 and 1 are booleans)");
  }
  return t;
}

}  // namespace

SafetensorsContents load_safetensors(const std::string& path, Device device) {
  InputFile file(path);
  const uint64_t header_size = read_header_size(file);
  std::string text(header_size, '\0');
  file.read(text.data(), text.size(), "the header");

  json header;
  try {
    header = json::parse(text);
  } catch (const json::parse_error& e) {
    file.fail(std::string("the header is not valid JSON (") + e.what() + ")");
  }
  if (!header.is_object()) file.fail("the header must be a JSON object, got " + header.dump());

  SafetensorsContents contents;
  std::vector<Entry> entries;
  for (auto it = header.begin(); it != header.end(); ++it) {
    if (it.key() == "__metadata__") {
      if (!it.value().is_object()) file.fail("__metadata__ must be an object of strings");
      for (auto m = it.value().begin(); m != it.value().end(); ++m) {
        if (!m.value().is_string())
          file.fail("__metadata__ value of \"" + m.key() + "\" must be a string, got " +
                    m.value().dump());
        contents.metadata[m.key()] = m.value().get<std::string>();
      }
      continue;
    }
    entries.push_back(parse_entry(file, it.key(), it.value()));
  }
  const uint64_t data_bytes = file.size() - 8 - header_size;
  check_layout(file, entries, data_bytes);

  // In file order, so that the reads run front to back.
  contents.tensors.reserve(entries.size());
  for (const Entry& e : entries) {
    Tensor t = read_tensor(file, e);
    if (device != t.device()) t = ops::to(t, device);
    contents.tensors.emplace_back(e.name, std::move(t));
  }
  return contents;
}

}  // namespace rcuda::io
