// drain(): requests in flight when it is called are answered 200 with correct outputs; later
// ones get 503 (or a refused connection once the listener has closed); drain returns.
#include <atomic>
#include <chrono>
#include <future>
#include <thread>

#include "server_test_util.h"

namespace rcuda::server::test {
namespace {

TEST(ServerDrain, InFlightAnsweredLaterRefused) {
  TempRepository repository;
  // A long queue delay keeps requests in flight while drain() starts.
  {
    std::ofstream(fs::path(repository.dir()) / "mlp" / "config.json")
        << R"({"max_batch_size": 8, "dynamic_batching": {"max_queue_delay_microseconds": 300000,
              "preferred_batch_size": [8]}})";
  }
  InferenceServer server(test_options(repository.dir()));
  server.start();
  const int port = server.port();

  constexpr int kInFlight = 6;
  std::vector<std::vector<float>> inputs;
  for (int i = 0; i < kInFlight; ++i) inputs.push_back(random_rows(1, 700 + i));
  std::atomic<int> sent{0};
  std::vector<std::future<std::pair<int, std::vector<float>>>> answers;
  for (int i = 0; i < kInFlight; ++i)
    answers.push_back(std::async(std::launch::async, [&, i] {
      httplib::Client c("127.0.0.1", port);
      c.set_read_timeout(30, 0);
      sent++;
      auto r = c.Post("/v2/models/mlp/infer", infer_json(inputs[i]).dump(), "application/json");
      if (!r) return std::make_pair(-1, std::vector<float>{});
      if (r->status != 200) return std::make_pair(r->status, std::vector<float>{});
      return std::make_pair(200,
                            json::parse(r->body)["outputs"][0]["data"].get<std::vector<float>>());
    }));
  while (sent < kInFlight) std::this_thread::yield();
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // all inside the handler

  std::atomic<bool> drained{false};
  std::thread drainer([&] {
    server.drain();
    drained = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_FALSE(server.ready());
  // While draining: new requests 503 (or refused once the listener is gone), ready is 4xx.
  {
    httplib::Client c("127.0.0.1", port);
    auto r = c.Post("/v2/models/mlp/infer", infer_json(inputs[0]).dump(), "application/json");
    if (r) {
      EXPECT_EQ(r->status, 503) << r->body;
      EXPECT_NE(error_of(r).find("shutting down"), std::string::npos);
    }
    auto ready = c.Get("/v2/health/ready");
    if (ready) {
      EXPECT_EQ(ready->status, 400);
    }
  }
  for (int i = 0; i < kInFlight; ++i) {
    const auto [status, data] = answers[i].get();
    EXPECT_EQ(status, 200) << "request " << i;
    if (status == 200) expect_close(data, reference(inputs[i]));
  }
  drainer.join();
  EXPECT_TRUE(drained);
  httplib::Client c("127.0.0.1", port);
  c.set_connection_timeout(1, 0);
  auto after = c.Get("/v2/health/live");
  EXPECT_FALSE(after) << "the listener should be closed after drain";
  server.drain();  // idempotent
}

TEST(ServerDrain, DrainWithoutRequestsAndDestructor) {
  TempRepository repository;
  auto server = std::make_unique<InferenceServer>(test_options(repository.dir()));
  server->start();
  const auto start = std::chrono::steady_clock::now();
  server->drain();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
  server.reset();
  // A server destroyed while serving drains itself.
  auto other = std::make_unique<InferenceServer>(test_options(repository.dir()));
  other->start();
  other.reset();
}

}  // namespace
}  // namespace rcuda::server::test
