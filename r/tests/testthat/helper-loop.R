# A small MLP classifier's training loop (inputs -> 512 -> 512 -> 10, Adam) on one fixed batch,
# for the memory tests: list(model, opt, step, x), where step() runs one whole step.
mlp_training_loop <- function(inputs, batch, seed) {
  torch_manual_seed(seed)
  model <- nn_sequential(nn_linear(inputs, 512), nn_relu(), nn_linear(512, 512), nn_relu(),
                         nn_linear(512, 10))
  opt <- optim_adam(model$parameters, lr = 1e-3)
  x <- torch_randn(batch, inputs)
  y <- torch_randint(1, 11, batch, dtype = torch_long())
  step <- function() {
    opt$zero_grad()
    loss <- nnf_cross_entropy(model(x), y)
    loss$backward()
    opt$step()
    loss
  }
  list(model = model, opt = opt, step = step, x = x)
}
