# The sort family with torch for R's names, arguments and 1-based indices: torch_sort,
# torch_argsort, torch_topk, torch_kthvalue, torch_median, torch_mode, torch_quantile,
# torch_unique, torch_randperm, torch_bucketize, torch_histc, and their `$` methods. One engine
# sort (stable; NaN sorts last ascending) serves them all; the values of sort, topk, kthvalue,
# median and mode carry gradients back to the elements they came from.

sort_tensor <- function(x, fn, arg = "self") {
  x <- as_tensor_arg(x)
  if (!is_torch_tensor(x)) value_error(fn, ": ", arg, " must be a tensor, got ", describe(x))
  x
}

sort_flag <- function(x, fn, arg) {
  if (!is.logical(x) || length(x) != 1 || is.na(x)) value_error(fn, ": ", arg, " must be TRUE or FALSE, got ", deparse(x, nlines = 1)[1])
  x
}

# list(values, indices).
#' @export
torch_sort <- function(self, dim = -1L, descending = FALSE, stable = FALSE) {
  self <- sort_tensor(self, "torch_sort")
  sort_flag(stable, "torch_sort", "stable")
  .Call(rc_sort, "sort", self, dims_value(dim, "torch_sort", one = TRUE), sort_flag(descending, "torch_sort", "descending"))
}

#' @export
torch_argsort <- function(self, dim = -1L, descending = FALSE, stable = FALSE) {
  self <- sort_tensor(self, "torch_argsort")
  sort_flag(stable, "torch_argsort", "stable")
  .Call(rc_sort, "argsort", self, dims_value(dim, "torch_argsort", one = TRUE), sort_flag(descending, "torch_argsort", "descending"))
}

#' @export
torch_topk <- function(self, k, dim = -1L, largest = TRUE, sorted = TRUE) {
  self <- sort_tensor(self, "torch_topk")
  .Call(rc_topk, self, k, dims_value(dim, "torch_topk", one = TRUE), sort_flag(largest, "torch_topk", "largest"),
        sort_flag(sorted, "torch_topk", "sorted"))
}

#' @export
torch_kthvalue <- function(self, k, dim = -1L, keepdim = FALSE) {
  self <- sort_tensor(self, "torch_kthvalue")
  .Call(rc_select_along, "kthvalue", self, k, dims_value(dim, "torch_kthvalue", one = TRUE), sort_flag(keepdim, "torch_kthvalue", "keepdim"))
}

# Without dim: the lower median of every element (a 0-dim tensor); with dim: list(values, indices).
#' @export
torch_median <- function(self, dim = NULL, keepdim = FALSE) {
  self <- sort_tensor(self, "torch_median")
  .Call(rc_select_along, "median", self, NULL, dims_value(dim, "torch_median", one = TRUE), sort_flag(keepdim, "torch_median", "keepdim"))
}

#' @export
torch_mode <- function(self, dim = -1L, keepdim = FALSE) {
  self <- sort_tensor(self, "torch_mode")
  .Call(rc_select_along, "mode", self, NULL, dims_value(dim, "torch_mode", one = TRUE), sort_flag(keepdim, "torch_mode", "keepdim"))
}

#' @export
torch_quantile <- function(self, q, dim = NULL, keepdim = FALSE, interpolation = "linear") {
  self <- sort_tensor(self, "torch_quantile")
  if (!is_torch_tensor(q)) {
    if (!is.numeric(q) || length(q) == 0 || anyNA(q)) value_error("torch_quantile: q must be numbers in [0, 1] or a tensor, got ", deparse(q, nlines = 1)[1])
    q <- torch_tensor(as.numeric(q), dtype = self$dtype, device = self$device)
    if (length(q) == 1) q <- q$reshape(integer(0))
  }
  if (!is.character(interpolation) || length(interpolation) != 1) value_error("torch_quantile: interpolation must be a string")
  .Call(rc_quantile, self, q, dims_value(dim, "torch_quantile", one = TRUE), sort_flag(keepdim, "torch_quantile", "keepdim"), interpolation)
}

# The sorted distinct elements; with return_inverse and/or return_counts, a list of the values,
# then the 1-based position of each element in them, then each value's count.
#' @export
torch_unique <- function(self, sorted = TRUE, return_inverse = FALSE, return_counts = FALSE, dim = NULL) {
  self <- sort_tensor(self, "torch_unique")
  if (!is.null(dim)) value_error("torch_unique: dim is not supported (only dim = NULL, the flattened tensor)")
  sort_flag(sorted, "torch_unique", "sorted")
  u <- .Call(rc_unique, self)
  if (!sort_flag(return_inverse, "torch_unique", "return_inverse") && !sort_flag(return_counts, "torch_unique", "return_counts")) return(u[[1]])
  c(u[1], if (return_inverse) u[2], if (return_counts) u[3])
}

#' @export
torch_randperm <- function(n, dtype = torch_long(), layout = NULL, device = NULL, requires_grad = FALSE) {
  check_layout(layout, "torch_randperm")
  with_requires_grad(.Call(rc_torch_randperm, n, dtype_name(dtype), creation_device(device)), requires_grad)
}

#' @export
torch_bucketize <- function(self, boundaries, out_int32 = FALSE, right = FALSE) {
  self <- sort_tensor(self, "torch_bucketize")
  boundaries <- sort_tensor(boundaries, "torch_bucketize", "boundaries")
  .Call(rc_bucketize, self, boundaries, sort_flag(out_int32, "torch_bucketize", "out_int32"), sort_flag(right, "torch_bucketize", "right"))
}

#' @export
torch_histc <- function(self, bins = 100L, min = 0L, max = 0L) {
  self <- sort_tensor(self, "torch_histc")
  .Call(rc_histc, self, bins, min, max)
}

m <- tensor_methods
for (name in c("sort", "argsort", "topk", "kthvalue", "median", "mode", "quantile", "unique", "bucketize", "histc")) {
  m[[name]] <- get(paste0("torch_", name))
}
rm(name, m)

# Base R's sort() and median() on a tensor: over its flattened elements, as on a vector (sort
# keeps NaN, which base R would drop as NA; median() of a tensor with NaN is NaN, as na.rm =
# FALSE gives NA).
#' @export
sort.rcuda_tensor <- function(x, decreasing = FALSE, ...) torch_sort(x$flatten(), 1L, decreasing)[[1]]

#' @export
median.rcuda_tensor <- function(x, na.rm = FALSE, ...) {
  if (!identical(na.rm, FALSE)) value_error("median(): tensors have no NA to remove; na.rm must be FALSE")
  torch_median(x)
}
