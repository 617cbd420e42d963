#!/usr/bin/env bash
# The R package installed the R way (r/README.md, "Install"): `R CMD build r` makes the source
# tarball, which carries the engine's sources; it is copied outside the checkout and installed
# from there into a temporary library (r/configure builds the engine with CMake); the copy and
# what R unpacked are deleted; a fresh Rscript that finds rcuda only in that library checks that
# the engine it loaded lies inside the library and trains a small model for a few steps; then
# `R CMD check --no-manual` of the tarball, on that installation, runs the package's tests.
# Exits non-zero when a step fails or R CMD check reports a WARNING or ERROR.
#   BUILD=dir    the repository's engine build (default: build). The tarball's engine is built
#                with its CMake choices (CUDA, architectures, build type, compilers, warnings as
#                errors), so that ccache gives back its objects (Note [ccache across folders] in
#                r/configure); RCUDA_WITH_CUDA and RCUDA_CMAKE_FLAGS, when set, are used instead.
#   R_CHECK=0    stop after the training run (no R CMD check, no tests)
# The tarball and R CMD check's output stay in $BUILD/r-tarball.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD:-build}
case "$build" in /*) ;; *) build="$root/$build" ;; esac
work="$build/r-tarball"
# Parallel compiles (R's make, and configure's engine build), unless the caller chose.
case " ${MAKEFLAGS:-}" in *" -j"*) ;; *) MAKEFLAGS="-j$(nproc) ${MAKEFLAGS:-}" ;; esac
export MAKEFLAGS
# The tarball's engine is the one under test: no prebuilt one, no CLI from elsewhere.
unset RCUDA_HOME RCUDA_BUILD RCUDA_CLI

# The repository build's CMake choices, where its cache has them.
cache="$build/CMakeCache.txt"
cached() { if [ -f "$cache" ]; then sed -n "s/^$1:[A-Z]*=//p" "$cache" | head -n 1; fi; }
if [ -z "${RCUDA_WITH_CUDA:-}" ]; then
  RCUDA_WITH_CUDA=$(cached RCUDA_WITH_CUDA)
  export RCUDA_WITH_CUDA=${RCUDA_WITH_CUDA:-AUTO}
fi
if [ -z "${RCUDA_CMAKE_FLAGS:-}" ]; then
  flags=()
  for key in CMAKE_BUILD_TYPE CMAKE_C_COMPILER CMAKE_CXX_COMPILER CMAKE_CXX_FLAGS \
             CMAKE_CUDA_FLAGS CMAKE_CUDA_ARCHITECTURES RCUDA_WARNINGS_AS_ERRORS; do
    value=$(cached "$key")
    case "$value" in
      "") ;;
      *" "*) echo "r-tarball-check: $key has spaces ('$value'): not passed on; ccache may miss" >&2 ;;
      *) flags+=("-D$key=$value") ;;
    esac
  done
  export RCUDA_CMAKE_FLAGS="${flags[*]}"
fi

rm -rf "$work" && mkdir -p "$work"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/rcuda-tarball.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
case "$tmp/" in "$root"/*) echo "r-tarball-check: $tmp is inside the checkout" >&2; exit 1 ;; esac

echo "r-tarball-check: R CMD build r"
start=$SECONDS
(cd "$work" && R CMD build --no-build-vignettes "$root/r" >build.log 2>&1) || { cat "$work/build.log"; exit 1; }
tarball=$(cd "$work" && ls rcuda_*.tar.gz)
echo "r-tarball-check: $tarball, $(du -k "$work/$tarball" | cut -f1) KiB, $((SECONDS - start)) s"

echo "r-tarball-check: installing from $tmp/$tarball into $tmp/lib" \
     "(CUDA $RCUDA_WITH_CUDA; cmake flags: ${RCUDA_CMAKE_FLAGS:-none})"
start=$SECONDS
cp "$work/$tarball" "$tmp/"
mkdir -p "$tmp/lib" "$tmp/unpacked"
# The package's own C++ (src/) behind ccache too, unless the user has a Makevars of their own. R
# compiles it with -g: CCACHE_NOHASHDIR keeps the folder R unpacked into, a new one each time, out
# of the hash. The compilers are written out: a Makevars that asks `R CMD config` for them is read
# by `R CMD config` itself, which recurses without --no-user-files.
if command -v ccache >/dev/null && [ -z "${R_MAKEVARS_USER:-}" ] && ! ls "$HOME"/.R/Makevars* >/dev/null 2>&1; then
  printf 'CXX = ccache %s\nCXX17 = ccache %s\n' "$(R CMD config --no-user-files CXX)" \
    "$(R CMD config --no-user-files CXX17)" >"$tmp/ccache.Makevars"
  export R_MAKEVARS_USER="$tmp/ccache.Makevars" CCACHE_NOHASHDIR=1
fi
# R unpacks the tarball under TMPDIR; the engine's objects come from ccache where it has them.
(cd "$tmp" && TMPDIR="$tmp/unpacked" CCACHE_STATSLOG="$tmp/ccache.log" \
  R CMD INSTALL --no-multiarch -l "$tmp/lib" "$tarball" >"$work/install.log" 2>&1) || {
  cat "$work/install.log"
  exit 1
}
echo "r-tarball-check: installed in $((SECONDS - start)) s (log: $work/install.log)"
if command -v ccache >/dev/null && [ -f "$tmp/ccache.log" ]; then
  CCACHE_STATSLOG="$tmp/ccache.log" ccache --show-log-stats |
    awk '/^ *Hits:/ { print "r-tarball-check: ccache had " $2 " of the " $4 " compiles (engine and package)" }'
fi
rm -rf "${tmp:?}/$tarball" "${tmp:?}/unpacked"

echo "r-tarball-check: library(rcuda) from $tmp/lib alone, a short training run"
# shellcheck disable=SC2016 # R code
(cd "$tmp" && R_LIBS="$tmp/lib" R_LIBS_USER="$tmp/none" RCUDA_LIBRARY="$tmp/lib" \
  RCUDA_CHECKOUT="$root" Rscript --vanilla -e '
  library(rcuda)
  lib <- normalizePath(Sys.getenv("RCUDA_LIBRARY"))
  inside <- function(path, dir) startsWith(normalizePath(path), paste0(dir, "/"))
  stopifnot(inside(find.package("rcuda"), lib))
  maps <- unique(sub("^[^/]*", "", readLines("/proc/self/maps")))
  engine <- grep("/librcuda\\.so$", maps, value = TRUE)
  if (length(engine) != 1 || !inside(engine, lib))
    stop("librcuda.so was loaded from ", paste(engine, collapse = ", "), ", not from ", lib)
  checkout <- normalizePath(Sys.getenv("RCUDA_CHECKOUT"))
  from_checkout <- maps[startsWith(maps, paste0(checkout, "/"))]
  if (length(from_checkout)) stop("files of the checkout are loaded: ", toString(from_checkout))
  cli <- system.file("bin", "rcuda", package = "rcuda")
  if (nzchar(cli)) stopifnot(identical(rcuda:::rcuda_cli(), cli))
  device <- if (cuda_is_available()) "cuda" else "cpu"
  cat(sprintf("r-tarball-check: engine %s, CLI %s, training on %s\n", engine,
              if (nzchar(cli)) cli else "not built", device))

  torch_manual_seed(1)
  x <- torch_randn(256, 8, device = device)
  y <- torch_matmul(x, torch_randn(8, 1, device = device)) + 0.5
  model <- nn_sequential(nn_linear(8, 32), nn_relu(), nn_linear(32, 1))
  model$to(device = device)
  opt <- optim_adam(model$parameters, lr = 0.02)
  losses <- vapply(1:30, function(step) {
    opt$zero_grad()
    loss <- nnf_mse_loss(model(x), y)
    loss$backward()
    opt$step()
    loss$item()
  }, numeric(1))
  cat(sprintf("r-tarball-check: loss %.4f at step 1, %.4f at step 30\n", losses[1], losses[30]))
  if (!(losses[30] < 0.1 * losses[1])) stop("the loss did not decrease: ", toString(signif(losses, 3)))
')

if [ "${R_CHECK:-1}" = "0" ]; then
  exit 0
fi
echo "r-tarball-check: R CMD check --no-manual $tarball (on the installation above)"
start=$SECONDS
# RCUDA_HOME: the tests that read the repository's examples and reference scripts find them.
(cd "$work" && RCUDA_HOME="$root" _R_CHECK_FORCE_SUGGESTS_=false \
  R CMD check --no-manual --install="check:$work/install.log" --library="$tmp/lib" "$tarball" |
  tee check.log)
echo "r-tarball-check: R CMD check took $((SECONDS - start)) s"
if ! grep -qE "^Status: " "$work/check.log" || grep -qE "^Status: .*(ERROR|WARNING)" "$work/check.log"; then
  echo "r-tarball-check: R CMD check reported an ERROR or WARNING (see $work/rcuda.Rcheck)" >&2
  exit 1
fi
