# For test-save.R and test-data*.R: the Python side of the safetensors checks (the reference
# implementation, tests/io/safetensors_python.py in the repository), and idx files made here.

# A python3 that imports safetensors and numpy, and the helper script; skips, saying why, when
# either is missing.
python_safetensors <- function() {
  root <- Sys.getenv("RCUDA_HOME")
  candidates <- c(if (nzchar(root)) file.path(root, "tests/io/safetensors_python.py"),
                  file.path("..", "..", "..", "tests", "io", "safetensors_python.py"))
  script <- candidates[file.exists(candidates)][1]
  if (is.na(script)) skip("tests/io/safetensors_python.py not found (set RCUDA_HOME to the repository)")
  for (python in c(Sys.which("python3"), "/usr/bin/python3")) {
    if (!nzchar(python) || !file.exists(python)) next
    ok <- suppressWarnings(system2(python, c("-c", shQuote("import safetensors, numpy")),
                                   stdout = FALSE, stderr = FALSE))
    if (ok == 0) return(list(python = python, script = normalizePath(script)))
  }
  skip("no python3 with safetensors and numpy (scripts/install-deps.sh installs them)")
}

run_python <- function(py, ...) {
  status <- system2(py$python, c(shQuote(py$script), ...))
  if (status != 0) stop("safetensors_python.py failed with status ", status)
}

# The helper's text output: list(tensors = list(name = list(code, shape, values)), metadata).
read_python_text <- function(path) {
  out <- list(tensors = list(), metadata = character())
  for (line in readLines(path)) {
    f <- strsplit(line, "\t", fixed = TRUE)[[1]]
    if (f[1] == "tensor") {
      values <- if (length(f) < 5 || !nzchar(f[5])) numeric() else as.numeric(strsplit(f[5], " ")[[1]])
      shape <- if (nzchar(f[4])) as.integer(strsplit(f[4], ",")[[1]]) else integer()
      out$tensors[[f[2]]] <- list(code = f[3], shape = shape, values = values)
    } else {
      out$metadata[[f[2]]] <- f[3]
    }
  }
  out
}

# Row-major values of a tensor as doubles (integers through float64: R's integers have no
# -2^31, their NA, and int64 is exact up to 2^53).
# Complex values come as their parts, real first (safetensors' C64 layout).
row_major <- function(t) {
  wide <- t$dtype == torch_int64() || t$dtype == torch_int32()
  a <- as_array(if (wide) t$to(dtype = torch_float64()) else t)
  v <- if (is.null(dim(a))) a else aperm(a, rev(seq_along(dim(a))))
  if (is.complex(v)) return(as.numeric(rbind(Re(as.vector(v)), Im(as.vector(v)))))
  as.numeric(v)
}

# An idx file of unsigned bytes (LeCun's format) with the given dims, gzipped unless gz = FALSE.
write_idx <- function(path, values, dims, gz = TRUE) {
  con <- if (gz) gzfile(path, "wb") else file(path, "wb")
  on.exit(close(con))
  writeBin(as.raw(c(0, 0, 8, length(dims))), con)
  writeBin(as.integer(dims), con, size = 4, endian = "big")
  writeBin(as.raw(values), con)
}
