# nn_module(): registration by assignment, the module tree, train/eval, $to(), state dicts,
# containers and printing. Values are checked against base R computations on as_array() values.

two_layer <- nn_module(
  "two_layer",
  initialize = function(n_in, n_hidden, n_out) {
    self$fc1 <- nn_linear(n_in, n_hidden)
    self$fc2 <- nn_linear(n_hidden, n_out)
    self$scale <- nn_parameter(torch_ones(1))
    self$offset <- nn_buffer(torch_zeros(n_out))
    self$scratch <- nn_buffer(torch_zeros(2), persistent = FALSE)
    self$note <- "a plain field"
  },
  forward = function(x) self$fc2(nnf_relu(self$fc1(x))) * self$scale + self$offset
)

# The module's forward written in base R from its parameters' values.
two_layer_reference <- function(m, x) {
  p <- lapply(m$state_dict(), as_array)
  h <- pmax(x %*% t(p[["fc1.weight"]]) + rep(p[["fc1.bias"]], each = nrow(x)), 0)
  (h %*% t(p[["fc2.weight"]]) + rep(p[["fc2.bias"]], each = nrow(x))) * p[["scale"]] +
    rep(p[["offset"]], each = nrow(x))
}

test_that("assignment registers parameters, buffers and submodules, in order", {
  m <- two_layer(4, 5, 3)
  expect_true(is_nn_module(m))
  expect_false(is_nn_module(two_layer))
  expect_s3_class(m, "two_layer")
  expect_s3_class(m, "nn_module")
  expect_identical(names(m$parameters), c("scale", "fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"))
  expect_identical(names(m$named_parameters()), names(m$parameters))
  expect_identical(names(m$named_parameters(recursive = FALSE)), "scale")
  expect_identical(names(m$buffers), c("offset", "scratch"))
  expect_identical(names(m$children), c("fc1", "fc2"))
  expect_length(m$modules, 3)
  expect_true(is_nn_parameter(m$fc1$weight))
  expect_true(is_nn_buffer(m$offset))
  expect_identical(m$note, "a plain field")
  for (p in m$parameters) expect_true(p$requires_grad && p$is_leaf)
  expect_false(m$offset$requires_grad)
  expect_equal(m$fc1$weight$shape, c(5L, 4L))
})

test_that("calling a module runs forward; the output matches base R", {
  m <- two_layer(4, 6, 2)
  xv <- matrix(rnorm(12), 3, 4)
  x <- torch_tensor(xv)
  expect_equal(as_array(m(x)), two_layer_reference(m, xv), tolerance = 1e-5)
  expect_equal(as_array(m$forward(x)), as_array(m(x)))
})

test_that("gradients of an R-defined module match central finite differences", {
  affine_tanh <- nn_module(
    initialize = function(n) {
      self$w <- nn_parameter(torch_randn(n, n, dtype = torch_double()))
      self$b <- nn_parameter(torch_randn(n, dtype = torch_double()))
    },
    forward = function(x) torch_tanh(torch_matmul(x, self$w) + self$b)
  )
  m <- affine_tanh(3)
  xv <- matrix(rnorm(6), 2, 3)
  loss_of <- function(w, b) sum(tanh(xv %*% w + rep(b, each = 2))^2)
  (m(torch_tensor(xv, dtype = torch_double()))^2)$sum()$backward()
  w0 <- as_array(m$w)
  b0 <- as_array(m$b)
  gw <- w0
  for (i in seq_along(w0)) {
    up <- w0
    down <- w0
    up[i] <- up[i] + 1e-6
    down[i] <- down[i] - 1e-6
    gw[i] <- (loss_of(up, b0) - loss_of(down, b0)) / 2e-6
  }
  gb <- vapply(seq_along(b0), function(i) {
    e <- replace(numeric(3), i, 1e-6)
    (loss_of(w0, b0 + e) - loss_of(w0, b0 - e)) / 2e-6
  }, numeric(1))
  expect_equal(as_array(m$w$grad), gw, tolerance = 1e-6)
  expect_equal(as_array(m$b$grad), gb, tolerance = 1e-6)
})

test_that("train() and eval() switch the whole tree; dropout follows them", {
  m <- nn_sequential(nn_linear(3, 3), nn_dropout(0.5))
  expect_true(m$training)
  m$eval()
  expect_false(m$training)
  expect_false(m[[2]]$training)
  x <- torch_randn(200, 3)
  expect_equal(as_array(m(x)), as_array(m[[1]](x)))
  m$train()
  expect_true(m[[2]]$training)
  out <- as_array(m(x))
  ref <- as_array(m[[1]](x))
  zeroed <- out == 0
  expect_gt(mean(zeroed), 0.35)
  expect_lt(mean(zeroed), 0.65)
  expect_equal(out[!zeroed], 2 * ref[!zeroed], tolerance = 1e-5)
  expect_error(m$train(NA), "TRUE or FALSE", class = "rcuda_value_error")
})

test_that("$to(dtype =) converts in place: the same leaves, still requiring grad, with their grads", {
  m <- two_layer(3, 4, 2)
  w <- m$fc1$weight
  x <- torch_randn(5, 3)
  before <- as_array(m(x))
  m(x)$sum()$backward()
  grad_before <- as_array(w$grad)
  m$to(dtype = torch_double())
  expect_true(w$dtype == torch_double())  # the handle held before the move sees it
  for (p in m$parameters) {
    expect_true(p$dtype == torch_double())
    expect_true(p$requires_grad && p$is_leaf)
  }
  expect_true(m$offset$dtype == torch_double())
  expect_true(w$grad$dtype == torch_double())
  expect_equal(as_array(w$grad), grad_before, tolerance = 1e-6)
  expect_equal(as_array(m(x$to(dtype = torch_double()))), before, tolerance = 1e-6)
  m$zero_grad()
  m(x$double())$sum()$backward()
  expect_equal(as_array(w$grad), grad_before, tolerance = 1e-5)
  expect_error(m$to(dtype = torch_long()), "floating", class = "rcuda_dtype_error")
  m$to(device = "cpu")
  expect_identical(m$fc1$weight$device$type, "cpu")
})

test_that("zero_grad() zeroes gradients, or drops them with set_to_none", {
  m <- two_layer(3, 4, 2)
  m(torch_randn(2, 3))$sum()$backward()
  m$zero_grad()
  for (p in m$parameters) expect_equal(sum(abs(as_array(p$grad))), 0)
  m$zero_grad(set_to_none = TRUE)
  for (p in m$parameters) expect_true(is_undefined_tensor(p$grad))
})

test_that("state_dict() round trips between two modules, which then give identical outputs", {
  a <- two_layer(4, 5, 3)
  b <- two_layer(4, 5, 3)
  with_no_grad(a$offset$copy_(torch_randn(3)))
  x <- torch_randn(6, 4)
  expect_false(isTRUE(all.equal(as_array(a(x)), as_array(b(x)))))
  sd <- a$state_dict()
  expect_identical(names(sd), c("scale", "offset", "fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"))
  # Detached leaves that keep requires_grad, as torch for R's state_dict(): the parameters
  # TRUE, the buffer FALSE, and a frozen parameter FALSE.
  for (name in names(sd)) {
    expect_true(sd[[name]]$is_leaf)
    expect_null(sd[[name]]$grad_fn)
    expect_identical(sd[[name]]$requires_grad, name != "offset")
  }
  a$fc2$bias$requires_grad_(FALSE)
  expect_false(a$state_dict()$fc2.bias$requires_grad)
  a$fc2$bias$requires_grad_(TRUE)
  b$load_state_dict(sd)
  expect_identical(as_array(b(x)), as_array(a(x)))
  expect_true(b$fc1$weight$requires_grad && b$fc1$weight$is_leaf)
  # Loading copies: changing a afterwards leaves b alone.
  with_no_grad(a$fc1$weight$fill_(0))
  expect_false(all(as_array(b$fc1$weight) == 0))
})

test_that("load_state_dict() names missing and unexpected keys, and shape mismatches", {
  m <- two_layer(4, 5, 3)
  sd <- m$state_dict()
  expect_error(m$load_state_dict(sd[-1]), "missing keys: scale", class = "rcuda_value_error")
  extra <- c(sd, list(extra.weight = torch_zeros(2)))
  expect_error(m$load_state_dict(extra), "unexpected keys: extra.weight", class = "rcuda_value_error")
  partial <- sd["fc1.bias"]
  partial[["fc1.bias"]] <- torch_ones(5)
  m$load_state_dict(c(partial, list(extra.weight = torch_zeros(2))), strict = FALSE)
  expect_equal(as_array(m$fc1$bias), rep(1, 5))
  wrong <- sd
  wrong[["fc2.weight"]] <- torch_zeros(3, 4)
  expect_error(m$load_state_dict(wrong), "fc2.weight: the state_dict has shape \\[3, 4\\], the module \\[3, 5\\]",
               class = "rcuda_shape_error")
  expect_error(m$load_state_dict(list(1, 2)), "named list", class = "rcuda_value_error")
})

test_that("wrong assignments are refused with messages naming the field", {
  m <- two_layer(2, 2, 2)
  expect_error(m$fc3 <- nn_linear, "module generator.*nn_linear\\(\\.\\.\\.\\)", class = "rcuda_value_error")
  expect_error(m$fc1 <- 3, "submodule 'fc1'", class = "rcuda_value_error")
  expect_error(m$scale <- torch_ones(1), "parameter 'scale'", class = "rcuda_value_error")
  expect_error(m$offset <- "x", "buffer 'offset'", class = "rcuda_value_error")
  expect_error(m$parameters <- list(), "cannot be assigned", class = "rcuda_value_error")
  expect_error(nn_sequential(nn_linear), "argument 1 is the module generator nn_linear, which must be initialized")
  expect_error(nn_sequential(nn_relu(), 5), "argument 2 must be an nn_module, but got object of type numeric",
               class = "rcuda_value_error")
  expect_error(nn_parameter(1:3), "must be a tensor", class = "rcuda_value_error")
  # Buffers may be replaced by tensors; NULL empties a slot and keeps it registered.
  m$offset <- torch_ones(2)
  expect_equal(as_array(m$state_dict()$offset), c(1, 1))
  m$fc2 <- NULL
  expect_identical(names(m$children), "fc1")
  m$fc2 <- nn_linear(2, 2)
  expect_identical(names(m$children), c("fc1", "fc2"))
})

test_that("modules assigned after construction, and register_* methods, are tracked", {
  m <- nn_module(initialize = function() {}, forward = function(x) x)()
  m$lin <- nn_linear(2, 3)
  m$register_parameter("alpha", torch_zeros(2, requires_grad = TRUE))
  m$register_buffer("count", torch_zeros(1))
  m$add_module("act", nn_relu())
  expect_identical(names(m$parameters), c("alpha", "lin.weight", "lin.bias"))
  expect_identical(names(m$state_dict()), c("alpha", "count", "lin.weight", "lin.bias"))
  expect_identical(names(m$children), c("lin", "act"))
  expect_error(m$register_module("bad", 1), "must be an nn_module", class = "rcuda_value_error")
})

test_that("a tensor shared by two submodules counts once", {
  tied <- nn_module(
    initialize = function() {
      self$a <- nn_linear(3, 3, bias = FALSE)
      self$b <- nn_linear(3, 3, bias = FALSE)
      self$b$weight <- self$a$weight
    },
    forward = function(x) self$b(self$a(x))
  )
  m <- tied()
  expect_identical(names(m$parameters), "a.weight")
  expect_output(print(m), "containing 9 parameters")
})

test_that("apply() visits every module, children first", {
  m <- nn_sequential(nn_linear(2, 3), nn_relu(), nn_sequential(nn_linear(3, 1)))
  visited <- character()
  m$apply(function(module) {
    visited <<- c(visited, class(module)[1])
    if (inherits(module, "nn_linear")) nn_init_zeros_(module$weight)
  })
  expect_identical(visited, c("nn_linear", "nn_relu", "nn_linear", "nn_sequential", "nn_sequential"))
  expect_equal(sum(abs(as_array(m[[1]]$weight))), 0)
  expect_equal(sum(abs(as_array(m[[3]][[1]]$weight))), 0)
})

test_that("print() shows the parameter count, the submodules, parameters and buffers", {
  m <- two_layer(100, 10, 3)
  n <- 100 * 10 + 10 + 10 * 3 + 3 + 1
  expect_output(print(m), paste0("An `nn_module` containing ", format(n, big.mark = ","), " parameters."), fixed = TRUE)
  expect_output(print(m), "fc1: <nn_linear> #1,010 parameters", fixed = TRUE)
  expect_output(print(m), "scale: Float [1:1]", fixed = TRUE)
  expect_output(print(m), "-- Buffers")
  expect_output(print(nn_linear), "<nn_linear> object generator")
})

test_that("inherit = and super$ reach the parent's methods", {
  scaled_linear <- nn_module(
    "scaled_linear",
    inherit = nn_linear,
    initialize = function(in_features, out_features, factor = 2) {
      super$initialize(in_features, out_features)
      self$factor <- factor
    },
    forward = function(input) super$forward(input) * self$factor
  )
  m <- scaled_linear(3, 2, factor = 3)
  expect_s3_class(m, "scaled_linear")
  expect_s3_class(m, "nn_linear")
  xv <- matrix(rnorm(6), 2, 3)
  w <- as_array(m$weight)
  b <- as_array(m$bias)
  expect_equal(as_array(m(torch_tensor(xv))), 3 * (xv %*% t(w) + rep(b, each = 2)), tolerance = 1e-5)
  expect_identical(names(m$parameters), c("weight", "bias"))
})

# A module counting its calls in a private field, read through an active binding.
counter <- nn_module(
  initialize = function() private$calls <- 0,
  forward = function(x) {
    private$calls <- private$calls + 1
    x
  },
  active = list(calls = function() private$calls)
)

test_that("private members and active bindings work", {
  m <- counter()
  m(1)
  m(2)
  expect_equal(m$calls, 2)
})

test_that("a generator checks its arguments as initialize does, missing() included", {
  opt <- nn_module(
    initialize = function(n, flag) self$has_flag <- !missing(flag),
    forward = function(x) x
  )
  expect_false(opt(3)$has_flag)
  expect_true(opt(3, TRUE)$has_flag)
  expect_error(nn_linear(2, 3, nonexistent = 1), "unused argument")
  make <- function(...) nn_linear(...)
  expect_equal(make(2, 4)$weight$shape, c(4L, 2L))
  expect_equal(lapply(c(2, 3), nn_linear, 4)[[2]]$weight$shape, c(4L, 3L))
  expect_equal(Map(nn_linear, c(2, 3), c(5, 6))[[2]]$weight$shape, c(6L, 3L))
  expect_equal(do.call(nn_linear, list(out_features = 2, in_features = 7))$weight$shape, c(2L, 7L))
})

test_that("nn_sequential composes its modules and indexes them", {
  s <- nn_sequential(nn_linear(4, 3), nn_tanh(), nn_linear(3, 2))
  expect_length(s, 3)
  expect_identical(names(s$state_dict()), c("0.weight", "0.bias", "2.weight", "2.bias"))
  x <- torch_randn(5, 4)
  expect_equal(as_array(s(x)), as_array(s[[3]](s[[2]](s[[1]](x)))))
  head <- s[1:2]
  expect_length(head, 2)
  expect_equal(as_array(head(x)), as_array(s[[2]](s[[1]](x))))
  named <- nn_sequential(encoder = nn_linear(2, 2), act = nn_relu())
  expect_identical(names(named$children), c("encoder", "act"))
  expect_error(s[[4]], "\\[\\[4\\]\\] is out of bounds for a module with 3 submodules", class = "rcuda_index_error")
})

test_that("nn_module_list and nn_module_dict register their modules", {
  layers <- nn_module_list(lapply(1:3, function(i) nn_linear(2, 2)))
  expect_length(layers, 3)
  layers$append(nn_relu())
  layers$extend(list(nn_tanh()))
  layers$insert(1, nn_identity())
  expect_length(layers, 6)
  expect_s3_class(layers[[1]], "nn_identity")
  expect_s3_class(layers[[5]], "nn_relu")
  expect_identical(names(layers$children), as.character(0:5))
  expect_length(as.list(layers), 6)
  holder <- nn_module(
    initialize = function() self$blocks <- nn_module_list(list(nn_linear(2, 2), nn_linear(2, 2))),
    forward = function(x) {
      for (i in seq_along(self$blocks)) x <- self$blocks[[i]](x)
      x
    }
  )()
  expect_identical(names(holder$parameters), c("blocks.0.weight", "blocks.0.bias", "blocks.1.weight", "blocks.1.bias"))
  d <- nn_module_dict(list(a = nn_linear(2, 3), b = nn_relu()))
  expect_identical(names(d), c("a", "b"))
  expect_length(d, 2)
  expect_equal(d$a$weight$shape, c(3L, 2L))
  expect_error(nn_module_dict(list(nn_relu())), "named", class = "rcuda_value_error")
})

test_that("$cuda() moves a module, whose outputs and gradients match the CPU's", {
  skip_if_cuda_not_available()
  cpu_model <- two_layer(4, 8, 3)
  gpu_model <- two_layer(4, 8, 3)
  gpu_model$load_state_dict(cpu_model$state_dict())
  w <- gpu_model$fc1$weight
  gpu_model$cuda()
  expect_true(w$is_cuda)
  for (p in gpu_model$parameters) expect_true(p$is_cuda && p$requires_grad && p$is_leaf)
  x <- torch_randn(6, 4)
  expect_equal(as_array(gpu_model(x$cuda())), as_array(cpu_model(x)), tolerance = 1e-5)
  cpu_model(x)$sum()$backward()
  gpu_model(x$cuda())$sum()$backward()
  expect_equal(as_array(gpu_model$fc1$weight$grad), as_array(cpu_model$fc1$weight$grad), tolerance = 1e-5)
  gpu_model$cpu()
  expect_false(w$is_cuda)
})

# ---- clone() (Note [Cloning modules]) ------------------------------------------------------

ids <- function(tensors) .Call(rcuda:::rc_tensor_ids, unname(tensors))
module_self_of <- function(m) attr(m, "module")

test_that("a deep clone copies every tensor and computes what the original computes", {
  torch_manual_seed(3)
  m <- two_layer(3, 4, 2)
  m$eval()
  m$fc1$bias$requires_grad_(FALSE)
  y <- m$clone(deep = TRUE)
  expect_s3_class(y, "two_layer")
  expect_false(y$training)
  expect_identical(y$note, "a plain field")
  # Different engine objects, equal values, the same markers, requires_grad and leaves.
  expect_false(any(ids(y$parameters) %in% ids(m$parameters)))
  expect_false(any(ids(y$buffers) %in% ids(m$buffers)))
  expect_identical(lapply(y$state_dict(), as_array), lapply(m$state_dict(), as_array))
  expect_identical(as_array(y$scratch), as_array(m$scratch))
  expect_identical(lapply(y$parameters, attributes), lapply(m$parameters, attributes))
  expect_identical(attributes(y$offset), attributes(m$offset))
  expect_identical(vapply(y$parameters, function(p) p$requires_grad, TRUE),
                   c(scale = TRUE, fc1.weight = TRUE, fc1.bias = FALSE, fc2.weight = TRUE,
                     fc2.bias = TRUE))
  expect_true(all(vapply(y$parameters, function(p) is.null(p$grad_fn), TRUE)))
  expect_identical(names(y$state_dict()), names(m$state_dict()))  # scratch stays non-persistent
  x <- matrix(rnorm(15), 5, 3)
  expect_equal(as_array(y(torch_tensor(x))), two_layer_reference(m, x), tolerance = 1e-6)
})

test_that("a deep clone trains on its own: the original keeps its weights", {
  torch_manual_seed(4)
  m <- two_layer(3, 4, 2)
  before <- lapply(m$state_dict(), as_array)
  y <- m$clone(deep = TRUE)
  opt <- optim_sgd(y$parameters, lr = 0.5)
  loss <- (y(torch_randn(6, 3))^2)$sum()
  loss$backward()
  opt$step()
  expect_identical(lapply(m$state_dict(), as_array), before)
  expect_false(identical(lapply(y$state_dict(), as_array), before))
  expect_true(all(vapply(m$parameters, function(p) is_undefined_tensor(p$grad), TRUE)))
  expect_false(any(vapply(y$parameters, function(p) is_undefined_tensor(p$grad), TRUE)))
  # The clone's methods see the clone: its forward reads its own, changed, weights.
  x <- matrix(rnorm(6), 2, 3)
  expect_equal(as_array(y(torch_tensor(x))), two_layer_reference(y, x), tolerance = 1e-6)
})

test_that("what the original reaches twice, the deep clone reaches twice as one copy", {
  tied <- nn_module(
    initialize = function() {
      self$x <- nn_parameter(torch_tensor(1))
      self$y <- self$x
      self$a <- nn_buffer(torch_tensor(2))
      self$b <- self$a
      self$l1 <- nn_linear(2, 2)
      self$l2 <- self$l1
      self$kept <- list(w = self$x, n = 3)
    },
    forward = function(x) x
  )
  m <- tied()
  y <- m$clone(deep = TRUE)
  expect_false(ids(list(y$x)) == ids(list(m$x)))
  expect_identical(ids(list(y$x, y$a, y$l1$weight, y$kept$w)),
                   ids(list(y$y, y$b, y$l2$weight, y$x)))
  expect_identical(y$kept$n, 3)
  expect_length(y$parameters, 3)  # x, l1.weight, l1.bias: the tied ones count once
  expect_identical(module_self_of(y$l1), module_self_of(y$l2))
  expect_false(identical(module_self_of(y$l1), module_self_of(m$l1)))
})

test_that("a shallow clone is a new module sharing the original's tensors and submodules", {
  m <- two_layer(2, 3, 1)
  y <- m$clone()
  expect_identical(ids(y$parameters), ids(m$parameters))
  expect_identical(module_self_of(y$fc1), module_self_of(m$fc1))
  y$note <- "changed"
  y$eval()
  expect_identical(m$note, "a plain field")
  expect_true(m$training)
  expect_false(m$fc1$training)  # the shared submodule
})

test_that("clone() keeps private fields, and refuses a deep that is not TRUE or FALSE", {
  m <- counter()
  m(1)
  y <- m$clone(deep = TRUE)
  y(1)
  y(1)
  expect_equal(c(m$calls, y$calls), c(1, 3))
  expect_s3_class(nn_relu()$clone(TRUE), "nn_relu")
  finalized <- nn_module(
    initialize = function() self$lin <- nn_linear(1, 2),
    private = list(finalize_deep_clone = function() self$copied_from <- "finalize_deep_clone")
  )()
  expect_identical(finalized$clone(deep = TRUE)$copied_from, "finalize_deep_clone")
  expect_null(finalized$clone()$copied_from)
  expect_null(finalized$copied_from)
  expect_error(m$clone(deep = NA), "nn_module\\$clone: deep must be TRUE or FALSE, got NA",
               class = "rcuda_value_error")
})

test_that("a state dict without a batch norm's num_batches_tracked loads with the count at 0", {
  torch_manual_seed(5)
  m <- nn_sequential(nn_linear(2, 3), nn_batch_norm1d(3))
  m(torch_randn(4, 2))  # training mode: the batch norm counts one batch
  sd <- m$state_dict()
  count_key <- grep("num_batches_tracked$", names(sd), value = TRUE)
  expect_length(count_key, 1)
  expect_equal(as.numeric(as_array(sd[[count_key]])), 1)
  old <- sd[names(sd) != count_key]  # as saved before batch norms counted batches
  fresh <- nn_sequential(nn_linear(2, 3), nn_batch_norm1d(3))
  fresh(torch_randn(4, 2))
  fresh(torch_randn(4, 2))
  fresh$load_state_dict(old)
  loaded <- fresh$state_dict()
  expect_equal(as.numeric(as_array(loaded[[count_key]])), 0)
  expect_identical(loaded[[count_key]]$dtype, torch_long())
  for (key in names(old)) expect_identical(as_array(loaded[[key]]), as_array(old[[key]]))
  # Any other missing key is still an error.
  expect_error(fresh$load_state_dict(old[-1]), paste0("missing keys: ", names(old)[1]))
})

test_that("detach() and clone() keep the nn_parameter and nn_buffer markers, as torch for R", {
  p <- nn_parameter(torch_randn(2))
  expect_true(is_nn_parameter(p$detach()))
  expect_false(p$detach()$requires_grad)
  cl <- p$clone()
  expect_true(is_nn_parameter(cl))
  expect_equal(attributes(cl), attributes(p))
  expect_equal(as_array(cl), as_array(p))
  b <- nn_buffer(torch_ones(3), persistent = FALSE)
  expect_true(is_nn_buffer(torch_clone(b)))
  expect_identical(attr(b$detach(), "nn_buffer"), FALSE)
  x <- torch_randn(2)
  expect_false(is_nn_parameter(x$detach()) || is_nn_buffer(x$clone()))
  expect_equal(attributes(x$clone()), attributes(x))
})

test_that("a module restored by readRDS() takes a state dict in place of its freed tensors", {
  model <- nn_sequential(nn_linear(4, 3), nn_batch_norm1d(3))
  path <- tempfile(fileext = ".rds")
  on.exit(unlink(path))
  saveRDS(model, path)
  restored <- readRDS(path)
  expect_error(restored[[1]]$weight$abs(), "freed", class = "rcuda_value_error")
  state <- model$state_dict()
  restored$load_state_dict(state)
  expect_true(is_nn_parameter(restored[[1]]$weight))
  expect_true(restored[[1]]$weight$requires_grad)
  expect_identical(as_array(restored[[1]]$weight), as_array(model[[1]]$weight))
  expect_identical(as_array(restored[[2]]$running_var), as_array(model[[2]]$running_var))
  model$eval()
  restored$eval()
  x <- torch_randn(5, 4)
  expect_equal(as_array(restored(x)), as_array(model(x)))
  # The loaded values are copies: the state dict's tensors stay apart.
  with_no_grad(restored[[1]]$weight$zero_())
  expect_false(all(as_array(state[["0.weight"]]) == 0))
})
