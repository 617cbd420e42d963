// Every loaded model version's ModelStats as rcuda_inference_* metrics labelled {model, version}
// (docs/serving.md maps them to Triton's nv_inference_*). Durations are in seconds, as
// Prometheus wants base units. The counts of rows and of batches are named
// rcuda_inference_inferences_total and rcuda_inference_executions_total: OpenMetrics reserves
// names ending in _count (Triton's nv_inference_count), which the registry refuses.
#include <string>

#include "rcuda/runtime/repository.h"

namespace rcuda::runtime {
namespace {

struct CounterMetric {
  const char* name;
  const char* help;
  const char* unit;
  double (*value)(const ModelStats&);
};

constexpr double kMicro = 1e-6;

const CounterMetric kCounters[] = {
    {"rcuda_inference_request_success_total", "Requests answered with outputs.", "",
     [](const ModelStats& s) { return static_cast<double>(s.request_success); }},
    {"rcuda_inference_request_failure_total",
     "Requests answered with an error (refused, timed out or failed).", "",
     [](const ModelStats& s) { return static_cast<double>(s.request_failure); }},
    {"rcuda_inference_inferences_total", "Batch rows run (a request of 4 rows counts 4).", "",
     [](const ModelStats& s) { return static_cast<double>(s.inference_count); }},
    {"rcuda_inference_executions_total", "Batches run.", "",
     [](const ModelStats& s) { return static_cast<double>(s.execution_count); }},
    {"rcuda_inference_request_duration_seconds_total",
     "Time from submit to answer of successful requests.", "seconds",
     [](const ModelStats& s) { return kMicro * static_cast<double>(s.request_duration_us); }},
    {"rcuda_inference_queue_duration_seconds_total", "Time requests waited in the queue.",
     "seconds",
     [](const ModelStats& s) { return kMicro * static_cast<double>(s.queue_duration_us); }},
    {"rcuda_inference_compute_input_duration_seconds_total",
     "Time joining, padding and copying inputs to the device, per request.", "seconds",
     [](const ModelStats& s) { return kMicro * static_cast<double>(s.compute_input_duration_us); }},
    {"rcuda_inference_compute_infer_duration_seconds_total", "Time running the model, per request.",
     "seconds",
     [](const ModelStats& s) { return kMicro * static_cast<double>(s.compute_infer_duration_us); }},
    {"rcuda_inference_compute_output_duration_seconds_total",
     "Time copying outputs back and splitting them, per request.", "seconds",
     [](const ModelStats& s) {
       return kMicro * static_cast<double>(s.compute_output_duration_us);
     }},
};

constexpr const char* kPending = "rcuda_inference_pending_requests";
constexpr const char* kPendingHelp = "Requests waiting in the queue.";

}  // namespace

void ModelRepository::export_metrics(telemetry::Registry& registry) const {
  // Registered here, so that a name the registry refuses fails now rather than at a scrape.
  for (const CounterMetric& m : kCounters) registry.counter(m.name, m.help, {}, m.unit);
  registry.gauge(kPending, kPendingHelp);
  for (const CounterMetric& m : kCounters) registry.clear(m.name);
  registry.clear(kPending);

  registry.add_collector([this](telemetry::Registry& r) {
    // Series of versions no longer loaded disappear: every scrape starts from none.
    for (const CounterMetric& m : kCounters) r.clear(m.name);
    r.clear(kPending);
    for (const std::string& name : loaded())
      for (int64_t version : versions(name)) {
        std::shared_ptr<ServedModel> model;
        try {
          model = find(name, std::to_string(version));
        } catch (const InferError&) {
          continue;  // unloaded since loaded() was read
        }
        const ModelStats stats = model->stats();
        const telemetry::Labels labels{{"model", name}, {"version", std::to_string(version)}};
        for (const CounterMetric& m : kCounters)
          r.counter(m.name, m.help, labels, m.unit).set_total(m.value(stats));
        r.gauge(kPending, kPendingHelp, labels)
            .set(static_cast<double>(stats.pending_request_count));
      }
  });
}

}  // namespace rcuda::runtime
