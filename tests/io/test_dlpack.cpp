// DLPack managed tensors (rcuda/io/dlpack.h): every field of an export read against the tensor,
// round trips of every dtype on the same memory, the ownership rules of Note [DLPack ownership]
// (who calls the deleter, and when), and imports refused without taking ownership. Python's side
// (capsules, NumPy and PyTorch as producers and consumers) is tested in
// r/tests/testthat/test-dlpack.R.
#include <gtest/gtest.h>

#include <cstring>

// Not on the tests' include path: the engine vendors it for src/io only (third_party/dlpack).
#include "../../third_party/dlpack/include/dlpack/dlpack.h"
#include "rcuda/backend/cuda.h"
#include "rcuda/io/dlpack.h"
#include "rcuda/ops/copy.h"
#include "support/reference.h"

namespace rcuda::test {
namespace {

using io::DLPackExportOptions;

constexpr DType kEveryDType[] = {
    DType::Bool,         DType::UInt8,      DType::Int8,      DType::Int16,     DType::Int32,
    DType::Int64,        DType::Float16,    DType::BFloat16,  DType::Float32,   DType::Float64,
    DType::Float8E4M3FN, DType::Float8E5M2, DType::Complex64, DType::Complex128};

// A producer's managed tensor made by hand over `values` (float64), whose deleter counts its calls.
struct HandMade {
  std::vector<double> values;
  std::vector<int64_t> shape, strides;
  DLManagedTensorVersioned managed{};
  int deleted = 0;

  HandMade(std::vector<double> v, std::vector<int64_t> shape_, std::vector<int64_t> strides_ = {})
      : values(std::move(v)), shape(std::move(shape_)), strides(std::move(strides_)) {
    managed.version = {DLPACK_MAJOR_VERSION, DLPACK_MINOR_VERSION};
    managed.manager_ctx = this;
    managed.deleter = [](DLManagedTensorVersioned* self) {
      ++static_cast<HandMade*>(self->manager_ctx)->deleted;
    };
    DLTensor& dl = managed.dl_tensor;
    dl.data = values.data();
    dl.device = {kDLCPU, 0};
    dl.ndim = static_cast<int32_t>(shape.size());
    dl.dtype = {kDLFloat, 64, 1};
    dl.shape = shape.data();
    dl.strides = strides.empty() ? nullptr : strides.data();
  }
};

TEST(DLPack, ExportDescribesTheTensorItLends) {
  Tensor base = random_tensor({4, 6}, DType::Float32);
  Tensor view = base.slice(1, 1, 6, 2).transpose(0, 1);  // [3, 4], strides (2, 6), offset 1
  DLManagedTensorVersioned* m = io::to_dlpack_versioned(view, {});
  EXPECT_EQ(m->version.major, 1u);
  EXPECT_EQ(m->version.minor, 1u);
  EXPECT_EQ(m->flags, 0u);
  const DLTensor& dl = m->dl_tensor;
  EXPECT_EQ(dl.device.device_type, kDLCPU);
  EXPECT_EQ(dl.ndim, 2);
  EXPECT_EQ(std::vector<int64_t>(dl.shape, dl.shape + 2), (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(std::vector<int64_t>(dl.strides, dl.strides + 2), (std::vector<int64_t>{2, 6}));
  EXPECT_EQ(dl.data, view.data_ptr());  // the first element, byte_offset 0
  EXPECT_EQ(dl.byte_offset, 0u);
  EXPECT_EQ(dl.dtype.code, kDLFloat);
  EXPECT_EQ(dl.dtype.bits, 32);
  EXPECT_EQ(dl.dtype.lanes, 1);
  m->deleter(m);
}

TEST(DLPack, EveryDTypeRoundTripsOnTheSameMemory) {
  for (DType dtype : kEveryDType) {
    SCOPED_TRACE(dtype_name(dtype));
    Tensor t = Tensor::empty({3, 5}, dtype);
    std::memset(t.data_ptr(), 0, 15 * t.element_size());
    for (bool versioned : {true, false}) {
      Tensor back = versioned ? io::from_dlpack(io::to_dlpack_versioned(t, {}), false)
                              : io::from_dlpack(io::to_dlpack(t, {}), false);
      EXPECT_EQ(back.dtype(), dtype);
      EXPECT_EQ(back.shape(), t.shape());
      EXPECT_EQ(back.strides(), t.strides());
      EXPECT_EQ(back.data_ptr(), t.data_ptr());
    }
  }
}

TEST(DLPack, AWriteThroughTheImportIsSeenByTheSource) {
  Tensor t = random_tensor({2, 3}, DType::Float64);
  Tensor back = io::from_dlpack(io::to_dlpack_versioned(t.t(), {}), false);
  EXPECT_EQ(back.shape(), (Shape{3, 2}));
  back.data<double>()[1] = 42;  // the second element in memory: t[0, 1]
  EXPECT_EQ(to_doubles(t)[1], 42);
}

TEST(DLPack, TheLoanOutlivesTheTensorAndEndsWithTheDeleter) {
  const io::DLPackCounts before = io::dlpack_counts();
  DLManagedTensor* m = nullptr;
  std::vector<double> expected;
  {
    Tensor t = random_tensor({100}, DType::Float64);
    expected = to_doubles(t);
    m = io::to_dlpack(t, {});
  }  // rcuda's last handle is gone; the loan keeps the memory
  const double* data = static_cast<const double*>(m->dl_tensor.data);
  EXPECT_EQ(std::vector<double>(data, data + 100), expected);
  EXPECT_EQ(io::dlpack_counts().exported - before.exported, 1);
  EXPECT_EQ(io::dlpack_counts().exports_deleted - before.exports_deleted, 0);
  io::delete_managed(m);
  EXPECT_EQ(io::dlpack_counts().exports_deleted - before.exports_deleted, 1);
}

TEST(DLPack, AnImportCallsTheProducersDeleterOnceWhenItsLastViewDies) {
  HandMade producer({1, 2, 3, 4, 5, 6}, {2, 3});
  {
    Tensor t = io::from_dlpack(&producer.managed, false);
    Tensor view = t.select(0, 1);
    t = Tensor();
    EXPECT_EQ(producer.deleted, 0);
    EXPECT_EQ(to_doubles(view), (std::vector<double>{4, 5, 6}));
  }
  EXPECT_EQ(producer.deleted, 1);
}

TEST(DLPack, ByteOffsetAndStridesOfTheProducerAreHonoured) {
  // data at the buffer's start, the tensor 2 elements in: a [2, 2] view with strides (1, 3).
  HandMade producer({-1, -1, 10, 20, 30, 40, 50, 60}, {2, 2}, {1, 3});
  producer.managed.dl_tensor.byte_offset = 2 * sizeof(double);
  Tensor t = io::from_dlpack(&producer.managed, false);
  EXPECT_EQ(t.strides(), (Strides{1, 3}));
  EXPECT_EQ(to_doubles(t), (std::vector<double>{10, 40, 20, 50}));
  EXPECT_EQ(t.storage()->nbytes(), 5 * sizeof(double));  // first to last element reached
}

TEST(DLPack, NullStridesMeanRowMajorAndEmptyTensorsNeedNoData) {
  HandMade contiguous({1, 2, 3, 4, 5, 6}, {3, 2});
  EXPECT_EQ(io::from_dlpack(&contiguous.managed, false).strides(), (Strides{2, 1}));
  HandMade empty({}, {0, 4});
  empty.managed.dl_tensor.data = nullptr;
  Tensor t = io::from_dlpack(&empty.managed, false);
  EXPECT_EQ(t.shape(), (Shape{0, 4}));
  EXPECT_EQ(t.numel(), 0);
}

TEST(DLPack, RefusedImportsLeaveTheLoanWithTheCaller) {
  auto refused = [](HandMade& producer, const char* expected) {
    const std::string message =
        error_message([&] { io::from_dlpack(&producer.managed, false, "from_dlpack"); });
    EXPECT_NE(message.find(expected), std::string::npos) << message;
    EXPECT_EQ(producer.deleted, 0);  // still the caller's (an unconsumed capsule's) to delete
  };
  HandMade uint16({1, 2}, {2});
  uint16.managed.dl_tensor.dtype = {kDLUInt, 16, 1};
  refused(uint16, "from_dlpack: obj's dtype (code 1 (uint), 16 bits, 1 lane) has no rcuda dtype");
  HandMade vector_type({1, 2}, {1});
  vector_type.managed.dl_tensor.dtype = {kDLFloat, 32, 2};
  refused(vector_type, "2 lanes) has no rcuda dtype");
  HandMade reversed({1, 2, 3}, {3}, {-1});
  refused(reversed, "from_dlpack: obj has the negative stride -1 in dim 0");
  HandMade read_only({1, 2, 3}, {3});
  read_only.managed.flags = DLPACK_FLAG_BITMASK_READ_ONLY;
  refused(read_only, "from_dlpack: obj is read-only");
  HandMade future({1, 2, 3}, {3});
  future.managed.version.major = 2;
  refused(future, "obj is a DLPack 2.1 tensor, and rcuda reads DLPack 1.x");
  HandMade opencl({1, 2, 3}, {3});
  opencl.managed.dl_tensor.device = {kDLOpenCL, 0};
  refused(opencl, "from_dlpack: obj is on DLPack device type 4");
  HandMade negative({1, 2, 3}, {3});
  negative.shape[0] = -3;
  refused(negative, "negative size");
}

TEST(DLPack, ACopyIsTheCallersOwnAndEndsTheLoanAtOnce) {
  HandMade producer({1, 2, 3}, {3});
  producer.managed.flags = DLPACK_FLAG_BITMASK_READ_ONLY;
  Tensor copy = io::from_dlpack(&producer.managed, true);
  EXPECT_EQ(producer.deleted, 1);
  EXPECT_NE(copy.data_ptr(), static_cast<void*>(producer.values.data()));
  EXPECT_EQ(to_doubles(copy), (std::vector<double>{1, 2, 3}));
}

TEST(DLPack, ExportsRefuseWhatTheProtocolForbids) {
  Tensor t = random_tensor({3}, DType::Float32);
  DLPackExportOptions options;
  options.stream = 5;
  EXPECT_NE(error_message([&] {
              io::to_dlpack(t, options);
            }).find("__dlpack__: stream must be None for a CPU tensor, got 5"),
            std::string::npos);
  options.stream = -1;  // "no ordering" is allowed everywhere
  io::delete_managed(io::to_dlpack(t, options));
  Tensor leaf = random_tensor({3}, DType::Float32);
  leaf.requires_grad_(true);
  EXPECT_NE(error_message([&] { io::to_dlpack(leaf, {}); }).find("requires grad"),
            std::string::npos);
}

TEST(DLPack, ACopiedExportIsFlaggedAndSeparate) {
  Tensor t = random_tensor({4}, DType::Float64);
  DLPackExportOptions options;
  options.copy = true;
  DLManagedTensorVersioned* m = io::to_dlpack_versioned(t, options);
  EXPECT_EQ(m->flags, DLPACK_FLAG_BITMASK_IS_COPIED);
  EXPECT_NE(m->dl_tensor.data, t.data_ptr());
  const double* data = static_cast<const double*>(m->dl_tensor.data);
  EXPECT_EQ(std::vector<double>(data, data + 4), to_doubles(t));
  io::delete_managed(m);
}

TEST(DLPack, DevicesMapBothWays) {
  EXPECT_EQ(io::dlpack_device(Device()).type, io::kDLPackCPU);
  EXPECT_EQ(io::device_from_dlpack(kDLCUDAHost, 0, "from_dlpack"), Device());
  EXPECT_FALSE(io::consumer_stream(Device()).has_value());
  if (cuda::device_count() == 0) {
    EXPECT_NE(error_message([] {
                io::device_from_dlpack(kDLCUDA, 0, "from_dlpack");
              }).find("from_dlpack: obj is on"),
              std::string::npos);
  } else {
    EXPECT_EQ(io::device_from_dlpack(kDLCUDA, 0, "from_dlpack"), Device(DeviceType::CUDA, 0));
    EXPECT_GT(*io::consumer_stream(Device(DeviceType::CUDA, 0)), 2);  // rcuda's own stream
  }
}

TEST(DLPackCuda, AnExportOrdersTheConsumersStreamAndKeepsTheMemory) {
  if (cuda::device_count() == 0) GTEST_SKIP() << "needs a CUDA device";
  Tensor host = random_tensor({1 << 20}, DType::Float32);
  Tensor t = ops::to(host, Device(DeviceType::CUDA, 0));
  DLPackExportOptions options;
  options.stream = 1;  // the legacy default stream waits for rcuda's copy above
  DLManagedTensorVersioned* m = io::to_dlpack_versioned(t, options);
  EXPECT_EQ(m->dl_tensor.device.device_type, kDLCUDA);
  EXPECT_EQ(m->dl_tensor.data, t.data_ptr());
  Tensor back = io::from_dlpack(m, false);
  EXPECT_EQ(back.device(), t.device());
  EXPECT_EQ(to_doubles(ops::to(back, Device())), to_doubles(host));
}

}  // namespace
}  // namespace rcuda::test
