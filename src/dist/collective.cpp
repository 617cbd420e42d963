// The argument checks and fingerprints of collective.h.
#include "dist/collective.h"

#include <cstdio>
#include <map>
#include <sstream>

namespace rcuda::dist {

namespace {

constexpr const char* kCollectiveNames[] = {"all_reduce", "broadcast", "all_gather",
                                            "reduce_scatter", "barrier"};
static_assert(sizeof(kCollectiveNames) / sizeof(kCollectiveNames[0]) == kNumCollectives);

// The shape's words come before the output size, so that a differing shape is named as such.
enum Word { kCollective, kSequence, kOp, kRoot, kDType, kNdim, kShapeHash, kOutNumel, kDims };

std::string shape_text(const Shape& shape) {
  std::ostringstream out;
  out << "[";
  for (size_t i = 0; i < shape.size(); ++i) out << (i ? ", " : "") << shape[i];
  out << "]";
  return out.str();
}

// The value of the field that `word` belongs to, as a message shows it.
std::string field_value(const Fingerprint& f, int word) {
  const auto& w = f.words;
  switch (word) {
    case kCollective:
      return w[kCollective] >= 0 && w[kCollective] < kNumCollectives
                 ? kCollectiveNames[w[kCollective]]
                 : std::to_string(w[kCollective]);
    case kOp:
      return reduce_op_name(static_cast<ReduceOp>(w[kOp]));
    case kDType:
      return dtype_name(static_cast<DType>(w[kDType]));
    case kSequence:
    case kRoot:
    case kOutNumel:
      return std::to_string(w[word]);
    default: {  // ndim, hash or a dim: the shape as a whole
      if (w[kNdim] > Fingerprint::kMaxDims)
        return std::to_string(w[kNdim]) + "-d shape with hash " + std::to_string(w[kShapeHash]);
      Shape shape(w.begin() + kDims, w.begin() + kDims + w[kNdim]);
      return shape_text(shape);
    }
  }
}

const char* field_name(int word) {
  switch (word) {
    case kCollective:
      return "collective (the ranks called different collectives at this point)";
    case kSequence:
      return "sequence number (a rank called more or fewer collectives before this one)";
    case kOp:
      return "reduce op";
    case kRoot:
      return "root";
    case kDType:
      return "dtype";
    case kOutNumel:
      return "output size";
    default:
      return "shape";
  }
}

}  // namespace

const char* collective_name(Collective c) { return kCollectiveNames[static_cast<int>(c)]; }

std::string call_name(Collective c, int64_t sequence) {
  return std::string(collective_name(c)) + " #" + std::to_string(sequence);
}

std::string seconds_text(std::chrono::milliseconds ms) {
  char text[32];
  std::snprintf(text, sizeof(text), "%g s", static_cast<double>(ms.count()) / 1000.0);
  return text;
}

Fingerprint make_fingerprint(Collective c, int64_t sequence, ReduceOp op, int root, DType dtype,
                             const Shape& shape, int64_t out_numel) {
  Fingerprint f;
  auto& w = f.words;
  w[kCollective] = static_cast<int64_t>(c);
  w[kSequence] = sequence;
  w[kOp] = static_cast<int64_t>(op);
  w[kRoot] = root;
  w[kDType] = static_cast<int64_t>(dtype);
  w[kNdim] = static_cast<int64_t>(shape.size());
  w[kOutNumel] = out_numel;
  uint64_t hash = 1469598103934665603ull;  // FNV-1a over the dims
  for (int64_t d : shape) hash = (hash ^ static_cast<uint64_t>(d)) * 1099511628211ull;
  w[kShapeHash] = static_cast<int64_t>(hash);
  for (size_t i = 0; i < shape.size() && i < static_cast<size_t>(Fingerprint::kMaxDims); ++i)
    w[kDims + i] = shape[i];
  return f;
}

std::string compare_fingerprints(const std::vector<Fingerprint>& by_rank) {
  for (int word = 0; word < Fingerprint::kWords; ++word) {
    bool same = true;
    for (const Fingerprint& f : by_rank) same = same && f.words[word] == by_rank[0].words[word];
    if (same) continue;
    // Group the ranks by the value they hold, in order of first appearance.
    std::vector<std::string> values;
    std::map<std::string, std::vector<size_t>> ranks;
    for (size_t r = 0; r < by_rank.size(); ++r) {
      const std::string v = field_value(by_rank[r], word);
      if (!ranks.count(v)) values.push_back(v);
      ranks[v].push_back(r);
    }
    std::ostringstream out;
    out << "ranks disagree on the " << field_name(word) << ": ";
    for (size_t i = 0; i < values.size(); ++i) {
      const auto& rs = ranks[values[i]];
      out << (i ? "; " : "") << (rs.size() > 1 ? "ranks " : "rank ");
      for (size_t j = 0; j < rs.size(); ++j) out << (j ? ", " : "") << rs[j];
      out << ": " << values[i];
    }
    return out.str();
  }
  return "";
}

void check_tensor(Collective c, const char* argument, const Tensor& t, DeviceType device_type,
                  Backend backend) {
  const char* op = collective_name(c);
  RCUDA_CHECK(t.defined(), ValueError, op, ": ", argument, " is an undefined tensor");
  RCUDA_CHECK(t.device().type == device_type, DeviceError, op, ": the ", backend_name(backend),
              " backend takes ", device_type == DeviceType::CPU ? "CPU" : "CUDA", " tensors, but ",
              argument, " is on ", t.device().str(),
              device_type == DeviceType::CPU ? " (use the nccl backend for CUDA tensors)"
                                             : " (use the mpi backend for CPU tensors)");
  RCUDA_CHECK(t.is_contiguous(), ValueError, op, ": ", argument,
              " must be contiguous, but its shape ", shape_text(t.shape()), " has strides ",
              shape_text(t.strides()), "; pass contiguous(", argument,
              ") and copy the result back");
}

void check_reducible(Collective c, ReduceOp op, DType dtype) {
  const char* name = collective_name(c);
  RCUDA_CHECK(!is_complex(dtype) && !is_float8(dtype), DTypeError, name, ": cannot reduce ",
              dtype_name(dtype), " tensors (broadcast and all_gather move any dtype)");
  RCUDA_CHECK(op != ReduceOp::Avg || is_floating(dtype), DTypeError, name,
              ": avg needs a floating dtype, got ", dtype_name(dtype),
              " (use sum and divide, choosing the rounding)");
}

void check_gather_shapes(Collective c, const Tensor& big, const char* big_name, const Tensor& small,
                         const char* small_name, int size) {
  const char* op = collective_name(c);
  RCUDA_CHECK(big.dtype() == small.dtype(), DTypeError, op, ": ", big_name, " is ",
              dtype_name(big.dtype()), " but ", small_name, " is ", dtype_name(small.dtype()));
  RCUDA_CHECK(big.device() == small.device(), DeviceError, op, ": ", big_name, " is on ",
              big.device().str(), " but ", small_name, " is on ", small.device().str());
  Shape expected = small.shape();
  if (expected.empty()) expected.push_back(1);  // a 0-d input gathers into [size]
  expected[0] *= size;
  RCUDA_CHECK(big.shape() == expected, ShapeError, op, ": ", big_name, " must have shape ",
              shape_text(expected), " (", size, " ranks times ", small_name, "'s ",
              shape_text(small.shape()), " along dim 0), got ", shape_text(big.shape()));
}

void check_root(Collective c, int root, int size) {
  RCUDA_CHECK(root >= 0 && root < size, IndexError, collective_name(c), ": root ", root,
              " is not a rank of this group of ", size);
}

}  // namespace rcuda::dist
