# The Math group, atan2, the cumulative ops and the sort family against base R on fresh random
# inputs (sort, order, rev, cumprod, cummax, cummin, quantile(type = 7), median, table, unique,
# findInterval, hist, and the trigonometric and special functions).

as_num <- function(t) as.numeric(as_array(t))

test_that("the Math group matches base R, through torch_*, $ methods and base generics", {
  x <- runif(20, 0.1, 0.9)
  t <- torch_tensor(x, dtype = torch_float64())
  fns <- list(tan = tan, asin = asin, acos = acos, atan = atan, sinh = sinh, cosh = cosh,
              asinh = asinh, atanh = atanh, trunc = trunc, lgamma = lgamma, digamma = digamma,
              log2 = log2, log10 = log10)
  for (name in names(fns)) {
    expect_equal(as_num(fns[[name]](t)), fns[[name]](x), tolerance = 1e-12, info = name)
    expect_equal(as_num(get(paste0("torch_", name))(t)), fns[[name]](x), tolerance = 1e-12, info = name)
    expect_equal(as_num(t[[name]]()), fns[[name]](x), tolerance = 1e-12, info = name)
  }
  expect_equal(as_num(acosh(t + 1)), acosh(x + 1), tolerance = 1e-12)
  expect_equal(as_num(torch_erf(t)), 2 * pnorm(x * sqrt(2)) - 1, tolerance = 1e-12)
  expect_equal(as_num(torch_erfc(t)), 2 * pnorm(-x * sqrt(2)), tolerance = 1e-12)
  expect_equal(as_num(torch_erfinv(t)), qnorm((x + 1) / 2) / sqrt(2), tolerance = 1e-10)
  expect_equal(as_num(torch_exp2(t)), 2^x, tolerance = 1e-12)
  expect_equal(as_num(torch_reciprocal(t)), 1 / x, tolerance = 1e-12)
  expect_equal(as_num(trunc(torch_tensor(c(-2.7, -0.5, 0.5, 2.7)))), c(-2, 0, 0, 2))
  expect_equal(as_num(sign(torch_tensor(c(-3, 0, 2)))), c(-1, 0, 1))
  y <- runif(20, -2, 2)
  expect_equal(as_num(torch_atan2(t - 0.5, torch_tensor(y, dtype = torch_float64()))), atan2(x - 0.5, y),
               tolerance = 1e-12)
  expect_equal(torch_log2(torch_tensor(1:4))$dtype$name, "float32")
})

test_that("gradients flow through the new unary ops", {
  x <- torch_tensor(c(0.2, 0.5), dtype = torch_float64(), requires_grad = TRUE)
  torch_sum(torch_asin(x) + torch_lgamma(x))$backward()
  expect_equal(as_num(x$grad), 1 / sqrt(1 - c(0.2, 0.5)^2) + digamma(c(0.2, 0.5)), tolerance = 1e-10)
})

test_that("cumulative ops match cumprod, cummax and cummin", {
  v <- sample(c(-2, -1, 0, 1, 2, 3), 15, replace = TRUE)
  t <- torch_tensor(v, dtype = torch_float64())
  expect_equal(as_num(cumprod(t)), cumprod(v))
  expect_equal(as_num(torch_cumprod(t, dim = 1)), cumprod(v))
  expect_equal(as_num(cummax(t)), cummax(v))
  expect_equal(as_num(cummin(t)), cummin(v))
  r <- torch_cummax(t, dim = 1)
  expect_equal(as_num(r[[1]]), cummax(v))
  # 1-based index of the latest running maximum
  expect_equal(v[as_num(r[[2]])], cummax(v))
  m <- matrix(runif(12), 3, 4)
  expect_equal(as_array(torch_cumprod(torch_tensor(m, dtype = torch_float64()), dim = 2)), t(apply(m, 1, cumprod)))
  expect_equal(as_num(torch_logcumsumexp(torch_tensor(v, dtype = torch_float64()), dim = 1)), log(cumsum(exp(v))),
               tolerance = 1e-12)
  expect_equal(torch_cumprod(torch_tensor(1:3), dim = 1)$dtype$name, "int64")
})

test_that("torch_sort, torch_argsort and sort() match sort and order", {
  v <- sample(1:6, 25, replace = TRUE) + 0
  t <- torch_tensor(v)
  s <- torch_sort(t)
  expect_equal(as_num(s[[1]]), sort(v))
  expect_equal(as_num(s[[2]]), order(v))  # stable, 1-based
  expect_equal(as_num(torch_argsort(t, descending = TRUE)), order(-v))
  expect_equal(as_num(sort(t, decreasing = TRUE)), rev(sort(v)))
  m <- matrix(rnorm(12), 3, 4)
  expect_equal(as_array(torch_sort(torch_tensor(m, dtype = torch_float64()), dim = 1)[[1]]), apply(m, 2, sort))
  expect_equal(as_num(t$sort()[[1]]), sort(v))
  expect_equal(as_num(torch_sort(torch_tensor(c(2, NaN, 1)))[[1]]), c(1, 2, NaN))
})

test_that("topk, kthvalue, median and mode match base R", {
  v <- rnorm(11)
  t <- torch_tensor(v, dtype = torch_float64())
  top <- torch_topk(t, 3)
  expect_equal(as_num(top[[1]]), sort(v, decreasing = TRUE)[1:3])
  expect_equal(v[as_num(top[[2]])], sort(v, decreasing = TRUE)[1:3])
  k <- torch_kthvalue(t, 4)
  expect_equal(as_num(k[[1]]), sort(v)[4])
  expect_equal(v[as_num(k[[2]])], sort(v)[4])
  expect_equal(as_num(torch_median(t)), median(v))
  expect_equal(as_num(median(t)), median(v))
  even <- rnorm(10)
  expect_equal(as_num(torch_median(torch_tensor(even, dtype = torch_float64()))), sort(even)[5])  # the lower median
  m <- matrix(rnorm(15), 3, 5)
  md <- torch_median(torch_tensor(m, dtype = torch_float64()), dim = 2)
  expect_equal(as_num(md[[1]]), apply(m, 1, median))
  w <- sample(1:4, 30, replace = TRUE)
  counts <- table(w)
  mo <- torch_mode(torch_tensor(w))
  expect_equal(as_num(mo[[1]]), as.numeric(names(counts)[which.max(counts)]))
  expect_equal(w[as_num(mo[[2]])], as_num(mo[[1]]))
})

test_that("torch_quantile matches quantile(type = 7) and torch's other interpolations", {
  v <- rnorm(17)
  t <- torch_tensor(v, dtype = torch_float64())
  p <- c(0, 0.1, 0.33, 0.5, 0.9, 1)
  expect_equal(as_num(torch_quantile(t, p)), unname(quantile(v, p, type = 7)), tolerance = 1e-12)
  s <- sort(v)
  r <- 0.33 * 16
  expect_equal(as_num(torch_quantile(t, 0.33, interpolation = "lower")), s[floor(r) + 1])
  expect_equal(as_num(torch_quantile(t, 0.33, interpolation = "higher")), s[ceiling(r) + 1])
  expect_equal(as_num(torch_quantile(t, 0.33, interpolation = "midpoint")), (s[floor(r) + 1] + s[ceiling(r) + 1]) / 2)
  expect_equal(as_num(torch_quantile(t, 0.33, interpolation = "nearest")), s[round(r) + 1])
  m <- matrix(rnorm(20), 4, 5)
  q <- torch_quantile(torch_tensor(m, dtype = torch_float64()), c(0.25, 0.75), dim = 2)
  expect_equal(dim(as_array(q)), c(2L, 4L))
  expect_equal(as_array(q)[1, ], unname(apply(m, 1, quantile, 0.25)), tolerance = 1e-12)
  expect_error(torch_quantile(t, 1.5), "range")
})

test_that("torch_unique, torch_bucketize, torch_histc and torch_randperm", {
  w <- sample(c(5, 1, 3, 3, 9), 20, replace = TRUE)
  u <- torch_unique(torch_tensor(w), return_inverse = TRUE, return_counts = TRUE)
  expect_equal(as_num(u[[1]]), sort(unique(w)))
  expect_equal(sort(unique(w))[as_num(u[[2]])], w)
  expect_equal(as_num(u[[3]]), as.numeric(table(w)))
  expect_equal(as_num(torch_unique(torch_tensor(w))), sort(unique(w)))
  b <- c(-1, 0, 0.5, 2)
  x <- c(runif(10, -3, 3), 0, 2)
  tb <- torch_tensor(b, dtype = torch_float64())
  tx <- torch_tensor(x, dtype = torch_float64())
  expect_equal(as_num(torch_bucketize(tx, tb, right = TRUE)), findInterval(x, b))
  expect_equal(as_num(torch_bucketize(tx, tb)), findInterval(x, b, left.open = TRUE))
  h <- runif(40, -1, 1)
  expect_equal(as_num(torch_histc(torch_tensor(h), bins = 4, min = -1, max = 1)),
               as.numeric(table(cut(h, seq(-1, 1, length.out = 5), include.lowest = TRUE, right = FALSE))))
  torch_manual_seed(7)
  p <- as_num(torch_randperm(50))
  expect_equal(sort(p), 0:49)
  torch_manual_seed(7)
  expect_equal(as_num(torch_randperm(50)), p)
})
