# autograd_function(): forward and backward written in R (Note [Autograd functions from R]).
# References: closed-form derivatives and the gradients rcuda's own recorded ops give for the
# same composition.

test_that("a custom function's gradient is its backward's, composed with recorded ops", {
  custom_pow <- autograd_function(
    forward = function(ctx, var1) {
      ctx$save_for_backward(var1)
      var1^2
    },
    backward = function(ctx, grad_output) {
      v <- ctx$saved_variables[[1]]
      list(var1 = 2 * v * grad_output)
    }
  )
  v <- rnorm(5)
  x <- torch_tensor(v, dtype = torch_float64(), requires_grad = TRUE)
  out <- custom_pow(x)
  expect_true(out$requires_grad)
  expect_equal(as_array(out), v^2)
  (out * torch_tensor(1:5, dtype = torch_float64()))$sum()$backward()
  expect_equal(as_array(x$grad), 2 * v * (1:5))
  # used twice in one graph: the gradients of both uses add up
  x2 <- torch_tensor(v, dtype = torch_float64(), requires_grad = TRUE)
  (custom_pow(x2) * custom_pow(x2))$sum()$backward()
  expect_equal(as_array(x2$grad), 4 * v^3)
})

test_that("named saved variables, constants, optional arguments and needs_input_grad", {
  linear <- autograd_function(
    forward = function(ctx, input, weight, bias = NULL) {
      ctx$save_for_backward(input = input, weight = weight, bias = bias)
      output <- input$mm(weight$t())
      if (!is.null(bias)) output <- output + bias
      output
    },
    backward = function(ctx, grad_output) {
      s <- ctx$saved_variables
      grads <- list()
      if (ctx$needs_input_grad$input) grads$input <- grad_output$mm(s$weight)
      if (ctx$needs_input_grad$weight) grads$weight <- grad_output$t()$mm(s$input)
      if (!is.null(s$bias) && ctx$needs_input_grad$bias) grads$bias <- grad_output$sum(dim = 1)
      grads
    }
  )
  xm <- matrix(rnorm(12), 4)
  wm <- matrix(rnorm(6), 2)
  bm <- rnorm(2)
  x <- torch_tensor(xm, dtype = torch_float64())
  w <- torch_tensor(wm, dtype = torch_float64(), requires_grad = TRUE)
  b <- torch_tensor(bm, dtype = torch_float64(), requires_grad = TRUE)
  o <- linear(x, w, b)
  expect_equal(as_array(o), xm %*% t(wm) + matrix(bm, 4, 2, byrow = TRUE))
  o$pow(2)$sum()$backward()
  g <- 2 * (xm %*% t(wm) + matrix(bm, 4, 2, byrow = TRUE))
  expect_equal(as_array(w$grad), t(g) %*% xm)
  expect_equal(as_array(b$grad), colSums(g))
  expect_true(is_undefined_tensor(x$grad))
  # without bias, and a constant saved beside tensors
  w$grad <- NULL
  linear(x, w)$sum()$backward()
  expect_equal(as_array(w$grad), t(matrix(1, 4, 2)) %*% xm)

  scaled_pow <- autograd_function(
    forward = function(ctx, var1, i) {
      ctx$save_for_backward(var1 = var1, i = i)
      var1^i
    },
    backward = function(ctx, grad_output) {
      v <- ctx$saved_variables
      expect_named(v, c("var1", "i"))
      list(var1 = v$i * v$var1^(v$i - 1) * grad_output)
    }
  )
  y <- torch_tensor(2, requires_grad = TRUE)
  scaled_pow(y, 3)$backward()
  expect_equal(as_array(y$grad), 12)
})

test_that("several outputs, their gradients passed one by one or as one list", {
  two <- function(backward) {
    autograd_function(
      forward = function(ctx, x) {
        ctx$save_for_backward(x = x)
        list(x * 2, x^2)
      },
      backward = backward
    )
  }
  by_one <- two(function(ctx, g1, g2) list(x = 2 * g1 + 2 * ctx$saved_variables$x * g2))
  as_list <- two(function(ctx, grads) {
    list(x = 2 * grads[[1]] + 2 * ctx$saved_variables$x * grads[[2]])
  })
  v <- rnorm(3)
  for (f in list(by_one, as_list)) {
    x <- torch_tensor(v, dtype = torch_float64(), requires_grad = TRUE)
    r <- f(x)
    expect_length(r, 2)
    (r[[1]]$sum() + 3 * r[[2]]$sum())$backward()
    expect_equal(as_array(x$grad), 2 + 6 * v)
    # only one output used: the other's gradient reaches backward as zeros
    x <- torch_tensor(v, dtype = torch_float64(), requires_grad = TRUE)
    f(x)[[2]]$sum()$backward()
    expect_equal(as_array(x$grad), 2 * v)
  }
})

test_that("mark_non_differentiable outputs carry no gradient and get zeros in backward", {
  seen <- NULL
  f <- autograd_function(
    forward = function(ctx, input) {
      a <- input + 1
      b <- input + 2
      ctx$mark_non_differentiable(a)
      list(a, b)
    },
    backward = function(ctx, ga, gb) {
      seen <<- as_array(ga)
      list(input = gb)
    }
  )
  x <- torch_tensor(c(1, -3), requires_grad = TRUE)
  r <- f(x)
  expect_false(r[[1]]$requires_grad)
  expect_true(r[[2]]$requires_grad)
  r[[2]]$sum()$backward()
  expect_equal(as_array(x$grad), c(1, 1))
  expect_equal(seen, c(0, 0))
})

test_that("no graph without grad mode or inputs that need one; returning an input is safe", {
  calls <- 0
  identity_fn <- autograd_function(
    forward = function(ctx, x) x,
    backward = function(ctx, g) {
      calls <<- calls + 1
      list(x = g * 10)
    }
  )
  plain <- torch_tensor(c(1, 2))
  expect_false(identity_fn(plain)$requires_grad)
  x <- torch_tensor(c(1, 2), requires_grad = TRUE)
  with_no_grad(expect_null(identity_fn(x)$grad_fn))  # x itself, no node
  # The input returned unchanged: the output has the function's history, the input keeps its own.
  y <- identity_fn(x)
  expect_equal(y$grad_fn$name(), "RFunctionBackward")
  expect_null(x$grad_fn)
  y$sum()$backward()
  expect_equal(as_array(x$grad), c(10, 10))
  expect_equal(calls, 1)
})

test_that("errors in forward and backward surface as R errors, and bad returns are named", {
  failing_forward <- autograd_function(
    forward = function(ctx, x) stop("stop forward"),
    backward = function(ctx, g) list(x = g)
  )
  x <- torch_tensor(1, requires_grad = TRUE)
  expect_error(failing_forward(x), "stop forward")
  failing_backward <- autograd_function(
    forward = function(ctx, x) x * 2,
    backward = function(ctx, g) stop("stop backward")
  )
  expect_error(failing_backward(x)$backward(), "stop backward")
  unnamed <- autograd_function(
    forward = function(ctx, x) x * 2,
    backward = function(ctx, g) list(g)
  )
  expect_error(unnamed(x)$backward(), class = "value_error", regexp = "named by forward's arguments")
  not_tensor <- autograd_function(
    forward = function(ctx, x) x * 2,
    backward = function(ctx, g) list(x = 1)
  )
  expect_error(not_tensor(x)$backward(), class = "value_error", regexp = "for 'x' must be a tensor")
  # after an error the engine still works
  z <- torch_tensor(3, requires_grad = TRUE)
  (z * z)$backward()
  expect_equal(as_array(z$grad), 6)
  expect_error(autograd_function(1, function(ctx) NULL), class = "value_error")
  dirty <- autograd_function(
    forward = function(ctx, x) {
      ctx$mark_dirty(x)
      x
    },
    backward = function(ctx, g) list(x = g)
  )
  expect_error(dirty(x), class = "value_error", regexp = "mark_dirty")
})

test_that("a second backward through a freed custom node is an error; retain_graph keeps it", {
  f <- autograd_function(
    forward = function(ctx, x) {
      ctx$save_for_backward(x = x)
      x^2
    },
    backward = function(ctx, g) list(x = 2 * ctx$saved_variables$x * g)
  )
  x <- torch_tensor(3, requires_grad = TRUE)
  y <- f(x)
  y$backward(retain_graph = TRUE)
  y$backward()
  expect_equal(as_array(x$grad), 12)
  expect_error(y$backward(), regexp = "second")
})

test_that("autograd_grad works through custom functions", {
  f <- autograd_function(
    forward = function(ctx, x) {
      ctx$save_for_backward(x = x)
      x$exp()
    },
    backward = function(ctx, g) list(x = g * ctx$saved_variables$x$exp())
  )
  v <- rnorm(4)
  x <- torch_tensor(v, dtype = torch_float64(), requires_grad = TRUE)
  g <- autograd_grad(f(x)$sum(), list(x))
  expect_equal(as_array(g[[1]]), exp(v))
  expect_true(is_undefined_tensor(x$grad))
})
