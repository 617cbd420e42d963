// `rcuda doctor`: formats rcuda::doctor::run_doctor()'s report as text or JSON.
#include <cstdio>

#include "commands.h"
#include "rcuda/doctor.h"

namespace rcuda::cli {
namespace {

std::string or_dash(const std::string& s) { return s.empty() ? "-" : s; }

void print_text(const doctor::Report& r) {
  using doctor::cuda_version_string;
  std::printf("rcuda %s\n\n", r.rcuda_version.c_str());
  std::printf("System\n");
  std::printf("  OS            %s (%s, %s)\n", r.os.c_str(), r.kernel.c_str(), r.arch.c_str());
  std::printf("  CPU           %s, %d cores (%d usable)\n", r.cpu_model.c_str(), r.logical_cores,
              r.usable_cores);
  std::printf("  BLAS          %s\n", r.blas.c_str());
  std::printf("\nCUDA\n");
  std::printf("  built with    %s\n",
              r.cuda_built ? ("runtime " + cuda_version_string(r.cuda_runtime_built) +
                              ", toolkit " + r.cuda_toolkit_version + ", architectures " +
                              r.cuda_architectures + ", cuDNN headers " + or_dash(r.cudnn_built))
                                 .c_str()
                           : "no CUDA (CPU-only build)");
  if (r.cuda_built)
    std::printf("  runtime       %s (loaded)\n",
                or_dash(cuda_version_string(r.cuda_runtime_loaded)).c_str());
  if (r.driver_version)
    std::printf("  driver        CUDA %s%s (%s)\n", cuda_version_string(r.driver_version).c_str(),
                r.nvidia_driver.empty() ? "" : (", NVIDIA " + r.nvidia_driver).c_str(),
                r.driver_library.c_str());
  else
    std::printf("  driver        none (%s)\n", r.driver_library.c_str());
  for (const doctor::Library& l : r.libraries)
    std::printf("  %-13s %s\n", l.name.c_str(),
                l.found ? (or_dash(l.version) + " (" + l.path + ")").c_str() : "not found");
  std::printf("  CUDA_VISIBLE_DEVICES  %s\n",
              r.cuda_visible_devices ? ("\"" + *r.cuda_visible_devices + "\"").c_str() : "(unset)");
  if (!r.cuda_available)
    std::printf("  CUDA is not available: %s\n", r.cuda_unavailable_reason.c_str());
  for (const doctor::DeviceReport& d : r.devices)
    std::printf("  cuda:%d        %s, sm_%d%d, %.1f GiB, %d SMs, %s, PCI %s, MIG %s\n", d.index,
                d.name.c_str(), d.major, d.minor, d.total_memory_bytes / 1073741824.0,
                d.multiprocessor_count, d.uuid.c_str(), d.pci_bus_id.c_str(),
                d.mig_enabled ? (*d.mig_enabled ? "on" : "off") : "unknown");
  std::printf("\nChecks\n");
  int counts[4] = {};
  for (const doctor::Check& c : r.checks) {
    ++counts[static_cast<int>(c.status)];
    const std::string where = c.device >= 0 ? " [cuda:" + std::to_string(c.device) + "]" : "";
    std::printf("  %-4s %s%s\n", doctor::status_name(c.status), c.title.c_str(), where.c_str());
    if (!c.detail.empty()) std::printf("       %s\n", c.detail.c_str());
    if (!c.fix.empty()) std::printf("       fix: %s\n", c.fix.c_str());
  }
  std::printf("\n%d passed, %d warnings, %d failed, %d skipped\n", counts[0], counts[1], counts[2],
              counts[3]);
}

}  // namespace

int doctor(const DoctorArgs& args) {
  doctor::Options options;
  options.gpu_checks = !args.no_gpu_checks;
  const doctor::Report report = doctor::run_doctor(options);
  if (args.json)
    std::fputs(doctor::to_json(report).c_str(), stdout);
  else
    print_text(report);
  return doctor::has_failures(report) ? 1 : 0;
}

}  // namespace rcuda::cli
