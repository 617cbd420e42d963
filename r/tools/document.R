# Writes man/*.Rd from the exported functions (usage from their formals, so R CMD check's
# codoc always agrees) and the topic table below. Run from r/ after changing exports:
#   Rscript tools/document.R
# (roxygen2 is not among the Debian packages the project installs.)
ns <- asNamespace("rcuda")
exports <- grep("^\\.__", getNamespaceExports(ns), value = TRUE, invert = TRUE)

args <- c(
  data = "an R vector, matrix or array (double, integer or logical), or a tensor.",
  dtype = "a dtype such as \\code{torch_float()}; \\code{NULL} for the default.",
  device = "a device: \\code{torch_device()} or a string such as \\code{\"cuda:0\"}; \\code{NULL} for the CPU (or the input's device).",
  requires_grad = "make the new tensor a leaf that requires grad (floating dtypes only).",
  pin_memory = "ignored (accepted for compatibility).",
  "..." = "sizes, as separate numbers or one vector.",
  names = "ignored (named tensors are not supported).",
  size = "a vector of sizes.", fill_value = "the value of every element.",
  low = "lowest value (inclusive).", high = "highest value (exclusive).", generator = "ignored.",
  start = "first value.", end = "last value (inclusive, as in torch for R).", step = "spacing.",
  steps = "number of points.", n = "rows.", m = "columns.", input = "a tensor.",
  seed = "a non-negative whole number.", value = "a number.", x = "an R object or a tensor.",
  self = "a tensor.", other = "a tensor or a number.", alpha = "multiplier of \\code{other}.",
  exponent = "a tensor or a number.", min = "lower bound or \\code{NULL}.", max = "upper bound or \\code{NULL}.",
  approximate = "\\code{\"none\"} or \\code{\"tanh\"}.",
  condition = "a bool tensor.", mat2 = "a tensor.", tensors = "a list of tensors.",
  dim = "a 1-based dim (negative counts from the end); \\code{NULL} for all.",
  keepdim = "keep reduced dims with size 1.", unbiased = "use Bessel's correction.",
  correction = "degrees of freedom subtracted; overrides \\code{unbiased}.", p = "the norm's order.",
  shape = "the new shape; one -1 is inferred.", start_dim = "first dim to flatten.",
  end_dim = "last dim to flatten.", dim0 = "a dim.", dim1 = "a dim.", dims = "a permutation of the dims.",
  length = "number of elements.", index = "1-based positions.", mask = "a bool tensor.",
  type = "\\code{\"cpu\"} or \\code{\"cuda\"}, optionally with \\code{\":index\"}.",
  seed = "a non-negative whole number.",
  gpu_checks = "launch work on each GPU (a context, a kernel, a GEMM, a convolution, copies).",
  as_list = "\\code{TRUE} for one long tensor per dim instead of one row per element."
)
args["index"] <- "1-based positions (for \\code{torch_index_select}) or a device index (for \\code{torch_device})."

topics <- list(
  torch_tensor = list("Create a tensor from R data",
    c("torch_tensor", "torch_scalar_tensor", "as.gpu", "is_torch_tensor"),
    "Doubles become float32, integers int64 and logicals bool unless \\code{dtype} says otherwise. NA becomes NaN in floating dtypes and is an error in the others. \\code{as.gpu(x)} is \\code{torch_tensor(x, device = \"cuda\")}."),
  creation = list("Create filled, random and range tensors",
    c("torch_zeros", "torch_ones", "torch_empty", "torch_full", "torch_randn", "torch_rand",
      "torch_randint", "torch_arange", "torch_linspace", "torch_eye", "torch_zeros_like",
      "torch_ones_like", "torch_empty_like", "torch_full_like", "torch_rand_like",
      "torch_randn_like", "torch_manual_seed"),
    "As in torch for R. \\code{torch_arange} includes \\code{end}."),
  dtypes = list("Tensor element types",
    c("torch_float32", "torch_float", "torch_float64", "torch_double", "torch_float16", "torch_half",
      "torch_bfloat16", "torch_int32", "torch_int", "torch_int64", "torch_long", "torch_uint8", "torch_bool"),
    "Each returns a dtype object, printed as torch prints it (\\code{torch_Float})."),
  torch_device = list("Devices", "torch_device", "Device indices are 0-based, as in torch for R."),
  cuda = list("CUDA devices and memory",
    c("cuda_is_available", "cuda_device_count", "cuda_current_device", "cuda_synchronize",
      "cuda_get_device_capability", "cuda_get_device_name", "cuda_runtime_version",
      "cuda_memory_stats", "cuda_reset_peak_memory_stats", "cuda_empty_cache", "backends_cudnn_is_available", "backends_cudnn_version",
      "cuda_doctor"),
    "They work without a GPU: counts are 0 and device-specific calls raise \\code{rcuda_device_error}. Tensors no longer referenced from R are freed by R's garbage collector; rcuda runs a minor collection when new tensors pass \\code{getOption(\"rcuda.gc_live_fraction\", 0.1)} of what the device holds (at least 16 MiB, more where collections would take over 5\\% of the time, at most \\code{getOption(\"rcuda.gc_threshold\", 0.25)} of device memory; both read when the package loads), and a full one when an allocation fails. \\code{backends_cudnn_version()} is the version of the cuDNN library found at run time, as a \\code{numeric_version} (an \\code{rcuda_device_error} where there is no GPU or no cuDNN). \\code{cuda_doctor()} runs the checks of \\code{rcuda doctor} and returns a data frame (id, title, status PASS/WARN/FAIL/SKIP, detail, fix, device) whose attributes \\code{system}, \\code{libraries} and \\code{devices} describe the machine."),
  math = list("Elementwise math",
    c("torch_abs", "torch_sign", "torch_exp", "torch_expm1", "torch_log", "torch_log1p", "torch_sqrt",
      "torch_rsqrt", "torch_sin", "torch_cos", "torch_tanh", "torch_sigmoid", "torch_relu", "torch_gelu",
      "torch_floor", "torch_ceil", "torch_round", "torch_neg", "torch_logical_not", "torch_add",
      "torch_sub", "torch_mul", "torch_div", "torch_remainder", "torch_floor_divide", "torch_pow", "torch_maximum",
      "torch_minimum", "torch_eq", "torch_ne", "torch_lt", "torch_le", "torch_gt", "torch_ge",
      "torch_logical_and", "torch_logical_or", "torch_logical_xor", "torch_clamp", "torch_where"),
    "With broadcasting and torch's type promotion. The base R operators and Math functions work on tensors too. \\code{torch_floor_divide} (and \\code{x \\%/\\% y}) rounds toward minus infinity, as \\code{torch_remainder} (and \\code{\\%\\%}); integer division by zero is an error. \\code{torch_where(condition)} with one argument is \\code{torch_nonzero(condition, as_list = TRUE)}."),
  reductions = list("Reductions",
    c("torch_sum", "torch_mean", "torch_prod", "torch_all", "torch_any", "torch_logsumexp", "torch_max",
      "torch_min", "torch_argmax", "torch_argmin", "torch_var", "torch_std", "torch_norm", "torch_softmax",
      "torch_log_softmax", "torch_cumsum"),
    "Dims are 1-based; indices returned by max, min, argmax and argmin are 1-based."),
  linalg = list("Matrix products and joins",
    c("torch_matmul", "torch_mm", "torch_bmm", "torch_cat", "torch_stack"),
    "\\code{x \\%*\\% y} is \\code{torch_matmul(x, y)}, through an S4 method for the class: tensors are S4 objects on every R version (R 4.2 dispatches \\code{\\%*\\%} only on S4 objects)."),
  views = list("Shapes, views and selection",
    c("torch_reshape", "torch_flatten", "torch_squeeze", "torch_unsqueeze", "torch_transpose", "torch_t",
      "torch_permute", "torch_narrow", "torch_clone", "torch_index_select", "torch_masked_select",
      "torch_nonzero"),
    "Dims and positions are 1-based, as in torch for R, also in the indices \\code{torch_nonzero} returns."),
  slc = list("Slices for indexing", c("slc", "N", "newaxis", ".."),
    "\\code{x[slc(start, end, step)]} is \\code{x[start:end:step]} with values computed elsewhere: elements \\code{start} to \\code{end} inclusive, a view. Negative ends count from the end, \\code{Inf} is the end of the dim, ends past the dim are clipped and a start after the end selects nothing. In an index, \\code{N} is the size of the dim, \\code{..} stands for the dims not indexed and \\code{NULL} or \\code{newaxis} inserts a dim of size 1. Outside an index, \\code{N}, \\code{newaxis} and \\code{..} are stand-ins (1, \\code{NULL} and a marker), so that an index evaluated before rcuda reads it still works."),
  as_array = list("Convert a tensor to an R array", "as_array",
    "Floating dtypes give doubles, bool gives logicals, integer dtypes give integers. \\code{as.array}, \\code{as.matrix}, \\code{as.integer}, \\code{as.double} and \\code{as.logical} work too.")
)

# Other man/*.Rd files are written by hand (man/optim.Rd, ...): their aliases count as documented.
by_hand <- setdiff(list.files("man", "[.]Rd$"), paste0(names(topics), ".Rd"))
hand_aliases <- unlist(lapply(file.path("man", by_hand), function(f) {
  lines <- grep("^\\\\alias[{]", readLines(f), value = TRUE)
  gsub("\\\\%", "%", sub("^\\\\alias[{](.*)[}]$", "\\1", lines))
}))
documented <- c(unlist(lapply(topics, `[[`, 2)), hand_aliases)
missing <- setdiff(exports, documented)
if (length(missing)) stop("exports without a topic: ", paste(missing, collapse = ", "))

usage_of <- function(name) {
  f <- get(name, ns)
  if (!is.function(f)) return(if (make.names(name) == name) name else paste0("`", name, "`"))
  a <- formals(f)
  parts <- vapply(names(a), function(n) {
    if (identical(a[[n]], quote(expr = ))) n else paste(n, "=", paste(deparse(a[[n]]), collapse = ""))
  }, character(1))
  paste0(name, "(", paste(parts, collapse = ", "), ")")
}
# The S4 class and methods (R/s4.R); R CMD check wants their signatures documented.
s4_aliases <- c("\\alias{rcuda_tensor-class}", "\\alias{show,rcuda_tensor-method}",
  paste0("\\alias{\\%*\\%,", c("rcuda_tensor,ANY", "ANY,rcuda_tensor", "rcuda_tensor,rcuda_tensor"), "-method}"))
escape <- function(s) gsub("%", "\\\\%", s)

dir.create("man", showWarnings = FALSE)
for (topic in names(topics)) {
  t <- topics[[topic]]
  fns <- t[[2]]
  arg_names <- unique(unlist(lapply(fns, function(f) if (is.function(get(f, ns))) names(formals(get(f, ns))))))
  undocumented <- setdiff(arg_names, names(args))
  if (length(undocumented)) stop(topic, ": describe ", paste(undocumented, collapse = ", "))
  rd <- c(
    paste0("\\name{", topic, "}"),
    paste0("\\alias{", escape(fns), "}"),
    if (topic == "linalg") s4_aliases,
    paste0("\\title{", t[[1]], "}"),
    "\\usage{", escape(vapply(fns, usage_of, character(1))), "}",
    if (length(arg_names)) c("\\arguments{", paste0("\\item{", escape(arg_names), "}{", args[arg_names], "}"), "}"),
    paste0("\\description{", t[[3]], "}")
  )
  writeLines(rd, file.path("man", paste0(topic, ".Rd")))
}
