# The Fashion-MNIST CNN of ../train_fashion_mnist.R, trained data-parallel on N ranks: every rank
# runs this script, trains on its share of each epoch's images, and the gradients are averaged
# over the ranks during backward (docs/distributed.md). fit() does the sharing itself once a
# process group exists; rank 0 alone prints and saves.
#
#   build/apps/cli/rcuda launch --nproc-per-node 2 -- Rscript examples/distributed/train_fashion_mnist_ddp.R
#   mpirun -np 2 Rscript examples/distributed/train_fashion_mnist_ddp.R
#
# Environment (all optional), as the single-process example's:
#   RCUDA_DEVICE          cuda (NCCL, one GPU per rank) or cpu (MPI); default: cuda when a GPU is there
#   RCUDA_FASHION_MNIST   the folder with the idx files (default: /usr/share/datasets/fashion-mnist)
#   RCUDA_TRAIN_SAMPLES   training images, over all ranks (default: all on GPUs, 12,000 on CPUs)
#   RCUDA_TEST_SAMPLES    test images (default: all on GPUs, 2,000 on CPUs)
#   RCUDA_EPOCHS          epochs (default: 15 on GPUs, 3 on CPUs)
#   RCUDA_BATCH_SIZE      images per rank and step (default: 64)
#   RCUDA_OUT             where rank 0 saves the model (default: ./fashion-mnist-ddp-output)
library(rcuda)

env <- function(name, default) {
  value <- Sys.getenv(name)
  if (nzchar(value)) value else default
}
on_gpu <- env("RCUDA_DEVICE", if (cuda_is_available()) "cuda" else "cpu") != "cpu"
dist_init_process_group(backend = if (on_gpu) "nccl" else "mpi")
rank <- dist_get_rank()
world_size <- dist_get_world_size()
device <- if (on_gpu) paste0("cuda:", dist_get_local_rank()) else "cpu"  # one GPU per rank
say <- function(...) if (rank == 0) cat(sprintf(...), "\n", sep = "")

root <- env("RCUDA_FASHION_MNIST", "/usr/share/datasets/fashion-mnist")
epochs <- as.integer(env("RCUDA_EPOCHS", if (on_gpu) "15" else "3"))
batch_size <- as.integer(env("RCUDA_BATCH_SIZE", "64"))
out_dir <- env("RCUDA_OUT", "fashion-mnist-ddp-output")

train_ds <- fashion_mnist_dataset(root, train = TRUE, transform = transform_to_tensor)
test_ds <- fashion_mnist_dataset(root, train = FALSE, transform = transform_to_tensor)
n_train <- min(length(train_ds), as.integer(env("RCUDA_TRAIN_SAMPLES", if (on_gpu) "60000" else "12000")))
n_test <- min(length(test_ds), as.integer(env("RCUDA_TEST_SAMPLES", if (on_gpu) "10000" else "2000")))
if (n_train < length(train_ds)) train_ds <- dataset_subset(train_ds, seq_len(n_train))
if (n_test < length(test_ds)) test_ds <- dataset_subset(test_ds, seq_len(n_test))
say("Fashion-MNIST from %s: %d training and %d test images over %d ranks (%s), %d per rank and step",
    root, length(train_ds), length(test_ds), world_size, if (on_gpu) "NCCL" else "MPI", batch_size)

# fit() gives each rank its share of these loaders (a distributed_sampler() of each dataset,
# shuffled anew each epoch with the generator's seed), so every rank makes the same ones.
train_dl <- dataloader(train_ds, batch_size = batch_size, shuffle = TRUE, generator = 1,
                       pin_memory = on_gpu)
test_dl <- dataloader(test_ds, batch_size = 500, pin_memory = on_gpu)

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

torch_manual_seed(1)
model <- cnn()
model$to(device = device)
# Wrapping (here, inside fit()) sends rank 0's weights to every rank; each rank's dropout then
# draws from a stream of its own.
torch_manual_seed(1000 + rank)
optimizer <- optim_adam(model$parameters, lr = 1e-3)
scheduler <- lr_step(optimizer, step_size = max(1L, epochs %/% 2), gamma = 0.5)

start <- proc.time()[["elapsed"]]
history <- fit(model, train_dl, nn_cross_entropy_loss(), optimizer, epochs = epochs,
               valid_dl = test_dl, metrics = list(metric_accuracy()),
               callbacks = list(callback_lr_scheduler(scheduler)), verbose = TRUE)
seconds <- proc.time()[["elapsed"]] - start

# Every rank holds the same history (averaged over the ranks) and the same weights.
accuracy <- tail(as.data.frame(history)$valid_acc, 1)
say("test accuracy after %d epochs on %d ranks: %.2f%% (%.1f s of training)", epochs, world_size,
    100 * accuracy, seconds)
if (rank == 0) {
  dir.create(out_dir, showWarnings = FALSE, recursive = TRUE)
  model_path <- file.path(out_dir, "fashion-cnn.safetensors")
  torch_save(model$state_dict(), model_path)
  say("model: %s", model_path)
}
dist_destroy_process_group()
