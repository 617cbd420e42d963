#!/usr/bin/env bash
# Installs every Debian package that rcuda's build, tests and benchmarks need. Idempotent and
# quiet: a no-op when everything is present. Run as root (or with sudo available).
set -euo pipefail

packages=(
  build-essential cmake ninja-build ccache pkg-config git
  libopenblas-openmp-dev          # CPU GEMM; the OpenMP build shares threads with our loops
  libdnnl-dev                     # oneDNN: convolution, pooling, normalisation, RNN on the CPU
  libonnx-dev libprotobuf-dev     # ONNX export and import (src/io/onnx): ONNX's protobuf classes, schemas, checker
  libonnx-testdata                # ONNX's backend node tests, run by tests/onnx_node
  dataset-fashion-mnist           # the main job's data (/usr/share/datasets/fashion-mnist)
  libgtest-dev libgmock-dev       # C++ tests
  libbenchmark-dev                # benchmarks
  nlohmann-json3-dev libcli11-dev libfmt-dev
  clang-format clang-tidy
  python3 python3-numpy python3-pip  # tests/io: safetensors' reference implementation (below)
  r-base-core r-base-dev r-cran-cpp11 r-cran-testthat r-cran-r6 r-cran-magrittr r-cran-cli   # the R package (r/)
  libcpp-httplib-dev prometheus python3-jsonschema curl  # rcuda CLI: exporter, promtool, checks
  libopenmpi-dev openmpi-bin      # process groups (src/dist): MPI backend, NCCL's bootstrap, mpirun
  slurm-wlm munge                 # tests/dist/slurm_single_node.sh: a one-node Slurm for srun
  hey wrk                         # the inference server's load benchmarks and overload check
  r-cran-plumber r-cran-curl r-cran-processx r-cran-jsonlite  # serve() from R, examples/serving
  r-cran-bit64                    # the R tests of integer64 conversions (torch for R parity)
  r-cran-callr                    # dataloader(num_workers > 0): batches made in worker R processes
)

# cudnn-frontend (NVIDIA's header-only C++ graph API over cuDNN, MIT) is not packaged by Debian;
# PyPI's nvidia-cudnn-frontend wheel carries its headers. They are unpacked into
# third_party/cudnn-frontend (git-ignored); nothing is installed. Only CUDA builds need them.
root=$(cd "$(dirname "$0")/.." && pwd)
cudnn_frontend_version=1.32.0
fetch_cudnn_frontend() {
  local dest="$root/third_party/cudnn-frontend"
  [ -f "$dest/include/cudnn_frontend.h" ] && return 0
  command -v nvcc >/dev/null 2>&1 || [ -x /usr/local/cuda/bin/nvcc ] || return 0
  local tmp
  tmp=$(mktemp -d)
  echo "install-deps: fetching cudnn-frontend $cudnn_frontend_version headers into $dest"
  python3 -m pip download -q --no-deps --only-binary=:all: -d "$tmp" \
    "nvidia-cudnn-frontend==$cudnn_frontend_version" >/dev/null
  mkdir -p "$dest"
  python3 - "$tmp" "$dest" <<'PY'
import glob, sys, zipfile
wheel = glob.glob(sys.argv[1] + "/*.whl")[0]
with zipfile.ZipFile(wheel) as z:
    for name in z.namelist():
        if name.startswith("include/") or name.endswith("LICENSE.txt"):
            z.extract(name, sys.argv[2])
PY
  rm -rf "$tmp"
}

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
if [ ${#missing[@]} -gt 0 ]; then
  echo "install-deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
fetch_cudnn_frontend

# safetensors (PyPI; CPU only, no torch: its numpy API), onnx and onnxruntime for the file-format
# tests, which run them as the reference implementations and skip, saying so, without them. Debian's python3 refuses
# system-wide pip installs unless told (PEP 668); a python3 on PATH from elsewhere takes them.
for py in python3 /usr/bin/python3; do
  command -v "$py" >/dev/null 2>&1 || continue
  "$py" -c 'import safetensors, numpy, onnx, onnxruntime' 2>/dev/null && continue
  echo "install-deps: pip install safetensors numpy onnx onnxruntime for $py"
  "$py" -m pip install --quiet --disable-pip-version-check --root-user-action=ignore numpy safetensors onnx onnxruntime 2>/dev/null ||
    "$py" -m pip install --quiet --disable-pip-version-check --root-user-action=ignore --break-system-packages numpy safetensors onnx onnxruntime ||
    echo "install-deps: could not install safetensors, onnx or onnxruntime for $py (tests/io will skip)" >&2
done
