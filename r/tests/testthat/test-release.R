# Note [Unreferenced tensors are released at step boundaries] (src/handles.cpp).

# Settings under which R's collector never runs on its own: only the release frees memory.
no_collections <- function(release = TRUE) {
  .Call(rcuda:::rc_init, modifyList(rcuda:::gc_options(),
                                    list(live_fraction = Inf, threshold = 1,
                                         release_unreferenced = as.numeric(release))))
}
restore_options <- function() .Call(rcuda:::rc_init, rcuda:::gc_options())

small_training_loop <- function() mlp_training_loop(inputs = 256, batch = 128, seed = 3)

allocated <- function() .Call(rcuda:::rc_gc_state)$cpu_allocated_bytes

test_that("a training loop's activations go back at the optimizer's step, without a collection", {
  loop <- small_training_loop()
  for (i in 1:3) loop$step()
  gc()
  live <- allocated()
  no_collections()
  on.exit(restore_options())
  before <- .Call(rcuda:::rc_gc_state)
  .Call(rcuda:::rc_gc_reset_cpu_peak)
  for (i in 1:50) loop$step()
  after <- .Call(rcuda:::rc_gc_state)
  expect_equal(after$cpu_young_collections, before$cpu_young_collections)
  expect_equal(after$cpu_full_collections, before$cpu_full_collections)
  # Each step's forward leaves 4 activations of 128 x 512 floats (256 KiB) in R handles, and
  # the loss: released at the next step boundary, they do not pile up over 50 steps (13 MB).
  expect_gte(after$cpu_released_tensors - before$cpu_released_tensors, 4 * 49)
  expect_lt(allocated() - live, 2e6)
  expect_lt(after$cpu_peak_bytes - live, 4e6)
})

test_that("without the release, the same loop keeps its garbage until a collection", {
  loop <- small_training_loop()
  for (i in 1:3) loop$step()
  gc()
  live <- allocated()
  no_collections(release = FALSE)
  on.exit(restore_options())
  before <- .Call(rcuda:::rc_gc_state)
  for (i in 1:50) loop$step()
  after <- .Call(rcuda:::rc_gc_state)
  expect_equal(after$cpu_released_tensors, before$cpu_released_tensors)
  expect_gt(allocated() - live, 50 * 4 * 128 * 512 * 4)
  gc()
  expect_lt(allocated() - live, 2e6)
})

test_that("tensors that R references keep their values across the step", {
  loop <- small_training_loop()
  no_collections()
  on.exit(restore_options())
  make <- function(v) torch_full(c(100, 100), v)  # 40 KB: handles of their own
  bound <- make(1)
  in_list <- list(a = make(2), b = list(make(3)))
  env <- new.env()
  env$t <- make(4)
  with_attr <- structure(1, tensor = make(5))
  keeper <- local({
    t <- make(6)
    function() t
  })
  alias <- bound
  promised <- function(t) {
    loop$step()
    t
  }
  from_promise <- promised(make(7))
  vals <- lapply(list(bound, in_list$a, in_list$b[[1]], env$t, attr(with_attr, "tensor"),
                      keeper(), alias, from_promise), function(t) as_array(t$sum()))
  for (i in 1:3) loop$step()
  after <- lapply(list(bound, in_list$a, in_list$b[[1]], env$t, attr(with_attr, "tensor"),
                       keeper(), alias, from_promise), function(t) as_array(t$sum()))
  expect_equal(after, vals)
  expect_equal(unlist(after), c(1, 2, 3, 4, 5, 6, 1, 7) * 1e4)
  # Arguments of builtins are counted too: the tensor is still there after the step.
  out <- list(make(8), loop$step())
  expect_equal(as_array(out[[1]]$sum()), 8e4)
})

test_that("the module's output survives a step it waits beside only in a variable", {
  loop <- small_training_loop()
  no_collections()
  on.exit(restore_options())
  out <- loop$model(loop$x)
  expected <- as_array(out)
  loop$step()
  expect_equal(as_array(out), expected)
})

test_that("a temporary operand beside a call that steps the optimizer is an error, not freed memory", {
  loop <- small_training_loop()
  no_collections()
  on.exit(restore_options())
  stepped <- function() {
    loop$step()
    1
  }
  # Compiled, the left operand waits on the byte-code stack, where R does not count it.
  f <- compiler::cmpfun(function() torch_full(c(100, 100), 2) + stepped())
  expect_error(f(), "released at an optimizer step")
  # The session goes on.
  expect_equal(as_array((torch_ones(3) + 1)$sum()), 6)
})

test_that("fit()'s evaluation batches release their activations as they go", {
  loop <- small_training_loop()
  train <- list(list(x = torch_randn(128, 256), y = torch_randint(1, 11, 128, dtype = torch_long())))
  valid <- lapply(1:10, function(i) {
    list(x = torch_randn(1000, 256), y = torch_randint(1, 11, 1000, dtype = torch_long()))
  })
  fit(loop$model, train, nnf_cross_entropy, loop$opt, valid_dl = valid, verbose = FALSE)
  gc()
  live <- allocated()
  no_collections()
  on.exit(restore_options())
  .Call(rcuda:::rc_gc_reset_cpu_peak)
  before <- .Call(rcuda:::rc_gc_state)
  fit(loop$model, train, nnf_cross_entropy, loop$opt, valid_dl = valid, verbose = FALSE)
  after <- .Call(rcuda:::rc_gc_state)
  expect_equal(after$cpu_young_collections, before$cpu_young_collections)
  # A batch's activations are 4 x 1000 x 512 floats (8 MB); the ten batches' 80 MB would stay
  # allocated without the release.
  expect_lt(after$cpu_peak_bytes - live, 20e6)
  expect_lt(allocated() - live, 10e6)
})

test_that("the release changes no result: a dataloader loop trains to identical parameters", {
  train <- function(release) {
    no_collections(release)
    on.exit(restore_options())
    torch_manual_seed(5)
    model <- nn_sequential(nn_linear(20, 64), nn_relu(), nn_dropout(0.2), nn_linear(64, 3))
    opt <- optim_adam(model$parameters, lr = 1e-2)
    x <- torch_randn(96, 20)
    y <- torch_randint(1, 4, 96, dtype = torch_long())
    dl <- dataloader(tensor_dataset(x, y), batch_size = 32, shuffle = TRUE, generator = 11)
    losses <- c()
    for (epoch in 1:3) {
      loop(for (b in dl) {
        opt$zero_grad()
        out <- model(b[[1]])
        loss <- nnf_cross_entropy(out, b[[2]])
        loss$backward()
        opt$step()
        losses <- c(losses, as_array(loss))
      })
    }
    list(losses = losses, params = lapply(model$parameters, as_array),
         released = .Call(rcuda:::rc_gc_state)$cpu_released_tensors)
  }
  with <- train(TRUE)
  without <- train(FALSE)
  expect_gt(with$released, 0)  # the release did run (rc_init zeroes the counters)
  expect_equal(without$released, 0)
  expect_identical(with$losses, without$losses)
  expect_identical(with$params, without$params)
})
