// The report of `rcuda stress` (apps/cli/stress_report.h): the verdict and exit status from
// wrong elements, device errors, interruption and baselines; its JSON against
// docs/stress-schema.json (through tests/cli/validate_stress_json.py and Python's jsonschema,
// skipped where they are missing); NVML's summary.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>

#include "stress_report.h"
#include "support/python.h"

namespace rcuda::stress {
namespace {

using json = nlohmann::json;

// A GPU that ran everything and passed, with figures compared against a baseline.
GpuReport passing_gpu(int index) {
  GpuReport g;
  g.index = index;
  g.name = "NVIDIA H100 80GB HBM3";
  g.uuid = "GPU-fa4e0000-0000-0000-0000-00000000000" + std::to_string(index);
  g.major = 9;
  g.minor = 0;
  g.total_memory_bytes = 85520809984;
  g.free_memory_bytes = 84000000000;
  for (GemmKind kind : kGemmKinds) {
    GemmResult r;
    r.kind = kind;
    r.n = 8192;
    r.sets = 60;
    r.bytes = 60ULL << 30;
    r.products = 600;
    r.seconds = 6.5;
    r.tflops = 2.0 * 8192.0 * 8192 * 8192 * 600 / 6.5 / 1e12;
    r.compared_elements = 600LL * 8192 * 8192;
    r.reference_sets = 2;
    r.reference_rows = 2;
    r.reference.elements = 4 * 8192;
    r.reference.worst_ratio = 0.04;
    g.gemm.push_back(r);
  }
  for (CopyResult* c : {&g.device_copy, &g.host_to_device, &g.device_to_host}) {
    c->bytes = 1ULL << 30;
    c->copies = 100;
    c->seconds = 1.5;
    c->gbps = 2.0 * (1ULL << 30) * 100 / 1.5 / 1e9;
    c->compared_elements = 1 << 28;
  }
  g.telemetry.available = true;
  g.telemetry.nvml_index = index;
  for (int i = 0; i < 10; ++i) {
    telemetry::GpuSample s;
    s.temperature_celsius = 40 + i;
    s.power_watts = 600 + i;
    s.sm_clock_hertz = 1.98e9 - i * 1e7;
    g.telemetry.add(s, 2.619e9, i < 4 ? telemetry::kClockEventSwPowerCap : 0);
  }
  g.figures = figures_of(g);
  BaselineEntry base;
  base.figures = {{"gemm_bfloat16_tflops", g.gemm[2].tflops / 1.01}};
  compare_with_baseline(g.figures, base, 0.9);
  g.baseline_file = "/tmp/stress-baseline-" + g.uuid + ".json";
  g.baseline_found = true;
  return g;
}

Report report_of(std::vector<GpuReport> gpus) {
  Report r;
  r.rcuda_version = "0.1.0";
  r.started_at = "2026-12-07T15:31:56.000Z";
  r.planned_seconds = 39;
  r.seconds = 41.2;
  r.gpus = std::move(gpus);
  return r;
}

// Runs tests/cli/validate_stress_json.py on the report; "" when valid, else why not, "skip" where
// python3 lacks jsonschema.
std::string schema_problem(const Report& r) {
  // A python3 that has jsonschema: the one on PATH, else Debian's (as scripts/cli-check.sh).
  const std::string python = rcuda::test::python_that_imports("jsonschema");
  if (python.empty()) return "skip";
  const std::string path = "/tmp/rcuda-stress-report-" + std::to_string(::getpid()) + ".json";
  std::ofstream(path) << to_json(r);
  const std::string command = python + " " + RCUDA_TESTS_DIR + "/cli/validate_stress_json.py " +
                              path + " --exit-code " + std::to_string(exit_code(verdict(r))) +
                              " >&2";
  const int status = std::system(command.c_str());
  std::remove(path.c_str());
  return status == 0 ? "" : "validate_stress_json.py failed (its output is above)";
}

TEST(StressReport, VerdictAndExitStatus) {
  Report r = report_of({passing_gpu(0), passing_gpu(1)});
  EXPECT_EQ(verdict(r), Verdict::Pass);
  EXPECT_EQ(exit_code(verdict(r)), 0);

  r.gpus[1].figures[2].below_threshold = true;
  EXPECT_EQ(verdict(r), Verdict::BelowBaseline);
  EXPECT_EQ(exit_code(verdict(r)), 3);
  r.interrupted = true;  // a partial run is not judged against its baseline
  EXPECT_EQ(verdict(r), Verdict::Interrupted);
  EXPECT_EQ(exit_code(verdict(r)), 5);
  r.gpus[1].gemm[3].wrong_elements = 1;  // wrong results fail whatever else happened
  EXPECT_EQ(verdict(r), Verdict::Failed);
  EXPECT_EQ(exit_code(verdict(r)), 1);
  EXPECT_EQ(r.gpus[1].wrong_elements(), 1);
  EXPECT_EQ(r.gpus[0].wrong_elements(), 0);

  Report error = report_of({passing_gpu(0)});
  error.gpus[0].device_copy.error = "cudaErrorECCUncorrectable";
  EXPECT_EQ(verdict(error), Verdict::Failed);
  EXPECT_EQ(error.gpus[0].errors(),
            std::vector<std::string>{"device copy: cudaErrorECCUncorrectable"});
  Report reference = report_of({passing_gpu(0)});
  reference.gpus[0].gemm[1].reference.wrong = 2;
  EXPECT_EQ(verdict(reference), Verdict::Failed);
  EXPECT_EQ(reference.gpus[0].wrong_elements(), 2);

  Report none = report_of({});
  none.no_gpu_reason = "no CUDA device to stress: rcuda was built without CUDA";
  EXPECT_EQ(verdict(none), Verdict::NoGpu);
  EXPECT_EQ(exit_code(verdict(none)), 4);
}

TEST(StressReport, FiguresAreTheRatesOfPhasesThatRan) {
  GpuReport g = passing_gpu(0);
  g.gemm[3].skipped = "float8_e4m3fn needs compute capability 8.9 or newer; this GPU has 8.0";
  g.gemm[3].products = 0;
  g.host_to_device.copies = 0;
  std::vector<std::string> names;
  for (const Figure& f : figures_of(g)) names.push_back(f.name + " " + f.unit);
  EXPECT_EQ(names,
            (std::vector<std::string>{"gemm_float32_tflops TFLOP/s", "gemm_tf32_tflops TFLOP/s",
                                      "gemm_bfloat16_tflops TFLOP/s", "device_copy_gbps GB/s",
                                      "device_to_host_gbps GB/s"}));
  EXPECT_DOUBLE_EQ(figures_of(g)[3].value, g.device_copy.gbps);
}

TEST(StressReport, JsonCarriesTheReportAndMatchesTheSchema) {
  Report r = report_of({passing_gpu(0), passing_gpu(1)});
  GemmResult& fp8 = r.gpus[1].gemm[3];
  fp8 = GemmResult();
  fp8.kind = GemmKind::Float8;
  fp8.skipped = "float8_e4m3fn needs compute capability 8.9 or newer; this GPU has 8.0";
  r.gpus[1].telemetry = TelemetrySummary();
  r.gpus[1].telemetry.unavailable_reason = "NVML not available: libnvidia-ml.so.1 not found";
  r.gpus[1].figures = figures_of(r.gpus[1]);
  r.gpus[1].baseline_note = "no baseline for this GPU at level 1 (write one with --save-baseline)";
  const json j = json::parse(to_json(r));
  EXPECT_EQ(j["schema_version"], 1);
  EXPECT_EQ(j["verdict"], "pass");
  EXPECT_EQ(j["exit_code"], 0);
  EXPECT_TRUE(j["ok"].get<bool>());
  EXPECT_TRUE(j["no_gpu_reason"].is_null());
  const json& g = j["gpus"][0];
  EXPECT_EQ(g["compute_capability"], "9.0");
  EXPECT_EQ(g["gemm"][2]["dtype"], "bfloat16");
  EXPECT_EQ(g["gemm"][2]["products"], 600);
  EXPECT_NEAR(g["gemm"][2]["tflops"].get<double>(), 101.5, 0.1);
  EXPECT_EQ(g["gemm"][0]["reference"]["first_wrong"], nullptr);
  EXPECT_EQ(g["nvml"]["samples"], 10);
  EXPECT_EQ(g["nvml"]["temperature_celsius"]["max"], 49);
  EXPECT_DOUBLE_EQ(g["nvml"]["power_watts"]["mean"].get<double>(), 604.5);
  EXPECT_EQ(g["nvml"]["clock_events"]["sw_power_cap"], 4);
  EXPECT_TRUE(g["nvml"]["slowdown_seen"].get<bool>());
  EXPECT_EQ(g["figures"][2]["name"], "gemm_bfloat16_tflops");
  EXPECT_NEAR(g["figures"][2]["ratio"].get<double>(), 1.01, 1e-12);
  EXPECT_TRUE(g["figures"][0]["baseline"].is_null());
  EXPECT_TRUE(g["baseline"]["found"].get<bool>());
  const json& other = j["gpus"][1];
  EXPECT_TRUE(other["gemm"][3]["tflops"].is_null());
  EXPECT_FALSE(other["nvml"]["available"].get<bool>());
  EXPECT_TRUE(other["nvml"]["temperature_celsius"].is_null());
  const std::string problem = schema_problem(r);
  if (problem == "skip") GTEST_SKIP() << "python3 with jsonschema not found";
  EXPECT_EQ(problem, "");
}

TEST(StressReport, FailingAndEmptyReportsMatchTheSchema) {
  Report wrong = report_of({passing_gpu(0)});
  ReferenceCheck& c = wrong.gpus[0].gemm[0].reference;
  c.wrong = 1;
  c.first_wrong_row = 4095;
  c.first_wrong_column = 17;
  c.first_wrong_got = std::nan("");
  c.first_wrong_expected = 12.5;
  wrong.gpus[0].gemm[1].error = "CudaError: cudaErrorIllegalAddress";
  const json j = json::parse(to_json(wrong));
  EXPECT_EQ(j["verdict"], "failed");
  EXPECT_EQ(j["exit_code"], 1);
  EXPECT_TRUE(j["gpus"][0]["gemm"][0]["reference"]["first_wrong"]["got"].is_null());
  EXPECT_EQ(j["gpus"][0]["errors"][0], "gemm tf32: CudaError: cudaErrorIllegalAddress");

  Report none = report_of({});
  none.seconds = 0;
  none.no_gpu_reason = "no CUDA device to stress: rcuda was built without CUDA";
  EXPECT_EQ(json::parse(to_json(none))["exit_code"], 4);
  for (const Report* r : {&wrong, &none}) {
    const std::string problem = schema_problem(*r);
    if (problem == "skip") GTEST_SKIP() << "python3 with jsonschema not found";
    EXPECT_EQ(problem, "");
  }
}

TEST(StressReport, TelemetryKeepsMinMeanMaxAndReasons) {
  TelemetrySummary t;
  telemetry::GpuSample s;
  s.temperature_celsius = 50;
  s.power_watts = 300;
  t.add(s, std::nullopt, std::nullopt);  // no memory clock, no reasons this time
  s.temperature_celsius = 70;
  s.power_watts = 700;
  s.sm_clock_hertz = 1.4e9;
  t.add(s, 2.6e9, telemetry::kClockEventSwPowerCap | telemetry::kClockEventHwSlowdown);
  s.temperature_celsius = 60;
  t.add(s, 2.6e9, telemetry::kClockEventGpuIdle);
  EXPECT_EQ(t.samples, 3);
  EXPECT_EQ(t.temperature_celsius.min, 50);
  EXPECT_EQ(t.temperature_celsius.max, 70);
  EXPECT_DOUBLE_EQ(t.temperature_celsius.mean(), 60);
  EXPECT_DOUBLE_EQ(t.power_watts.mean(), 1700.0 / 3);
  EXPECT_EQ(t.sm_clock_hertz.count, 2);
  EXPECT_EQ(t.memory_clock_hertz.count, 2);
  EXPECT_EQ(t.clock_event_samples, 2);
  EXPECT_EQ(t.clock_events, (std::map<std::string, int64_t>{
                                {"gpu_idle", 1}, {"hw_slowdown", 1}, {"sw_power_cap", 1}}));
  EXPECT_TRUE(is_slowdown("hw_slowdown"));
  EXPECT_TRUE(is_slowdown("sw_thermal_slowdown"));
  EXPECT_FALSE(is_slowdown("gpu_idle"));
  EXPECT_FALSE(is_slowdown("sync_boost"));
}

}  // namespace
}  // namespace rcuda::stress
