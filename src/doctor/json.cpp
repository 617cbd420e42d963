// The doctor's report as JSON, the schema in docs/doctor-schema.json (schema_version 1).
// Absent values are null, never "" or 0, so a consumer tells "unknown" from a value.
#include <nlohmann/json.hpp>

#include "rcuda/doctor.h"

namespace rcuda::doctor {
namespace {

using json = nlohmann::ordered_json;

json text_or_null(const std::string& s) { return s.empty() ? json(nullptr) : json(s); }

}  // namespace

std::string to_json(const Report& r) {
  json j;
  j["schema_version"] = 1;
  j["rcuda_version"] = r.rcuda_version;
  j["ok"] = !has_failures(r);
  j["system"] = {{"os", r.os},
                 {"kernel", r.kernel},
                 {"arch", r.arch},
                 {"cpu_model", r.cpu_model},
                 {"logical_cores", r.logical_cores},
                 {"usable_cores", r.usable_cores},
                 {"blas", r.blas},
                 {"blas_threads", r.blas_threads > 0 ? json(r.blas_threads) : json(nullptr)}};
  j["cuda"] = {
      {"built", r.cuda_built},
      {"available", r.cuda_available},
      {"unavailable_reason", text_or_null(r.cuda_unavailable_reason)},
      {"runtime_built", text_or_null(cuda_version_string(r.cuda_runtime_built))},
      {"runtime_loaded", text_or_null(cuda_version_string(r.cuda_runtime_loaded))},
      {"toolkit", text_or_null(r.cuda_toolkit_version)},
      {"architectures", text_or_null(r.cuda_architectures)},
      {"cudnn_built", text_or_null(r.cudnn_built)},
      {"driver_cuda_version", text_or_null(cuda_version_string(r.driver_version))},
      {"driver_library", r.driver_library},
      {"nvidia_driver", text_or_null(r.nvidia_driver)},
      {"visible_devices", r.cuda_visible_devices ? json(*r.cuda_visible_devices) : json(nullptr)}};
  j["libraries"] = json::array();
  for (const Library& l : r.libraries)
    j["libraries"].push_back({{"name", l.name},
                              {"found", l.found},
                              {"version", text_or_null(l.version)},
                              {"path", l.path},
                              {"error", text_or_null(l.error)}});
  j["devices"] = json::array();
  for (const DeviceReport& d : r.devices)
    j["devices"].push_back(
        {{"index", d.index},
         {"name", d.name},
         {"compute_capability", std::to_string(d.major) + "." + std::to_string(d.minor)},
         {"total_memory_bytes", d.total_memory_bytes},
         {"multiprocessor_count", d.multiprocessor_count},
         {"uuid", d.uuid},
         {"pci_bus_id", d.pci_bus_id},
         {"mig_enabled", d.mig_enabled ? json(*d.mig_enabled) : json(nullptr)}});
  j["checks"] = json::array();
  int counts[4] = {};
  for (const Check& c : r.checks) {
    ++counts[static_cast<int>(c.status)];
    j["checks"].push_back({{"id", c.id},
                           {"title", c.title},
                           {"status", status_name(c.status)},
                           {"detail", c.detail},
                           {"fix", text_or_null(c.fix)},
                           {"device", c.device >= 0 ? json(c.device) : json(nullptr)}});
  }
  j["summary"] = {
      {"pass", counts[0]}, {"warn", counts[1]}, {"fail", counts[2]}, {"skip", counts[3]}};
  return j.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

}  // namespace rcuda::doctor
