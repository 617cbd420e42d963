// unary_grad: grad_in = grad_out * f'(x) in one pass, with the derivative formulas the CUDA
// backend shares (backend/unary_math.h, Note [Unary formulas]).
#include <utility>

#include "backend/unary_math.h"
#include "cpu_backend.h"
#include "dispatch.h"
#include "loops.h"

namespace rcuda::cpu {
namespace {

// One loop per (op, dtype), the op a compile-time constant, as the forward's unary_table.
template <UnaryOp Op, typename T>
void unary_grad_fixed(const Tensor& grad_in, const Tensor& grad_out, const Tensor& x,
                      const Tensor& out, const UnaryArgs& args) {
  using C = ComputeType<T>;
  ternary_loop<T, T>(grad_in, grad_out, x, out, [args](T g, T xv, T yv) {
    return convert<T>(
        backend::unary_grad_float<C>(Op, convert<C>(g), convert<C>(xv), convert<C>(yv), args));
  });
}

template <typename T, size_t... Ops>
void unary_grad_table(UnaryOp op, const Tensor& grad_in, const Tensor& grad_out, const Tensor& x,
                      const Tensor& out, const UnaryArgs& args, std::index_sequence<Ops...>) {
  using Loop =
      void (*)(const Tensor&, const Tensor&, const Tensor&, const Tensor&, const UnaryArgs&);
  static constexpr Loop kLoops[] = {&unary_grad_fixed<static_cast<UnaryOp>(Ops), T>...};
  kLoops[static_cast<size_t>(op)](grad_in, grad_out, x, out, args);
}

}  // namespace

void CpuBackend::unary_grad(UnaryOp op, const Tensor& grad_in, const Tensor& grad_out,
                            const Tensor& x, const Tensor& out, const UnaryArgs& args) {
  dispatch_floating(grad_out.dtype(), "unary_grad", [&](auto tag) {
    unary_grad_table<decltype(tag)>(op, grad_in, grad_out, x, out, args,
                                    std::make_index_sequence<backend::kUnaryOpCount>{});
  });
}

}  // namespace rcuda::cpu
