// Writing safetensors files, atomically (a temporary file in the same folder, fsync, rename).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>
#include <set>

#include "io/safetensors_format.h"
#include "rcuda/io/safetensors.h"
#include "rcuda/ops/copy.h"

namespace rcuda::io {
namespace detail {

const FileDType* find_file_dtype(const std::string& code) {
  static const FileDType table[] = {
      {"F64", DType::Float64, 8, true},
      {"F32", DType::Float32, 4, true},
      {"F16", DType::Float16, 2, true},
      {"BF16", DType::BFloat16, 2, true},
      {"I64", DType::Int64, 8, true},
      {"I32", DType::Int32, 4, true},
      {"I16", DType::Int16, 2, true},
      {"I8", DType::Int8, 1, true},
      {"U8", DType::UInt8, 1, false},
      {"BOOL", DType::Bool, 1, false},
      {"F8_E4M3", DType::Float8E4M3FN, 1, true},
      {"F8_E5M2", DType::Float8E5M2, 1, true},
      {"C64", DType::Complex64, 8, true},
      // Widened on reading (Note [Safetensors dtypes]).
      {"U16", DType::Int32, 2, false},
      {"U32", DType::Int64, 4, false},
  };
  for (const FileDType& entry : table)
    if (code == entry.code) return &entry;
  return nullptr;
}

}  // namespace detail

const char* safetensors_dtype_code(DType dtype) {
  switch (dtype) {
    case DType::Float64:
      return "F64";
    case DType::Float32:
      return "F32";
    case DType::Float16:
      return "F16";
    case DType::BFloat16:
      return "BF16";
    case DType::Int64:
      return "I64";
    case DType::Int32:
      return "I32";
    case DType::Int16:
      return "I16";
    case DType::Int8:
      return "I8";
    case DType::UInt8:
      return "U8";
    case DType::Bool:
      return "BOOL";
    case DType::Float8E4M3FN:
      return "F8_E4M3";
    case DType::Float8E5M2:
      return "F8_E5M2";
    case DType::Complex64:
      return "C64";
    case DType::Complex128:
      // The format has no code for it (safetensors 0.8 knows complex64 only).
      throw DTypeError(
          "save_safetensors: the safetensors format has no complex128 dtype; save "
          "view_as_real(x) (float64 pairs) or convert to complex64");
  }
  throw InternalError("safetensors_dtype_code: unknown dtype");
}

namespace {

constexpr const char* kOp = "save_safetensors";

// A file descriptor closed (and, unless kept, its file removed) when the scope ends.
class TempFile {
 public:
  explicit TempFile(const std::string& target) : target_(target) {
    static std::atomic<unsigned> counter{0};
    for (int attempt = 0; attempt < 100 && fd_ < 0; ++attempt) {
      path_ = target + ".tmp." + std::to_string(getpid()) + "." + std::to_string(counter++);
      // 0666 less the umask: the file gets the permissions any new file would.
      fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
      if (fd_ < 0 && errno != EEXIST) break;
    }
    if (fd_ < 0) fail("cannot create a temporary file beside it");
  }
  ~TempFile() {
    if (fd_ >= 0) ::close(fd_);
    if (!kept_) ::unlink(path_.c_str());
  }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;

  void write(const void* data, size_t nbytes) {
    const char* p = static_cast<const char*>(data);
    while (nbytes > 0) {
      const ssize_t n = ::write(fd_, p, nbytes);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) fail("write failed");
      p += n;
      nbytes -= static_cast<size_t>(n);
    }
  }

  // Flushes the bytes to disk, renames the file over the target and flushes the folder, so that
  // after a crash the target holds either the old file or the whole new one.
  void commit() {
    if (::fsync(fd_) != 0) fail("fsync failed");
    const int fd = fd_;
    fd_ = -1;
    if (::close(fd) != 0) fail("close failed");
    if (::rename(path_.c_str(), target_.c_str()) != 0) fail("cannot rename the temporary file");
    kept_ = true;
    const size_t slash = target_.find_last_of('/');
    const std::string folder = slash == std::string::npos ? "." : target_.substr(0, slash + 1);
    const int dir = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir >= 0) {
      ::fsync(dir);  // best effort: some file systems refuse fsync on folders
      ::close(dir);
    }
  }

 private:
  [[noreturn]] void fail(const char* what) const {
    detail::file_error(kOp, target_, std::string(what) + " (" + std::strerror(errno) + ")");
  }

  std::string target_, path_;
  int fd_ = -1;
  bool kept_ = false;
};

void check_names(const NamedTensors& tensors) {
  std::set<std::string> seen;
  for (const auto& [name, tensor] : tensors) {
    RCUDA_CHECK(name != "__metadata__", ValueError, kOp,
                ": \"__metadata__\" is reserved by the format and cannot name a tensor");
    RCUDA_CHECK(seen.insert(name).second, ValueError, kOp, ": two tensors are named \"", name,
                "\"");
    RCUDA_CHECK(tensor.defined(), ValueError, kOp, ": tensor \"", name, "\" is undefined");
  }
}

}  // namespace

void save_safetensors(const std::string& path, const NamedTensors& tensors,
                      const Metadata& metadata) {
  check_names(tensors);
  // Host, contiguous copies where needed (CUDA tensors, views with other strides).
  std::vector<Tensor> host;
  host.reserve(tensors.size());
  for (const auto& named : tensors) {
    Tensor t = named.second;
    if (!t.device().is_cpu()) t = ops::to(t, Device());
    host.push_back(ops::contiguous(t));
  }

  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) {
    nlohmann::ordered_json meta = nlohmann::ordered_json::object();
    for (const auto& [key, value] : metadata) meta[key] = value;
    header["__metadata__"] = meta;
  }
  uint64_t offset = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& t = host[i];
    const uint64_t nbytes = static_cast<uint64_t>(t.numel()) * t.element_size();
    header[tensors[i].first] = {{"dtype", safetensors_dtype_code(t.dtype())},
                                {"shape", t.shape()},
                                {"data_offsets", {offset, offset + nbytes}}};
    offset += nbytes;
  }
  std::string text;
  try {
    text = header.dump();
  } catch (const nlohmann::json::type_error& e) {
    throw ValueError(std::string(kOp) + ": a tensor name or metadata text is not valid UTF-8 (" +
                     e.what() + ")");
  }
  // The data starts 8-byte aligned: the format pads the header with spaces.
  text.append((8 - text.size() % 8) % 8, ' ');

  TempFile file(path);
  uint8_t size_bytes[8];
  const uint64_t header_size = text.size();
  for (int b = 0; b < 8; ++b) size_bytes[b] = static_cast<uint8_t>(header_size >> (8 * b));
  file.write(size_bytes, sizeof(size_bytes));
  file.write(text.data(), text.size());
  for (const Tensor& t : host) {
    const size_t nbytes = static_cast<size_t>(t.numel()) * t.element_size();
    if (nbytes > 0) file.write(t.data_ptr(), nbytes);
  }
  file.commit();
}

}  // namespace rcuda::io
