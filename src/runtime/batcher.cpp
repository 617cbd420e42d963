// The request queue and the worker threads of a served model (rcuda/runtime/model.h).
//
// Note [Forming a batch]
// Each instance's worker takes the oldest request (the batch's first) and, with dynamic
// batching, walks the rest of the queue oldest first, taking every request whose non-batch input
// shapes equal the first's and whose rows still fit under max_batch_size (a request is never
// split; one that does not fit waits for a later batch, where it will be the oldest). The batch
// runs as soon as
//   - its rows reach max_batch_size, or
//   - some prefix of the walk reaches a preferred_batch_size: the batch is the longest such
//     prefix (the largest preferred size the queue can make now), the rest stays queued, or
//   - max_queue_delay_microseconds have passed since the first request arrived (or the model is
//     stopping): the batch is everything the walk took.
// Otherwise the worker waits for a new request or the delay's end, holding only the first
// request, and walks again. Without dynamic batching each request runs alone.
// A request whose timeout passed before its batch runs is answered Unavailable and never runs.
#include <algorithm>
#include <cstdint>
#include <string>

#include "runtime/served_model.h"

namespace rcuda::runtime {
namespace {

bool same_shape(const PendingRequest& a, const PendingRequest& b) {
  for (size_t k = 0; k < a.inputs.size(); ++k) {
    const Shape& x = a.inputs[k].shape();
    const Shape& y = b.inputs[k].shape();
    if (x.size() != y.size() || !std::equal(x.begin() + 1, x.end(), y.begin() + 1)) return false;
  }
  return true;
}

}  // namespace

void answer_error(PendingRequest& request, InferError::Status status, const std::string& message) {
  request.promise.set_exception(std::make_exception_ptr(InferError(status, message)));
}

std::future<InferResponse> ServedModel::submit(InferRequest request) {
  Impl& m = *impl_;
  std::unique_ptr<PendingRequest> pending;
  try {
    pending = m.check(std::move(request));
  } catch (const InferError&) {
    m.count_failure();
    throw;
  }
  pending->arrival = Clock::now();
  if (pending->timeout_us > 0)
    pending->deadline = pending->arrival + std::chrono::microseconds(pending->timeout_us);
  std::future<InferResponse> answer = pending->promise.get_future();
  std::string refused;
  {
    std::lock_guard<std::mutex> lock(m.mutex);
    const int64_t max_queue_size = m.config.queue_policy().max_queue_size;
    if (m.stopping)
      refused = m.where() + " is stopping: it takes no new requests";
    else if (max_queue_size > 0 && static_cast<int64_t>(m.queue.size()) >= max_queue_size)
      refused = "model '" + m.config.name + "' queue is full (" + std::to_string(max_queue_size) +
                " requests)";
    else
      m.queue.push_back(std::move(pending));
  }
  if (!refused.empty()) {
    m.count_failure();
    throw InferError(InferError::Status::Unavailable, refused);
  }
  // All: an idle worker waits for any request, a gathering one for one more of its shape.
  m.wake.notify_all();
  return answer;
}

void ServedModel::Impl::start_workers() {
  for (auto& instance : instances)
    instance->worker = std::thread([this, i = instance.get()] { worker_loop(*i); });
}

void ServedModel::Impl::worker_loop(Instance& instance) {
  for (;;) {
    std::vector<std::unique_ptr<PendingRequest>> batch = next_batch();
    if (batch.empty()) return;  // stopping, and the queue is drained
    run_batch(instance, batch);
  }
}

std::vector<std::unique_ptr<PendingRequest>> ServedModel::Impl::next_batch() {
  std::unique_lock<std::mutex> lock(mutex);
  for (;;) {
    wake.wait(lock, [&] { return stopping || !queue.empty(); });
    if (queue.empty()) return {};
    std::vector<std::unique_ptr<PendingRequest>> batch;
    batch.push_back(std::move(queue.front()));
    queue.pop_front();
    const PendingRequest& first = *batch.front();
    const DynamicBatching* dynamic = config.dynamic_batching ? &*config.dynamic_batching : nullptr;
    const auto delay_end = first.arrival + std::chrono::microseconds(
                                               dynamic ? dynamic->max_queue_delay_microseconds : 0);
    const std::vector<int64_t> none;
    const std::vector<int64_t>& preferred = dynamic ? dynamic->preferred_batch_size : none;
    auto is_preferred = [&](int64_t rows) {
      return std::binary_search(preferred.begin(), preferred.end(), rows);
    };

    // Note [Forming a batch]
    while (dynamic) {
      const auto now = Clock::now();
      if (first.deadline && now >= *first.deadline) break;  // answered below
      std::vector<size_t> taken;                            // queue positions, oldest first
      int64_t rows = first.rows;
      size_t preferred_prefix = is_preferred(rows) ? 0 : SIZE_MAX;
      for (size_t i = 0; i < queue.size() && rows < config.max_batch_size; ++i) {
        if (!same_shape(first, *queue[i]) || rows + queue[i]->rows > config.max_batch_size)
          continue;
        taken.push_back(i);
        rows += queue[i]->rows;
        if (is_preferred(rows)) preferred_prefix = taken.size();
      }
      size_t count = taken.size();
      if (rows < config.max_batch_size && preferred_prefix != SIZE_MAX)
        count = preferred_prefix;
      else if (rows < config.max_batch_size && !stopping && now < delay_end) {
        auto until = delay_end;
        if (first.deadline) until = std::min(until, *first.deadline);
        wake.wait_until(lock, until);
        continue;
      }
      for (size_t j = 0; j < count; ++j) batch.push_back(std::move(queue[taken[j]]));
      for (size_t j = count; j-- > 0;) queue.erase(queue.begin() + static_cast<long>(taken[j]));
      break;
    }

    const auto now = Clock::now();
    std::vector<std::unique_ptr<PendingRequest>> runnable;
    for (auto& request : batch) {
      if (request->deadline && now >= *request->deadline) {
        count_failure();  // before the answer: a caller that saw it sees the count
        answer_error(*request, InferError::Status::Unavailable,
                     where() + ": request timed out after " + std::to_string(request->timeout_us) +
                         " us in the queue");
      } else {
        runnable.push_back(std::move(request));
      }
    }
    if (!runnable.empty()) return runnable;
  }
}

void ServedModel::Impl::stop() {
  {
    std::lock_guard<std::mutex> lock(mutex);
    stopping = true;
  }
  wake.notify_all();
  // Workers answer what is queued before they see an empty queue and return.
  std::lock_guard<std::mutex> join_lock(join_mutex);
  for (auto& instance : instances)
    if (instance->worker.joinable() && instance->worker.get_id() != std::this_thread::get_id())
      instance->worker.join();
}

}  // namespace rcuda::runtime
