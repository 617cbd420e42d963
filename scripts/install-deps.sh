#!/usr/bin/env bash
# Installs every Debian package that rcuda's build, tests and benchmarks need. Idempotent and
# quiet: a no-op when everything is present. Run as root (or with sudo available).
set -euo pipefail

packages=(
  build-essential cmake ninja-build ccache pkg-config git
  libopenblas-openmp-dev          # CPU GEMM; the OpenMP build shares threads with our loops
  libgtest-dev libgmock-dev       # C++ tests
  libbenchmark-dev                # benchmarks
  nlohmann-json3-dev libcli11-dev libfmt-dev
  clang-format clang-tidy
  python3
  r-base-core r-base-dev r-cran-cpp11 r-cran-testthat   # the R package (r/)
  libcpp-httplib-dev prometheus python3-jsonschema curl  # rcuda CLI: exporter, promtool, checks
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
