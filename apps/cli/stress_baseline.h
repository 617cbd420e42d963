// Baseline files of `rcuda stress` (docs/stress.md, "Baselines"): the throughput figures of an
// earlier run, keyed by the GPU's UUID and the level, which a later run on the same GPU is
// measured against. A file holds any number of entries:
//   {"format": "rcuda-stress-baseline", "version": 1,
//    "entries": [{"uuid": "GPU-...", "name": "NVIDIA H100 80GB HBM3", "level": 1,
//                 "saved_at": "2026-12-07T15:31:56.000Z", "rcuda_version": "0.1.0",
//                 "figures": {"gemm_bfloat16_tflops": 702.1, "device_copy_gbps": 2901.5, ...}}]}
#pragma once

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace rcuda::stress {

struct BaselineEntry {
  std::string uuid, name;
  int level = 0;
  std::string saved_at, rcuda_version;
  std::map<std::string, double> figures;  // figure name -> value (units in the name)
};

// One throughput figure of a run and how it compares with the baseline's.
struct Figure {
  Figure() = default;
  Figure(std::string name, std::string unit, double value)
      : name(std::move(name)), unit(std::move(unit)), value(value) {}
  std::string name;  // gemm_<dtype>_tflops, device_copy_gbps, host_to_device_gbps, ...
  std::string unit;  // "TFLOP/s" or "GB/s"
  double value = 0;
  std::optional<double> baseline;  // the baseline's value of the same figure
  std::optional<double> ratio;     // value / baseline
  bool below_threshold = false;    // ratio < threshold
};

// $XDG_CACHE_HOME/rcuda/stress-baseline-<uuid>.json, or ~/.cache/rcuda/... when XDG_CACHE_HOME
// is unset or empty; ValueError when neither it nor HOME is set.
std::string default_baseline_path(const std::string& uuid);

// The entries of a baseline file; none when the file does not exist. ValueError naming the file
// and what is wrong when it cannot be read or is not a baseline file.
std::vector<BaselineEntry> read_baseline_file(const std::string& path);
// The file's text for these entries (pretty-printed JSON, ending in a newline).
std::string baseline_json(const std::vector<BaselineEntry>& entries);
// Parses a baseline file's text; `what` names it in errors.
std::vector<BaselineEntry> parse_baseline(const std::string& text, const std::string& what);

// The entry of the GPU with this UUID at this level, if any.
std::optional<BaselineEntry> find_baseline(const std::vector<BaselineEntry>& entries,
                                           const std::string& uuid, int level);

// Writes `entry` into the file at `path`, replacing an entry of the same UUID and level and
// keeping the others; creates the folders; replaces the file atomically (a rename), so that an
// interrupted save never leaves half a file. ValueError naming the path when it cannot, and when
// the file there is not a baseline file (it is left as it is).
void save_baseline(const std::string& path, const BaselineEntry& entry);

// Fills each figure's baseline, ratio and below_threshold from `entry` (figures the baseline
// lacks keep no baseline); returns whether any figure fell below `threshold`.
bool compare_with_baseline(std::vector<Figure>& figures, const BaselineEntry& entry,
                           double threshold);

}  // namespace rcuda::stress
