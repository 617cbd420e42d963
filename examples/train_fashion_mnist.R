# The main job: a small CNN trained on Fashion-MNIST on the best device there is, with torch for
# R's API. It prints the progress of each epoch and the test accuracy, draws the training
# curves into a PNG and saves the model as safetensors (readable by Python's safetensors and
# PyTorch's load_file).
#
#   Rscript examples/train_fashion_mnist.R            # `make demo` runs it
#
# Environment (all optional):
#   RCUDA_DEVICE          cuda or cpu (default: cuda when a GPU is there)
#   RCUDA_FASHION_MNIST   the folder with the idx files (default: Debian's dataset-fashion-mnist,
#                         /usr/share/datasets/fashion-mnist)
#   RCUDA_TRAIN_SAMPLES   how many training images to use (default: all on a GPU, 12,000 on a CPU)
#   RCUDA_EPOCHS          epochs (default: 15 on a GPU, 3 on a CPU)
#   RCUDA_OUT             where the PNG and the model go (default: ./fashion-mnist-output)
library(rcuda)

env <- function(name, default) {
  value <- Sys.getenv(name)
  if (nzchar(value)) value else default
}
device <- env("RCUDA_DEVICE", if (cuda_is_available()) "cuda" else "cpu")
on_gpu <- device != "cpu"
root <- env("RCUDA_FASHION_MNIST", "/usr/share/datasets/fashion-mnist")
epochs <- as.integer(env("RCUDA_EPOCHS", if (on_gpu) "15" else "3"))
out_dir <- env("RCUDA_OUT", "fashion-mnist-output")
dir.create(out_dir, showWarnings = FALSE, recursive = TRUE)
torch_manual_seed(1)

train_ds <- fashion_mnist_dataset(root, train = TRUE, transform = transform_to_tensor)
test_ds <- fashion_mnist_dataset(root, train = FALSE, transform = transform_to_tensor)
n_train <- min(length(train_ds), as.integer(env("RCUDA_TRAIN_SAMPLES", if (on_gpu) "60000" else "12000")))
if (n_train < length(train_ds)) train_ds <- dataset_subset(train_ds, seq_len(n_train))
cat(sprintf("Fashion-MNIST from %s: %d training images, %d test images; device %s\n",
            root, length(train_ds), length(test_ds), device))

train_dl <- dataloader(train_ds, batch_size = 128, shuffle = TRUE, pin_memory = on_gpu)
test_dl <- dataloader(test_ds, batch_size = 1000, pin_memory = on_gpu)

# The classic MNIST-example network: two 3x3 convolutions, max pooling, dropout, two linear layers.
cnn <- nn_module(
  "fashion_cnn",
  initialize = function() {
    self$conv1 <- nn_conv2d(1, 32, kernel_size = 3, padding = 1)
    self$conv2 <- nn_conv2d(32, 64, kernel_size = 3, padding = 1)
    self$pool <- nn_max_pool2d(2)
    self$dropout1 <- nn_dropout(0.25)
    self$fc1 <- nn_linear(64 * 7 * 7, 128)
    self$dropout2 <- nn_dropout(0.5)
    self$fc2 <- nn_linear(128, 10)
  },
  forward = function(x) {
    x <- self$pool(nnf_relu(self$conv1(x)))  # 32 x 14 x 14
    x <- self$pool(nnf_relu(self$conv2(x)))  # 64 x 7 x 7
    x <- torch_flatten(self$dropout1(x), start_dim = 2)
    x <- self$dropout2(nnf_relu(self$fc1(x)))
    self$fc2(x)
  }
)

model <- cnn()
model$to(device = device)
print(model)
optimizer <- optim_adam(model$parameters, lr = 1e-3)
scheduler <- lr_step(optimizer, step_size = max(1L, epochs %/% 2), gamma = 0.5)

start <- proc.time()[["elapsed"]]
history <- fit(model, train_dl, nn_cross_entropy_loss(), optimizer, epochs = epochs,
               valid_dl = test_dl, metrics = list(metric_accuracy()),
               callbacks = list(callback_lr_scheduler(scheduler)), device = device,
               verbose = TRUE)
seconds <- proc.time()[["elapsed"]] - start
print(history)

records <- as.data.frame(history)
accuracy <- tail(records$valid_acc, 1)
cat(sprintf("test accuracy after %d epochs: %.2f%% (%.1f s of training on %s)\n",
            epochs, 100 * accuracy, seconds, device))

model_path <- file.path(out_dir, "fashion-cnn.safetensors")
torch_save(model$state_dict(), model_path)
cat("model:", model_path, "\n")
# The model leaves R as an ONNX file (docs/onnx.md) that ONNX Runtime and other runtimes read,
# with a dynamic batch dim; exported in eval mode, as torch.onnx.export does.
onnx_path <- file.path(out_dir, "fashion-cnn.onnx")
example <- torch_zeros(1, 1, 28, 28, device = model$parameters[[1]]$device)
onnx_export(model, example, onnx_path, input_names = "image", output_names = "logits",
            dynamic_axes = list(image = list("1" = "batch"), logits = list("1" = "batch")))
cat("ONNX model:", onnx_path, "\n")
# Loaded back onto rcuda's engine (onnx_load), the file gives the trained model's predictions.
loaded <- onnx_load(onnx_path, device = device)
model$eval()
batch <- dataloader_next(dataloader_make_iter(test_dl))[[1]]$to(device = device)
agree <- with_no_grad(mean(as.array(
  (loaded(batch)$argmax(dim = 2) == model(batch)$argmax(dim = 2))$cpu())))
cat(sprintf("ONNX model loaded back: %d ops, same predictions on %.0f%% of a test batch\n",
            sum(loaded$ops), 100 * agree))
png_path <- file.path(out_dir, "training-curves.png")
# An R without its cairo or X11 libraries only warns that png() cannot open a device.
unlink(png_path)
problem <- tryCatch({
  withCallingHandlers(png(png_path, width = 900, height = 420),
                      warning = function(w) invokeRestart("muffleWarning"))
  plot(history)
  invisible(dev.off())
  NULL
}, error = function(e) conditionMessage(e))
if (file.exists(png_path) && file.size(png_path) > 0) {
  cat("training curves:", png_path, "\n")
} else {
  message("no PNG of the training curves: this R's png() device does not work here",
          if (!is.null(problem)) paste0(" (", problem, ")"))
}
