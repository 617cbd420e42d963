# Constraints: the region where a distribution's parameter or sample is valid, as torch for R's
# constraint_* objects (torch.distributions.constraints). $check(value) returns a boolean tensor,
# one element per event: of value's shape for elementwise constraints, without the last dim for
# vector constraints (event_dim 1) and the last two for matrix ones (event_dim 2).
# Note [Distribution argument validation] in distributions.R says where they are checked.

Constraint <- R6::R6Class(
  "torch_Constraint",
  lock_objects = FALSE,
  public = list(
    event_dim = 0L,
    check = function(value) distr_not_implemented(class(self)[1], "$check"),
    # The domain in words, for error messages.
    describe = function() class(self)[1],
    print = function(...) {
      cat(class(self)[1], ": ", self$describe(), "\n", sep = "")
      invisible(self)
    }
  )
)

# Placeholder for variables whose support depends on other variables.
.Dependent <- R6::R6Class(
  "torch_Dependent",
  inherit = Constraint,
  lock_objects = FALSE,
  public = list(
    check = function(value) value_error("Cannot determine validity of dependent constraint"),
    describe = function() "dependent on other parameters"
  )
)

is_dependent <- function(object) inherits(object, "torch_Dependent")

# The events of value reinterpreted: the last reinterpreted_batch_ndims dims of the base
# constraint's result are reduced with all().
.IndependentConstraint <- R6::R6Class(
  "torch_IndependentConstraint",
  inherit = Constraint,
  lock_objects = FALSE,
  public = list(
    initialize = function(base_constraint, reinterpreted_batch_ndims) {
      self$base_constraint <- base_constraint
      self$reinterpreted_batch_ndims <- as.integer(reinterpreted_batch_ndims)
      self$event_dim <- base_constraint$event_dim + self$reinterpreted_batch_ndims
    },
    check = function(value) {
      result <- self$base_constraint$check(value)
      n <- self$reinterpreted_batch_ndims
      if (result$dim() < n) {
        value_error("constraint check: expected value$dim() >= ", self$event_dim,
                    ", got ", value$dim())
      }
      result$reshape(c(utils::head(result$shape, result$dim() - n), -1))$all(dim = -1)
    },
    describe = function() paste0(self$base_constraint$describe(), ", elementwise")
  )
)

.Boolean <- R6::R6Class(
  "torch_Boolean",
  inherit = Constraint,
  lock_objects = FALSE,
  public = list(
    check = function(value) (value == 0) | (value == 1),
    describe = function() "0 or 1"
  )
)

.IntegerInterval <- R6::R6Class(
  "torch_IntegerInterval",
  inherit = Constraint,
  lock_objects = FALSE,
  public = list(
    lower_bound = NULL,
    upper_bound = NULL,
    initialize = function(lower_bound, upper_bound) {
      self$lower_bound <- lower_bound
      self$upper_bound <- upper_bound
    },
    check = function(value) {
      (value == value$floor()) & (value >= self$lower_bound) & (value <= self$upper_bound)
    },
    describe = function() {
      paste0("whole numbers from ", self$lower_bound, " to ", self$upper_bound)
    }
  )
)

.IntegerLessThan <- R6::R6Class(
  "torch_IntegerLessThan",
  inherit = Constraint,
  lock_objects = FALSE,
  public = list(
    upper_bound = NULL,
    initialize = function(upper_bound) self$upper_bound <- upper_bound,
    check = function(value) (value == value$floor()) & (value <= self$upper_bound),
    describe = function() paste0("whole numbers <= ", self$upper_bound)
  )
)

.IntegerGreaterThan <- R6::R6Class(
  "torch_IntegerGreaterThan",
  inherit = Constraint,
  lock_objects = FALSE,
  public = list(
    lower_bound = NULL,
    initialize = function(lower_bound) self$lower_bound <- lower_bound,
    check = function(value) (value == value$floor()) & (value >= self$lower_bound),
    describe = function() paste0("whole numbers >= ", self$lower_bound)
  )
)

# The extended real line: anything but NaN.
.Real <- R6::R6Class(
  "torch_Real",
  inherit = Constraint,
  lock_objects = FALSE,
  public = list(
    check = function(value) !torch_isnan(value),
    describe = function() "real numbers (not NaN)"
  )
)

.GreaterThan <- R6::R6Class(
  "torch_GreaterThan",
  inherit = Constraint,
  lock_objects = FALSE,
  public = list(
    lower_bound = NULL,
    initialize = function(lower_bound) self$lower_bound <- lower_bound,
    check = function(value) value > self$lower_bound,
    describe = function() paste0("> ", self$lower_bound)
  )
)

.GreaterThanEq <- R6::R6Class(
  "torch_GreaterThanEq",
  inherit = Constraint,
  lock_objects = FALSE,
  public = list(
    lower_bound = NULL,
    initialize = function(lower_bound) self$lower_bound <- lower_bound,
    check = function(value) value >= self$lower_bound,
    describe = function() paste0(">= ", self$lower_bound)
  )
)

.LessThan <- R6::R6Class(
  "torch_LessThan",
  inherit = Constraint,
  lock_objects = FALSE,
  public = list(
    upper_bound = NULL,
    initialize = function(upper_bound) self$upper_bound <- upper_bound,
    check = function(value) value < self$upper_bound,
    describe = function() paste0("< ", self$upper_bound)
  )
)

.Interval <- R6::R6Class(
  "torch_Interval",
  inherit = Constraint,
  lock_objects = FALSE,
  public = list(
    lower_bound = NULL,
    upper_bound = NULL,
    initialize = function(lower_bound, upper_bound) {
      self$lower_bound <- lower_bound
      self$upper_bound <- upper_bound
    },
    check = function(value) (value >= self$lower_bound) & (value <= self$upper_bound),
    describe = function() paste0("in [", self$lower_bound, ", ", self$upper_bound, "]")
  )
)

.HalfOpenInterval <- R6::R6Class(
  "torch_HalfOpenInterval",
  inherit = Constraint,
  lock_objects = FALSE,
  public = list(
    lower_bound = NULL,
    upper_bound = NULL,
    initialize = function(lower_bound, upper_bound) {
      self$lower_bound <- lower_bound
      self$upper_bound <- upper_bound
    },
    check = function(value) (value >= self$lower_bound) & (value < self$upper_bound),
    describe = function() paste0("in [", self$lower_bound, ", ", self$upper_bound, ")")
  )
)

# Symmetric matrices with a Cholesky factor. The result keeps torch for R's leading dim of size 1
# (shape c(1, batch)).
.PositiveDefinite <- R6::R6Class(
  "torch_PositiveDefinite",
  inherit = Constraint,
  lock_objects = FALSE,
  public = list(
    event_dim = 2L,
    check = function(value) {
      if (value$dim() < 2 || value$size(-1) != value$size(-2)) {
        value_error("constraint_positive_definite: expected square matrices, got shape ",
                    shape_string(value$shape))
      }
      tolerance <- 1e-6 * (1 + value$abs()$amax(dim = c(-2, -1), keepdim = TRUE))
      asymmetry <- (value - value$transpose(-2, -1))$abs()
      symmetric <- (asymmetry <= tolerance)$all(dim = -1)$all(dim = -1)
      (linalg_cholesky_ex(value)$info$eq(0) & symmetric)$unsqueeze(1)
    },
    describe = function() "symmetric positive definite matrices"
  )
)

.LowerCholesky <- R6::R6Class(
  "torch_LowerCholesky",
  inherit = Constraint,
  lock_objects = FALSE,
  public = list(
    event_dim = 2L,
    check = function(value) {
      lower <- (value$tril() == value)$all(dim = -1)$all(dim = -1)
      positive_diagonal <- (value$diagonal(dim1 = -2, dim2 = -1) > 0)$all(dim = -1)
      lower & positive_diagonal
    },
    describe = function() "lower-triangular matrices with a positive diagonal"
  )
)

.Simplex <- R6::R6Class(
  "torch_Simplex",
  inherit = Constraint,
  lock_objects = FALSE,
  public = list(
    event_dim = 1L,
    check = function(value) {
      (value >= 0)$all(dim = -1) & ((value$sum(dim = -1) - 1)$abs() < 1e-6)
    },
    describe = function() "non-negative vectors summing to 1 along the last dim"
  )
)

# The objects torch for R defines, exported (documented in man/distributions.Rd).
#' @export
constraint_dependent <- .Dependent$new()
#' @export
constraint_boolean <- .Boolean$new()
#' @export
constraint_nonnegative_integer <- .IntegerGreaterThan$new(0)
#' @export
constraint_positive_integer <- .IntegerGreaterThan$new(1)
#' @export
constraint_real <- .Real$new()
#' @export
constraint_real_vector <- .IndependentConstraint$new(constraint_real, 1)
#' @export
constraint_positive <- .GreaterThan$new(0)
#' @export
constraint_nonnegative <- .GreaterThanEq$new(0)
#' @export
constraint_unit_interval <- .Interval$new(0, 1)
#' @export
constraint_positive_definite <- .PositiveDefinite$new()
#' @export
constraint_lower_cholesky <- .LowerCholesky$new()
#' @export
constraint_simplex <- .Simplex$new()
# The parameterised ones are class generators, as torch for R's:
# constraint_greater_than$new(lower_bound).
#' @export
constraint_greater_than <- .GreaterThan
#' @export
constraint_greater_than_eq <- .GreaterThanEq
#' @export
constraint_less_than <- .LessThan
#' @export
constraint_interval <- .Interval
#' @export
constraint_half_open_interval <- .HalfOpenInterval
#' @export
constraint_integer_interval <- .IntegerInterval

# Signals a value_error naming fn and arg when value breaks constraint, with up to three of the
# values at fault (elementwise constraints) or the number of events at fault (the others).
check_constraint <- function(value, constraint, fn, arg, what = NULL) {
  ok <- with_no_grad(constraint$check(value$detach()))
  if (ok$all()$item()) return(invisible(TRUE))
  bad <- with_no_grad(!ok)
  found <- if (identical(ok$shape, value$shape)) {
    values <- as.numeric(as_array(value$detach()$masked_select(bad)$cpu()))
    shown <- format(utils::head(values, 3), digits = 4)
    paste0(", found ", paste(shown, collapse = ", "), if (length(values) > 3) ", ...")
  } else {
    paste0(", found ", bad$sum()$item(), " invalid event(s) of ", ok$numel())
  }
  name <- constraint_name(constraint)
  if (is.null(what)) what <- paste0("must satisfy ", name)
  value_error(fn, ": ", arg, " ", what, " (", constraint$describe(), ")", found)
}

# The exported name of a constraint object, for messages.
constraint_name <- function(constraint) {
  for (name in constraint_object_names) {
    if (identical(constraint, get(name))) return(name)
  }
  class(constraint)[1]
}

constraint_object_names <- c(
  "constraint_real", "constraint_real_vector", "constraint_positive", "constraint_nonnegative",
  "constraint_unit_interval", "constraint_boolean", "constraint_nonnegative_integer",
  "constraint_positive_integer", "constraint_positive_definite", "constraint_lower_cholesky",
  "constraint_simplex"
)
