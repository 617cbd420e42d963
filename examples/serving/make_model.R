# Trains a small classifier of iris species and writes it as an ONNX file, the model that
# plumber.R and serve.R serve.
#   Rscript make_model.R [model.onnx]
# Input "x": [batch, 4] (sepal length and width, petal length and width, in cm); output
# "probs": [batch, 3], the probabilities of setosa, versicolor and virginica.
library(rcuda)

args <- commandArgs(trailingOnly = TRUE)
path <- if (length(args)) args[1] else "model.onnx"

torch_manual_seed(1)
x <- torch_tensor(as.matrix(iris[, 1:4]))
y <- torch_tensor(as.integer(iris$Species), dtype = torch_long())  # 1-based classes

# The standardisation is part of the model (buffers), so clients send measurements as they are.
iris_classifier <- nn_module(
  initialize = function(center, scale) {
    self$center <- nn_buffer(center)
    self$scale <- nn_buffer(scale)
    self$net <- nn_sequential(nn_linear(4, 16), nn_relu(), nn_linear(16, 3))
  },
  forward = function(x) self$net((x - self$center) / self$scale),
  # The probabilities: what the exported model answers.
  probs = function(x) nnf_softmax(self$forward(x), dim = 2)
)
model <- iris_classifier(torch_tensor(colMeans(iris[, 1:4])),
                         torch_tensor(apply(iris[, 1:4], 2, sd)))

opt <- optim_adam(model$parameters, lr = 0.05)
for (step in 1:200) {
  opt$zero_grad()
  loss <- nnf_cross_entropy(model(x), y)
  loss$backward()
  opt$step()
}
model$eval()
accuracy <- mean(as_array(with_no_grad(model(x))$argmax(dim = 2)) == as.integer(iris$Species))
cat(sprintf("training loss %.3f, accuracy %.3f\n", loss$item(), accuracy))

onnx_export(function(x) model$probs(x), x[1:2, ], path, input_names = "x", output_names = "probs",
            dynamic_axes = list(x = list("1" = "batch"), probs = list("1" = "batch")))
cat("wrote", path, "\n")
