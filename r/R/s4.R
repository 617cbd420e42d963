# S4 methods: the class, printing, %*% and the operators.
#
# Note [Operator dispatch]
# ~~~~~~~~~~~~~~~~~~~~~~~~
# Tensors carry the S4 bit, on every R version. R 4.2 dispatches %*% only on S4 objects, and for
# operators S4 dispatch is the fast route: for `a + b` R looks the method for ("+", classes of
# both sides) up in a table it caches, where S3 group dispatch builds the names "+.rcuda_tensor"
# and "Ops.rcuda_tensor", searches for each along the calling environments and the search path,
# for both arguments, and sets up .Generic and its companions. Measured on one-element tensors:
# about 2 us less per operator call, the larger part of R's cost of `a + b`
# (bench/bench_r_overhead.R). One method per operator and signature: methods for the group
# generics (Arith, Compare, Logic) were as slow as the S3 route. Ops.rcuda_tensor (ops.R) stays
# for `!` and for calls S4 dispatch passes on. The bit also makes autoprint call show().
methods::setOldClass("rcuda_tensor")
# Parameters and buffers: their handles' first class (rc_marked_handle), so that inherits() sees
# it; declared here so that S4 dispatch and inherits(x, "rcuda_tensor") reach the tensor's.
methods::setOldClass(c("nn_parameter", "rcuda_tensor"))
methods::setOldClass(c("nn_buffer", "rcuda_tensor"))

methods::setMethod("show", "rcuda_tensor", function(object) print.rcuda_tensor(object))

# The operator methods are set once the namespace has loaded (a packageEvent hook, zzz.R), in
# an environment of their own: set in the namespace, at install or in .onLoad, they are found
# through the generic's R code on every call (the tables loadNamespace builds for them
# afterwards are not the primitives' fast ones) and `a + b` costs twice as much.
operator_methods <- new.env(parent = baseenv())

operator_sides <- list(
  c("rcuda_tensor", "ANY"), c("ANY", "rcuda_tensor"), c("rcuda_tensor", "rcuda_tensor")
)

# Every operator method, as list(generic, signature, method): the one list that
# register_operators() sets and unregister_operators() removes.
operator_method_table <- function() {
  ns <- topenv()
  table <- list()
  for (sig in operator_sides) {
    table <- c(table, list(list("%*%", sig, function(x, y) matrix_product(x, y))))
    for (operator in names(operator_ops)) {
      method <- eval(bquote(function(e1, e2) .Call(rc_binary, .(operator_ops[[operator]]), e1, e2)))
      environment(method) <- ns
      table <- c(table, list(list(operator, sig, method)))
    }
  }
  unary <- c("rcuda_tensor", "missing")
  c(table, list(
    list("-", unary, function(e1, e2) .Call(rc_unary, "neg", e1)),
    list("+", unary, function(e1, e2) e1)
  ))
}

register_operators <- function(where = operator_methods) {
  for (m in operator_method_table()) methods::setMethod(m[[1]], m[[2]], m[[3]], where = where)
}

# .onUnload: the methods call into the package's library, which is about to go.
unregister_operators <- function(where = operator_methods) {
  for (m in operator_method_table()) {
    if (methods::existsMethod(m[[1]], m[[2]], where = where)) {
      methods::removeMethod(m[[1]], m[[2]], where = where)
    }
  }
}
