// The atomic write of an exported model (a temporary file in the same folder, fsync, rename).
#include "io/onnx/file.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

#include "rcuda/core/error.h"

namespace rcuda::io::onnx_export {
namespace {

[[noreturn]] void fail(const std::string& path, const char* what, int err) {
  throw FileError(std::string("onnx_export: ") + path + ": " + what + " (" + std::strerror(err) +
                  ")");
}

// Removes the temporary file unless it was renamed over the target.
struct TempPath {
  std::string path;
  int fd = -1;
  bool kept = false;
  ~TempPath() {
    if (fd >= 0) ::close(fd);
    if (!kept && !path.empty()) ::unlink(path.c_str());
  }
};

}  // namespace

void write_file_atomically(const std::string& path, const std::string& bytes) {
  static std::atomic<unsigned> counter{0};
  TempPath tmp;
  for (int attempt = 0; attempt < 100 && tmp.fd < 0; ++attempt) {
    tmp.path = path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++);
    // 0666 less the umask: the file gets the permissions any new file would.
    tmp.fd = ::open(tmp.path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (tmp.fd < 0 && errno != EEXIST) break;
  }
  if (tmp.fd < 0) {
    const int err = errno;
    tmp.path.clear();  // nothing was created
    fail(path, "cannot create a temporary file beside it", err);
  }
  const char* p = bytes.data();
  size_t left = bytes.size();
  while (left > 0) {
    const ssize_t n = ::write(tmp.fd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) fail(path, "write failed", errno);
    p += n;
    left -= static_cast<size_t>(n);
  }
  if (::fsync(tmp.fd) != 0) fail(path, "fsync failed", errno);
  const int fd = tmp.fd;
  tmp.fd = -1;
  if (::close(fd) != 0) fail(path, "close failed", errno);
  if (::rename(tmp.path.c_str(), path.c_str()) != 0)
    fail(path, "cannot rename the temporary file over it", errno);
  tmp.kept = true;
  const size_t slash = path.find_last_of('/');
  const std::string folder = slash == std::string::npos ? "." : path.substr(0, slash + 1);
  const int dir = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir >= 0) {
    ::fsync(dir);  // best effort: some file systems refuse fsync on folders
    ::close(dir);
  }
}

}  // namespace rcuda::io::onnx_export
