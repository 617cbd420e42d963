# ONNX Runtime (Python, CPU) as the reference for onnx_export: onnxruntime_run.py beside this file.

onnx_python <- local({
  found <- NULL
  function() {
    if (!is.null(found)) return(found)
    found <<- ""
    for (py in c(Sys.getenv("RCUDA_PYTHON", "python3"), "/usr/bin/python3")) {
      status <- suppressWarnings(system2(py, c("-c", shQuote("import onnx, onnxruntime, numpy")),
                                         stdout = FALSE, stderr = FALSE))
      if (identical(status, 0L)) {
        found <<- py
        break
      }
    }
    found
  }
})

skip_if_no_onnxruntime <- function() {
  if (!nzchar(onnx_python()))
    skip("python3 with onnx and onnxruntime not found (scripts/install-deps.sh installs them)")
}

# The model's outputs from ONNX Runtime on `inputs` (tensors), as float64 tensors.
onnxruntime_run <- function(path, inputs, dtypes = NULL) {
  dir <- tempfile("ort")
  dir.create(dir)
  on.exit(unlink(dir, recursive = TRUE), add = TRUE)
  specs <- vapply(seq_along(inputs), function(i) {
    x <- inputs[[i]]$cpu()
    file <- file.path(dir, sprintf("input_%d.bin", i))
    writeBin(as.numeric(as.array(x$contiguous()$view(-1)$to(dtype = torch_float64()))), file,
             endian = "little")
    dtype <- if (!is.null(dtypes)) dtypes[[i]] else if (x$dtype == torch_int64()) "int64" else
      if (x$dtype == torch_float64()) "float64" else "float32"
    sprintf("%s:%s:%s", file, dtype, paste(x$shape, collapse = ","))
  }, character(1))
  script <- test_path("onnxruntime_run.py")
  log <- system2(onnx_python(), c(script, path, dir, specs), stdout = TRUE, stderr = TRUE)
  status <- attr(log, "status")
  if (!is.null(status) && status != 0) stop("onnxruntime_run.py failed:\n", paste(log, collapse = "\n"))
  outputs <- list()
  i <- 0
  while (file.exists(file.path(dir, sprintf("output_%d.bin", i)))) {
    shape_text <- readLines(file.path(dir, sprintf("output_%d.shape", i)), warn = FALSE)
    shape <- if (length(shape_text) && nzchar(shape_text)) as.integer(strsplit(shape_text, ",")[[1]]) else integer()
    n <- if (length(shape)) prod(shape) else 1
    values <- readBin(file.path(dir, sprintf("output_%d.bin", i)), "double", n, endian = "little")
    t <- torch_tensor(values, dtype = torch_float64())
    outputs[[i + 1]] <- if (length(shape)) t$view(shape) else t$view(integer())
    i <- i + 1
  }
  outputs
}

# max |a - b| within tol of max |b| (float32 models against ONNX Runtime's float32).
expect_close_to_reference <- function(actual, reference, tol = 1e-5) {
  a <- as.array(actual$cpu()$to(dtype = torch_float64()))
  b <- as.array(reference)
  expect_equal(dim(a), dim(b))
  expect_lte(max(abs(a - b)), tol * max(1, max(abs(b))))
}
