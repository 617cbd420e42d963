// config.json of a served model (rcuda/runtime/config.h): Triton's field names, read strictly.
// Every error is a ValueError naming the model, the field's path ("input[0].dims") and the value,
// so a user fixes the file from the message alone.
#include <algorithm>
#include <initializer_list>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "rcuda/backend/cuda.h"
#include "rcuda/core/error.h"
#include "rcuda/runtime/config.h"

namespace rcuda::runtime {
namespace {

using json = nlohmann::json;
constexpr int64_t kNoLimit = std::numeric_limits<int64_t>::max();

// One JSON object of config.json and where it sits, for the messages.
class Reader {
 public:
  Reader(const json& value, const std::string& model, std::string path)
      : value_(value), model_(model), path_(std::move(path)) {
    if (!value_.is_object()) fail_here("must be a JSON object, got " + value_.dump());
  }

  [[noreturn]] void fail(const std::string& key, const std::string& why) const {
    throw ValueError("model '" + model_ + "': config.json field '" + field(key) + "' " + why);
  }
  [[noreturn]] void fail_here(const std::string& why) const {
    if (path_.empty()) throw ValueError("model '" + model_ + "': config.json " + why);
    throw ValueError("model '" + model_ + "': config.json field '" + path_ + "' " + why);
  }

  // A field rcuda does not know is an error, never ignored: a misspelt field would otherwise
  // silently leave its default in force.
  void only(std::initializer_list<const char*> known) const {
    for (const auto& item : value_.items()) {
      if (std::find_if(known.begin(), known.end(),
                       [&](const char* k) { return item.key() == k; }) != known.end())
        continue;
      std::string names;
      for (const char* k : known) names += (names.empty() ? "" : ", ") + std::string(k);
      throw ValueError("model '" + model_ + "': config.json has an unknown field '" +
                       field(item.key()) + "'" +
                       (names.empty() ? std::string(" (this object takes no fields)")
                                      : " (known here: " + names + ")"));
    }
  }

  bool has(const char* key) const { return value_.contains(key); }
  const json& at(const char* key) const { return value_.at(key); }

  // Protobuf's JSON form writes int64 fields as strings ("dims": ["16"]), so Triton's own output
  // reads back: a string of digits counts as an integer.
  int64_t integer(const char* key, int64_t min, int64_t max) const {
    return integer_value(at(key), key, min, max);
  }
  int64_t integer_value(const json& v, const std::string& key, int64_t min, int64_t max) const {
    int64_t n = 0;
    bool ok = false;
    if (v.is_number_integer()) {
      ok = !(v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(kNoLimit));
      if (ok) n = v.get<int64_t>();
    } else if (v.is_string()) {
      const std::string s = v.get<std::string>();
      try {
        size_t used = 0;
        n = std::stoll(s, &used);
        ok = used == s.size() && !s.empty();
      } catch (const std::exception&) {
        ok = false;
      }
    }
    if (!ok || n < min || n > max) {
      std::string range = "an integer";
      if (max != kNoLimit)
        range += " in [" + std::to_string(min) + ", " + std::to_string(max) + "]";
      else if (min != std::numeric_limits<int64_t>::min())
        range += " >= " + std::to_string(min);
      fail(key, "must be " + range + ", got " + v.dump());
    }
    return n;
  }
  std::vector<int64_t> integers(const char* key, int64_t min, int64_t max) const {
    const json& v = at(key);
    if (!v.is_array()) fail(key, "must be a list of integers, got " + v.dump());
    std::vector<int64_t> out;
    for (size_t i = 0; i < v.size(); ++i)
      out.push_back(
          integer_value(v[i], std::string(key) + "[" + std::to_string(i) + "]", min, max));
    return out;
  }
  bool boolean(const char* key) const {
    if (!at(key).is_boolean()) fail(key, "must be true or false, got " + at(key).dump());
    return at(key).get<bool>();
  }
  std::string string(const char* key) const {
    if (!at(key).is_string()) fail(key, "must be a string, got " + at(key).dump());
    return at(key).get<std::string>();
  }
  Reader object(const char* key) const { return Reader(at(key), model_, field(key)); }
  std::vector<Reader> objects(const char* key) const {
    const json& v = at(key);
    if (!v.is_array()) fail(key, "must be a list of objects, got " + v.dump());
    std::vector<Reader> out;
    for (size_t i = 0; i < v.size(); ++i)
      out.emplace_back(v[i], model_, field(key) + "[" + std::to_string(i) + "]");
    return out;
  }

 private:
  std::string field(const std::string& key) const {
    return path_.empty() ? key : key[0] == '[' ? path_ + key : path_ + "." + key;
  }
  const json& value_;
  const std::string& model_;
  std::string path_;
};

std::vector<int64_t> sorted_unique(std::vector<int64_t> v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  return v;
}

std::vector<TensorConfig> read_tensors(const Reader& config, const char* key) {
  std::vector<TensorConfig> out;
  for (const Reader& r : config.objects(key)) {
    r.only({"name", "data_type", "dims"});
    for (const char* required : {"name", "data_type", "dims"})
      if (!r.has(required)) r.fail_here("needs a '" + std::string(required) + "' field");
    TensorConfig t;
    t.name = r.string("name");
    if (t.name.empty()) r.fail("name", "must not be empty");
    for (const TensorConfig& earlier : out)
      if (earlier.name == t.name) r.fail("name", "'" + t.name + "' is listed twice");
    try {
      t.dtype = dtype_from_triton_type(r.string("data_type"));
    } catch (const ValueError& e) {
      r.fail("data_type", std::string("is not a served type: ") + e.what());
    }
    t.dims = r.integers("dims", -1, kNoLimit);
    for (size_t d = 0; d < t.dims.size(); ++d)
      if (t.dims[d] == 0)
        r.fail("dims", "must hold sizes >= 1 or -1 (a size that varies), got 0 at dim " +
                           std::to_string(d));
    out.push_back(std::move(t));
  }
  return out;
}

QueuePolicy read_queue_policy(const Reader& r) {
  r.only({"max_queue_size", "default_timeout_microseconds", "timeout_action",
          "allow_timeout_override"});
  QueuePolicy p;
  if (r.has("max_queue_size")) p.max_queue_size = r.integer("max_queue_size", 0, kNoLimit);
  if (r.has("default_timeout_microseconds"))
    p.default_timeout_microseconds = r.integer("default_timeout_microseconds", 0, kNoLimit);
  if (r.has("allow_timeout_override"))
    p.allow_timeout_override = r.boolean("allow_timeout_override");
  if (r.has("timeout_action")) {
    const std::string action = r.string("timeout_action");
    if (action == "DELAY")
      r.fail("timeout_action",
             "is DELAY, which rcuda does not do: a request past its timeout is answered "
             "Unavailable and never run late (use REJECT)");
    if (action != "REJECT") r.fail("timeout_action", "must be REJECT, got '" + action + "'");
  }
  return p;
}

DynamicBatching read_dynamic_batching(const Reader& config, int64_t max_batch_size) {
  if (max_batch_size == 0)
    config.fail("dynamic_batching",
                "needs max_batch_size > 0 (requests are joined along the batch dim), but "
                "max_batch_size is 0");
  const Reader r = config.object("dynamic_batching");
  r.only({"max_queue_delay_microseconds", "preferred_batch_size", "default_queue_policy"});
  DynamicBatching b;
  if (r.has("max_queue_delay_microseconds"))
    b.max_queue_delay_microseconds = r.integer("max_queue_delay_microseconds", 0, kNoLimit);
  if (r.has("preferred_batch_size"))
    b.preferred_batch_size = sorted_unique(r.integers("preferred_batch_size", 1, max_batch_size));
  if (r.has("default_queue_policy"))
    b.default_queue_policy = read_queue_policy(r.object("default_queue_policy"));
  return b;
}

// "kind" and "gpus" as Triton reads them, or rcuda's "device": "cuda:1".
InstanceGroup read_instance_group(const Reader& r) {
  r.only({"count", "kind", "gpus", "device"});
  InstanceGroup g;
  if (r.has("count")) g.count = static_cast<int>(r.integer("count", 1, 1024));
  if (r.has("device")) {
    if (r.has("kind") || r.has("gpus"))
      r.fail("device", "cannot be given with 'kind' or 'gpus' (one way to say where)");
    try {
      g.devices = {Device::parse(r.string("device"))};
    } catch (const ValueError& e) {
      r.fail("device", std::string("is not a device: ") + e.what());
    }
    return g;
  }
  const std::string kind = r.has("kind") ? r.string("kind") : "KIND_AUTO";
  if (kind != "KIND_AUTO" && kind != "KIND_GPU" && kind != "KIND_CPU")
    r.fail("kind", "must be KIND_GPU, KIND_CPU or KIND_AUTO, got '" + kind + "'");
  if (kind == "KIND_CPU") {
    if (r.has("gpus")) r.fail("gpus", "cannot be given with kind KIND_CPU");
    g.devices = {Device(DeviceType::CPU)};
  } else if (r.has("gpus")) {
    const std::vector<int64_t> gpus = r.integers("gpus", 0, 1 << 16);
    if (gpus.empty()) r.fail("gpus", "must list at least one GPU");
    for (int64_t gpu : gpus) g.devices.emplace_back(DeviceType::CUDA, static_cast<int>(gpu));
  } else if (kind == "KIND_GPU") {
    // Triton's meaning: every visible GPU.
    const int n = cuda::device_count();
    if (n == 0)
      r.fail("kind",
             "is KIND_GPU but no CUDA device is usable (" + cuda::unavailable_reason() + ")");
    for (int i = 0; i < n; ++i) g.devices.emplace_back(DeviceType::CUDA, i);
  }
  // KIND_AUTO without gpus leaves devices empty: the repository's default device.
  return g;
}

VersionPolicy read_version_policy(const Reader& config) {
  const Reader r = config.object("version_policy");
  r.only({"latest", "all", "specific"});
  const int given = int{r.has("latest")} + int{r.has("all")} + int{r.has("specific")};
  if (given != 1) r.fail_here("must hold exactly one of latest, all or specific");
  VersionPolicy p;
  if (r.has("latest")) {
    const Reader latest = r.object("latest");
    latest.only({"num_versions"});
    p.kind = VersionPolicy::Kind::Latest;
    if (latest.has("num_versions")) p.num_versions = latest.integer("num_versions", 1, kNoLimit);
  } else if (r.has("all")) {
    r.object("all").only({});
    p.kind = VersionPolicy::Kind::All;
  } else {
    const Reader specific = r.object("specific");
    specific.only({"versions"});
    if (!specific.has("versions")) specific.fail_here("needs a 'versions' list");
    p.kind = VersionPolicy::Kind::Specific;
    p.versions = sorted_unique(specific.integers("versions", 1, kNoLimit));
    if (p.versions.empty()) specific.fail("versions", "must list at least one version");
  }
  return p;
}

}  // namespace

ModelConfig ModelConfig::parse(const std::string& json_text, const std::string& model) {
  json j;
  try {
    j = json::parse(json_text);
  } catch (const json::parse_error& e) {
    // nlohmann's message gives the line and column.
    throw ValueError("model '" + model + "': config.json is not valid JSON: " + e.what());
  }
  const Reader r(j, model, "");
  r.only({"name", "platform", "backend", "max_batch_size", "input", "output", "dynamic_batching",
          "instance_group", "version_policy", "default_model_filename", "cuda_graphs"});
  ModelConfig c;
  c.name = model;
  if (r.has("name") && r.string("name") != model)
    r.fail("name", "is '" + r.string("name") + "' but the model's folder is '" + model +
                       "' (the two must agree)");
  // Triton's repositories name their ONNX runtime; rcuda runs the same files.
  if (r.has("platform") && r.string("platform") != "onnxruntime_onnx")
    r.fail("platform", "must be onnxruntime_onnx (rcuda serves ONNX files), got '" +
                           r.string("platform") + "'");
  if (r.has("backend") && r.string("backend") != "rcuda" && r.string("backend") != "onnxruntime")
    r.fail("backend", "must be rcuda or onnxruntime, got '" + r.string("backend") + "'");
  if (r.has("max_batch_size")) c.max_batch_size = r.integer("max_batch_size", 0, kNoLimit);
  if (r.has("input")) c.inputs = read_tensors(r, "input");
  if (r.has("output")) c.outputs = read_tensors(r, "output");
  if (r.has("dynamic_batching")) c.dynamic_batching = read_dynamic_batching(r, c.max_batch_size);
  if (r.has("instance_group"))
    for (const Reader& g : r.objects("instance_group"))
      c.instance_groups.push_back(read_instance_group(g));
  if (r.has("version_policy")) c.version_policy = read_version_policy(r);
  if (r.has("default_model_filename")) {
    c.default_model_filename = r.string("default_model_filename");
    const std::string& f = c.default_model_filename;
    if (f.empty() || f == "." || f == ".." || f.find('/') != std::string::npos)
      r.fail("default_model_filename",
             "must be a file name in the version folder, got '" + f + "'");
  }
  if (r.has("cuda_graphs")) {
    if (c.max_batch_size == 0)
      r.fail("cuda_graphs", "lists batch sizes, which need max_batch_size > 0");
    c.cuda_graphs = r.integers("cuda_graphs", 1, c.max_batch_size);
    c.cuda_graphs.push_back(c.max_batch_size);  // a full batch is never padded past the list
    c.cuda_graphs = sorted_unique(c.cuda_graphs);
  }
  return c;
}

namespace {

nlohmann::ordered_json tensors_json(const std::vector<TensorConfig>& tensors) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const TensorConfig& t : tensors)
    out.push_back({{"name", t.name}, {"data_type", triton_type_name(t.dtype)}, {"dims", t.dims}});
  return out;
}

// A group's devices as Triton's kind and gpus; a group mixing the CPU and GPUs (possible only
// when built in C++) becomes two groups.
void append_instance_groups(const InstanceGroup& g, nlohmann::ordered_json& out) {
  std::vector<int> gpus;
  bool cpu = false;
  for (const Device& d : g.devices) {
    if (d.is_cpu()) cpu = true;
    if (d.is_cuda()) gpus.push_back(d.index);
  }
  if (g.devices.empty()) out.push_back({{"count", g.count}, {"kind", "KIND_AUTO"}});
  if (cpu) out.push_back({{"count", g.count}, {"kind", "KIND_CPU"}});
  if (!gpus.empty()) out.push_back({{"count", g.count}, {"kind", "KIND_GPU"}, {"gpus", gpus}});
}

}  // namespace

std::string ModelConfig::to_json() const {
  using ojson = nlohmann::ordered_json;
  ojson j;
  j["name"] = name;
  j["backend"] = "rcuda";
  j["max_batch_size"] = max_batch_size;
  j["input"] = tensors_json(inputs);
  j["output"] = tensors_json(outputs);
  if (dynamic_batching) {
    const QueuePolicy& p = dynamic_batching->default_queue_policy;
    j["dynamic_batching"] = {
        {"max_queue_delay_microseconds", dynamic_batching->max_queue_delay_microseconds},
        {"preferred_batch_size", dynamic_batching->preferred_batch_size},
        {"default_queue_policy",
         {{"max_queue_size", p.max_queue_size},
          {"default_timeout_microseconds", p.default_timeout_microseconds},
          {"timeout_action", "REJECT"},
          {"allow_timeout_override", p.allow_timeout_override}}}};
  }
  ojson groups = ojson::array();
  for (const InstanceGroup& g : instance_groups) append_instance_groups(g, groups);
  j["instance_group"] = groups;
  switch (version_policy.kind) {
    case VersionPolicy::Kind::Latest:
      j["version_policy"] = {{"latest", {{"num_versions", version_policy.num_versions}}}};
      break;
    case VersionPolicy::Kind::All:
      j["version_policy"] = {{"all", ojson::object()}};
      break;
    case VersionPolicy::Kind::Specific:
      j["version_policy"] = {{"specific", {{"versions", version_policy.versions}}}};
      break;
  }
  j["default_model_filename"] = default_model_filename;
  if (!cuda_graphs.empty()) j["cuda_graphs"] = cuda_graphs;
  return j.dump(2);
}

QueuePolicy ModelConfig::queue_policy() const {
  return dynamic_batching ? dynamic_batching->default_queue_policy : QueuePolicy{};
}

}  // namespace rcuda::runtime
