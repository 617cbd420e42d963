# Meta tensors (Note [Meta tensors] in R/meta-tensors.R): a shape, a dtype and requires_grad, no
# data. Each expectation is the value torch for R (LibTorch's meta device) gives.

no_data <- "meta tensors hold no data"

test_that("the creators make meta tensors of their shape, dtype and requires_grad on device meta", {
  x <- torch_randn(10, 10, device = "meta")
  expect_true(is_torch_tensor(x))
  expect_equal(x$shape, c(10, 10))
  expect_true(x$dtype == torch_float())
  expect_true(x$device == torch_device("meta"))
  expect_true(is_meta_device(x$device))
  expect_false(x$requires_grad)
  expect_false(x$is_cuda)
  expect_equal(x$ndim, 2)
  expect_equal(x$dim(), 2)
  expect_equal(x$numel(), 100)
  expect_equal(x$size(), c(10, 10))
  expect_equal(x$size(-1), 10)
  expect_equal(dim(x), c(10, 10))
  expect_equal(length(x), 100)

  meta <- torch_device("meta")
  expect_equal(torch_zeros(2, 3, dtype = torch_long(), device = meta)$shape, c(2, 3))
  expect_true(torch_zeros(2, 3, dtype = torch_long(), device = meta)$dtype == torch_long())
  expect_true(torch_ones(c(4, 0), dtype = torch_double(), device = "meta")$dtype == torch_double())
  expect_equal(torch_ones(c(4, 0), device = "meta")$numel(), 0)
  expect_equal(torch_empty(list(2, 2), device = "meta")$shape, c(2, 2))
  expect_true(torch_rand(3, device = "meta", requires_grad = TRUE)$requires_grad)
  # (torch_full's dtype follows the fill value, as for dense tensors)
  expect_true(torch_full(c(2, 2), 1L, device = "meta")$dtype == torch_full(c(2, 2), 1L)$dtype)
  expect_true(torch_full(c(2, 2), 1.5, device = "meta")$dtype == torch_float())
  expect_equal(torch_empty(integer(0), device = "meta")$shape, numeric(0))
})

test_that("the creators check dtype, requires_grad, size and names as for dense tensors", {
  expect_error(torch_randn(2, dtype = torch_long(), device = "meta"), "dtype must be floating, got int64")
  expect_error(torch_zeros(2, dtype = torch_long(), requires_grad = TRUE, device = "meta"),
               "only floating point tensors can require gradients")
  expect_error(torch_zeros(-1, device = "meta"), "torch_zeros: size must be non-negative, got -1", fixed = TRUE)
  expect_error(torch_randn(2, names = "a", device = "meta"),
               "torch_randn: names are not supported on device \"meta\"", fixed = TRUE)
  expect_equal(torch_randn(2, names = "a")$names, "a")  # (dense tensors keep them)
})

test_that("$to() of a dense tensor to meta keeps its shape and takes the new dtype", {
  x <- torch_randn(10, 10)
  y <- x$to(dtype = "double", device = "meta")
  expect_true(y$dtype == torch_double())
  expect_true(y$device == torch_device("meta"))
  expect_equal(y$shape, c(10, 10))
  expect_true(x$to(device = torch_device("meta"))$dtype == torch_float())
  expect_equal(x$to("meta")$shape, c(10, 10))
  expect_true(torch_ones(2, requires_grad = TRUE)$to(device = "meta")$requires_grad)
  expect_equal(torch_scalar_tensor(3)$to(device = "meta")$shape, numeric(0))
})

test_that("a meta tensor's $to() changes the dtype on meta and refuses other devices", {
  x <- torch_ones(2, 3, device = "meta")
  expect_true(x$to(dtype = torch_int())$dtype == torch_int())
  expect_true(x$to(torch_int())$dtype == torch_int())
  expect_true(x$to(dtype = "double", device = "meta")$dtype == torch_double())
  expect_equal(x$to(device = "meta")$shape, c(2, 3))
  expect_error(x$to(device = "cpu"), "to: Cannot copy out of meta tensor; no data!", fixed = TRUE)
  expect_error(x$to("cpu"), "to: Cannot copy out of meta tensor; no data!", fixed = TRUE)
  expect_error(x$cpu(), "cpu: Cannot copy out of meta tensor; no data!", fixed = TRUE)
  expect_error(x$cuda(), "cuda: Cannot copy out of meta tensor; no data!", fixed = TRUE)
  expect_error(x$to(dtype = "nonsense"), "dtype \"nonsense\" is not one rcuda knows")
})

test_that("requires_grad_() and detach() follow the dense rules", {
  x <- torch_zeros(3, device = "meta")
  y <- x$requires_grad_()
  expect_true(y$requires_grad)
  expect_false(y$detach()$requires_grad)
  expect_false(y$requires_grad_(FALSE)$requires_grad)
  expect_error(torch_zeros(2, dtype = torch_long(), device = "meta")$requires_grad_(),
               "requires_grad_: only floating point tensors can require gradients, got int64")
})

test_that("with_device(meta) makes meta tensors, and an inner with_device(cpu) dense ones", {
  z <- torch_randn(10, 10)
  with_device(device = "meta", {
    x <- torch_randn(10, 10)
    with_device(device = "cpu", {
      a <- torch_randn(10, 10)
    })
    b <- torch_zeros(2, dtype = torch_double())
    c <- torch_full(3, 2, device = "cpu")
  })
  y <- torch_randn(10, 10)
  expect_equal(x$device$type, "meta")
  expect_equal(b$device$type, "meta")
  expect_true(b$dtype == torch_double())
  expect_equal(a$device$type, "cpu")
  expect_equal(as.numeric(c), c(2, 2, 2))
  expect_equal(y$device$type, "cpu")
  expect_equal(z$device$type, "cpu")
  expect_null(rcuda:::default_device_state$device)
  f <- function() {
    local_device(torch_device("meta"))
    torch_ones(2)$device$type
  }
  expect_equal(f(), "meta")
  expect_equal(torch_ones(2)$device$type, "cpu")
})

test_that("devices compare: meta equals meta, not cpu", {
  x <- torch_randn(10, 10, device = "cpu")
  z <- torch_randn(10, 10, device = "meta")
  expect_false(x$device == z$device)
  expect_true(z$device == torch_randn(1, device = "meta")$device)
  expect_true(z$device != x$device)
})

test_that("meta tensors print their dtype and shape", {
  expect_equal(format(torch_randn(10, 10, device = "meta")), c("torch_tensor", "[ META FloatType{10,10} ]"))
  expect_output(print(torch_zeros(2, dtype = torch_long(), device = "meta")), "[ META LongType{2} ]", fixed = TRUE)
  expect_output(print(torch_ones(3, requires_grad = TRUE, device = "meta")),
                "[ META FloatType{3} ][ requires_grad = TRUE ]", fixed = TRUE)
  expect_output(methods::show(torch_empty(1, device = "meta")), "META")  # (autoprint calls show())
  expect_output(str(torch_ones(2, 3, device = "meta")), "Float [1:2, 1:3] (meta)", fixed = TRUE)
})

test_that("everything that reads values is refused: meta tensors hold no data", {
  x <- torch_ones(2, 2, device = "meta")
  expect_error(x + 1, paste0(no_data, ": the operator `+`"), fixed = TRUE)
  expect_error(1 + x, paste0(no_data, ": the operator `+`"), fixed = TRUE)
  expect_error(x * torch_ones(2, 2), paste0(no_data, ": the operator `*`"), fixed = TRUE)
  expect_error(torch_ones(2, 2) == x, paste0(no_data, ": the operator `==`"), fixed = TRUE)
  expect_error(x & x, paste0(no_data, ": the operator `&`"), fixed = TRUE)
  expect_error(-x, paste0(no_data, ": the operator `-`"), fixed = TRUE)
  expect_error(!x, paste0(no_data, ": the operator `!`"), fixed = TRUE)
  expect_error(x %*% x, paste0(no_data, ": the operator `%*%`"), fixed = TRUE)
  expect_error(exp(x), paste0(no_data, ": exp()"), fixed = TRUE)
  expect_error(sum(x), paste0(no_data, ": sum()"), fixed = TRUE)
  expect_error(mean(x), paste0(no_data, ": mean()"), fixed = TRUE)
  expect_error(as_array(x), paste0(no_data, ": as_array()"), fixed = TRUE)
  expect_error(as.array(x), paste0(no_data, ": as.array()"), fixed = TRUE)
  expect_error(as.matrix(x), paste0(no_data, ": as.matrix()"), fixed = TRUE)
  expect_error(as.numeric(x), paste0(no_data, ": as.numeric()"), fixed = TRUE)
  expect_error(as.integer(x), paste0(no_data, ": as.integer()"), fixed = TRUE)
  expect_error(as.logical(x), paste0(no_data, ": as.logical()"), fixed = TRUE)
  expect_error(as.vector(x), paste0(no_data, ": as.vector()"), fixed = TRUE)
  expect_error(x[1, 1], paste0(no_data, ": indexing"), fixed = TRUE)
  expect_error(x[[1]], paste0(no_data, ": indexing"), fixed = TRUE)
  expect_error(x[1, 1] <- 2, paste0(no_data, ": assigning into a tensor"), fixed = TRUE)
  expect_error(x$sum(), paste0(no_data, ": $sum is not available"), fixed = TRUE)
  expect_error(x$grad, paste0(no_data, ": $grad is not available"), fixed = TRUE)
  expect_error(x$requires_grad <- TRUE, paste0(no_data, ": setting $requires_grad"), fixed = TRUE)
  expect_error(x$nonsense, "meta tensors have no method or field 'nonsense'", fixed = TRUE)
  expect_true("shape" %in% .DollarNames(x, ""))
})

test_that("creators of dense data refuse meta, and mps stays refused", {
  meta_only <- "rcuda makes tensors on device \"meta\" only with torch_empty(), torch_zeros()"
  expect_error(torch_tensor(1:3, device = "meta"), meta_only, fixed = TRUE, class = "rcuda_device_error")
  expect_error(torch_randint(0, 3, 2, device = torch_device("meta")), meta_only, fixed = TRUE)
  expect_error(torch_arange(1, 3, device = "meta"), meta_only, fixed = TRUE)
  expect_error(with_device(device = "meta", torch_tensor(1)), meta_only, fixed = TRUE)
  expect_error(torch_randn(2, device = "mps"), "rcuda cannot place tensors on device \"mps\"", fixed = TRUE)
  expect_error(with_device(device = "mps", torch_ones(1)), "cannot place tensors on device \"mps\"", fixed = TRUE)
  expect_error(torch_ones(2)$to(device = "mps"), "cannot place tensors on device \"mps\"", fixed = TRUE)
})
