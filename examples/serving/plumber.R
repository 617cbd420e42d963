# A plumber API over an ONNX model: the model is loaded once, when the API starts, onto the GPU
# when there is one, and every request runs it there.
#   Rscript make_model.R                                    # writes model.onnx
#   Rscript -e 'plumber::pr_run(plumber::pr("plumber.R"), port = 8000)'
#   curl -X POST localhost:8000/predict -d '{"x": [[5.1, 3.5, 1.4, 0.2], [6.7, 3.0, 5.2, 2.3]]}'
# RCUDA_SERVING_MODEL names another model file (one input [batch, features]).
library(rcuda)

model_path <- Sys.getenv("RCUDA_SERVING_MODEL", "model.onnx")
device <- if (cuda_is_available()) "cuda" else "cpu"
model <- onnx_load(model_path, device = device)
input <- model$inputs[[1]]
features <- input$dims[2]
species <- c("setosa", "versicolor", "virginica")

# The rows of a request: {"x": [[...], ...]}, {"x": [...]} for one row, or a data frame's rows
# ([{"Sepal.Length": 5.1, ...}, ...], vetiver's form).
request_rows <- function(body) {
  parsed <- jsonlite::fromJSON(body)
  x <- if (is.data.frame(parsed)) as.matrix(parsed) else parsed$x
  if (is.null(x)) stop("the body must be {\"x\": [[...], ...]} or a list of rows")
  if (is.null(dim(x))) x <- matrix(x, nrow = 1)
  if (!is.numeric(x) || ncol(x) != features)
    stop(sprintf("input '%s' takes rows of %d numbers, got %d", input$name, features, ncol(x)))
  x
}

#* The model and the device it runs on.
#* @get /health
#* @serializer unboxedJSON
function() {
  list(status = "ok", model = basename(model_path), device = device)
}

#* Predictions for the rows of the body: the model's output, one row per input row.
#* @post /predict
#* @serializer json list(digits = NA)
function(req, res) {
  x <- tryCatch(request_rows(req$postBody), error = function(e) e)
  if (inherits(x, "error")) {
    res$status <- 400
    return(list(error = jsonlite::unbox(conditionMessage(x))))
  }
  out <- with_no_grad(model(torch_tensor(x, device = device)))
  probs <- as_array(out$cpu())
  answer <- list(probs = probs)
  if (ncol(probs) == length(species))
    answer$species <- species[max.col(probs, ties.method = "first")]
  answer
}
