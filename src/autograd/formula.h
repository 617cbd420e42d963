// The ops a backward formula calls (Note [Gradients of gradients] in docs/autograd.md):
// formula::mul(g, b) is rcuda::mul, which records, during a backward pass that creates a graph
// (grad mode is on only then), and ops::mul, exactly as before, in every other pass. A relaxed
// load of a global count picks in a plain pass (the thread's grad mode is read only while some
// pass creates a graph); the public ops would also skip recording with grad mode
// off, but they apply autocast, which a plain backward must not (its formulas run in the
// gradients' own dtypes). Non-differentiable ops (comparisons, creation) stay ops:: calls.
#pragma once

#include <atomic>
#include <optional>
#include <vector>

#include "rcuda/autograd/api.h"
#include "rcuda/tensor/autograd_meta.h"

namespace rcuda::autograd::formula {

namespace detail {
// Backward passes with create_graph running on any thread: the plain pass's one load, as the
// funnel's observers_alive (the thread-local grad mode is a call into another library).
extern std::atomic<int> passes_creating_graph;
}  // namespace detail

// True inside a backward pass that creates a graph: formulas record what they compute.
inline bool recording() {
  return detail::passes_creating_graph.load(std::memory_order_relaxed) > 0 &&
         GradMode::is_enabled();
}

inline Tensor add(const Tensor& a, const Tensor& b) {
  return recording() ? rcuda::add(a, b) : ops::add(a, b);
}
inline Tensor add(const Tensor& a, const Scalar& b) {
  return recording() ? rcuda::add(a, b) : ops::add(a, b);
}
inline Tensor sub(const Tensor& a, const Tensor& b) {
  return recording() ? rcuda::sub(a, b) : ops::sub(a, b);
}
inline Tensor sub(const Tensor& a, const Scalar& b) {
  return recording() ? rcuda::sub(a, b) : ops::sub(a, b);
}
inline Tensor mul(const Tensor& a, const Tensor& b) {
  return recording() ? rcuda::mul(a, b) : ops::mul(a, b);
}
inline Tensor mul(const Tensor& a, const Scalar& b) {
  return recording() ? rcuda::mul(a, b) : ops::mul(a, b);
}
inline Tensor div(const Tensor& a, const Tensor& b) {
  return recording() ? rcuda::div(a, b) : ops::div(a, b);
}
inline Tensor div(const Tensor& a, const Scalar& b) {
  return recording() ? rcuda::div(a, b) : ops::div(a, b);
}
inline Tensor pow(const Tensor& a, const Tensor& b) {
  return recording() ? rcuda::pow(a, b) : ops::pow(a, b);
}
inline Tensor pow(const Tensor& a, const Scalar& b) {
  return recording() ? rcuda::pow(a, b) : ops::pow(a, b);
}
inline Tensor neg(const Tensor& x) { return recording() ? rcuda::neg(x) : ops::neg(x); }
inline Tensor abs(const Tensor& x) { return recording() ? rcuda::abs(x) : ops::abs(x); }
inline Tensor sign(const Tensor& x) { return recording() ? rcuda::sign(x) : ops::sign(x); }
inline Tensor exp(const Tensor& x) { return recording() ? rcuda::exp(x) : ops::exp(x); }
inline Tensor log(const Tensor& x) { return recording() ? rcuda::log(x) : ops::log(x); }
inline Tensor floor(const Tensor& x) { return recording() ? rcuda::floor(x) : ops::floor(x); }

inline Tensor where(const Tensor& c, const Tensor& a, const Tensor& b) {
  return recording() ? rcuda::where(c, a, b) : ops::where(c, a, b);
}
inline Tensor where(const Tensor& c, const Scalar& a, const Tensor& b) {
  return recording() ? rcuda::where(c, a, b) : ops::where(c, a, b);
}
inline Tensor where(const Tensor& c, const Tensor& a, const Scalar& b) {
  return recording() ? rcuda::where(c, a, b) : ops::where(c, a, b);
}

inline Tensor sum(const Tensor& x, const Dims& dims, bool keepdim = false) {
  return recording() ? rcuda::sum(x, dims, keepdim) : ops::sum(x, dims, keepdim);
}
inline Tensor mean(const Tensor& x, const Dims& dims, bool keepdim = false) {
  return recording() ? rcuda::mean(x, dims, keepdim) : ops::mean(x, dims, keepdim);
}
inline Tensor prod(const Tensor& x, const Dims& dims, bool keepdim = false) {
  return recording() ? rcuda::prod(x, dims, keepdim) : ops::prod(x, dims, keepdim);
}
inline Tensor cumsum(const Tensor& x, int64_t dim) {
  return recording() ? rcuda::cumsum(x, dim) : ops::cumsum(x, dim);
}

inline Tensor matmul(const Tensor& a, const Tensor& b) {
  return recording() ? rcuda::matmul(a, b) : ops::matmul(a, b);
}
inline Tensor mm(const Tensor& a, const Tensor& b) {
  return recording() ? rcuda::mm(a, b) : ops::mm(a, b);
}

inline Tensor reshape(const Tensor& t, const Shape& shape) {
  return recording() ? rcuda::reshape(t, shape) : ops::reshape(t, shape);
}
inline Tensor to(const Tensor& t, DType dtype) {
  return recording() ? rcuda::to(t, dtype) : ops::to(t, dtype);
}
inline Tensor to(const Tensor& t, Device device, DType dtype) {
  return recording() ? rcuda::to(t, device, dtype) : ops::to(t, device, dtype);
}
inline Tensor contiguous(const Tensor& t) {
  return recording() ? rcuda::contiguous(t) : ops::contiguous(t);
}
inline Tensor clone(const Tensor& t) { return recording() ? rcuda::clone(t) : ops::clone(t); }

inline Tensor gather(const Tensor& x, int64_t dim, const Tensor& index) {
  return recording() ? rcuda::gather(x, dim, index) : ops::gather(x, dim, index);
}
inline Tensor index_select(const Tensor& x, int64_t dim, const Tensor& index) {
  return recording() ? rcuda::index_select(x, dim, index) : ops::index_select(x, dim, index);
}
inline Tensor scatter(const Tensor& x, int64_t dim, const Tensor& index, const Scalar& value) {
  return recording() ? rcuda::scatter(x, dim, index, value) : ops::scatter(x, dim, index, value);
}
inline Tensor scatter_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src) {
  return recording() ? rcuda::scatter_add(x, dim, index, src)
                     : ops::scatter_add(x, dim, index, src);
}

}  // namespace rcuda::autograd::formula
