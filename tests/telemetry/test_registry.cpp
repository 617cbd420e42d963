// The metrics registry and its two text formats, checked against exposition text written out
// by hand from the Prometheus 0.0.4 and OpenMetrics 1.0 specifications.
#include <gtest/gtest.h>

#include <cmath>
#include <thread>

#include "rcuda/core/error.h"
#include "rcuda/telemetry/metrics.h"

namespace rcuda::telemetry {
namespace {

TEST(TelemetryRegistry, PrometheusTextMatchesTheFormat) {
  Registry r;
  r.gauge("rcuda_gpu_temperature_celsius", "GPU core temperature.",
          {{"gpu", "0"}, {"uuid", "GPU-a"}}, "celsius")
      .set(45);
  r.gauge("rcuda_gpu_temperature_celsius", "GPU core temperature.",
          {{"gpu", "1"}, {"uuid", "GPU-b"}}, "celsius")
      .set(46.5);
  r.counter("rcuda_cuda_alloc_total", "Allocations.", {{"gpu", "0"}}).inc(3);
  EXPECT_EQ(prometheus_text(r),
            "# HELP rcuda_gpu_temperature_celsius GPU core temperature.\n"
            "# TYPE rcuda_gpu_temperature_celsius gauge\n"
            "rcuda_gpu_temperature_celsius{gpu=\"0\",uuid=\"GPU-a\"} 45\n"
            "rcuda_gpu_temperature_celsius{gpu=\"1\",uuid=\"GPU-b\"} 46.5\n"
            "# HELP rcuda_cuda_alloc_total Allocations.\n"
            "# TYPE rcuda_cuda_alloc_total counter\n"
            "rcuda_cuda_alloc_total{gpu=\"0\"} 3\n");
}

TEST(TelemetryRegistry, OpenMetricsNamesCounterFamiliesWithoutTotalAndEndsWithEof) {
  Registry r;
  r.gauge("rcuda_gpu_memory_used_bytes", "Used.", {{"gpu", "0"}}, "bytes").set(85899345920.0);
  r.counter("rcuda_cuda_oom_total", "OOMs.").inc();
  EXPECT_EQ(openmetrics_text(r),
            "# TYPE rcuda_gpu_memory_used_bytes gauge\n"
            "# UNIT rcuda_gpu_memory_used_bytes bytes\n"
            "# HELP rcuda_gpu_memory_used_bytes Used.\n"
            "rcuda_gpu_memory_used_bytes{gpu=\"0\"} 85899345920\n"
            "# TYPE rcuda_cuda_oom counter\n"
            "# HELP rcuda_cuda_oom OOMs.\n"
            "rcuda_cuda_oom_total 1\n"
            "# EOF\n");
}

TEST(TelemetryRegistry, EscapesLabelValuesAndHelp) {
  Registry r;
  r.gauge("x_info", "a \\ b\nc \"q\"", {{"path", "C:\\dir\n\"x\""}}).set(1);
  EXPECT_EQ(prometheus_text(r),
            "# HELP x_info a \\\\ b\\nc \"q\"\n"
            "# TYPE x_info gauge\n"
            "x_info{path=\"C:\\\\dir\\n\\\"x\\\"\"} 1\n");
  EXPECT_NE(openmetrics_text(r).find("# HELP x_info a \\\\ b\\nc \\\"q\\\"\n"), std::string::npos);
}

TEST(TelemetryRegistry, ValuesReadBackExactly) {
  Registry r;
  r.gauge("a", "a").set(0.51);
  r.gauge("b", "b").set(std::nan(""));
  r.gauge("c", "c").set(-INFINITY);
  r.gauge("d", "d").set(1.0 / 3.0);
  const std::string text = prometheus_text(r);
  EXPECT_NE(text.find("\na 0.51\n"), std::string::npos) << text;
  EXPECT_NE(text.find("\nb NaN\n"), std::string::npos);
  EXPECT_NE(text.find("\nc -Inf\n"), std::string::npos);
  EXPECT_NE(text.find("\nd 0.3333333333333333\n"), std::string::npos) << text;  // 16 digits suffice
}

TEST(TelemetryRegistry, RejectsNamesPrometheusWouldReject) {
  Registry r;
  EXPECT_THROW(r.gauge("1bad", "h"), ValueError);
  EXPECT_THROW(r.gauge("ok", "h", {{"__reserved", "x"}}), ValueError);
  EXPECT_THROW(r.gauge("ok2", "h", {{"a", "1"}, {"a", "2"}}), ValueError);
  EXPECT_THROW(r.counter("requests", "h"), ValueError);              // counters end in _total
  EXPECT_THROW(r.gauge("x_seconds", "h", {}, "bytes"), ValueError);  // unit is the suffix
  EXPECT_THROW(r.gauge("x_count", "h"), ValueError);                 // reserved by OpenMetrics
  r.gauge("same", "h");
  EXPECT_THROW(r.counter("same", "h"), ValueError);  // type changes
  EXPECT_THROW(r.gauge("same", "other help"), ValueError);
  EXPECT_THROW(r.counter("c_total", "h").inc(-1), ValueError);
}

TEST(TelemetryRegistry, HandlesAreStableAndSeriesKeepTheirLabels) {
  Registry r;
  Gauge& g = r.gauge("g", "h", {{"k", "v"}});
  g.set(1);
  EXPECT_EQ(&g, &r.gauge("g", "h", {{"k", "v"}}));
  EXPECT_NE(&g, &r.gauge("g", "h", {{"k", "w"}}));
  g.add(2.5);
  EXPECT_EQ(g.value(), 3.5);
}

TEST(TelemetryRegistry, ClearHidesSeriesUntilTheyAreSetAgain) {
  Registry r;
  r.gauge("g", "h", {{"gpu", "0"}}).set(1);
  r.gauge("g", "h", {{"gpu", "1"}}).set(2);
  r.clear("g");
  EXPECT_EQ(prometheus_text(r), "");  // no metadata without samples (promtool rejects it)
  r.gauge("g", "h", {{"gpu", "1"}}).set(3);
  EXPECT_EQ(prometheus_text(r), "# HELP g h\n# TYPE g gauge\ng{gpu=\"1\"} 3\n");
}

TEST(TelemetryRegistry, CollectorsRunAtEachSnapshot) {
  Registry r;
  int calls = 0;
  r.add_collector([&](Registry& reg) { reg.gauge("calls", "h").set(++calls); });
  EXPECT_NE(prometheus_text(r).find("calls 1\n"), std::string::npos);
  EXPECT_NE(openmetrics_text(r).find("calls 2\n"), std::string::npos);
}

TEST(TelemetryRegistry, CounterIncrementsFromManyThreadsAddUp) {
  Registry r;
  Counter& c = r.counter("events_total", "h");
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 10000; ++i) c.inc();
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(c.value(), 40000);
}

TEST(TelemetryRegistry, AcceptHeaderSelectsOpenMetrics) {
  EXPECT_TRUE(wants_openmetrics("application/openmetrics-text; version=1.0.0,text/plain;q=0.5"));
  EXPECT_FALSE(wants_openmetrics("text/plain"));
  EXPECT_FALSE(wants_openmetrics(""));
}

}  // namespace
}  // namespace rcuda::telemetry
