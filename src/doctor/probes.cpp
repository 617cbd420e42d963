// The driver and the CUDA libraries as this process would load them: dlopen by soname (the
// loader's search path: LD_LIBRARY_PATH, ld.so.cache, librcuda's RUNPATH), then the toolkit
// folder rcuda was built against. Nothing here needs a GPU, and the doctor binary runs on
// machines without a driver because libcuda is never linked.
#include <dlfcn.h>
#include <link.h>

#include <cstddef>
#include <vector>

#include "doctor_internal.h"

#ifndef RCUDA_CUDA_LIBRARY_DIR
#define RCUDA_CUDA_LIBRARY_DIR ""
#endif

namespace rcuda::doctor::detail {
namespace {

struct Loaded {
  void* handle = nullptr;
  std::string path;   // the file actually loaded
  std::string error;  // the last dlerror() when nothing loaded
  std::string tried;
};

// Handles stay open for the life of the process: the GPU checks use the same libraries, and
// unloading CUDA libraries at exit is a known source of crashes.
Loaded load_first(const std::vector<std::string>& names) {
  Loaded out;
  for (const std::string& name : names) {
    if (name.empty()) continue;
    out.tried += (out.tried.empty() ? "" : ", ") + name;
    if (void* h = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL)) {
      out.handle = h;
      link_map* map = nullptr;
      out.path = dlinfo(h, RTLD_DI_LINKMAP, &map) == 0 && map && map->l_name && *map->l_name
                     ? map->l_name
                     : name;
      return out;
    }
    const char* err = dlerror();
    out.error = err ? err : "not found";
  }
  return out;
}

std::vector<std::string> candidates(const std::string& stem, const std::vector<int>& majors) {
  std::vector<std::string> names;
  for (int m : majors)
    if (m > 0) names.push_back(stem + ".so." + std::to_string(m));
  names.push_back(stem + ".so");
  const std::string dir = RCUDA_CUDA_LIBRARY_DIR;
  if (!dir.empty())
    for (int m : majors)
      if (m > 0) names.push_back(dir + "/" + stem + ".so." + std::to_string(m));
  return names;
}

Library not_found(const char* name, const Loaded& l) {
  Library lib;
  lib.name = name;
  lib.path = l.tried;
  lib.error = l.error;
  return lib;
}

std::string three(int a, int b, int c) {
  return std::to_string(a) + "." + std::to_string(b) + "." + std::to_string(c);
}

}  // namespace

DriverProbe probe_driver() {
  DriverProbe p;
  const Loaded l = load_first({"libcuda.so.1"});
  if (!l.handle) {
    p.path = "libcuda.so.1 not loadable (" + l.error + ")";
    return p;
  }
  p.path = l.path;
  using GetVersion = int (*)(int*);
  auto get = reinterpret_cast<GetVersion>(dlsym(l.handle, "cuDriverGetVersion"));
  if (!get || get(&p.version) != 0) {
    p.version = 0;
    p.path += " (cuDriverGetVersion failed)";
  }
  return p;
}

Library probe_cublas(int built_major) {
  const Loaded l = load_first(candidates("libcublas", {built_major, 13, 12, 11}));
  if (!l.handle) return not_found("cuBLAS", l);
  Library lib{"cuBLAS", true, "", l.path, ""};
  using GetProperty = int (*)(int, int*);  // cublasGetProperty(libraryPropertyType, int*)
  auto get = reinterpret_cast<GetProperty>(dlsym(l.handle, "cublasGetProperty"));
  int v[3] = {};
  if (get && get(0, &v[0]) == 0 && get(1, &v[1]) == 0 && get(2, &v[2]) == 0)
    lib.version = three(v[0], v[1], v[2]);
  return lib;
}

Library probe_cudnn(int built_major) {
  const Loaded l = load_first(candidates("libcudnn", {built_major, 9, 8}));
  if (!l.handle) return not_found("cuDNN", l);
  Library lib{"cuDNN", true, "", l.path, ""};
  using GetVersion = size_t (*)();
  if (auto get = reinterpret_cast<GetVersion>(dlsym(l.handle, "cudnnGetVersion"))) {
    const int v = static_cast<int>(get());
    // cuDNN 9 encodes major*10000 + minor*100 + patch; cuDNN 8 major*1000 + minor*100 + patch.
    lib.version = v >= 10000 ? three(v / 10000, (v % 10000) / 100, v % 100)
                             : three(v / 1000, (v % 1000) / 100, v % 100);
  }
  return lib;
}

Library probe_nccl() {
  const Loaded l = load_first(candidates("libnccl", {2}));
  if (!l.handle) return not_found("NCCL", l);
  Library lib{"NCCL", true, "", l.path, ""};
  using GetVersion = int (*)(int*);
  int v = 0;
  if (auto get = reinterpret_cast<GetVersion>(dlsym(l.handle, "ncclGetVersion"));
      get && get(&v) == 0)
    // NCCL >= 2.9 encodes major*10000 + minor*100 + patch, older major*1000 + minor*100 + patch.
    lib.version = v >= 10000 ? three(v / 10000, (v % 10000) / 100, v % 100)
                             : three(v / 1000, (v % 1000) / 100, v % 100);
  return lib;
}

}  // namespace rcuda::doctor::detail
