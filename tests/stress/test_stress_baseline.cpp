// Baseline files of `rcuda stress` (apps/cli/stress_baseline.h): where they go by default, a
// round trip through the file, entries kept per GPU and level, bad files refused with their
// name, and the threshold's verdict.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "rcuda/core/error.h"
#include "stress_baseline.h"

namespace rcuda::stress {
namespace {

namespace fs = std::filesystem;

class StressBaseline : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("rcuda-stress-baseline-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    for (const char* v : {"XDG_CACHE_HOME", "HOME"}) {
      const char* old = std::getenv(v);
      saved_.emplace_back(v, old ? std::optional<std::string>(old) : std::nullopt);
    }
  }
  void TearDown() override {
    fs::remove_all(dir_);
    for (const auto& [name, value] : saved_)
      if (value)
        setenv(name.c_str(), value->c_str(), 1);
      else
        unsetenv(name.c_str());
  }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  static void write(const std::string& p, const std::string& text) {
    fs::create_directories(fs::path(p).parent_path());
    std::ofstream(p) << text;
  }

  fs::path dir_;
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

BaselineEntry entry(const std::string& uuid, int level, double gemm, double copy) {
  BaselineEntry e;
  e.uuid = uuid;
  e.name = "NVIDIA H100 80GB HBM3";
  e.level = level;
  e.saved_at = "2026-12-07T15:31:56.000Z";
  e.rcuda_version = "0.1.0";
  e.figures = {{"gemm_bfloat16_tflops", gemm}, {"device_copy_gbps", copy}};
  return e;
}

TEST_F(StressBaseline, DefaultPathIsInTheUsersCacheByUuid) {
  setenv("XDG_CACHE_HOME", "/tmp/xdg", 1);
  setenv("HOME", "/home/u", 1);
  EXPECT_EQ(default_baseline_path("GPU-1234"), "/tmp/xdg/rcuda/stress-baseline-GPU-1234.json");
  setenv("XDG_CACHE_HOME", "", 1);  // empty counts as unset, as the XDG specification says
  EXPECT_EQ(default_baseline_path("GPU-1234"),
            "/home/u/.cache/rcuda/stress-baseline-GPU-1234.json");
  unsetenv("XDG_CACHE_HOME");
  unsetenv("HOME");
  EXPECT_THROW(default_baseline_path("GPU-1234"), ValueError);
}

TEST_F(StressBaseline, SavedEntriesReadBackAndMergeByGpuAndLevel) {
  const std::string file = path("nested/folders/baseline.json");  // folders are created
  EXPECT_TRUE(read_baseline_file(file).empty());                  // no file: no entries
  save_baseline(file, entry("GPU-a", 1, 700.5, 2900.25));
  save_baseline(file, entry("GPU-b", 1, 650, 2800));
  save_baseline(file, entry("GPU-a", 2, 710, 2950));
  save_baseline(file, entry("GPU-a", 1, 690, 2890));  // replaces GPU-a's level 1
  const std::vector<BaselineEntry> all = read_baseline_file(file);
  ASSERT_EQ(all.size(), 3u);
  const std::optional<BaselineEntry> a1 = find_baseline(all, "GPU-a", 1);
  ASSERT_TRUE(a1.has_value());
  EXPECT_EQ(a1->figures.at("gemm_bfloat16_tflops"), 690);
  EXPECT_EQ(a1->figures.at("device_copy_gbps"), 2890);
  EXPECT_EQ(a1->name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(a1->saved_at, "2026-12-07T15:31:56.000Z");
  EXPECT_EQ(a1->rcuda_version, "0.1.0");
  EXPECT_EQ(find_baseline(all, "GPU-a", 2)->figures.at("gemm_bfloat16_tflops"), 710);
  EXPECT_EQ(find_baseline(all, "GPU-b", 1)->figures.at("device_copy_gbps"), 2800);
  EXPECT_FALSE(find_baseline(all, "GPU-b", 2).has_value());
  EXPECT_FALSE(find_baseline(all, "GPU-c", 1).has_value());
  // No temporary file is left beside it.
  int files = 0;
  for (const auto& f : fs::directory_iterator(fs::path(file).parent_path())) {
    (void)f;
    ++files;
  }
  EXPECT_EQ(files, 1);
  // The text parses to the same entries.
  const std::vector<BaselineEntry> again = parse_baseline(baseline_json(all), "text");
  ASSERT_EQ(again.size(), 3u);
  EXPECT_EQ(again[2].figures, all[2].figures);
}

TEST_F(StressBaseline, BadFilesAreRefusedNamingTheFile) {
  const auto message = [](const std::string& p) {
    try {
      read_baseline_file(p);
    } catch (const ValueError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const std::string broken = path("broken.json"), other = path("other.json"),
                    negative = path("negative.json"), version = path("version.json");
  write(broken, "{\"format\": \"rcuda-stress-baseline\", ");
  write(other, "{\"checks\": []}");
  write(negative,
        R"({"format": "rcuda-stress-baseline", "version": 1, "entries": [{"uuid": "GPU-a",
            "level": 1, "figures": {"device_copy_gbps": -3}}]})");
  write(version, R"({"format": "rcuda-stress-baseline", "version": 2, "entries": []})");
  EXPECT_NE(message(broken).find(broken + " is not a baseline file"), std::string::npos)
      << message(broken);
  EXPECT_NE(message(broken).find("invalid JSON"), std::string::npos);
  EXPECT_NE(message(other).find("\"format\""), std::string::npos) << message(other);
  EXPECT_NE(message(negative).find("device_copy_gbps"), std::string::npos) << message(negative);
  EXPECT_NE(message(version).find("\"version\" is not 1"), std::string::npos) << message(version);
  // A bad file is not overwritten by a save either: the user decides.
  EXPECT_THROW(save_baseline(other, entry("GPU-a", 1, 1, 1)), ValueError);
}

TEST_F(StressBaseline, FiguresBelowTheThresholdFail) {
  std::vector<Figure> figures = {{"gemm_bfloat16_tflops", "TFLOP/s", 630},
                                 {"device_copy_gbps", "GB/s", 2900},
                                 {"host_to_device_gbps", "GB/s", 50}};
  const BaselineEntry base = entry("GPU-a", 1, 700, 2900);
  EXPECT_FALSE(compare_with_baseline(figures, base, 0.9));  // 630 / 700 = 0.9: not below
  EXPECT_DOUBLE_EQ(*figures[0].ratio, 0.9);
  EXPECT_EQ(*figures[0].baseline, 700);
  EXPECT_DOUBLE_EQ(*figures[1].ratio, 1.0);
  EXPECT_FALSE(figures[2].baseline.has_value());  // not in the baseline: not compared
  EXPECT_FALSE(figures[2].ratio.has_value());
  EXPECT_TRUE(compare_with_baseline(figures, base, 0.95));
  EXPECT_TRUE(figures[0].below_threshold);
  EXPECT_FALSE(figures[1].below_threshold);
  EXPECT_FALSE(figures[2].below_threshold);
  EXPECT_FALSE(compare_with_baseline(figures, base, 0.0));  // threshold 0: never below
}

}  // namespace
}  // namespace rcuda::stress
