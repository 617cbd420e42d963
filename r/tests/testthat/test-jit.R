# jit_trace and onnx_export: a traced module replays its own forward (bitwise on the CPU, at
# other batch sizes too), records for autograd, warns on host reads; exported models run in ONNX
# Runtime (the reference) with the module's outputs; bad calls are R errors naming what is wrong.

mlp_module <- nn_module(
  initialize = function() {
    self$fc1 <- nn_linear(20, 32)
    self$fc2 <- nn_linear(32, 10)
  },
  forward = function(x) nnf_log_softmax(self$fc2(nnf_relu(self$fc1(x))), dim = 2)
)

# The MNIST-example CNN with fewer channels: conv, conv, max pool, dropout, flatten, linear.
cnn_module <- nn_module(
  initialize = function() {
    self$conv1 <- nn_conv2d(1, 8, 3, 1)
    self$conv2 <- nn_conv2d(8, 16, 3, 1)
    self$dropout1 <- nn_dropout(0.25)
    self$dropout2 <- nn_dropout(0.5)
    self$fc1 <- nn_linear(16 * 12 * 12, 32)
    self$fc2 <- nn_linear(32, 10)
  },
  forward = function(x) {
    x <- nnf_relu(self$conv1(x))
    x <- nnf_relu(self$conv2(x))
    x <- nnf_max_pool2d(x, 2)
    x <- self$dropout1(x)
    x <- torch_flatten(x, start_dim = 2)
    x <- nnf_relu(self$fc1(x))
    x <- self$dropout2(x)
    nnf_log_softmax(self$fc2(x), dim = 2)
  }
)

same_values <- function(a, b) identical(as.array(a), as.array(b))

test_that("a traced CNN replays its forward bitwise on the CPU, at another batch size too", {
  torch_manual_seed(1)
  model <- cnn_module()
  model$eval()
  traced <- jit_trace(model, torch_randn(4, 1, 28, 28))
  expect_s3_class(traced, "script_module")
  for (batch in c(4, 7)) {
    x <- torch_randn(batch, 1, 28, 28)
    expect_true(same_values(traced(x), model(x)))
  }
  text <- capture.output(print(traced$graph))
  expect_true(any(grepl("conv2d(%input, %conv1.weight, %conv1.bias)", text, fixed = TRUE)))
  expect_true(any(grepl("max_pool2d(", text, fixed = TRUE)))
  expect_true(any(grepl("log_softmax(", text, fixed = TRUE)))
  expect_setequal(names(traced$parameters),
                  c("conv1.weight", "conv1.bias", "conv2.weight", "conv2.bias", "fc1.weight",
                    "fc1.bias", "fc2.weight", "fc2.bias"))
})

test_that("a traced function keeps the module's parameters: steps and gradients go through", {
  torch_manual_seed(2)
  model <- mlp_module()
  x <- torch_randn(5, 20, dtype = torch_float64())
  model$to(dtype = torch_float64())
  traced <- jit_trace(model, x)
  with_no_grad(model$fc1$weight$add_(0.5))
  expect_true(same_values(traced(x), model(x)))
  traced(x)$sum()$backward()
  from_trace <- as.array(model$fc1$weight$grad)
  model$zero_grad()
  model(x)$sum()$backward()
  expect_equal(from_trace, as.array(model$fc1$weight$grad), tolerance = 0)
})

test_that("functions of several inputs and outputs trace; by-name ops are recorded", {
  f <- function(a, b) list(sum = torch_exp(a) + b^2, prod = a$log1p() * (2 - b))
  a <- torch_rand(3, 4)
  b <- torch_randn(3, 4)
  traced <- jit_trace(f, a, b)
  a2 <- torch_rand(3, 4)
  b2 <- torch_randn(3, 4)
  out <- traced(a2, b2)
  expect_named(out, c("sum", "prod"))
  expect_true(same_values(out$sum, f(a2, b2)$sum))
  expect_true(same_values(out$prod, f(a2, b2)$prod))
  text <- paste(capture.output(print(traced$graph)), collapse = "\n")
  for (op in c("exp(", "pow(", "add(", "log1p(", "sub(", "mul(")) expect_match(text, op, fixed = TRUE)
})

test_that("reading values on the host while tracing warns, naming the function", {
  f <- function(x) if (x$sum()$item() > 0) x$exp() else x$neg()
  expect_warning(jit_trace(f, torch_ones(3)), "item reads a tensor's values on the host")
  g <- function(x) x * as.array(x$max())
  expect_warning(jit_trace(g, torch_ones(3)), "as_array reads a tensor's values on the host")
})

test_that("jit_trace errors name what is wrong", {
  expect_error(jit_trace(function(x) 3, torch_ones(2)),
               "must return a tensor or a list of tensors, got an R numeric")
  expect_error(jit_trace(function(x) x, 1:3), "example input 1 must be a tensor")
  expect_error(jit_trace(42, torch_ones(2)), "func must be a function or an nn_module")
  expect_error(jit_trace(function(x) torch_ones(2), torch_ones(2)), "was not made by a traced op")
  # A failed trace stops tracing: the next one works.
  expect_error(jit_trace(function(x) stop("boom"), torch_ones(2)), "boom")
  expect_true(same_values(jit_trace(function(x) x + 1, torch_ones(2))(torch_zeros(2)), torch_ones(2)))
})

# ---- ONNX export, against ONNX Runtime ------------------------------------------------------

export_and_compare <- function(model, example, inputs, tol = 1e-5, opset = 17, dynamic = TRUE,
                               ort_inputs = inputs) {
  path <- tempfile(fileext = ".onnx")
  on.exit(unlink(path), add = TRUE)
  n <- length(example)
  names <- paste0("in", seq_len(n))
  axes <- if (dynamic) stats::setNames(rep(list(list("1" = "batch")), n + 1), c(names, "out")) else NULL
  onnx_export(model, example, path, input_names = names, output_names = "out",
              dynamic_axes = axes, opset_version = opset)
  expect_true(file.exists(path))
  for (k in seq_along(inputs)) {
    reference <- onnxruntime_run(path, ort_inputs[[k]])[[1]]
    expect_close_to_reference(do.call(model, inputs[[k]]), reference, tol)
  }
}

test_that("an exported MLP and CNN match ONNX Runtime at two batch sizes", {
  skip_if_no_onnxruntime()
  torch_manual_seed(3)
  mlp <- mlp_module()
  mlp$eval()
  export_and_compare(mlp, list(torch_randn(4, 20)),
                     list(list(torch_randn(4, 20)), list(torch_randn(9, 20))))
  cnn <- cnn_module()
  cnn$eval()
  export_and_compare(cnn, list(torch_randn(2, 1, 28, 28)),
                     list(list(torch_randn(2, 1, 28, 28)), list(torch_randn(5, 1, 28, 28))))
})

test_that("norms, activations, pools and resampling export", {
  skip_if_no_onnxruntime()
  torch_manual_seed(4)
  net <- nn_module(
    initialize = function() {
      self$conv <- nn_conv2d(3, 8, 3, padding = 1)
      self$bn <- nn_batch_norm2d(8)
      self$gn <- nn_group_norm(4, 8)
      self$up <- nn_conv_transpose2d(8, 4, 2, stride = 2)
      self$ln <- nn_layer_norm(4)
      self$fc <- nn_linear(4, 6)
    },
    forward = function(x) {
      h <- nnf_gelu(self$bn(self$conv(x)))
      h <- nnf_silu(self$gn(h))
      h <- nnf_avg_pool2d(h, 2)
      h <- nnf_leaky_relu(self$up(h), 0.1)
      h <- nnf_pad(h, c(1, 1, 2, 0), mode = "reflect")
      h <- nnf_interpolate(h, scale_factor = 2, mode = "nearest")
      h <- nnf_elu(h)
      h <- torch_flatten(nnf_adaptive_avg_pool2d(h, 1), start_dim = 2)
      h <- nnf_softplus(self$ln(h))
      torch_tanh(nnf_hardtanh(self$fc(h), -0.5, 0.5)) + torch_sigmoid(h$sum(dim = 2, keepdim = TRUE))
    }
  )
  model <- net()
  with_no_grad({
    model$bn$running_mean$uniform_(-0.5, 0.5)
    model$bn$running_var$uniform_(0.5, 2)
  })
  model$eval()
  export_and_compare(model, list(torch_randn(2, 3, 8, 8)),
                     list(list(torch_randn(2, 3, 8, 8)), list(torch_randn(3, 3, 8, 8))))
})

test_that("one-dimensional layers export", {
  skip_if_no_onnxruntime()
  torch_manual_seed(5)
  net <- nn_module(
    initialize = function() {
      self$conv <- nn_conv1d(4, 6, 3, padding = "same")
      self$fc <- nn_linear(6, 3)
    },
    forward = function(x) {
      h <- nnf_max_pool1d(torch_relu(self$conv(x)), 2)
      h <- nnf_avg_pool1d(h, 2)
      self$fc(h$mean(dim = 3))
    }
  )
  model <- net()
  export_and_compare(model, list(torch_randn(2, 4, 16)),
                     list(list(torch_randn(2, 4, 16)), list(torch_randn(5, 4, 16))))
})

test_that("an embedding's indices are 1-based in R and 0-based in the file", {
  skip_if_no_onnxruntime()
  torch_manual_seed(6)
  net <- nn_module(
    initialize = function() {
      self$embedding <- nn_embedding(12, 5)
      self$fc <- nn_linear(5, 2)
    },
    forward = function(tokens) self$fc(self$embedding(tokens)$mean(dim = 2))
  )
  model <- net()
  tokens <- torch_randint(1, 13, c(3, 7), dtype = torch_long())
  path <- tempfile(fileext = ".onnx")
  on.exit(unlink(path), add = TRUE)
  onnx_export(model, tokens, path, input_names = "tokens",
              dynamic_axes = list(tokens = list("1" = "batch")))
  fresh <- torch_randint(1, 13, c(4, 7), dtype = torch_long())
  reference <- onnxruntime_run(path, list(fresh - 1L))[[1]]
  expect_close_to_reference(model(fresh), reference)
})

test_that("matmul, split, indexing, cumsum, where and clamp export; einsum at its traced shapes", {
  skip_if_no_onnxruntime()
  torch_manual_seed(10)
  w <- torch_randn(3, 4)
  f <- function(x) {
    halves <- torch_split(x, 3, dim = 2)
    y <- torch_matmul(halves[[1]] * halves[[2]], w)
    y <- torch_cumsum(y, dim = 2)
    y <- torch_where(y > 0, y, y * 0.1)
    torch_clamp(y[, 2:4], min = -1, max = 2) + x[, 1, drop = FALSE]
  }
  export_and_compare(f, list(torch_randn(3, 6)),
                     list(list(torch_randn(3, 6)), list(torch_randn(7, 6))))
  # torch_einsum is composed in R of reshapes whose sizes it computes from the operands' shapes:
  # a trace keeps those sizes, so its graph runs at the traced shapes.
  g <- function(a, b) torch_einsum("bi,ij->bj", list(a, b))
  export_and_compare(g, list(torch_randn(3, 5), torch_randn(5, 2)),
                     list(list(torch_randn(3, 5), torch_randn(5, 2))), dynamic = FALSE)
})

test_that("recurrent layers, multi-head attention and the transformer encoder export", {
  skip_if_no_onnxruntime()
  torch_manual_seed(9)
  lstm <- nn_lstm(6, 8, num_layers = 2)
  export_and_compare(function(x) lstm(x)[[1]], list(torch_randn(5, 3, 6)),
                     list(list(torch_randn(5, 3, 6))), dynamic = FALSE)
  gru <- nn_gru(6, 8, batch_first = TRUE, bidirectional = TRUE)
  export_and_compare(function(x) gru(x)[[1]], list(torch_randn(3, 5, 6)),
                     list(list(torch_randn(3, 5, 6)), list(torch_randn(4, 5, 6))))
  attention <- nn_multihead_attention(16, 4)
  attention$eval()
  export_and_compare(function(x) attention(x, x, x)[[1]], list(torch_randn(5, 2, 16)),
                     list(list(torch_randn(5, 2, 16))), dynamic = FALSE)
  encoder <- nn_transformer_encoder_layer(d_model = 16, nhead = 4, dim_feedforward = 32)
  encoder$eval()
  export_and_compare(encoder, list(torch_randn(5, 2, 16)), list(list(torch_randn(5, 2, 16))),
                     dynamic = FALSE)
})

test_that("opsets 17 to 21 export and pass ONNX's checker", {
  skip_if_no_onnxruntime()
  torch_manual_seed(7)
  model <- mlp_module()
  for (opset in 17:21)
    export_and_compare(model, list(torch_randn(3, 20)), list(list(torch_randn(6, 20))),
                       opset = opset)
})

test_that("float16 and bfloat16 models export", {
  skip_if_no_onnxruntime()
  torch_manual_seed(8)
  f <- function(x, w) torch_relu(torch_matmul(x, w)) + 1
  x <- torch_randn(4, 8)
  w <- torch_randn(8, 3)
  for (dtype in list(torch_float16(), torch_bfloat16())) {
    path <- tempfile(fileext = ".onnx")
    onnx_export(f, list(x$to(dtype = dtype), w$to(dtype = dtype)), path)
    ort_type <- if (dtype == torch_float16()) "float16" else "float32"
    if (dtype == torch_float16()) {
      reference <- onnxruntime_run(path, list(x, w), dtypes = c("float16", "float16"))[[1]]
      expect_close_to_reference(f(x$to(dtype = dtype), w$to(dtype = dtype)), reference, 1e-2)
    } else {
      # ONNX Runtime's CPU provider has no bfloat16 MatMul: the file is checked, not run.
      status <- system2(onnx_python(), c("-c", shQuote(sprintf(
        "import onnx; m = onnx.load('%s'); onnx.checker.check_model(m, full_check=True); print(m.graph.input[0].type.tensor_type.elem_type)",
        path))), stdout = TRUE)
      expect_equal(status[length(status)], "16")  # TensorProto.BFLOAT16
    }
    unlink(path)
  }
})

test_that("onnx_export errors name the op, the argument and the value", {
  net <- nn_module(
    initialize = function() self$inner <- nn_module(forward = function(x) torch_lgamma(x))(),
    forward = function(x) self$inner(x) + 1
  )
  path <- tempfile(fileext = ".onnx")
  expect_error(onnx_export(net(), torch_rand(3), path), "op lgamma \\(in module inner\\) has no ONNX form")
  expect_false(file.exists(path))
  expect_error(onnx_export(nn_linear(2, 2), torch_rand(1, 2), path, opset_version = 9),
               "opset_version must be between 17 and 21, got 9")
  expect_error(onnx_export(function(x) 1, torch_rand(2), path),
               "must return a tensor or a list of tensors")
  expect_error(onnx_export(nn_linear(2, 2), "x", path), "args must be a tensor or a list of tensors")
  expect_error(onnx_export(nn_linear(2, 2), torch_rand(1, 2), path, do_constant_folding = TRUE),
               "unsupported argument do_constant_folding")
  bad <- file.path(tempfile("missing-dir"), "model.onnx")
  expect_error(onnx_export(nn_linear(2, 2), torch_rand(1, 2), bad), "model.onnx")
  expect_false(file.exists(bad))
  expect_error(onnx_export(nn_linear(2, 2), torch_rand(1, 2), path,
                           dynamic_axes = list(input = list("0" = "batch"))),
               "must name 1-based dims")
  expect_false(file.exists(path))
})

test_that("by-name ops autocast on CUDA as PyTorch does", {
  skip_if_cuda_not_available()
  x <- torch_rand(4, 3, device = "cuda", dtype = torch_float16())
  with_autocast(device_type = "cuda", {
    expect_equal(torch_exp(x)$dtype, torch_float32())
    expect_equal(x$log()$dtype, torch_float32())
    expect_equal((x^x)$dtype, torch_float32())
    for (f in list(torch_acos, torch_asin, torch_cosh, torch_sinh, torch_tan, torch_erfinv,
                   torch_log2, torch_log10, torch_reciprocal))
      expect_equal(f(x)$dtype, torch_float32())
    expect_equal(torch_cumprod(x, dim = 1)$dtype, torch_float32())
    expect_equal(torch_relu(x)$dtype, torch_float16())
  })
})
