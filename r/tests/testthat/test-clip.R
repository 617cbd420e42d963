# Gradient clipping against base R norms.

clip_case <- function(dtype = torch_double(), device = "cpu") {
  grads <- list(random_array(3, 4), random_array(5), random_array(2, 2, 2))
  params <- lapply(grads, function(g) torch_zeros_like(torch_tensor(g, dtype = dtype, device = device)))
  for (i in seq_along(params)) set_grad(params[[i]], torch_tensor(grads[[i]], dtype = dtype, device = device))
  list(params = params, grads = grads)
}

grad_values <- function(params) lapply(params, function(p) as_values(get_grad(p)$cpu()))

p_norm <- function(grads, p) {
  x <- unlist(grads)
  if (is.infinite(p)) max(abs(x)) else sum(abs(x)^p)^(1 / p)
}

test_that("nn_utils_clip_grad_norm_ scales all gradients by max_norm / total norm", {
  for (norm_type in c(2, 1, 3, Inf)) {
    case <- clip_case()
    total <- p_norm(case$grads, norm_type)
    max_norm <- total / 3
    got <- nn_utils_clip_grad_norm_(case$params, max_norm, norm_type = norm_type)
    expect_true(is_torch_tensor(got))
    expect_equal(got$item(), total, tolerance = 1e-12)
    coef <- max_norm / (total + 1e-6)
    expect_equal(grad_values(case$params), lapply(case$grads, function(g) g * coef),
                 tolerance = 1e-12)
    expect_equal(p_norm(grad_values(case$params), norm_type), max_norm, tolerance = 1e-6)
  }
})

test_that("gradients under max_norm are left as they are; parameters without one are skipped", {
  case <- clip_case()
  total <- p_norm(case$grads, 2)
  bare <- torch_randn(4)
  got <- nn_utils_clip_grad_norm_(c(case$params, bare), total * 2)
  expect_equal(got$item(), total, tolerance = 1e-12)
  expect_equal(grad_values(case$params), case$grads)
  expect_null(get_grad(bare))
  # A single tensor.
  p <- torch_zeros(3, dtype = torch_double())
  set_grad(p, torch_tensor(c(3, 4, 0), dtype = torch_double()))
  expect_equal(nn_utils_clip_grad_norm_(p, 1)$item(), 5)
  expect_equal(as_values(get_grad(p)), c(3, 4, 0) / (5 + 1e-6))
})

test_that("nn_utils_clip_grad_norm_ in float32 and on a strided gradient", {
  case <- clip_case(torch_float())
  total <- p_norm(case$grads, 2)
  got <- nn_utils_clip_grad_norm_(case$params, 0.5)
  expect_equal(got$dtype, torch_float())
  expect_equal(got$item(), total, tolerance = 1e-6)
  expect_equal(grad_values(case$params), lapply(case$grads, function(g) g * 0.5 / total),
               tolerance = 1e-5)
  g <- random_array(4, 3)
  p <- torch_zeros(3, 4, dtype = torch_double())
  set_grad(p, torch_tensor(g, dtype = torch_double())$t())
  expect_equal(nn_utils_clip_grad_norm_(list(p), 1)$item(), sqrt(sum(g^2)), tolerance = 1e-12)
  expect_equal(as_values(get_grad(p)), t(g) / (sqrt(sum(g^2)) + 1e-6), tolerance = 1e-12)
})

test_that("nn_utils_clip_grad_norm_ with non-finite norms and bad arguments", {
  p <- torch_zeros(2, dtype = torch_double())
  set_grad(p, torch_tensor(c(Inf, 1), dtype = torch_double()))
  expect_error(nn_utils_clip_grad_norm_(p, 1, error_if_nonfinite = TRUE), class = "rcuda_value_error")
  expect_equal(as_values(get_grad(p)), c(Inf, 1))
  expect_equal(nn_utils_clip_grad_norm_(p, 1)$item(), Inf)
  expect_error(nn_utils_clip_grad_norm_(p, 1, norm_type = 0), "norm_type",
               class = "rcuda_value_error")
  expect_error(nn_utils_clip_grad_norm_(list(p, 1), 1), "parameter 2 is an R double",
               class = "rcuda_value_error")
  expect_error(nn_utils_clip_grad_norm_(p, "a"), "max_norm", class = "rcuda_value_error")
  expect_equal(nn_utils_clip_grad_norm_(list(), 1)$item(), 0)
})

test_that("nn_utils_clip_grad_value_ clamps every gradient to [-clip_value, clip_value]", {
  case <- clip_case()
  expect_null(nn_utils_clip_grad_value_(case$params, 0.5))
  expect_equal(grad_values(case$params), lapply(case$grads, function(g) pmin(pmax(g, -0.5), 0.5)))
  bare <- torch_randn(2)
  expect_null(nn_utils_clip_grad_value_(bare, 0.1))
  expect_null(get_grad(bare))
  expect_error(nn_utils_clip_grad_value_(case$params, NA), "clip_value",
               class = "rcuda_value_error")
})

test_that("clipping on CUDA agrees with the CPU", {
  skip_if_cuda_not_available()
  for (dtype in list(torch_float(), torch_double())) {
    tol <- if (dtype == torch_float()) 1e-5 else 1e-12
    for (norm_type in c(2, 1, Inf)) {
      case <- clip_case(dtype, "cuda")
      total <- nn_utils_clip_grad_norm_(case$params, 0.3, norm_type = norm_type)
      expect_true(total$is_cuda)
      expect_equal(total$cpu()$item(), p_norm(case$grads, norm_type), tolerance = tol)
      coef <- 0.3 / (p_norm(case$grads, norm_type) + 1e-6)
      expect_equal(grad_values(case$params), lapply(case$grads, function(g) g * coef),
                   tolerance = tol)
    }
    case <- clip_case(dtype, "cuda")
    nn_utils_clip_grad_value_(case$params, 0.2)
    expect_equal(grad_values(case$params), lapply(case$grads, function(g) pmin(pmax(g, -0.2), 0.2)),
                 tolerance = tol)
  }
})
