// The data-parallel reducer's one-time work: the check that every rank passed the same
// parameters and buffers, the broadcast of rank 0's values, and the bucket assignment (Note
// [Bucket assignment] in data_parallel_setup.h).
#include "data_parallel_setup.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <sstream>

#include "rcuda/ops/copy.h"
#include "rcuda/ops/creation.h"
#include "rcuda/tensor/autograd_meta.h"

namespace rcuda::dist {
namespace {

// One parameter or buffer as the ranks compare it: enough to print what each rank passed.
// Names longer than the stored prefix and shapes of more dims than kDims are compared by hash.
struct Description {
  static constexpr int kNameWords = 6;  // 48 bytes of the name
  static constexpr int kDims = 8;
  enum Word {
    kKind,  // 0 parameter, 1 buffer
    kNameLength,
    kName,
    kNameHash = kName + kNameWords,
    kDType,
    kRequiresGrad,
    kNDim,
    kShape,
    kShapeHash = kShape + kDims,
    kWords
  };
};
using Row = std::array<int64_t, Description::kWords>;

int64_t fnv1a(const void* data, size_t n, uint64_t h = 1469598103934665603ull) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 1099511628211ull;
  return static_cast<int64_t>(h);
}

Row describe(int64_t kind, const std::string& name, const Tensor& t) {
  Row row{};
  row[Description::kKind] = kind;
  row[Description::kNameLength] = static_cast<int64_t>(name.size());
  std::memcpy(&row[Description::kName], name.data(),
              std::min(name.size(), sizeof(int64_t) * Description::kNameWords));
  row[Description::kNameHash] = fnv1a(name.data(), name.size());
  row[Description::kDType] = static_cast<int64_t>(t.dtype());
  row[Description::kRequiresGrad] = t.requires_grad() ? 1 : 0;
  row[Description::kNDim] = t.dim();
  for (int64_t d = 0; d < t.dim() && d < Description::kDims; ++d)
    row[Description::kShape + d] = t.shape()[d];
  row[Description::kShapeHash] = fnv1a(t.shape().data(), t.shape().size() * sizeof(int64_t));
  return row;
}

// "'fc.weight' [4, 3] float64", as far as the row tells.
std::string row_text(const Row& row) {
  std::ostringstream out;
  const auto length = static_cast<size_t>(row[Description::kNameLength]);
  const size_t stored = std::min(length, sizeof(int64_t) * Description::kNameWords);
  out << "'" << std::string(reinterpret_cast<const char*>(&row[Description::kName]), stored)
      << (stored < length ? "...'" : "'") << " [";
  const int64_t ndim = row[Description::kNDim];
  for (int64_t d = 0; d < ndim && d < Description::kDims; ++d)
    out << (d ? ", " : "") << row[Description::kShape + d];
  out << (ndim > Description::kDims ? ", ...]" : "]");
  const int64_t dtype = row[Description::kDType];
  out << " " << (dtype >= 0 && dtype < kNumDTypes ? dtype_name(static_cast<DType>(dtype)) : "?");
  if (row[Description::kKind] == 0 && row[Description::kRequiresGrad] == 0)
    out << " (not requiring grad)";
  return out.str();
}

// Every rank's `rows` [n, words], rank by rank; all ranks must pass the same n.
std::vector<int64_t> gather_rows(ProcessGroup& group, const std::vector<int64_t>& mine,
                                 int64_t words, Device device) {
  const int64_t n = static_cast<int64_t>(mine.size()) / words;
  Tensor in = ops::from_data(mine.data(), {n, words}, DType::Int64);
  if (!device.is_cpu()) in = ops::to(in, device);
  Tensor out = ops::empty({group.size() * n, words}, TensorOptions(DType::Int64, device));
  group.all_gather(out, in)->wait();
  out = ops::contiguous(ops::to(out, Device()));
  const auto* p = out.data<int64_t>();
  return std::vector<int64_t>(p, p + out.numel());
}

}  // namespace

void check_same_on_every_rank(ProcessGroup& group, const NamedTensors& parameters,
                              const NamedTensors& buffers, Device device) {
  const int size = group.size();
  const std::vector<int64_t> counts = gather_rows(
      group, {static_cast<int64_t>(parameters.size()), static_cast<int64_t>(buffers.size())}, 2,
      device);
  const auto parameters_of = [&](int rank) { return counts[2 * static_cast<size_t>(rank)]; };
  const auto buffers_of = [&](int rank) { return counts[2 * static_cast<size_t>(rank) + 1]; };
  for (int r = 1; r < size; ++r) {
    if (parameters_of(r) == parameters_of(0) && buffers_of(r) == buffers_of(0)) continue;
    std::ostringstream out;
    out << "DataParallel: the ranks passed different numbers of tensors:";
    for (int q = 0; q < size; ++q)
      out << (q ? ";" : "") << " rank " << q << ": " << parameters_of(q) << " parameters, "
          << buffers_of(q) << " buffers";
    throw DistError(out.str());
  }
  std::vector<int64_t> mine;
  for (const auto& [name, t] : parameters) {
    const Row row = describe(0, name, t);
    mine.insert(mine.end(), row.begin(), row.end());
  }
  for (const auto& [name, t] : buffers) {
    const Row row = describe(1, name, t);
    mine.insert(mine.end(), row.begin(), row.end());
  }
  const size_t n = parameters.size() + buffers.size();
  if (n == 0) return;
  const std::vector<int64_t> all = gather_rows(group, mine, Description::kWords, device);
  const auto row_of = [&](int rank, size_t i) {
    Row row;
    std::copy_n(all.begin() + (static_cast<size_t>(rank) * n + i) * Description::kWords,
                Description::kWords, row.begin());
    return row;
  };
  for (size_t i = 0; i < n; ++i) {
    const Row first = row_of(0, i);
    for (int r = 1; r < size; ++r) {
      const Row other = row_of(r, i);
      if (other == first) continue;
      const bool parameter = i < parameters.size();
      const size_t index = parameter ? i : i - parameters.size();
      throw DistError(::rcuda::detail::concat(
          "DataParallel: the ranks passed different ", parameter ? "parameters" : "buffers", ": ",
          parameter ? "parameter " : "buffer ", index, " is ", row_text(first), " on rank 0 but ",
          row_text(other), " on rank ", r,
          " (every rank must pass the same names, shapes and dtypes in the same order)"));
    }
  }
}

void broadcast_from_rank0(ProcessGroup& group, const std::vector<Tensor>& tensors,
                          int64_t chunk_bytes) {
  NoGradGuard no_grad;
  size_t begin = 0;
  while (begin < tensors.size()) {
    const DType dtype = tensors[begin].dtype();
    const Device device = tensors[begin].device();
    int64_t numel = tensors[begin].numel();
    size_t end = begin + 1;
    while (end < tensors.size() && tensors[end].dtype() == dtype &&
           tensors[end].device() == device &&
           static_cast<int64_t>((numel + tensors[end].numel()) * tensors[end].element_size()) <=
               chunk_bytes)
      numel += tensors[end++].numel();
    if (numel > 0) {
      Tensor flat = ops::empty({numel}, TensorOptions(dtype, device));
      std::vector<Tensor> views;
      int64_t offset = 0;
      for (size_t i = begin; i < end; ++i) {
        const Tensor& t = tensors[i];
        views.push_back(flat.slice(0, offset, offset + t.numel()).view(t.shape()));
        offset += t.numel();
        if (t.numel() > 0) ops::copy_(views.back(), t);
      }
      group.broadcast(flat, 0)->wait();
      if (group.rank() != 0)
        for (size_t i = begin; i < end; ++i)
          if (tensors[i].numel() > 0) ops::copy_(tensors[i], views[i - begin]);
    }
    begin = end;
  }
}

std::vector<std::vector<size_t>> assign_buckets(const std::vector<Tensor>& tensors,
                                                int64_t first_bucket_bytes, int64_t bucket_bytes) {
  struct Open {
    DType dtype;
    Device device;
    std::vector<size_t> members;
    int64_t bytes = 0;
    bool first = true;
  };
  std::vector<Open> open;  // one per (dtype, device), in the order first seen
  std::vector<std::vector<size_t>> buckets;
  for (size_t i = tensors.size(); i-- > 0;) {
    const Tensor& t = tensors[i];
    auto it = std::find_if(open.begin(), open.end(), [&](const Open& o) {
      return o.dtype == t.dtype() && o.device == t.device();
    });
    if (it == open.end()) it = open.insert(open.end(), Open{t.dtype(), t.device(), {}, 0, true});
    it->members.push_back(i);
    it->bytes += t.numel() * static_cast<int64_t>(t.element_size());
    if (it->bytes >= (it->first ? first_bucket_bytes : bucket_bytes)) {
      buckets.push_back(std::move(it->members));
      it->members.clear();
      it->bytes = 0;
      it->first = false;
    }
  }
  for (Open& o : open)
    if (!o.members.empty()) buckets.push_back(std::move(o.members));
  // In reverse order, the earliest first tensor is the highest index.
  std::stable_sort(buckets.begin(), buckets.end(),
                   [](const auto& a, const auto& b) { return a.front() > b.front(); });
  return buckets;
}

}  // namespace rcuda::dist
