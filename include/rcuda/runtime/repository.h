// A model repository laid out as Triton's (docs/serving.md):
//
//   DIR/<model>/config.json             optional (runtime/config.h)
//   DIR/<model>/<version>/model.onnx    versions are positive integers
//
// load_all() loads every model it finds; a model whose entry is invalid (bad config, missing or
// broken file, no version) fails its own load with the reason, kept for index(), and the others
// still serve. Models can be loaded and unloaded while requests are served: a request holds its
// model until it is answered, and an unloaded model answers its queued requests first.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "rcuda/runtime/model.h"
#include "rcuda/telemetry/metrics.h"

namespace rcuda::runtime {

struct RepositoryOptions {
  // Where instances go when a config names no device: CUDA 0 when a GPU is usable, else the CPU.
  // Set to the CPU to keep every model off the GPU.
  std::optional<Device> default_device;
};

class ModelRepository {
 public:
  explicit ModelRepository(std::string dir, RepositoryOptions options = {});
  ~ModelRepository();  // unloads every model (each answers its queue first)
  ModelRepository(const ModelRepository&) = delete;
  ModelRepository& operator=(const ModelRepository&) = delete;

  const std::string& dir() const;

  // Loads every model folder of dir(); returns how many loaded. Failures are kept for index().
  int load_all();

  // One row per model folder and loaded version (KServe's repository index extension): state is
  // "READY", "UNAVAILABLE" (failed or unloaded; reason says why) or "" when never loaded.
  struct Entry {
    std::string name;
    std::string version;  // "" for a model with no loaded version
    std::string state;
    std::string reason;
  };
  std::vector<Entry> index() const;

  // (Re)loads one model's versions from disk (a reload replaces the served versions once the
  // new ones are ready). InferError(NotFound) when dir() has no such folder, (BadRequest) with
  // the reason when its load fails.
  void load(const std::string& name);
  // InferError(NotFound) when the model is not loaded.
  void unload(const std::string& name);

  // The served model: the version asked for, or the newest loaded one for "". InferError
  // (NotFound) naming the model (and version) when it is not loaded.
  std::shared_ptr<ServedModel> find(const std::string& name, const std::string& version = "") const;
  // The loaded versions of a model, newest first (empty when not loaded).
  std::vector<int64_t> versions(const std::string& name) const;
  // Names of the loaded models, sorted.
  std::vector<std::string> loaded() const;

  // Stops every model (submit answers Unavailable) after answering what is queued.
  void stop_all();

  // Registers a collector on `registry` that exports every loaded model's ModelStats as
  // rcuda_inference_* metrics labelled {model, version} (names in docs/serving.md; durations in
  // seconds, counters ending in _total, so promtool's lint passes). The repository must outlive
  // the registry's scrapes.
  void export_metrics(telemetry::Registry& registry) const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace rcuda::runtime
