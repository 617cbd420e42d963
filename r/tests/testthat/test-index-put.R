# `[<-` with vectors and masks goes through the engine's index_put_: random mixes of numbers,
# a:b ranges, position vectors (negative ones count from the end), logical vectors, long and
# bool tensors, with values that fill the selection or broadcast along its last dim, against
# base R on the same array (two index tensors are an error, as in torch for R).

# One random index for a dim of `size`: the text rcuda's and base R's calls use, the variables
# they name, and how much of the dim the selection keeps (0: the dim is dropped; NA: all of it). Positions are distinct (a repeated position's winner is unspecified).
random_index <- function(k, size, device) {
  kind <- sample(c("missing", "number", "range", "positions", "from_end", "logical", "long", "bool"), 1)
  name <- paste0("i", k)
  at <- sample(size, sample(size, 1))
  lg <- sample(c(TRUE, FALSE), size, replace = TRUE)
  lg[sample(size, 1)] <- TRUE
  lo <- sample(size, 1)
  hi <- lo + sample.int(size - lo + 1L, 1) - 1L
  n <- if (length(at) == 1) 0L else length(at)  # a single number drops its dim
  switch(kind,
    missing = list(ours = "", base = "", vars = list(), kept = NA),
    number = list(ours = name, base = name, vars = setNames(list(lo), name), kept = 0L),
    range = list(ours = sprintf("%d:%d", lo, hi), base = sprintf("%d:%d", lo, hi), vars = list(),
                 kept = hi - lo + 1L),
    positions = list(ours = name, base = name, vars = setNames(list(at), name), kept = n),
    from_end = list(ours = paste0(name, "_r"), base = name,
                    vars = setNames(list(at, at - size - 1), c(name, paste0(name, "_r"))),
                    kept = n),
    logical = list(ours = name, base = name, vars = setNames(list(lg), name), kept = sum(lg)),
    long = list(ours = paste0(name, "_t"), base = name,
                vars = setNames(list(at, torch_tensor(at, dtype = torch_long(), device = device)),
                                c(name, paste0(name, "_t"))),
                kept = length(at)),
    bool = list(ours = paste0(name, "_t"), base = name,
                vars = setNames(list(lg, torch_tensor(lg, device = device)), c(name, paste0(name, "_t"))),
                kept = sum(lg))
  )
}

test_that("`[<-` with random vector, mask, number and range indices matches base R", {
  for (device in test_devices()) {
    for (trial in 1:60) {
      dims <- sample(2:5, 3, replace = TRUE)
      x <- random_array(dims)
      a <- torch_tensor(x, dtype = torch_double(), device = device)
      idx <- lapply(seq_along(dims), function(k) random_index(k, dims[k], device))
      env <- new.env()
      for (i in idx) for (n in names(i$vars)) assign(n, i$vars[[n]], envir = env)
      # The selection's shape: numbers drop their dim, missing indices keep all of it.
      kept <- mapply(function(i, size) if (is.na(i$kept)) size else i$kept, idx, dims)
      sel <- kept[!vapply(idx, function(i) identical(i$kept, 0L), logical(1))]
      how <- sample(c("number", "fill", "last"), 1)
      if (how == "number" || length(sel) == 0) {
        w <- rnorm(1)
        v <- w
      } else if (how == "fill") {
        w <- if (length(sel) == 1) rnorm(sel) else array(rnorm(prod(sel)), dim = sel)
        v <- torch_tensor(w, dtype = torch_double(), device = device)
      } else {
        last <- rnorm(sel[length(sel)])
        v <- torch_tensor(last, dtype = torch_double(), device = device)  # broadcast
        w <- rep(last, each = prod(sel[-length(sel)]))
      }
      assign("a", a, envir = env)
      assign("x", x, envir = env)
      assign("v", v, envir = env)
      assign("w", w, envir = env)
      ours <- sprintf("a[%s] <- v", paste(vapply(idx, `[[`, "", "ours"), collapse = ", "))
      base <- sprintf("x[%s] <- w", paste(vapply(idx, `[[`, "", "base"), collapse = ", "))
      # Two index tensors: an error, as in torch for R, and nothing is written.
      if (sum(vapply(idx, function(i) endsWith(i$ours, "_t"), logical(1))) > 1) {
        expect_error(eval(parse(text = ours), env), "Only one tensor is allowed in the index")
        expect_equal(as.array(env$a), x, label = paste(ours, "on", device))
        next
      }
      eval(parse(text = ours), env)
      eval(parse(text = base), env)
      expect_equal(as.array(env$a), env$x, label = paste(ours, "on", device))
    }
  }
})

test_that("`[<-` with a bool tensor over several dims matches base R", {
  for (device in test_devices()) {
    x <- random_array(4, 5, 3)
    a <- torch_tensor(x, dtype = torch_double(), device = device)
    m <- matrix(runif(20) > 0.5, 4, 5)
    v <- rnorm(3)
    a[torch_tensor(m, device = device)] <- torch_tensor(v, dtype = torch_double(), device = device)
    for (k in 1:3) x[, , k][m] <- v[k]  # each selected row gets v, broadcast
    expect_equal(as.array(a), x)
    a[torch_tensor(m, device = device), 2] <- -7
    x[, , 2][m] <- -7
    expect_equal(as.array(a), x)
    m2 <- matrix(runif(15) > 0.5, 5, 3)
    a[3, torch_tensor(m2, device = device)] <- 0.5
    x[3, , ][m2] <- 0.5
    expect_equal(as.array(a), x)
    # A 1-d bool tensor followed by positions: the mask's count and the positions each keep a dim.
    lg <- c(TRUE, FALSE, TRUE, TRUE)
    w <- matrix(rnorm(6), 3)
    a[torch_tensor(lg, device = device), c(4, 1), 1] <- torch_tensor(w, dtype = torch_double(), device = device)
    x[lg, c(4, 1), 1] <- w
    expect_equal(as.array(a), x)
  }
})

test_that("`[<-` through index_put_ keeps integer, bool and float32 dtypes", {
  x <- matrix(sample(0:50, 12), 3)
  a <- torch_tensor(x, dtype = torch_long())
  a[c(3, 1), c(4, 2)] <- torch_tensor(matrix(c(-1, -2, -3, -4), 2), dtype = torch_long())
  x[c(3, 1), c(4, 2)] <- matrix(c(-1L, -2L, -3L, -4L), 2)
  expect_true(a$dtype == torch_long())
  expect_identical(as.array(a), x)
  f <- torch_zeros(2, 3, dtype = torch_bool())
  f[2, c(3, 1)] <- TRUE
  expect_identical(as.array(f), matrix(c(FALSE, TRUE, FALSE, FALSE, FALSE, TRUE), 2))
  g <- torch_zeros(5)
  g[c(5, 2)] <- torch_tensor(c(1.5, 2.5), dtype = torch_double())  # converted to float32
  expect_true(g$dtype == torch_float())
  expect_equal(as.array(g), c(0, 2.5, 0, 0, 1.5))
})

test_that("`[<-` through index_put_ writes a view's base and new axes fit", {
  x <- random_array(4, 6)
  a <- torch_tensor(x, dtype = torch_double())
  s <- a[, 1:N:2]  # columns 1, 3, 5: a view
  s[c(4, 2), c(3, 1)] <- 0
  x[c(4, 2), c(5, 1)] <- 0
  expect_equal(as.array(a), x)
  a[NULL, c(3, 1), 2] <- torch_tensor(matrix(c(8, 9), 1), dtype = torch_double())
  x[c(3, 1), 2] <- c(8, 9)
  expect_equal(as.array(a), x)
  expect_error(a[c(3, 1), ] <- torch_ones(2, 5), "value of shape \\[2, 5\\] cannot be assigned to a selection of shape \\[2, 6\\]",
               class = "rcuda_shape_error")
})
