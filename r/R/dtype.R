# dtypes: small objects holding the engine's name ("float32", ...). They print and compare as
# torch for R's do: torch_float() prints torch_Float and equals torch_float32().

# (torch_dtype second: scripts that check inherits(x, "torch_dtype") see one)
new_dtype <- function(name) structure(list(name = name), class = c("rcuda_dtype", "torch_dtype"))

# The engine's names and the names torch prints (torch_Float, CPUFloatType, str's "Float").
dtype_labels <- c(
  float32 = "Float", float64 = "Double", float16 = "Half", bfloat16 = "BFloat16",
  int32 = "Int", int64 = "Long", int16 = "Short", int8 = "Char", uint8 = "Byte", bool = "Bool",
  float8_e4m3fn = "Float8_e4m3fn", float8_e5m2 = "Float8_e5m2",
  complex64 = "ComplexFloat", complex128 = "ComplexDouble"
)

#' @export
torch_float32 <- function() new_dtype("float32")
#' @export
torch_float <- torch_float32
#' @export
torch_float64 <- function() new_dtype("float64")
#' @export
torch_double <- torch_float64
#' @export
torch_float16 <- function() new_dtype("float16")
#' @export
torch_half <- torch_float16
#' @export
torch_bfloat16 <- function() new_dtype("bfloat16")
#' @export
torch_int32 <- function() new_dtype("int32")
#' @export
torch_int <- torch_int32
#' @export
torch_int64 <- function() new_dtype("int64")
#' @export
torch_long <- torch_int64
#' @export
torch_int16 <- function() new_dtype("int16")
#' @export
torch_short <- torch_int16
#' @export
torch_int8 <- function() new_dtype("int8")
#' @export
torch_uint8 <- function() new_dtype("uint8")
#' @export
torch_bool <- function() new_dtype("bool")

is_dtype <- function(x) inherits(x, "rcuda_dtype")

# The default floating dtype lives in the engine (Note [Default floating dtype] in
# rcuda/core/dtype.h), the one place every creation without a dtype reads it from: R doubles
# in torch_tensor(), torch_zeros(), torch_randn(), torch_arange() over doubles, ..., and the
# floating results of integer tensors (x / y, x + 0.5).
#' @export
torch_get_default_dtype <- function() new_dtype(.Call(rc_get_default_dtype))

#' @export
torch_set_default_dtype <- function(d) {
  if (!is_dtype(d) || !(d$name %in% c("float32", "float64"))) {
    dtype_error("torch_set_default_dtype: only floating-point types are supported as the default ",
                "type (torch_float32() or torch_float64()), got ", describe_dtype(d))
  }
  .Call(rc_set_default_dtype, d$name)
  invisible(NULL)
}

describe_dtype <- function(d) {
  if (is_dtype(d)) paste0("torch_", as.character(d)) else deparse(d, nlines = 1)[1]
}

# A dtype given as torch for R's strings (dtype = "double", x$to(dtype = "long")): the engine's
# name for it (its parser, dtype_from_name, knows the spellings), NA for a name it does not know.
dtype_string_name <- function(x) {
  if (!is.character(x) || length(x) != 1 || is.na(x)) return(NA_character_)
  .Call(rc_dtype_canonical, x)
}

is_dtype_string <- function(x) !is.na(dtype_string_name(x))

# The engine name for a dtype argument, a dtype or a dtype string (NULL stays NULL): what .Call
# receives.
dtype_name <- function(dtype) {
  if (is.null(dtype)) return(NULL)
  if (is_dtype(dtype)) return(dtype$name)
  name <- dtype_string_name(dtype)
  if (!is.na(name)) return(name)
  if (is.character(dtype) && length(dtype) == 1) {
    dtype_error("dtype \"", dtype, "\" is not one rcuda knows; use a torch dtype such as ",
                "torch_float() or a name such as \"float32\", \"double\", \"long\" or \"bool\"")
  }
  dtype_error("dtype must be a torch dtype such as torch_float(), got ", class(dtype)[1])
}

# A dtype argument as a dtype object (strings as dtype_name() reads them; NULL stays NULL).
as_dtype <- function(dtype) if (is.null(dtype)) NULL else new_dtype(dtype_name(dtype))

#' @export
print.rcuda_dtype <- function(x, ...) {
  cat("torch_", as.character(x), "\n", sep = "")
  invisible(x)
}

#' @export
as.character.rcuda_dtype <- function(x, ...) unname(dtype_labels[x$name])

# torch for R: comparing a dtype with anything else is an error, never FALSE.
#' @export
`==.rcuda_dtype` <- function(e1, e2) {
  if (!is_dtype(e1) || !is_dtype(e2)) {
    dtype_error("==: one of the objects is not a dtype (", class(if (is_dtype(e1)) e2 else e1)[1],
                "); comparison is not possible")
  }
  identical(.subset2(e1, "name"), .subset2(e2, "name"))
}

#' @export
`!=.rcuda_dtype` <- function(e1, e2) !(e1 == e2)

# `$` gives torch for R's fields (is_floating_point) and the engine's name; any other name is
# an error, as in torch for R, not NULL.
dtype_fields <- list(
  name = function(x) .subset2(x, "name"),
  is_floating_point = function(x) is_floating_dtype(.subset2(x, "name")),
  # dtype$.type(): libtorch's name of the scalar type ("Float", "Long", ...), which torch for R
  # scripts compare against.
  .type = function(x) function() unname(dtype_labels[.subset2(x, "name")])
)

#' @export
`$.rcuda_dtype` <- function(x, name) {
  field <- dtype_fields[[name]]
  if (is.null(field)) value_error("torch_dtype has no field '", name, "' (it has: is_floating_point, .type)")
  field(x)
}

#' @export
length.rcuda_dtype <- function(x) 1L

is_floating_dtype <- function(name) name %in% c("float32", "float64", "float16", "bfloat16")
