// Baseline files: reading, merging, atomic writing, the comparison (stress_baseline.h).
#include "stress_baseline.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <system_error>

#include "rcuda/core/error.h"

namespace rcuda::stress {
namespace {

using json = nlohmann::ordered_json;
constexpr const char* kFormat = "rcuda-stress-baseline";
constexpr int kVersion = 1;

const char* env(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? v : nullptr;
}

}  // namespace

std::string default_baseline_path(const std::string& uuid) {
  std::filesystem::path dir;
  if (const char* cache = env("XDG_CACHE_HOME"))
    dir = cache;
  else if (const char* home = env("HOME"))
    dir = std::filesystem::path(home) / ".cache";
  else
    throw ValueError(
        "stress: neither XDG_CACHE_HOME nor HOME is set, so there is no default place for "
        "baseline files; name one with --baseline FILE");
  return (dir / "rcuda" / ("stress-baseline-" + uuid + ".json")).string();
}

std::string baseline_json(const std::vector<BaselineEntry>& entries) {
  json list = json::array();
  for (const BaselineEntry& e : entries) {
    json figures = json::object();
    for (const auto& [name, value] : e.figures) figures[name] = value;
    list.push_back({{"uuid", e.uuid},
                    {"name", e.name},
                    {"level", e.level},
                    {"saved_at", e.saved_at},
                    {"rcuda_version", e.rcuda_version},
                    {"figures", figures}});
  }
  json j = {{"format", kFormat}, {"version", kVersion}, {"entries", list}};
  return j.dump(2) + "\n";
}

std::vector<BaselineEntry> parse_baseline(const std::string& text, const std::string& what) {
  const auto bad = [&](const std::string& why) {
    return ValueError("stress: " + what + " is not a baseline file of rcuda stress: " + why +
                      " (delete it, or write a new one with --save-baseline)");
  };
  json j;
  try {
    j = json::parse(text);
  } catch (const json::parse_error& e) {
    throw bad(std::string("invalid JSON (") + e.what() + ")");
  }
  if (!j.is_object() || j.value("format", "") != kFormat)
    throw bad(std::string("its \"format\" is not \"") + kFormat + "\"");
  if (!j.contains("version") || !j["version"].is_number_integer() || j["version"] != kVersion)
    throw bad("its \"version\" is not " + std::to_string(kVersion));
  if (!j.contains("entries") || !j["entries"].is_array()) throw bad("it has no \"entries\" list");
  std::vector<BaselineEntry> out;
  for (const json& e : j["entries"]) {
    if (!e.is_object() || !e.contains("uuid") || !e["uuid"].is_string() || !e.contains("level") ||
        !e["level"].is_number_integer() || !e.contains("figures") || !e["figures"].is_object())
      throw bad("an entry lacks a string \"uuid\", an integer \"level\" or a \"figures\" object");
    BaselineEntry b;
    b.uuid = e["uuid"].get<std::string>();
    b.level = e["level"].get<int>();
    if (e.contains("name") && e["name"].is_string()) b.name = e["name"].get<std::string>();
    if (e.contains("saved_at") && e["saved_at"].is_string())
      b.saved_at = e["saved_at"].get<std::string>();
    if (e.contains("rcuda_version") && e["rcuda_version"].is_string())
      b.rcuda_version = e["rcuda_version"].get<std::string>();
    for (const auto& [name, value] : e["figures"].items()) {
      if (!value.is_number() || !(value.get<double>() > 0))
        throw bad("figure \"" + name + "\" of " + b.uuid + " is not a positive number");
      b.figures[name] = value.get<double>();
    }
    out.push_back(std::move(b));
  }
  return out;
}

std::vector<BaselineEntry> read_baseline_file(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return {};
  std::ifstream in(path);
  if (!in) throw ValueError("stress: cannot read the baseline file " + path);
  std::stringstream text;
  text << in.rdbuf();
  return parse_baseline(text.str(), path);
}

std::optional<BaselineEntry> find_baseline(const std::vector<BaselineEntry>& entries,
                                           const std::string& uuid, int level) {
  for (const BaselineEntry& e : entries)
    if (e.uuid == uuid && e.level == level) return e;
  return std::nullopt;
}

void save_baseline(const std::string& path, const BaselineEntry& entry) {
  std::vector<BaselineEntry> entries = read_baseline_file(path);
  bool replaced = false;
  for (BaselineEntry& e : entries)
    if (e.uuid == entry.uuid && e.level == entry.level) {
      e = entry;
      replaced = true;
    }
  if (!replaced) entries.push_back(entry);

  const std::filesystem::path target(path);
  std::error_code ec;
  if (target.has_parent_path()) {
    std::filesystem::create_directories(target.parent_path(), ec);
    if (ec)
      throw ValueError("stress: cannot create " + target.parent_path().string() +
                       " for the baseline file: " + ec.message());
  }
  // A temporary file beside the target, renamed over it: readers see the old or the new file.
  const std::string temporary = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(temporary, std::ios::trunc);
    out << baseline_json(entries);
    out.flush();
    if (!out) {
      std::filesystem::remove(temporary, ec);
      throw ValueError("stress: cannot write the baseline file " + temporary);
    }
  }
  std::filesystem::rename(temporary, target, ec);
  if (ec) {
    std::error_code ignored;
    std::filesystem::remove(temporary, ignored);
    throw ValueError("stress: cannot write the baseline file " + path + ": " + ec.message());
  }
}

bool compare_with_baseline(std::vector<Figure>& figures, const BaselineEntry& entry,
                           double threshold) {
  bool below = false;
  for (Figure& f : figures) {
    const auto it = entry.figures.find(f.name);
    if (it == entry.figures.end()) continue;
    f.baseline = it->second;
    f.ratio = f.value / it->second;
    f.below_threshold = *f.ratio < threshold;
    below = below || f.below_threshold;
  }
  return below;
}

}  // namespace rcuda::stress
