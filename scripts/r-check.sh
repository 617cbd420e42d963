#!/usr/bin/env bash
# The R package against a prebuilt engine, the developer's loop: builds the engine when needed,
# installs r/ into build/r-lib linked to it (RCUDA_HOME/RCUDA_BUILD, as `make r-install`) and runs
# the testthat tests. Exits non-zero when any step fails. R CMD check of the source tarball, which
# builds its own engine, is scripts/r-tarball-check.sh (the one `make test` runs).
#   BUILD=dir        the engine's CMake build directory (default: build)
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

# The package's own C++ behind ccache, unless the user has a Makevars of their own (the
# compilers written out: see scripts/r-tarball-check.sh).
if command -v ccache >/dev/null && [ -z "${R_MAKEVARS_USER:-}" ] && ! ls "$HOME"/.R/Makevars* >/dev/null 2>&1; then
  makevars=$(mktemp)
  trap 'rm -f "$makevars"' EXIT
  printf 'CXX = ccache %s\nCXX17 = ccache %s\n' "$(R CMD config --no-user-files CXX)" \
    "$(R CMD config --no-user-files CXX17)" >"$makevars"
  export R_MAKEVARS_USER="$makevars"
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
