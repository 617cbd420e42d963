#!/usr/bin/env bash
# torch for R's own test suite against this checkout's R package: installs r/ from a copy into a
# temporary library, linked to a prebuilt engine, and runs scripts/torch-suite.R on it under nice
# (the figures go to docs/torch-parity.md by hand). Arguments are passed to torch-suite.R.
#   BUILD=dir        the engine's CMake build directory (default: build)
#   TORCH_REPO=dir   a git directory of mlverse/torch (default: /work/.mirror/mlverse+torch/repo)
#   OUT=dir          where torch-suite.csv and torch-suite-summary.md go (default: /tmp)
#   JOBS=n           test files run at once (default: 1)
#   CORO_REPO=dir    a git directory of r-lib/coro (default: /work/.mirror/r-lib+coro/repo): torch
#                    for R imports coro, and 21 of its blocks call coro::loop() or coro::collect();
#                    where coro is not installed, its release 1.1.0 is installed from there into
#                    the temporary library (Debian does not package it)
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD:-build}
case "$build" in /*) ;; *) build="$root/$build" ;; esac
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cp -a "$root/r" "$work/r"
find "$work/r" \( -name '*.o' -o -name '*.so' \) -delete
mkdir "$work/lib"
RCUDA_HOME="$root" RCUDA_BUILD="$build" R CMD INSTALL --no-multiarch -l "$work/lib" "$work/r" \
  >"$work/install.log" 2>&1 || { cat "$work/install.log"; exit 1; }

coro_repo=${CORO_REPO:-/work/.mirror/r-lib+coro/repo}
if ! Rscript -e 'quit(status = !requireNamespace("coro", quietly = TRUE))' && [ -d "$coro_repo" ]; then
  mkdir "$work/coro"
  git --git-dir "$coro_repo" archive v1.1.0 | tar -x -C "$work/coro"
  R CMD INSTALL -l "$work/lib" "$work/coro" >"$work/coro.log" 2>&1 || { cat "$work/coro.log"; exit 1; }
fi

R_LIBS="$work/lib${R_LIBS:+:$R_LIBS}" nice -n 10 Rscript "$root/scripts/torch-suite.R" \
  --out "${OUT:-/tmp}" --repo "${TORCH_REPO:-/work/.mirror/mlverse+torch/repo}" --jobs "${JOBS:-1}" "$@"
