#!/usr/bin/env bash
# Builds the engine when needed, installs the R package into build/r-lib, runs its testthat
# tests and `R CMD check --no-manual`. Exits non-zero when any step fails.
#   BUILD=dir        the engine's CMake build directory (default: build)
#   R_CHECK=0        skip R CMD check (tests only)
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD:-build}
case "$build" in /*) ;; *) build="$root/$build" ;; esac
export RCUDA_HOME="$root" RCUDA_BUILD="$build"
export MAKEFLAGS="${MAKEFLAGS:--j2}"

if [ ! -f "$build/src/librcuda.so" ]; then
  [ -f "$build/build.ninja" ] || cmake -S "$root" -B "$build" -G Ninja -DRCUDA_WITH_CUDA="${RCUDA_WITH_CUDA:-AUTO}"
  ninja -C "$build" rcuda
fi

lib="$build/r-lib"
mkdir -p "$lib"
echo "r-check: installing the package into $lib"
# Objects left by an earlier install were compiled against older headers (the engine's and
# the glue's; R's make knows neither): build the glue afresh.
rm -f "$root"/r/src/*.o "$root"/r/src/*.so
R CMD INSTALL --no-multiarch -l "$lib" "$root/r" >"$build/r-install.log" 2>&1 || {
  cat "$build/r-install.log"
  exit 1
}

echo "r-check: testthat"
(cd "$root/r/tests" && R_LIBS="$lib" Rscript -e '
  library(testthat); library(rcuda)
  res <- as.data.frame(test_dir("testthat", reporter = "summary", stop_on_failure = FALSE))
  cat(sprintf("r-check: %d expectations, %d failed, %d skipped, %d errors\n",
              sum(res$nb), sum(res$failed), sum(res$skipped), sum(res$error)))
  if (sum(res$failed) > 0 || any(res$error)) quit(status = 1)')

if [ "${R_CHECK:-1}" != "0" ]; then
  echo "r-check: R CMD check --no-manual"
  work="$build/r-check"
  rm -rf "$work" && mkdir -p "$work"
  (cd "$work" && R CMD build --no-build-vignettes "$root/r" >build.log 2>&1 || { cat build.log; exit 1; })
  (cd "$work" && R_LIBS="$lib" _R_CHECK_FORCE_SUGGESTS_=false R CMD check --no-manual rcuda_*.tar.gz | tee check.log)
  if grep -qE "^Status: .*(ERROR|WARNING)" "$work/check.log"; then
    echo "r-check: R CMD check reported an ERROR or WARNING (see $work/rcuda.Rcheck)" >&2
    exit 1
  fi
fi
