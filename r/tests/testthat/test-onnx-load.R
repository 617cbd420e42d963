# onnx_load(): ONNX files exported by PyTorch (onnx/, made by tests/onnx_models/make_fixtures.py)
# run on rcuda against ONNX Runtime on fresh inputs; rcuda's own exports load back bitwise; an
# imported MLP fine-tunes as the same model built in R; bad files and inputs give clear errors.

fixture <- function(name) test_path("onnx", name)

test_that("PyTorch-exported models match ONNX Runtime on fresh inputs", {
  skip_if_no_onnxruntime()
  cases <- list(
    list(file = "mlp_torchscript.onnx", input = function() torch_randn(7, 16)),
    list(file = "transformer_torchscript.onnx", input = function() torch_randn(3, 10, 32)),
    list(file = "lstm_lm_dynamo.onnx",
         input = function() torch_randint(0, 50, c(3, 9), dtype = torch_int64()))
  )
  for (case in cases) {
    model <- onnx_load(fixture(case$file))
    x <- case$input()
    reference <- onnxruntime_run(fixture(case$file), list(x))
    expect_close_to_reference(model(x), reference[[1]])
  }
})

test_that("a loaded model prints its inputs, outputs, opset and ops", {
  model <- onnx_load(fixture("transformer_torchscript.onnx"))
  text <- capture.output(print(model))
  expect_true(any(grepl("x: float32 [batch, time, 32]", text, fixed = TRUE)))
  expect_true(any(grepl("opset 17", text, fixed = TRUE)))
  expect_true(any(grepl("LayerNormalization 5", text, fixed = TRUE)))
  expect_equal(model$opset, 17L)
  expect_equal(model$inputs[[1]]$name, "x")
  expect_equal(model$inputs[[1]]$dim_names, c("batch", "time", ""))
  expect_equal(model$inputs[[1]]$dims, c(NA, NA, 32L))
  expect_equal(unname(model$ops["Gemm"]), 2L)
  expect_true(inherits(model, "nn_module"))
  expect_identical(model$captures(), character())  # nothing captured on the CPU
  expect_identical(model$metadata, character())  # PyTorch's export writes none
})

test_that("rcuda's export loads back and gives the same outputs bitwise, several outputs by name", {
  net <- nn_module(
    initialize = function() {
      self$conv <- nn_conv2d(3, 4, 3, padding = 1)
      self$bn <- nn_batch_norm2d(4)
      self$fc <- nn_linear(4 * 4 * 4, 5)
    },
    forward = function(x) {
      h <- nnf_max_pool2d(nnf_relu(self$bn(self$conv(x))), 2)
      logits <- self$fc(torch_flatten(h, start_dim = 2))
      list(logits = logits, probs = nnf_softmax(logits, dim = 2))
    }
  )()
  net$eval()
  path <- tempfile(fileext = ".onnx")
  on.exit(unlink(path))
  onnx_export(net, list(torch_randn(2, 3, 8, 8)), path, input_names = "image",
              output_names = c("logits", "probs"),
              dynamic_axes = list(image = list("1" = "batch")))
  model <- onnx_load(path)
  x <- torch_randn(5, 3, 8, 8)
  ours <- net(x)
  loaded <- model(x)
  expect_named(loaded, c("logits", "probs"))
  expect_identical(as.array(loaded$logits), as.array(ours$logits))
  expect_identical(as.array(loaded$probs), as.array(ours$probs))
  # Named arguments follow the model's input names; an R array becomes a tensor of its dtype.
  expect_identical(as.array(model(image = as.array(x))$logits), as.array(ours$logits))
})

test_that("an exported embedding model loads back taking R's 1-based indices", {
  net <- nn_module(
    initialize = function() {
      self$embedding <- nn_embedding(12, 5)
      self$fc <- nn_linear(5, 2)
    },
    forward = function(tokens) self$fc(self$embedding(tokens)$mean(dim = 2))
  )()
  path <- tempfile(fileext = ".onnx")
  on.exit(unlink(path))
  onnx_export(net, torch_randint(1, 13, c(3, 7), dtype = torch_long()), path,
              input_names = "tokens", dynamic_axes = list(tokens = list("1" = "batch")))
  model <- onnx_load(path)
  expect_equal(unname(model$metadata["rcuda.one_based_inputs"]), "tokens")
  fresh <- torch_randint(1, 13, c(4, 7), dtype = torch_long())
  expect_identical(as.array(model(fresh)), as.array(net(fresh)))
  # Index 12 is the last row: valid 1-based, out of range 0-based.
  expect_identical(as.array(model(torch_full(c(1, 7), 12L, dtype = torch_long()))),
                   as.array(net(torch_full(c(1, 7), 12L, dtype = torch_long()))))
})

test_that("an imported MLP fine-tunes as the same model built in R (float64)", {
  model <- onnx_load(fixture("mlp_f64_torchscript.onnx"), requires_grad = TRUE)
  init <- lapply(model$initializers(), function(t) t$detach()$clone())
  built <- nn_sequential(nn_linear(16, 32), nn_relu(), nn_linear(32, 32), nn_tanh(),
                         nn_linear(32, 4))
  built$to(dtype = torch_float64())
  with_no_grad({
    for (name in names(init)) built$parameters[[name]]$copy_(init[[name]])
  })
  x <- torch_randn(32, 16, dtype = torch_float64())
  y <- torch_randn(32, 4, dtype = torch_float64())
  opt_loaded <- optim_adam(model$parameters, lr = 1e-2)
  opt_built <- optim_adam(built$parameters, lr = 1e-2)
  for (step in 1:100) {
    for (pair in list(list(model, opt_loaded), list(built, opt_built))) {
      pair[[2]]$zero_grad()
      loss <- nnf_mse_loss(pair[[1]](x), y)
      loss$backward()
      pair[[2]]$step()
    }
  }
  for (name in names(init)) {
    expect_lt(max(abs(as.array(model$parameters[[name]] - built$parameters[[name]]))), 1e-10,
              label = name)
  }
  # The parameters moved: training changed the model, not only copies of its weights.
  expect_gt(max(abs(as.array(model$parameters[["0.weight"]] - init[["0.weight"]]))), 1e-3)
})

test_that("bad files and bad inputs are R errors naming the file, the node or the input", {
  bad <- tempfile(fileext = ".onnx")
  on.exit(unlink(bad))
  bytes <- readBin(fixture("mlp_torchscript.onnx"), "raw", 1e6)
  writeBin(bytes[seq_len(length(bytes) %/% 2)], bad)
  expect_error(onnx_load(bad), basename(bad), fixed = TRUE)
  expect_error(onnx_load(tempfile()), "no such file")
  if (!cuda_is_available()) {
    expect_error(onnx_load(fixture("mlp_torchscript.onnx"), device = "cuda"),
                 "mlp_torchscript.onnx: cannot load onto cuda:0: no CUDA device")
  }

  model <- onnx_load(fixture("transformer_torchscript.onnx"))
  expect_error(model(torch_randn(3, 10)), "input 'x'.*\\[batch, time, 32\\]")
  expect_error(model(torch_randn(3, 10, 31)), "\\[batch, time, 32\\]")
  expect_error(model(torch_randn(3, 10, 32, dtype = torch_float64())), "float64.*float32")
  expect_error(model(torch_randn(3, 10, 32), torch_randn(1)), "takes 1 input")
  expect_error(model("text"), "input 'x' \\(float32 \\[batch, time, 32\\]\\) must be a tensor")
  # A size the export fixed at trace time (PyTorch's attention reshape) names the node.
  expect_error(model(torch_randn(3, 6, 32)), "node '.*' \\(Reshape\\)")
})

test_that("a loaded model moves between devices", {
  model <- onnx_load(fixture("mlp_torchscript.onnx"))
  x <- torch_randn(4, 16)
  before <- as.array(model(x))
  model$to(device = "cpu")
  expect_identical(as.array(model(x)), before)
  skip_if(!cuda_is_available(), "no CUDA device")
  model$to(device = "cuda")
  expect_equal(model$parameters[[1]]$device$type, "cuda")
  expect_equal(as.array(model(x$cuda())$cpu()), before, tolerance = 1e-5)
  cached <- onnx_load(fixture("mlp_torchscript.onnx"), device = "cuda", cuda_graph = TRUE)
  for (i in 1:3) expect_equal(as.array(cached(x$cuda())$cpu()), before, tolerance = 1e-5)
  expect_equal(unname(cached$captures()), "")
})
