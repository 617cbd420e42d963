// The data-parallel reducer (rcuda/dist/data_parallel.h), after PyTorch's DDP Reducer: a
// post-accumulate hook per parameter marks its gradient ready, a bucket whose gradients are all
// ready is packed into its flat buffer and all-reduced, and an end-of-backward callback waits
// for every bucket and writes the averages back into the gradients.
#include "rcuda/dist/data_parallel.h"

#include <sstream>

#include "data_parallel_setup.h"
#include "rcuda/autograd.h"
#include "rcuda/ops/copy.h"
#include "rcuda/ops/creation.h"

namespace rcuda::dist {

// Note [Buckets reduce in order]
// Every rank must start the same collectives in the same order, but the order in which a
// backward pass accumulates gradients may differ between ranks (a model whose branches run in
// a data-dependent order, or simply ties between independent nodes). So a bucket that becomes
// ready is launched only once every bucket before it has been (PyTorch's next_bucket_): the
// buckets start in index order on every rank, whatever order their gradients came in. A
// bucket's gradients are copied into its flat buffer when it launches; within one pass each
// leaf is accumulated once, so the values do not change between its hook and the launch.
struct DataParallel::Impl {
  struct Slot {
    size_t parameter;  // index into `parameters`
    Tensor view;       // its part of the bucket's flat buffer, in the parameter's shape
    bool ready = false;
  };
  struct Bucket {
    std::vector<Slot> slots;
    Tensor flat;  // one contiguous buffer, allocated once
    size_t ready = 0;
    std::shared_ptr<Work> work;
  };

  std::shared_ptr<ProcessGroup> group;
  DataParallelOptions options;
  NamedTensors parameters, buffers;
  std::vector<Bucket> buckets;
  std::vector<std::pair<size_t, size_t>> slot_of;  // per parameter: (bucket, slot), if bucketed
  std::vector<std::pair<Tensor, int64_t>> hooks;   // the leaf and its hook's id
  bool no_sync = false;
  // The pass in progress: whether its end callback is queued, and the next bucket to launch.
  bool pass_open = false;
  size_t next_bucket = 0;

  void make_buckets();
  void on_accumulated(size_t bucket, size_t slot);
  void launch(Bucket& bucket);
  void finish_pass();
  void reset_pass();
  std::vector<std::string> missing_parameters() const;
};

namespace {

constexpr size_t kNotBucketed = static_cast<size_t>(-1);

// The device the group's collectives take: the CPU for MPI; for NCCL, the device of the
// tensors, which must be CUDA. DeviceError naming the first tensor that does not fit.
Device collective_device(const ProcessGroup& group, const NamedTensors& parameters,
                         const NamedTensors& buffers) {
  const bool nccl = group.backend() == Backend::Nccl;
  Device device = nccl ? Device(DeviceType::CUDA, 0) : Device();
  bool first = true;
  for (const NamedTensors* list : {&parameters, &buffers}) {
    for (const auto& [name, t] : *list) {
      RCUDA_CHECK(t.device().is_cuda() == nccl, DeviceError, "DataParallel: '", name, "' is on ",
                  t.device().str(), " but a ", backend_name(group.backend()), " group reduces ",
                  nccl ? "CUDA" : "CPU", " tensors (NCCL for CUDA models, MPI for CPU ones)");
      if (nccl && first) device = t.device();
      first = false;
    }
  }
  return device;
}

void check_arguments(const ProcessGroup* group, const NamedTensors& parameters,
                     const NamedTensors& buffers, const DataParallelOptions& options) {
  RCUDA_CHECK(group != nullptr, ValueError,
              "DataParallel: the process group is null (call init_process_group first)");
  RCUDA_CHECK(options.bucket_bytes > 0 && options.first_bucket_bytes > 0, ValueError,
              "DataParallel: bucket_bytes and first_bucket_bytes must be positive; got ",
              options.bucket_bytes, " and ", options.first_bucket_bytes);
  for (const NamedTensors* list : {&parameters, &buffers})
    for (const auto& [name, t] : *list)
      RCUDA_CHECK(t.defined(), ValueError, "DataParallel: '", name, "' is an undefined tensor");
  for (size_t i = 0; i < parameters.size(); ++i) {
    const auto& [name, t] = parameters[i];
    RCUDA_CHECK(!t.requires_grad() || t.is_leaf(), ValueError, "DataParallel: parameter '", name,
                "' is computed by an op, not a leaf; pass the tensors the optimizer updates");
    for (size_t j = 0; j < i; ++j)
      RCUDA_CHECK(!parameters[j].second.is_same(t), ValueError, "DataParallel: parameters '",
                  parameters[j].first, "' and '", name,
                  "' are the same tensor; pass each parameter once");
  }
}

std::vector<Tensor> tensors_of(const NamedTensors& named) {
  std::vector<Tensor> out;
  for (const auto& entry : named) out.push_back(entry.second);
  return out;
}

}  // namespace

void DataParallel::Impl::make_buckets() {
  std::vector<size_t> trained;  // the parameters that require grad
  std::vector<Tensor> tensors;
  for (size_t i = 0; i < parameters.size(); ++i) {
    if (!parameters[i].second.requires_grad()) continue;
    trained.push_back(i);
    tensors.push_back(parameters[i].second);
  }
  slot_of.assign(parameters.size(), {kNotBucketed, kNotBucketed});
  for (const std::vector<size_t>& members :
       assign_buckets(tensors, options.first_bucket_bytes, options.bucket_bytes)) {
    Bucket& bucket = buckets.emplace_back();
    int64_t numel = 0;
    for (size_t m : members) numel += tensors[m].numel();
    bucket.flat = ops::empty(
        {numel}, TensorOptions(tensors[members[0]].dtype(), tensors[members[0]].device()));
    int64_t offset = 0;
    for (size_t m : members) {
      const Tensor& t = tensors[m];
      slot_of[trained[m]] = {buckets.size() - 1, bucket.slots.size()};
      bucket.slots.push_back(
          {trained[m], bucket.flat.slice(0, offset, offset + t.numel()).view(t.shape()), false});
      offset += t.numel();
    }
  }
}

// Note [The end of a pass]
// The first hook of a pass queues the callback that finishes it. A pass that fails before its
// callbacks run (a formula throws, or a collective fails in a hook) drops them; the callback
// carries a token whose destructor then clears the half-done pass, so that the next backward
// starts clean rather than waiting on a callback that will never come.
void DataParallel::Impl::on_accumulated(size_t bucket_index, size_t slot_index) {
  if (no_sync) return;
  if (!pass_open) {
    struct PassToken {
      explicit PassToken(Impl* owner) : impl(owner) {}
      ~PassToken() {
        if (!finished) impl->reset_pass();
      }
      PassToken(const PassToken&) = delete;
      PassToken& operator=(const PassToken&) = delete;
      Impl* impl;
      bool finished = false;
    };
    auto token = std::make_shared<PassToken>(this);
    autograd::queue_callback([token] {
      token->finished = true;
      token->impl->finish_pass();
    });
    pass_open = true;
  }
  Bucket& bucket = buckets[bucket_index];
  Slot& slot = bucket.slots[slot_index];
  if (slot.ready) return;
  slot.ready = true;
  ++bucket.ready;
  // Note [Buckets reduce in order]
  while (next_bucket < buckets.size() &&
         buckets[next_bucket].ready == buckets[next_bucket].slots.size())
    launch(buckets[next_bucket++]);
}

void DataParallel::Impl::launch(Bucket& bucket) {
  NoGradGuard no_grad;
  for (const Slot& slot : bucket.slots) {
    const Tensor grad = parameters[slot.parameter].second.grad();
    // A parameter with no gradient in this pass (find_unused_parameters) sends what it has
    // accumulated so far (within no_sync), else zeros, as PyTorch's reducer does.
    if (grad.defined())
      ops::copy_(slot.view, grad);
    else
      ops::fill_(slot.view, 0);
  }
  if (bucket.flat.numel() > 0) bucket.work = group->all_reduce(bucket.flat, ReduceOp::Avg);
}

std::vector<std::string> DataParallel::Impl::missing_parameters() const {
  std::vector<std::string> names;
  for (size_t i = 0; i < parameters.size(); ++i) {
    const auto [b, s] = slot_of[i];
    if (b != kNotBucketed && !buckets[b].slots[s].ready) names.push_back(parameters[i].first);
  }
  return names;
}

void DataParallel::Impl::finish_pass() {
  NoGradGuard no_grad;
  struct Reset {
    Impl* impl;
    ~Reset() { impl->reset_pass(); }
  } reset{this};
  const std::vector<std::string> missing = missing_parameters();
  if (!missing.empty() && !options.find_unused_parameters) {
    // The launched buckets finish first: the other ranks wait on them.
    for (Bucket& bucket : buckets)
      if (bucket.work) bucket.work->wait();
    std::ostringstream names;
    for (size_t i = 0; i < missing.size(); ++i)
      names << (i ? ", " : "") << "'" << missing[i] << "'";
    throw ValueError(::rcuda::detail::concat(
        "DataParallel: ", missing.size() == 1 ? "a parameter" : "parameters",
        " requiring grad got no gradient in this backward pass on rank ", group->rank(), ": ",
        names.str(),
        ". If the model leaves them out on purpose (a branch not taken, a frozen head), pass "
        "find_unused_parameters = TRUE (R) or true (C++) so that they count as zero gradients; "
        "otherwise make the loss depend on them or set requires_grad off"));
  }
  while (next_bucket < buckets.size()) launch(buckets[next_bucket++]);
  for (Bucket& bucket : buckets) {
    if (bucket.work) bucket.work->wait();
    for (const Slot& slot : bucket.slots) {
      const Tensor& parameter = parameters[slot.parameter].second;
      const Tensor grad = parameter.grad();
      if (grad.defined())
        ops::copy_(grad, slot.view);
      else
        parameter.set_grad(ops::clone(slot.view));
    }
  }
}

void DataParallel::Impl::reset_pass() {
  for (Bucket& bucket : buckets) {
    bucket.ready = 0;
    bucket.work.reset();
    for (Slot& slot : bucket.slots) slot.ready = false;
  }
  next_bucket = 0;
  pass_open = false;
}

DataParallel::DataParallel(std::shared_ptr<ProcessGroup> group, NamedTensors parameters,
                           NamedTensors buffers, DataParallelOptions options)
    : impl_(std::make_unique<Impl>()) {
  check_arguments(group.get(), parameters, buffers, options);
  const Device device = collective_device(*group, parameters, buffers);
  impl_->group = std::move(group);
  impl_->options = options;
  impl_->parameters = std::move(parameters);
  impl_->buffers = std::move(buffers);
  ProcessGroup& g = *impl_->group;
  check_same_on_every_rank(g, impl_->parameters, impl_->buffers, device);
  if (g.size() > 1) {
    std::vector<Tensor> all = tensors_of(impl_->parameters);
    for (const Tensor& b : tensors_of(impl_->buffers)) all.push_back(b);
    broadcast_from_rank0(g, all, options.bucket_bytes);
  }
  impl_->make_buckets();
  Impl* impl = impl_.get();
  for (size_t b = 0; b < impl->buckets.size(); ++b) {
    for (size_t s = 0; s < impl->buckets[b].slots.size(); ++s) {
      const Tensor& leaf = impl->parameters[impl->buckets[b].slots[s].parameter].second;
      const int64_t id = autograd::register_post_accumulate_grad_hook(
          leaf, [impl, b, s](const Tensor&) { impl->on_accumulated(b, s); });
      impl->hooks.emplace_back(leaf, id);
    }
  }
}

DataParallel::~DataParallel() {
  for (const auto& [leaf, id] : impl_->hooks) autograd::remove_post_accumulate_grad_hook(leaf, id);
}

void DataParallel::before_forward() {
  if (!impl_->options.broadcast_buffers || impl_->buffers.empty() || impl_->group->size() == 1)
    return;
  broadcast_from_rank0(*impl_->group, tensors_of(impl_->buffers), impl_->options.bucket_bytes);
}

DataParallel::NoSync::NoSync(DataParallel& ddp) : ddp_(ddp), previous_(ddp.impl_->no_sync) {
  ddp_.impl_->no_sync = true;
}

DataParallel::NoSync::~NoSync() { ddp_.impl_->no_sync = previous_; }

std::vector<std::vector<std::string>> DataParallel::buckets() const {
  std::vector<std::vector<std::string>> names;
  for (const Impl::Bucket& bucket : impl_->buckets) {
    std::vector<std::string>& list = names.emplace_back();
    for (const Impl::Slot& slot : bucket.slots)
      list.push_back(impl_->parameters[slot.parameter].first);
  }
  return names;
}

const std::shared_ptr<ProcessGroup>& DataParallel::group() const { return impl_->group; }

}  // namespace rcuda::dist
