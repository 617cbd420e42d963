// The doctor's report (include/rcuda/doctor.h) for R: cuda_doctor() and backends_cudnn_*().
// The report crosses as plain vectors; r/R/doctor.R shapes them into data frames.
#include "rcuda/doctor.h"

#include "rcuda_r.h"

using namespace rcuda;
using namespace cpp11::literals;

namespace {

cpp11::writable::list checks_columns(const std::vector<doctor::Check>& checks) {
  cpp11::writable::strings id, title, status, detail, fix;
  cpp11::writable::integers device;
  for (const doctor::Check& c : checks) {
    id.push_back(c.id);
    title.push_back(c.title);
    status.push_back(doctor::status_name(c.status));
    detail.push_back(c.detail);
    fix.push_back(c.fix);
    device.push_back(c.device < 0 ? NA_INTEGER : c.device);
  }
  return cpp11::writable::list({"id"_nm = id, "title"_nm = title, "status"_nm = status,
                                "detail"_nm = detail, "fix"_nm = fix, "device"_nm = device});
}

cpp11::writable::list libraries_columns(const std::vector<doctor::Library>& libraries) {
  cpp11::writable::strings name, version, path;
  cpp11::writable::logicals found;
  for (const doctor::Library& l : libraries) {
    name.push_back(l.name);
    found.push_back(l.found ? TRUE : FALSE);
    version.push_back(l.found ? cpp11::r_string(l.version) : cpp11::r_string(NA_STRING));
    path.push_back(l.found ? l.path : l.error);
  }
  return cpp11::writable::list(
      {"name"_nm = name, "found"_nm = found, "version"_nm = version, "path"_nm = path});
}

cpp11::writable::list devices_columns(const std::vector<doctor::DeviceReport>& devices) {
  cpp11::writable::integers index, major, minor, sms;
  cpp11::writable::strings name, uuid, pci;
  cpp11::writable::doubles memory;
  cpp11::writable::logicals mig;
  for (const doctor::DeviceReport& d : devices) {
    index.push_back(d.index);
    name.push_back(d.name);
    major.push_back(d.major);
    minor.push_back(d.minor);
    memory.push_back(static_cast<double>(d.total_memory_bytes));
    sms.push_back(d.multiprocessor_count);
    uuid.push_back(d.uuid);
    pci.push_back(d.pci_bus_id);
    mig.push_back(d.mig_enabled ? (*d.mig_enabled ? TRUE : FALSE) : NA_LOGICAL);
  }
  return cpp11::writable::list({"index"_nm = index, "name"_nm = name, "major"_nm = major,
                                "minor"_nm = minor, "total_memory"_nm = memory,
                                "multi_processor_count"_nm = sms, "uuid"_nm = uuid,
                                "pci_bus_id"_nm = pci, "mig_enabled"_nm = mig});
}

}  // namespace

extern "C" SEXP rc_cuda_doctor(SEXP gpu_checks) {
  RCUDA_BEGIN
  doctor::Options options;
  options.gpu_checks = Rf_asLogical(gpu_checks) == TRUE;
  const doctor::Report r = doctor::run_doctor(options);
  const char* visible = r.cuda_visible_devices ? r.cuda_visible_devices->c_str() : nullptr;
  cpp11::writable::list system(
      {"rcuda_version"_nm = r.rcuda_version,
       "os"_nm = r.os,
       "kernel"_nm = r.kernel,
       "arch"_nm = r.arch,
       "cpu_model"_nm = r.cpu_model,
       "logical_cores"_nm = r.logical_cores,
       "usable_cores"_nm = r.usable_cores,
       "blas"_nm = r.blas,
       "blas_threads"_nm = r.blas_threads,
       "cuda_built"_nm = r.cuda_built,
       "cuda_runtime_built"_nm = r.cuda_runtime_built,
       "cuda_toolkit_version"_nm = r.cuda_toolkit_version,
       "cuda_architectures"_nm = r.cuda_architectures,
       "cudnn_built"_nm = r.cudnn_built,
       "cuda_runtime_loaded"_nm = r.cuda_runtime_loaded,
       "driver_version"_nm = r.driver_version,
       "nvidia_driver"_nm = r.nvidia_driver,
       "cuda_available"_nm = r.cuda_available,
       "cuda_unavailable_reason"_nm = r.cuda_unavailable_reason,
       "cuda_visible_devices"_nm =
           visible ? cpp11::writable::strings({visible}) : cpp11::writable::strings({NA_STRING})});
  return cpp11::writable::list({"checks"_nm = checks_columns(r.checks), "system"_nm = system,
                                "libraries"_nm = libraries_columns(r.libraries),
                                "devices"_nm = devices_columns(r.devices),
                                "failed"_nm = doctor::has_failures(r)});
  RCUDA_END
}

extern "C" SEXP rc_cudnn() {
  RCUDA_BEGIN
  const doctor::Library l = doctor::find_cudnn();
  return cpp11::writable::list(
      {"found"_nm = l.found, "version"_nm = l.version, "path"_nm = l.found ? l.path : l.error});
  RCUDA_END
}
