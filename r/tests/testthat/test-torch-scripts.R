# Scripts written for torch for R (examples/torch-scripts/) run after library(rcuda), and learn.

script_path <- function(name) {
  root <- Sys.getenv("RCUDA_HOME")
  path <- file.path(root, "examples", "torch-scripts", name)
  skip_if_not(nzchar(root) && file.exists(path), "the examples folder is not beside these tests")
  path
}

run_script <- function(path, env = c(RCUDA_DEVICE_UNUSED = "")) {
  withr::local_envvar(env)
  paste(capture.output(source(path, local = new.env())), collapse = "\n")
}

test_that("the regression MLP script fits the cubic", {
  out <- run_script(script_path("mlp_regression.R"))
  mse <- as.numeric(sub(".*test mse ([0-9.]+).*", "\\1", out))
  # The noise alone has variance 0.01; an untrained network's error is about 5.
  expect_lt(mse, 0.1)
})

test_that("the MNIST-example CNN script trains with dataloaders and a loop over batches", {
  skip_if_not(file.exists("/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz") ||
                nzchar(Sys.getenv("RCUDA_FASHION_MNIST")), "Fashion-MNIST is not installed")
  out <- run_script(script_path("mnist_cnn.R"), c(RCUDA_TRAIN_SAMPLES = "600"))
  losses <- as.numeric(regmatches(out, gregexpr("(?<=Loss at epoch [0-9]: )[0-9.]+", out, perl = TRUE))[[1]])
  expect_length(losses, 2)
  expect_lt(losses[2], losses[1])
  accuracy <- as.numeric(sub(".*Test accuracy: ([0-9.]+).*", "\\1", out))
  expect_gt(accuracy, 0.3)  # ten classes: chance is 0.1
})
