// Memory formats of 4-D [N, C, H, W] tensors: plain contiguous (NCHW) or channels-last (the
// elements stored as [N, H, W, C], PyTorch's torch.channels_last), as layers that take strides
// (cuDNN, oneDNN) read them. Metadata only; nothing here touches data.
//
// Note [Channels-last tensors]
// A channels-last tensor keeps its [N, C, H, W] shape; only its strides differ: (H*W*C, 1, W*C, C).
// Where a tensor fits both formats (C == 1, or H == W == 1) its strides decide as in PyTorch's
// suggest_memory_format: exactly the channels-last strides and not exactly the contiguous ones
// mean channels-last. Strides of size-1 dims never change which elements are read, so a tensor
// that fits a format apart from them is re-strided without a copy (fits_memory_format).
#pragma once

#include <utility>

#include "rcuda/tensor/tensor.h"

namespace rcuda {

enum class MemoryFormat : uint8_t { Contiguous, ChannelsLast };

inline const char* memory_format_name(MemoryFormat f) {
  return f == MemoryFormat::ChannelsLast ? "channels-last" : "contiguous";
}

// The dense strides of `shape` (4-D for ChannelsLast) in format f.
inline Strides memory_format_strides(const Shape& shape, MemoryFormat f) {
  if (f == MemoryFormat::Contiguous || shape.size() != 4) return contiguous_strides(shape);
  const int64_t c = shape[1], h = shape[2], w = shape[3];
  return {h * w * c, 1, w * c, c};
}

// Whether t's elements are laid out densely in format f, ignoring the strides of size-1 dims
// (and everything for empty tensors).
inline bool fits_memory_format(const Tensor& t, MemoryFormat f) {
  if (f == MemoryFormat::ChannelsLast && t.dim() != 4) return false;
  if (t.numel() == 0) return true;
  const Strides expected = memory_format_strides(t.shape(), f);
  for (int64_t d = 0; d < t.dim(); ++d)
    if (t.shape()[d] != 1 && t.strides()[d] != expected[d]) return false;
  return true;
}

// The format a 4-D tensor is in (Note [Channels-last tensors]); Contiguous for any other tensor,
// and for one in neither format (it is copied into a contiguous one where a format is needed).
inline MemoryFormat suggest_memory_format(const Tensor& t) {
  if (t.dim() != 4) return MemoryFormat::Contiguous;
  const Strides& s = t.strides();
  if (s == memory_format_strides(t.shape(), MemoryFormat::ChannelsLast) &&
      s != contiguous_strides(t.shape()))
    return MemoryFormat::ChannelsLast;
  if (fits_memory_format(t, MemoryFormat::Contiguous)) return MemoryFormat::Contiguous;
  return fits_memory_format(t, MemoryFormat::ChannelsLast) ? MemoryFormat::ChannelsLast
                                                           : MemoryFormat::Contiguous;
}

// A new uninitialised tensor of `shape` in format f (not a view: it owns its storage).
inline Tensor empty_with_format(const Shape& shape, DType dtype, Device device, MemoryFormat f) {
  if (f == MemoryFormat::Contiguous || shape.size() != 4)
    return Tensor::empty(shape, dtype, device);
  Tensor stored = Tensor::empty({shape[0], shape[2], shape[3], shape[1]}, dtype, device);
  Tensor t = stored.alias();
  t.impl()->shape = shape;
  t.impl()->strides = memory_format_strides(shape, f);
  return t;
}

// A new uninitialised tensor of t's shape laid out as t is when t is dense in some order (t's
// strides, no offset: a channels-last parameter's gradient or optimizer state); contiguous when
// t is contiguous or not dense.
inline Tensor empty_like_layout(const Tensor& t, DType dtype) {
  if (t.is_contiguous() || !t.is_non_overlapping_and_dense())
    return Tensor::empty(t.shape(), dtype, t.device());
  Tensor stored = Tensor::empty({t.numel()}, dtype, t.device());
  Tensor out = stored.alias();
  out.impl()->shape = t.shape();
  out.impl()->strides = t.strides();
  return out;
}

}  // namespace rcuda
