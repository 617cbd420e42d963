# rcuda quickstart: the first lines a newcomer runs. Prints what torch for R would print.
#   Rscript examples/quickstart.R      (after `make` and installing r/, see r/README.md)
library(rcuda)

cuda_is_available()
cuda_device_count()

x <- torch_randn(1000, 1000, device = if (cuda_is_available()) "cuda" else "cpu")
y <- torch_matmul(x, x)
cuda_synchronize()
print(y[1:2, 1:3])

identical(as.array(torch_tensor(matrix(1:6, 2))), matrix(1:6, 2))
