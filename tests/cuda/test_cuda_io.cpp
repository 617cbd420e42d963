// CUDA tensors in safetensors files, and the pinned host cache (Note [Pinned host cache] in
// src/backend/cuda/pinned.cpp): saved CUDA tensors (contiguous or not) hold their values, files
// load onto the GPU, and a pinned block is never reused while a copy still reads it.
#include <gtest/gtest.h>

#include "io/io_test_util.h"
#include "rcuda/io/safetensors.h"
#include "support/devices.h"

namespace rcuda {
namespace {

using test::kCuda;
using test::on_cuda;
using test::random_tensor;
using test::to_doubles;
using test::values;

class CudaSafetensorsTest : public test::SafetensorsTest {};

TEST_F(CudaSafetensorsTest, CudaTensorsAreSavedAndLoadedOntoTheGpu) {
  RCUDA_REQUIRE_CUDA();
  const Tensor a = random_tensor({5, 7}, DType::Float32);
  const Tensor b = random_tensor({4, 6}, DType::BFloat16);
  const Tensor a_gpu = on_cuda(a);
  const Tensor b_view = on_cuda(b).transpose(0, 1).slice(0, 1, 6, 2);  // strided, on the GPU
  ASSERT_FALSE(b_view.is_contiguous());
  const std::string path = file("gpu.safetensors");
  io::save_safetensors(path, {{"a", a_gpu}, {"b", b_view}});

  const io::SafetensorsContents on_host = io::load_safetensors(path);
  ASSERT_EQ(on_host.tensors.size(), 2u);
  EXPECT_TRUE(on_host.tensors[0].second.device().is_cpu());
  EXPECT_EQ(to_doubles(on_host.tensors[0].second), to_doubles(a));
  EXPECT_EQ(to_doubles(on_host.tensors[1].second), values(b_view));

  const io::SafetensorsContents on_gpu = io::load_safetensors(path, kCuda);
  ASSERT_EQ(on_gpu.tensors.size(), 2u);
  for (const auto& [name, t] : on_gpu.tensors) EXPECT_EQ(t.device(), kCuda) << name;
  EXPECT_EQ(values(on_gpu.tensors[0].second), to_doubles(a));
  EXPECT_EQ(values(on_gpu.tensors[1].second), values(b_view));
}

TEST(CudaPinnedCache, PinnedTensorsArePinnedAndHoldTheirValues) {
  RCUDA_REQUIRE_CUDA();
  const Tensor t = test::transposed_copy(random_tensor({33, 17}, DType::Float64));
  const Tensor pinned = cuda::pin_memory(t);
  EXPECT_TRUE(cuda::is_pinned(pinned));
  EXPECT_FALSE(cuda::is_pinned(contiguous(t)));
  EXPECT_TRUE(pinned.is_contiguous());
  EXPECT_EQ(to_doubles(pinned), to_doubles(t));
  EXPECT_EQ(cuda::pin_memory(random_tensor({0, 3}, DType::Float32)).numel(), 0);
}

// Each batch is pinned, copied to the GPU asynchronously and dropped at once, as a data loader
// does: the next batch of the same size would reuse the block, so if the cache handed it out
// before the copy had read it, an earlier GPU tensor would hold a later batch's values.
TEST(CudaPinnedCache, ABlockIsNotReusedWhileACopyReadsIt) {
  RCUDA_REQUIRE_CUDA();
  constexpr int kBatches = 24;
  std::vector<Tensor> sources, on_gpu;
  for (int i = 0; i < kBatches; ++i) {
    sources.push_back(random_tensor({256, 1024}, DType::Float32));  // 1 MiB: a visible copy
    Tensor pinned = cuda::pin_memory(sources.back());
    on_gpu.push_back(to(pinned, kCuda));  // asynchronous: the copy may still run below
  }                                       // each pinned tensor died right after its copy was queued
  cuda::synchronize(0);
  for (int i = 0; i < kBatches; ++i)
    EXPECT_EQ(values(on_gpu[i]), to_doubles(sources[i])) << "batch " << i;
  cuda::empty_cache(0);  // gives the idle blocks back; new pins still work
  const Tensor again = random_tensor({256, 1024}, DType::Float32);
  EXPECT_EQ(values(to(cuda::pin_memory(again), kCuda)), to_doubles(again));
}

}  // namespace
}  // namespace rcuda
