# head() and tail() take the first or last n entries along the first dim, as base R's do for
# vectors and matrices (rows): a negative n leaves out the last or first |n|. The result is a
# new tensor, as torch for R's (and R's) are, not a view of x. Base R's default methods would
# index by numel(), which runs past the first dim of a matrix-like tensor.
head_tail_rows <- function(x, n, fn, from_end) {
  if (x$dim() == 0) value_error(fn, "(): a 0-dim tensor has no rows")
  n <- convenience_number(n, fn, "n", function(v) v == trunc(v), "a whole number")
  rows <- x$size(1)
  keep <- if (n >= 0) min(n, rows) else max(rows + n, 0)
  torch_narrow(x, 1, if (from_end && keep > 0) rows - keep + 1 else 1, keep)$clone()
}

#' @export
head.rcuda_tensor <- function(x, n = 6L, ...) head_tail_rows(x, n, "head", from_end = FALSE)

#' @export
tail.rcuda_tensor <- function(x, n = 6L, ...) head_tail_rows(x, n, "tail", from_end = TRUE)
