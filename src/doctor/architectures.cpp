// Does the compiled code cover a GPU? (rcuda/doctor.h, architecture_coverage)
//
// CUDA machine code (sm_XY cubins) runs on GPUs of the same major version and an equal or
// higher minor; arch-specific code (sm_90a) only on exactly that GPU; family code (sm_100f)
// on the same major. PTX (compute_XY) is compiled by the driver at load time for any GPU
// at least that new, which costs start-up time but works.
#include <sstream>

#include "rcuda/doctor.h"

namespace rcuda::doctor {
namespace {

struct Arch {
  int number = 0;   // 90 for sm_90
  char suffix = 0;  // 'a', 'f' or 0
  bool real = true, virt = true;
};

bool parse(std::string entry, Arch* out) {
  *out = Arch{};
  auto strip = [&](const std::string& tail) {
    if (entry.size() > tail.size() &&
        entry.compare(entry.size() - tail.size(), tail.size(), tail) == 0) {
      entry.resize(entry.size() - tail.size());
      return true;
    }
    return false;
  };
  if (strip("-real"))
    out->virt = false;
  else if (strip("-virtual"))
    out->real = false;
  if (!entry.empty() && (entry.back() == 'a' || entry.back() == 'f')) {
    out->suffix = entry.back();
    entry.pop_back();
  }
  if (entry.empty() || entry.find_first_not_of("0123456789") != std::string::npos) return false;
  out->number = std::stoi(entry);
  return out->number >= 10;
}

std::string arch_name(const char* prefix, const Arch& a) {
  return prefix + std::to_string(a.number) + (a.suffix ? std::string(1, a.suffix) : "");
}

}  // namespace

ArchitectureCoverage architecture_coverage(const std::string& architectures, int major, int minor) {
  ArchitectureCoverage c;
  std::string list = architectures;
  for (char& ch : list)
    if (ch == ';' || ch == ',') ch = ' ';
  std::istringstream entries(list);
  std::string entry;
  const int device = major * 10 + minor;
  int best_real = -1, best_ptx = -1;
  Arch best_real_arch, best_ptx_arch;
  bool any = false;
  while (entries >> entry) {
    any = true;
    if (entry == "all" || entry == "all-major") {
      c.machine_code = c.ptx = true;
      c.detail = "built for \"" + entry +
                 "\": machine code or PTX for every architecture the toolkit knows";
      return c;
    }
    if (entry == "native") {
      c.known = false;
      c.detail =
          "built for \"native\" (the GPUs of the build machine); coverage cannot be told from the "
          "list";
      return c;
    }
    Arch a;
    if (!parse(entry, &a)) {
      c.known = false;
      c.detail = "cannot parse architecture \"" + entry + "\"";
      return c;
    }
    const int a_major = a.number / 10;
    bool real_ok = false, ptx_ok = false;
    if (a.suffix == 'a') {
      real_ok = ptx_ok = a.number == device;
    } else if (a.suffix == 'f') {
      real_ok = a_major == major && a.number <= device;
      ptx_ok = real_ok;
    } else {
      real_ok = a_major == major && a.number <= device;
      ptx_ok = a.number <= device;
    }
    if (a.real && real_ok && a.number > best_real) best_real = a.number, best_real_arch = a;
    if (a.virt && ptx_ok && a.number > best_ptx) best_ptx = a.number, best_ptx_arch = a;
  }
  if (!any) {
    c.known = false;
    c.detail = "no architectures recorded";
    return c;
  }
  c.machine_code = best_real >= 0;
  c.ptx = best_ptx >= 0;
  if (c.machine_code)
    c.detail = arch_name("sm_", best_real_arch) + " machine code";
  else if (c.ptx)
    c.detail = arch_name("compute_", best_ptx_arch) + " PTX only (compiled by the driver at load)";
  else
    c.detail =
        "no machine code or PTX for sm_" + std::to_string(device) + " in \"" + architectures + "\"";
  return c;
}

std::string cuda_version_string(int version) {
  if (version <= 0) return "";
  return std::to_string(version / 1000) + "." + std::to_string((version % 1000) / 10);
}

}  // namespace rcuda::doctor
