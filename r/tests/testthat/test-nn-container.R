# nn_prune_head (R/nn-container.R) against the pruned network's layers applied by hand.

test_that("nn_prune_head drops the last children, keeping the modules themselves", {
  x <- nn_sequential(nn_relu(), nn_linear(2, 10), nn_batch_norm1d(10), nn_tanh(), nn_linear(10, 3))
  p <- nn_prune_head(x, 3)
  expect_true(inherits(p, "nn_sequential"))
  expect_equal(length(p), 2)
  expect_true(inherits(p[[2]], "nn_linear"))
  expect_identical(as_array(p[[2]]$weight), as_array(x[[2]]$weight))
  input <- torch_randn(4, 2)
  expect_equal(as_array(p(input)), as_array(x[[2]](x[[1]](input))))
  expect_equal(length(nn_prune_head(x)), 4)
  net <- nn_module(
    initialize = function() {
      self$linear <- nn_linear(1, 3)
      self$head <- nn_linear(3, 2)
    },
    forward = function(x) self$head(self$linear(x))
  )()
  q <- nn_prune_head(net, 1)
  expect_equal(names(q$children), "linear")
  expect_equal(q(torch_randn(5, 1))$shape, c(5, 3))
  expect_error(nn_prune_head(x, 6), "fewer than head_size", class = "rcuda_value_error")
  expect_error(nn_prune_head(x, 1.5), "whole number", class = "rcuda_value_error")
})
