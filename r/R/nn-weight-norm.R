# Weight normalization (Salimans and Kingma, 2016) as torch for R's nn_utils_weight_norm: a
# parameter w of a module is replaced by a magnitude g (`<name>_g`) and a direction v
# (`<name>_v`), w = g * v / ||v||, the norm taken over every dim but `dim` (NULL: over all of
# v). As in torch for R,
# which has no forward hooks, w is recomputed when $recompute(module) (or $call) is called,
# typically at the start of the module's forward(); gradients reach g and v through it.

# The p-norm of v over every dim but `dim` (1-based), kept as size-1 dims. dim = -1 (or NULL)
# is torch's "no dim": the norm of all of v, a 0-d tensor, as torch's norm_except_dim.
#' @export
torch_norm_except_dim <- function(v, pow = 2, dim = 1) {
  fn <- "torch_norm_except_dim"
  v <- extra_tensor(v, fn, "v")
  if (is.null(dim) || identical(as.numeric(dim), -1)) return(torch_norm(v, p = pow))
  keep <- extra_dim(dim, v$dim(), fn, "dim")
  others <- setdiff(seq_len(v$dim()), keep)
  if (!length(others)) return(torch_abs(v))  # a 1-d v, normed over no other dim: |v|
  torch_norm(v, p = pow, dim = others, keepdim = TRUE)
}

# v * g / norm_except_dim(v, 2, dim), as torch's _weight_norm.
#' @export
torch__weight_norm <- function(v, g, dim = 1) {
  v <- extra_tensor(v, "torch__weight_norm", "v")
  g <- extra_tensor(g, "torch__weight_norm", "g")
  v * (g / torch_norm_except_dim(v, 2, dim))
}

#' @export
nn_utils_weight_norm <- R6::R6Class(
  "nn_utils_weight_norm",
  lock_objects = FALSE,
  public = list(
    name = NULL,
    dim = NULL,
    initialize = function(name, dim) {
      if (!is.character(name) || length(name) != 1 || is.na(name)) {
        value_error("nn_utils_weight_norm: name must be a parameter's name, got ", deparse(name, nlines = 1)[1])
      }
      self$name <- name
      self$dim <- dim
    },
    compute_weight = function(module, name = NULL, dim = NULL) {
      name <- name %||% self$name
      torch__weight_norm(module[[paste0(name, "_v")]], module[[paste0(name, "_g")]], dim %||% self$dim)
    },
    # Replaces the parameter `name` by `<name>_g` and `<name>_v` (both parameters) and sets
    # `name` to the weight they give.
    apply = function(module, name = NULL, dim = NULL) {
      name <- name %||% self$name
      dim <- dim %||% self$dim
      weight <- module$parameters[[name]]
      if (!is_torch_tensor(weight)) {
        value_error("nn_utils_weight_norm: the module has no parameter '", name, "'")
      }
      unregister(module, name)
      module$register_parameter(paste0(name, "_g"), nn_parameter(torch_norm_except_dim(weight, 2, dim)$detach()))
      module$register_parameter(paste0(name, "_v"), nn_parameter(weight$detach()))
      module[[name]] <- self$compute_weight(module, name, dim)
      invisible(module)
    },
    call = function(module) {
      module[[self$name]] <- self$compute_weight(module)
      invisible(module)
    },
    recompute = function(module) self$call(module),
    # Back to one parameter `name` holding the current weight.
    remove = function(module, name = NULL) {
      name <- name %||% self$name
      weight <- self$compute_weight(module, name)
      unregister(module, paste0(name, "_g"))
      unregister(module, paste0(name, "_v"))
      module[[name]] <- nn_parameter(weight$detach())
      invisible(module)
    }
  )
)
