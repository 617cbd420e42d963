// Mutated valid requests (fixed seed): byte flips, truncation, JSON fields deleted or replaced,
// wrong binary header lengths. Every one is answered, 2xx or 4xx (503 allowed: a full queue),
// never a 5xx or a dropped connection; then a correct request is still answered correctly.
#include "server_test_util.h"

namespace rcuda::server::test {
namespace {

constexpr int kMutations = 500;

// A JSON value of another kind than the one it replaces.
json odd_value(std::mt19937& gen) {
  switch (gen() % 8) {
    case 0:
      return nullptr;
    case 1:
      return -1;
    case 2:
      return "x";
    case 3:
      return json::array();
    case 4:
      return json::object();
    case 5:
      return 1e300;
    case 6:
      return json::array({json::array({1, 2}), 3});
    default:
      return true;
  }
}

// Every JSON pointer of `value` (objects' keys and arrays' elements), up to a depth.
void pointers(const json& value, const json::json_pointer& at, std::vector<json::json_pointer>& out,
              int depth) {
  if (depth > 4) return;
  if (value.is_object())
    for (const auto& item : value.items()) {
      out.push_back(at / item.key());
      pointers(item.value(), at / item.key(), out, depth + 1);
    }
  if (value.is_array())
    for (size_t i = 0; i < value.size() && i < 20; ++i) {
      out.push_back(at / i);
      pointers(value[i], at / i, out, depth + 1);
    }
}

struct Mutated {
  std::string body;
  httplib::Headers headers;
};

Mutated mutate(std::mt19937& gen) {
  const std::vector<float> x = random_rows(1 + static_cast<int>(gen() % 4), gen());
  const bool binary = gen() % 3 == 0;
  Mutated m;
  json request;
  size_t header_length = 0;
  if (binary) {
    const BinaryRequest b = infer_binary(x, gen() % 2 == 0);
    m.body = b.body;
    header_length = b.header_length;
    request = json::parse(b.body.substr(0, b.header_length));
  } else {
    request = infer_json(x, "fuzz");
    m.body = request.dump();
  }
  switch (gen() % 6) {
    case 0: {  // byte flips
      const int flips = 1 + static_cast<int>(gen() % 4);
      for (int i = 0; i < flips; ++i)
        m.body[gen() % m.body.size()] ^= static_cast<char>(1 << (gen() % 8));
      break;
    }
    case 1:  // truncation
      m.body.resize(gen() % m.body.size());
      break;
    case 2:
    case 3: {  // a field deleted or replaced
      std::vector<json::json_pointer> all;
      pointers(request, json::json_pointer(), all, 0);
      const json::json_pointer target = all[gen() % all.size()];
      if (gen() % 2 == 0) {
        json& parent = request[target.parent_pointer()];
        if (parent.is_object())
          parent.erase(target.back());
        else
          parent.erase(static_cast<size_t>(std::stoul(target.back())));
      } else {
        request[target] = odd_value(gen);
      }
      const std::string text = request.dump();
      m.body = binary ? text + m.body.substr(header_length) : text;
      header_length = text.size();
      break;
    }
    case 4:  // a wrong binary header length
      header_length = gen() % (m.body.size() + 8);
      if (!binary)
        m.headers.emplace("Inference-Header-Content-Length", std::to_string(header_length));
      break;
    default: {  // junk appended
      const int n = 1 + static_cast<int>(gen() % 16);
      for (int i = 0; i < n; ++i) m.body.push_back(static_cast<char>(gen() % 256));
    }
  }
  if (binary) m.headers.emplace("Inference-Header-Content-Length", std::to_string(header_length));
  return m;
}

TEST(ServerFuzz, MutatedRequestsAreAnswered4xxOrOk) {
  ServerFixture f;
  auto c = f.client();
  std::mt19937 gen(20261207);
  int ok = 0, client_errors = 0;
  for (int i = 0; i < kMutations; ++i) {
    const Mutated m = mutate(gen);
    const char* path = gen() % 10 == 0 ? "/predict" : "/v2/models/mlp/infer";
    auto r = c.Post(path, m.headers, m.body, "application/json");
    ASSERT_TRUE(r) << "mutation " << i << ": no response (" << httplib::to_string(r.error())
                   << ") to " << m.body.substr(0, 300);
    ASSERT_TRUE(r->status < 500 || r->status == 503) << "mutation " << i << ": " << r->status << " "
                                                     << r->body << " to " << m.body.substr(0, 300);
    if (r->status >= 400) {
      EXPECT_FALSE(error_of(r).empty()) << "mutation " << i << ": " << r->body;
      ++client_errors;
    } else {
      ++ok;
    }
  }
  EXPECT_EQ(ok + client_errors, kMutations);
  EXPECT_GT(client_errors, kMutations / 2);  // most mutations break the request

  const std::vector<float> x = random_rows(4, 12345);
  auto r = c.Post("/v2/models/mlp/infer", infer_json(x).dump(), "application/json");
  ASSERT_EQ(r->status, 200) << r->body;
  expect_close(json::parse(r->body)["outputs"][0]["data"].get<std::vector<float>>(), reference(x));
}

}  // namespace
}  // namespace rcuda::server::test
