# GPU tests skip where there is no device (this machine) and run on the GPU machine.
skip_if_cuda_not_available <- function() {
  if (!cuda_is_available()) skip("A GPU is not available for testing.")
}

# The devices a test body runs on: always the CPU, and CUDA when present.
test_devices <- function() if (cuda_is_available()) c("cpu", "cuda") else "cpu"

# Fresh normal values; one size gives a plain vector (as.array of a 1-d tensor is a vector).
random_array <- function(...) {
  dims <- c(...)
  if (length(dims) == 1) rnorm(dims) else array(rnorm(prod(dims)), dim = dims)
}
