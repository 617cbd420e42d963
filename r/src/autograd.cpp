// Autograd from R: the requires_grad flag, gradients, backward, grad(), hooks and grad mode,
// each one call into the engine (rcuda/autograd.h). The graph lives in the engine only; R holds
// tensors and, for $grad_fn, a handle to a node.
//
// Note [R hooks]
// ~~~~~~~~~~~~~~
// A hook registered from R is an R function the engine calls during backward, inside the C++
// frames of the backward pass. It is called through cpp11::function, whose unwind protection
// turns an R error (or any other longjmp: an interrupt, a restart) into cpp11::unwind_exception.
// That exception unwinds the engine's frames like any engine error, and RCUDA_END resumes the R
// unwind once they are gone, so the error surfaces in R as the hook raised it. The R function
// stays protected until the hook is removed or the engine drops it. Hooks run with grad mode
// off, as every part of backward. The engine has no call to take a hook out, so $remove()
// empties the hook's state: the R function is released (a hook that refers to its own tensor
// would otherwise keep both alive, R seeing no reference through the engine) and the engine's
// call finds nothing to run.
#include "rcuda/autograd.h"

#include <cstring>
#include <memory>

#include "rcuda_r.h"

using namespace rcuda;
using namespace rcuda::r;

namespace {

bool flag_arg(SEXP x, const char* op, const char* arg) {
  RCUDA_CHECK(
      Rf_length(x) == 1 && (TYPEOF(x) == LGLSXP || TYPEOF(x) == INTSXP || TYPEOF(x) == REALSXP),
      ValueError, op, ": ", arg, " must be TRUE or FALSE");
  const int v = Rf_asLogical(x);
  RCUDA_CHECK(v != NA_LOGICAL, ValueError, op, ": ", arg, " must be TRUE or FALSE, got NA");
  return v != 0;
}

// An R list of tensors; with `optional`, NULL elements and undefined tensors give Tensor().
autograd::TensorList tensor_list(SEXP x, const char* op, const char* arg, bool optional) {
  autograd::TensorList out;
  if (Rf_isNull(x)) return out;
  if (is_tensor(x)) {
    out.push_back(optional ? optional_tensor(x) : unwrap(x));
    return out;
  }
  RCUDA_CHECK(TYPEOF(x) == VECSXP, ValueError, op, ": ", arg,
              " must be a tensor or a list of tensors, got an R ", Rf_type2char(TYPEOF(x)));
  for (R_xlen_t i = 0; i < Rf_xlength(x); ++i) {
    SEXP e = VECTOR_ELT(x, i);
    RCUDA_CHECK(is_tensor(e) || (optional && Rf_isNull(e)), ValueError, op, ": ", arg, "[[", i + 1,
                "]] must be a tensor", optional ? " or NULL" : "", ", got an R ",
                Rf_type2char(TYPEOF(e)));
    out.push_back(optional ? optional_tensor(e) : unwrap(e));
  }
  return out;
}

SEXP wrap_list(const autograd::TensorList& tensors) {
  cpp11::writable::list out(static_cast<R_xlen_t>(tensors.size()));
  for (size_t i = 0; i < tensors.size(); ++i) out[static_cast<R_xlen_t>(i)] = wrap(tensors[i]);
  return out;
}

// ---- grad_fn handles: an external pointer owning a reference to the node ----------------------
using NodeRef = std::shared_ptr<autograd::Node>;

void finalize_node(SEXP ptr) {
  auto* node = static_cast<NodeRef*>(R_ExternalPtrAddr(ptr));
  if (node == nullptr) return;
  R_ClearExternalPtr(ptr);
  delete node;
}

SEXP wrap_node(const NodeRef& node) {
  if (node == nullptr) return R_NilValue;
  SEXP ptr = PROTECT(R_MakeExternalPtr(new NodeRef(node), R_NilValue, R_NilValue));
  R_RegisterCFinalizerEx(ptr, finalize_node, TRUE);
  Rf_setAttrib(ptr, R_ClassSymbol, Rf_mkString("rcuda_grad_fn"));
  UNPROTECT(1);
  return ptr;
}

const NodeRef& unwrap_node(SEXP x) {
  RCUDA_CHECK(TYPEOF(x) == EXTPTRSXP && Rf_inherits(x, "rcuda_grad_fn"), ValueError,
              "grad_fn: expected a grad_fn object");
  auto* node = static_cast<NodeRef*>(R_ExternalPtrAddr(x));
  RCUDA_CHECK(node != nullptr, ValueError, "grad_fn: the node was freed");
  return *node;
}

// ---- hooks (Note [R hooks]) -------------------------------------------------------------------
struct HookState {
  std::unique_ptr<cpp11::function> callback;  // empty once removed
};
using HookRef = std::shared_ptr<HookState>;

void finalize_hook_handle(SEXP ptr) {
  auto* s = static_cast<HookRef*>(R_ExternalPtrAddr(ptr));
  if (s == nullptr) return;
  R_ClearExternalPtr(ptr);
  delete s;
}

}  // namespace

extern "C" SEXP rc_requires_grad(SEXP x) {
  RCUDA_BEGIN
  return Rf_ScalarLogical(unwrap(x).requires_grad());
  RCUDA_END
}

extern "C" SEXP rc_set_requires_grad(SEXP x, SEXP flag) {
  RCUDA_BEGIN
  unwrap(x).requires_grad_(flag_arg(flag, "requires_grad_", "requires_grad"));
  return x;
  RCUDA_END
}

extern "C" SEXP rc_is_leaf(SEXP x) {
  RCUDA_BEGIN
  return Rf_ScalarLogical(unwrap(x).is_leaf());
  RCUDA_END
}

extern "C" SEXP rc_is_undefined(SEXP x) { return Rf_ScalarLogical(is_undefined(x)); }

// A tensor handle whose engine tensor is gone: restored by readRDS() or unserialize(), which
// keep an external pointer's object but not its address.
extern "C" SEXP rc_is_freed(SEXP x) {
  return Rf_ScalarLogical(is_tensor(x) && R_ExternalPtrAddr(x) == nullptr);
}

// The gradient, or an undefined tensor (Note [Undefined tensors]).
extern "C" SEXP rc_grad(SEXP x) {
  RCUDA_BEGIN
  return wrap(unwrap(x).grad());
  RCUDA_END
}

// value: a tensor of x's shape and device, or NULL / an undefined tensor to clear the gradient.
extern "C" SEXP rc_set_grad(SEXP x, SEXP value) {
  RCUDA_BEGIN
  const Tensor& t = unwrap(x);
  Tensor g = optional_tensor(value);
  if (g.defined() && g.dtype() != t.dtype()) {
    NoGradGuard no_grad;
    g = to(g, t.dtype());
  }
  t.set_grad(g);
  return x;
  RCUDA_END
}

extern "C" SEXP rc_grad_fn(SEXP x) {
  RCUDA_BEGIN
  return wrap_node(unwrap(x).grad_fn());
  RCUDA_END
}

extern "C" SEXP rc_grad_fn_name(SEXP node) {
  RCUDA_BEGIN
  return Rf_mkString(unwrap_node(node)->name());
  RCUDA_END
}

// The nodes a grad_fn sends gradients to, one per forward input (NULL where none flows).
extern "C" SEXP rc_grad_fn_next(SEXP node) {
  RCUDA_BEGIN
  const auto& edges = unwrap_node(node)->next_edges();
  cpp11::writable::list out(static_cast<R_xlen_t>(edges.size()));
  for (size_t i = 0; i < edges.size(); ++i)
    out[static_cast<R_xlen_t>(i)] = wrap_node(edges[i].node);
  return out;
  RCUDA_END
}

extern "C" SEXP rc_detach(SEXP x) {
  RCUDA_BEGIN
  return wrap(autograd::detach(unwrap(x)));
  RCUDA_END
}

// In place: x leaves its graph and stops requiring grad (a leaf of its own), as torch's detach_.
extern "C" SEXP rc_detach_(SEXP x) {
  RCUDA_BEGIN
  const Tensor& t = unwrap(x);
  if (AutogradMeta* meta = t.autograd_meta()) {
    meta->grad_fn.reset();
    meta->output_nr = 0;
    meta->retains_grad = false;
    meta->requires_grad = false;
  }
  return x;
  RCUDA_END
}

extern "C" SEXP rc_retain_grad(SEXP x) {
  RCUDA_BEGIN
  autograd::retain_grad(unwrap(x));
  return R_NilValue;
  RCUDA_END
}

extern "C" SEXP rc_retains_grad(SEXP x) {
  RCUDA_BEGIN
  const Tensor& t = unwrap(x);
  const AutogradMeta* meta = t.autograd_meta();
  return Rf_ScalarLogical(meta != nullptr && !t.is_leaf() && meta->retains_grad);
  RCUDA_END
}

// fn(grad) is an R function; a tensor it returns replaces the gradient (same shape, dtype and
// device), anything else keeps it. Returns the handle that $remove() empties.
extern "C" SEXP rc_register_hook(SEXP x, SEXP fn) {
  RCUDA_BEGIN
  RCUDA_CHECK(Rf_isFunction(fn), ValueError, "register_hook: hook must be a function, got an R ",
              Rf_type2char(TYPEOF(fn)));
  const Tensor& t = unwrap(x);
  auto state = std::make_shared<HookState>();
  state->callback = std::make_unique<cpp11::function>(fn);
  autograd::register_hook(t, [state](const Tensor& grad) -> Tensor {
    if (!state->callback) return Tensor();
    // A copy: the hook may remove itself while it runs. Note [R hooks].
    const cpp11::function callback = *state->callback;
    cpp11::sexp result = callback(wrap(grad));
    if (!is_tensor(result) || is_undefined(result)) return Tensor();
    const Tensor& replaced = unwrap(result);
    RCUDA_CHECK(replaced.dtype() == grad.dtype() && replaced.device() == grad.device(), ValueError,
                "register_hook: the hook returned a gradient of dtype ",
                dtype_name(replaced.dtype()), " on ", replaced.device().str(),
                " for a gradient of dtype ", dtype_name(grad.dtype()), " on ", grad.device().str());
    return replaced;
  });
  SEXP ptr = PROTECT(R_MakeExternalPtr(new HookRef(state), R_NilValue, R_NilValue));
  R_RegisterCFinalizerEx(ptr, finalize_hook_handle, TRUE);
  UNPROTECT(1);
  return ptr;
  RCUDA_END
}

extern "C" SEXP rc_remove_hook(SEXP handle) {
  RCUDA_BEGIN
  auto* s = static_cast<HookRef*>(R_ExternalPtrAddr(handle));
  RCUDA_CHECK(s != nullptr, ValueError, "remove: the hook handle was freed");
  (*s)->callback.reset();
  return R_NilValue;
  RCUDA_END
}

// With create_graph, the backward pass records a graph of its own (gradients of gradients).
extern "C" SEXP rc_backward(SEXP outputs, SEXP grad_outputs, SEXP retain_graph, SEXP create_graph) {
  RCUDA_BEGIN
  autograd::backward(tensor_list(outputs, "backward", "tensors", false),
                     tensor_list(grad_outputs, "backward", "grad_tensors", true),
                     flag_arg(retain_graph, "backward", "retain_graph"),
                     flag_arg(create_graph, "backward", "create_graph"));
  return R_NilValue;
  RCUDA_END
}

// Gradients of outputs with respect to inputs, as a list (undefined tensors for unused inputs
// with allow_unused); no tensor's $grad changes.
extern "C" SEXP rc_autograd_grad(SEXP outputs, SEXP inputs, SEXP grad_outputs, SEXP retain_graph,
                                 SEXP allow_unused, SEXP create_graph) {
  RCUDA_BEGIN
  return wrap_list(autograd::grad(tensor_list(outputs, "autograd_grad", "outputs", false),
                                  tensor_list(inputs, "autograd_grad", "inputs", false),
                                  tensor_list(grad_outputs, "autograd_grad", "grad_outputs", true),
                                  flag_arg(retain_graph, "autograd_grad", "retain_graph"),
                                  flag_arg(allow_unused, "autograd_grad", "allow_unused"),
                                  flag_arg(create_graph, "autograd_grad", "create_graph")));
  RCUDA_END
}

// Returns whether grad mode was on; sets it when `enabled` is TRUE or FALSE (NULL: only reads).
extern "C" SEXP rc_grad_mode(SEXP enabled) {
  RCUDA_BEGIN
  const bool previous = GradMode::is_enabled();
  if (!Rf_isNull(enabled)) GradMode::set_enabled(flag_arg(enabled, "grad mode", "enabled"));
  return Rf_ScalarLogical(previous);
  RCUDA_END
}

// A new R handle to the same tensor, carrying attribute `marker` (nn_parameter, nn_buffer): the
// tensor itself and other handles to it stay unmarked. nn_parameter and nn_buffer are also the
// first class, as torch for R's (inherits(p, "nn_parameter")): handles carry the S4 bit, and
// inherits() and S4 dispatch of an S4 object go by its first class, which R/s4.R declares to
// extend rcuda_tensor.
extern "C" SEXP rc_marked_handle(SEXP x, SEXP marker, SEXP value) {
  RCUDA_BEGIN
  SEXP out = PROTECT(wrap(unwrap(x)));
  SEXP name = STRING_ELT(marker, 0);
  Rf_setAttrib(out, Rf_installChar(name), value);
  if (std::strcmp(CHAR(name), "nn_parameter") == 0 || std::strcmp(CHAR(name), "nn_buffer") == 0) {
    SEXP classes = PROTECT(Rf_allocVector(STRSXP, 2));
    SET_STRING_ELT(classes, 0, name);
    SET_STRING_ELT(classes, 1, Rf_mkChar("rcuda_tensor"));
    Rf_classgets(out, classes);
    UNPROTECT(1);
  }
  UNPROTECT(1);
  return out;
  RCUDA_END
}

// The address of each tensor's engine object, as strings: two handles to one tensor (a weight
// shared by two modules) give the same one.
extern "C" SEXP rc_tensor_ids(SEXP tensors) {
  RCUDA_BEGIN
  const R_xlen_t n = Rf_xlength(tensors);
  cpp11::writable::strings out(n);
  char buffer[32];
  for (R_xlen_t i = 0; i < n; ++i) {
    std::snprintf(buffer, sizeof(buffer), "%p",
                  static_cast<const void*>(unwrap(VECTOR_ELT(tensors, i)).impl()));
    out[i] = buffer;
  }
  return out;
  RCUDA_END
}
