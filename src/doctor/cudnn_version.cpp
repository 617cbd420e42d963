// cuDNN's compatibility rule (rcuda/doctor.h, cudnn_compatibility): the same major at the same or
// a newer minor than the build's. Pure string work, so CPU-only builds test it too.
#include <cstdio>
#include <string>

#include "rcuda/doctor.h"

namespace rcuda::doctor {
namespace {

struct Version {
  int major = -1, minor = -1, patch = -1;
};

bool parse(const std::string& s, Version* v) {
  char tail = 0;
  return std::sscanf(s.c_str(), "%d.%d.%d%c", &v->major, &v->minor, &v->patch, &tail) == 3 &&
         v->major >= 0 && v->minor >= 0 && v->patch >= 0;
}

}  // namespace

CudnnCompatibility cudnn_compatibility(const std::string& built, const std::string& loaded) {
  CudnnCompatibility c;
  Version b, l;
  const std::string both = "built with cuDNN " + built + ", loaded " + loaded;
  if (!parse(built, &b) || !parse(loaded, &l)) {
    c.detail = both + ": cannot read the versions";
    c.fix = "reinstall cuDNN " + std::to_string(b.major > 0 ? b.major : 9);
    return c;
  }
  const std::string major = std::to_string(b.major);
  const std::string built_minor = major + "." + std::to_string(b.minor);
  if (l.major != b.major) {
    c.detail = both + ": a different major version, which rcuda cannot use";
    c.fix = "install cuDNN " + major + " (>= " + built_minor + ") or rebuild rcuda against cuDNN " +
            std::to_string(l.major);
    return c;
  }
  const bool older = l.minor < b.minor || (l.minor == b.minor && l.patch < b.patch);
  if (!older) {
    c.status = Status::Pass;
    c.detail = both;
    return c;
  }
  c.status = Status::Warn;
  c.detail = both + ": older than the build, which cuDNN does not promise to support (engines " +
             "added since may be missing, and some convolutions may find no plan)";
  c.fix = "install cuDNN >= " + built_minor + " (e.g. the cudnn" + major +
          " packages or pip's nvidia-cudnn) on the library path, or rebuild rcuda on this "
          "machine against cuDNN " +
          loaded;
  return c;
}

}  // namespace rcuda::doctor
