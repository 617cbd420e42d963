// A model repository laid out as Triton's (rcuda/runtime/repository.h): DIR/<model>/config.json
// and DIR/<model>/<version>/model.onnx. Loads run outside the lock that find() takes, so serving
// goes on while a model (re)loads; a reload swaps the new versions in once all of them loaded.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <shared_mutex>
#include <sstream>

#include "rcuda/backend/cuda.h"
#include "rcuda/core/error.h"
#include "rcuda/runtime/repository.h"

namespace rcuda::runtime {

namespace fs = std::filesystem;
using Versions = std::map<int64_t, std::shared_ptr<ServedModel>>;  // oldest first

struct ModelRepository::Impl {
  std::string dir;
  RepositoryOptions options;

  struct Model {
    Versions versions;   // loaded and serving
    std::string state;   // "" (never loaded), "READY" or "UNAVAILABLE"
    std::string reason;  // why it is UNAVAILABLE
  };
  mutable std::shared_mutex mutex;  // guards `models`
  std::map<std::string, Model> models;
  std::mutex load_mutex;  // one load or unload at a time

  Device default_device() const {
    if (options.default_device) return *options.default_device;
    return cuda::device_count() > 0 ? Device(DeviceType::CUDA, 0) : Device(DeviceType::CPU);
  }
  Versions load_versions(const std::string& name) const;
};

namespace {

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  RCUDA_CHECK(in, FileError, "cannot read ", path.string());
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// The folder's versions: sub-folders named by a positive integer. Other entries are ignored, as
// Triton does.
std::vector<int64_t> version_folders(const fs::path& folder) {
  std::vector<int64_t> out;
  for (const fs::directory_entry& e : fs::directory_iterator(folder)) {
    const std::string name = e.path().filename().string();
    if (!e.is_directory() || name.empty() || name.size() > 18 ||
        !std::all_of(name.begin(), name.end(), [](char c) { return c >= '0' && c <= '9'; }))
      continue;
    const int64_t v = std::stoll(name);
    if (v > 0) out.push_back(v);
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<int64_t> chosen_versions(const std::vector<int64_t>& found, const VersionPolicy& policy,
                                     const std::string& model, const fs::path& folder) {
  switch (policy.kind) {
    case VersionPolicy::Kind::All:
      return found;
    case VersionPolicy::Kind::Latest: {
      const size_t n = std::min(found.size(), static_cast<size_t>(policy.num_versions));
      return std::vector<int64_t>(found.end() - static_cast<long>(n), found.end());
    }
    case VersionPolicy::Kind::Specific:
      for (int64_t v : policy.versions)
        RCUDA_CHECK(std::binary_search(found.begin(), found.end(), v), ValueError, "model '", model,
                    "': version_policy lists version ", v, ", but ", folder.string(),
                    " has no folder ", v, "/");
      return policy.versions;
  }
  return {};
}

}  // namespace

Versions ModelRepository::Impl::load_versions(const std::string& name) const {
  const fs::path folder = fs::path(dir) / name;
  const fs::path config_path = folder / "config.json";
  ModelConfig config =
      fs::exists(config_path) ? ModelConfig::parse(read_text(config_path), name) : ModelConfig{};
  config.name = name;
  // Instances without a device go to the repository's default.
  if (config.instance_groups.empty()) config.instance_groups.emplace_back();
  for (InstanceGroup& g : config.instance_groups)
    if (g.devices.empty()) g.devices = {default_device()};

  const std::vector<int64_t> found = version_folders(folder);
  RCUDA_CHECK(!found.empty(), ValueError, "model '", name, "': ", folder.string(),
              " has no version folder (a positive integer, such as 1/, holding ",
              config.default_model_filename, ")");
  Versions loaded;
  for (int64_t v : chosen_versions(found, config.version_policy, name, folder)) {
    const fs::path file = folder / std::to_string(v) / config.default_model_filename;
    RCUDA_CHECK(fs::exists(file), FileError, "model '", name, "' version ", v, ": no model file ",
                file.string());
    loaded[v] = ServedModel::load(config, file.string(), v);
  }
  return loaded;
}

ModelRepository::ModelRepository(std::string dir, RepositoryOptions options)
    : impl_(std::make_unique<Impl>()) {
  impl_->dir = std::move(dir);
  impl_->options = std::move(options);
}

ModelRepository::~ModelRepository() { stop_all(); }

const std::string& ModelRepository::dir() const { return impl_->dir; }

int ModelRepository::load_all() {
  std::error_code error;
  RCUDA_CHECK(fs::is_directory(impl_->dir, error), FileError, "model repository ", impl_->dir,
              " is not a folder");
  std::vector<std::string> names;
  for (const fs::directory_entry& e : fs::directory_iterator(impl_->dir)) {
    const std::string name = e.path().filename().string();
    if (e.is_directory() && name[0] != '.') names.push_back(name);
  }
  std::sort(names.begin(), names.end());
  int count = 0;
  for (const std::string& name : names) {
    try {
      load(name);
      ++count;
    } catch (const InferError&) {
      // Kept for index(); the others still load.
    }
  }
  return count;
}

void ModelRepository::load(const std::string& name) {
  Impl& r = *impl_;
  std::lock_guard<std::mutex> one_load(r.load_mutex);
  std::error_code ignored;
  if (name.empty() || name.find('/') != std::string::npos || name[0] == '.' ||
      !fs::is_directory(fs::path(r.dir) / name, ignored))
    throw InferError(InferError::Status::NotFound,
                     "no model '" + name + "' in the repository " + r.dir);
  Versions fresh, replaced;
  std::string error;
  try {
    fresh = r.load_versions(name);
  } catch (const std::exception& e) {
    error = e.what();
  }
  {
    std::unique_lock<std::shared_mutex> lock(r.mutex);
    Impl::Model& m = r.models[name];
    if (error.empty()) {
      replaced.swap(m.versions);
      m.versions = std::move(fresh);
      m.state = "READY";
      m.reason.clear();
    } else if (m.versions.empty()) {  // a failed reload leaves the served versions serving
      m.state = "UNAVAILABLE";
      m.reason = error;
    }
  }
  // The replaced versions answer what they hold; requests in flight keep them alive till then.
  for (auto& [version, model] : replaced) model->stop();
  if (!error.empty()) throw InferError(InferError::Status::BadRequest, error);
}

void ModelRepository::unload(const std::string& name) {
  Impl& r = *impl_;
  std::lock_guard<std::mutex> one_load(r.load_mutex);
  Versions removed;
  {
    std::unique_lock<std::shared_mutex> lock(r.mutex);
    auto it = r.models.find(name);
    if (it == r.models.end() || it->second.versions.empty())
      throw InferError(InferError::Status::NotFound, "model '" + name + "' is not loaded");
    removed.swap(it->second.versions);
    it->second.state = "UNAVAILABLE";
    it->second.reason = "unloaded";
  }
  for (auto& [version, model] : removed) model->stop();
}

std::shared_ptr<ServedModel> ModelRepository::find(const std::string& name,
                                                   const std::string& version) const {
  std::shared_lock<std::shared_mutex> lock(impl_->mutex);
  auto it = impl_->models.find(name);
  if (it == impl_->models.end() || it->second.versions.empty()) {
    const std::string why = it != impl_->models.end() && !it->second.reason.empty()
                                ? " (" + it->second.reason + ")"
                                : "";
    throw InferError(InferError::Status::NotFound, "model '" + name + "' is not loaded" + why);
  }
  const Versions& versions = it->second.versions;
  if (version.empty()) return versions.rbegin()->second;
  for (const auto& [v, model] : versions)
    if (std::to_string(v) == version) return model;
  std::string loaded;
  for (auto v = versions.rbegin(); v != versions.rend(); ++v)
    loaded += (loaded.empty() ? "" : ", ") + std::to_string(v->first);
  throw InferError(InferError::Status::NotFound, "model '" + name + "' has no loaded version '" +
                                                     version + "' (loaded: " + loaded + ")");
}

std::vector<int64_t> ModelRepository::versions(const std::string& name) const {
  std::shared_lock<std::shared_mutex> lock(impl_->mutex);
  std::vector<int64_t> out;
  auto it = impl_->models.find(name);
  if (it != impl_->models.end())
    for (auto v = it->second.versions.rbegin(); v != it->second.versions.rend(); ++v)
      out.push_back(v->first);
  return out;
}

std::vector<std::string> ModelRepository::loaded() const {
  std::shared_lock<std::shared_mutex> lock(impl_->mutex);
  std::vector<std::string> out;
  for (const auto& [name, m] : impl_->models)
    if (!m.versions.empty()) out.push_back(name);
  return out;
}

std::vector<ModelRepository::Entry> ModelRepository::index() const {
  std::set<std::string> names;
  std::error_code error;
  if (fs::is_directory(impl_->dir, error))
    for (const fs::directory_entry& e : fs::directory_iterator(impl_->dir, error)) {
      const std::string name = e.path().filename().string();
      if (e.is_directory() && name[0] != '.') names.insert(name);
    }
  std::shared_lock<std::shared_mutex> lock(impl_->mutex);
  for (const auto& [name, m] : impl_->models) names.insert(name);
  std::vector<Entry> out;
  for (const std::string& name : names) {
    auto it = impl_->models.find(name);
    if (it == impl_->models.end()) {
      out.push_back({name, "", "", ""});
      continue;
    }
    const Impl::Model& m = it->second;
    if (m.versions.empty()) out.push_back({name, "", m.state, m.reason});
    for (const auto& [v, model] : m.versions) out.push_back({name, std::to_string(v), "READY", ""});
  }
  return out;
}

void ModelRepository::stop_all() {
  std::vector<std::shared_ptr<ServedModel>> all;
  {
    std::shared_lock<std::shared_mutex> lock(impl_->mutex);
    for (const auto& [name, m] : impl_->models)
      for (const auto& [v, model] : m.versions) all.push_back(model);
  }
  for (const auto& model : all) model->stop();
}

}  // namespace rcuda::runtime
