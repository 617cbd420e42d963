# Metrics for fit(): each is a list with a name, update(pred, target), compute() and reset().
# The built-in ones keep their sums in tensors on the batches' device, so that updating never
# waits for the device (Note [One read-back per phase] in fit.R); compute() returns a one-element
# tensor there, or a plain number.
#
# fit() gives the training and the validation phase of each epoch a fresh state: it calls
# reset() before each phase, or, where `metrics` holds a function instead of a list, calls that
# function for a new metric.

new_metric <- function(name, update, compute, reset) {
  structure(list(name = name, update = update, compute = compute, reset = reset),
            class = "rcuda_metric")
}

#' @export
print.rcuda_metric <- function(x, ...) {
  cat("<metric ", x$name, ">\n", sep = "")
  invisible(x)
}

#' @export
metric_accuracy <- function() {
  correct <- NULL
  count <- 0
  new_metric("acc",
    update = function(pred, target) {
      shape <- .Call(rc_shape, pred)
      if (length(shape) != 2) {
        shape_error("metric_accuracy: pred must be [samples, classes] scores, got shape [",
                    paste(shape, collapse = ", "), "]")
      }
      if (.Call(rc_numel, target) != shape[[1]]) {
        shape_error("metric_accuracy: target must hold one 1-based class per sample (", shape[[1]],
                    "), got shape [", paste(target$shape, collapse = ", "), "]")
      }
      if (is.null(correct)) {
        correct <<- torch_zeros(integer(0), dtype = torch_long(), device = .Call(rc_meta, pred)[[3]])
      }
      .Call(rc_accuracy_update, correct, pred, target)  # correct += hits, in place
      count <<- count + shape[[1]]
      invisible(NULL)
    },
    compute = function() {
      if (is.null(correct)) return(NA_real_)
      correct$to(dtype = torch_float64()) / count
    },
    reset = function() {
      correct <<- NULL
      count <<- 0
      invisible(NULL)
    }
  )
}

#' @export
metric_mae <- function() elementwise_metric("mae", function(d) torch_sum(torch_abs(d)))

#' @export
metric_mse <- function() elementwise_metric("mse", function(d) torch_sum(d * d))

# A mean over every element of sum_of(pred - target); target takes pred's shape when it holds
# as many elements (a [n] target beside [n, 1] predictions), never broadcasts.
elementwise_metric <- function(name, sum_of) {
  total <- NULL
  count <- 0
  who <- paste0("metric_", name)
  new_metric(name,
    update = function(pred, target) {
      if (!identical(.Call(rc_shape, pred), .Call(rc_shape, target))) {
        if (.Call(rc_numel, pred) != .Call(rc_numel, target)) {
          shape_error(who, ": pred has shape [", paste(pred$shape, collapse = ", "),
                      "] and target [", paste(target$shape, collapse = ", "),
                      "]; they must hold as many elements")
        }
        target <- target$reshape(pred$shape)
      }
      s <- sum_of((pred - target)$to(dtype = torch_float64()))
      total <<- if (is.null(total)) s else total + s
      count <<- count + .Call(rc_numel, pred)
      invisible(NULL)
    },
    compute = function() if (is.null(total)) NA_real_ else total / count,
    reset = function() {
      total <<- NULL
      count <<- 0
      invisible(NULL)
    }
  )
}

# The metrics, named by their names (each function is called once here, to check what it makes).
check_metrics <- function(metrics) {
  if (inherits(metrics, "rcuda_metric") || is.function(metrics)) metrics <- list(metrics)
  if (!is.list(metrics)) {
    value_error("fit: metrics must be a list of metrics (metric_accuracy(), ...), got ",
                describe(metrics))
  }
  names_of <- vapply(seq_along(metrics), function(i) {
    m <- metrics[[i]]
    check_metric(if (is.function(m)) m() else m, i)$name
  }, character(1))
  if (anyDuplicated(names_of)) {
    value_error("fit: two metrics are named '", names_of[anyDuplicated(names_of)], "'")
  }
  reserved <- names_of[names_of %in% c("loss", "lr", "seconds", "samples_per_s")]
  if (length(reserved)) {
    value_error("fit: a metric cannot be named '", reserved[1], "' (fit() records that itself)")
  }
  names(metrics) <- names_of
  metrics
}

check_metric <- function(m, i) {
  ok <- is.list(m) && is.character(m$name) && length(m$name) == 1 && nzchar(m$name) &&
    is.function(m$update) && is.function(m$compute) && is.function(m$reset)
  if (!ok) {
    value_error("fit: metric ", i, " must be a list with a name, update(pred, target), compute() ",
                "and reset() (as metric_accuracy() makes), or a function returning one")
  }
  invisible(m)
}

# A metric with a fresh state for one phase of an epoch.
metric_instance <- function(m) {
  if (is.function(m)) return(m())
  m$reset()
  m
}

update_metrics <- function(metrics, pred, target) {
  with_no_grad(for (m in metrics) m$update(pred, target))
}
