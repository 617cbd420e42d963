#!/usr/bin/env bash
# Checks the one-way layering of docs/ARCHITECTURE.md: every #include in src/ and include/rcuda/
# must name a layer that the including folder's README.md allows on its "May include:" line.
#
# How a README line is read (its first sentence, which may run over several lines):
#   - an item that is a layer's name ("core", "backend", "backend/cpu") allows that layer's public
#     headers (include/rcuda/<layer>/, include/rcuda/<layer>.h) and its own (src/<layer>/);
#   - "<layer>'s public API" (or "public headers") allows only the public ones;
#   - a path in backticks (`rcuda/backend/cuda.h`) allows that one header;
#   - a vendor's name (CUDA, CUB/CCCL, cuBLAS, cuDNN, NCCL, NVML, OpenBLAS, OpenMP, MPI, HTTP, R
#     headers) allows that vendor's headers; no other folder may include them.
# A folder may include its own files and its sub-folders'; a folder without a README follows its
# parent's. Public
# headers in include/rcuda/<layer>/ follow src/<layer>/README.md and include no vendor header
# (the toolkit must not leak to users). include/rcuda/rcuda.h, the umbrella, may include all;
# including it counts as including every layer it includes. Layers of the ordered list below may
# only allow layers under them; a folder outside the list is taken at its word.
#
# Usage: scripts/check-layers.sh [repository root]. Exit 1 naming file, line and include for
# each violation. Needs bash, grep and sed only.
set -u -f  # -f: the vendor patterns below are matched against include paths, never expanded

cd "${1:-$(dirname "$0")/..}" || exit 2

# Bottom to top (docs/ARCHITECTURE.md and src/CMakeLists.txt's DEPS): telemetry above backend,
# io above ops, dist above autograd, doctor above telemetry and autograd, graph above nn and amp, io/onnx above graph,
# runtime above io/onnx.
# Sub-folders rank with their top folder (backend/cpu as backend), except those listed here
# (io/onnx), which are layers of their own: their files follow their own README, and their public
# headers (include/rcuda/io/onnx.h, include/rcuda/io/onnx/) count as their layer's.
ORDER=(core memory tensor backend telemetry ops io autograd dist doctor optim nn amp graph io/onnx runtime)

# Vendor: header pattern (a bash glob on the include path) and the README word that allows it.
VENDOR_NAMES=(cuda cub cublas cusolver cudnn nccl nvml openblas openmp mpi http onnx r)
declare -A VENDOR_GLOBS=(
  [cuda]='cuda.h cuda_*.h cuda/* cooperative_groups* curand* nvrtc* nvtx* crt/* device_launch_parameters.h'
  [cub]='cub/* thrust/*'
  [cublas]='cublas*'
  [cusolver]='cusolver*'
  [cudnn]='cudnn*'
  [nccl]='nccl*'
  [nvml]='nvml*'
  [openblas]='cblas.h openblas* lapacke*'
  [openmp]='omp.h'
  [mpi]='mpi.h mpi/*'
  [http]='httplib.h'
  [onnx]='onnx/*'
  [r]='R.h Rinternals.h Rdefines.h Rmath.h Rversion.h R_ext/* Rcpp* cpp11.hpp cpp11/*'
)
# Extended regex (case-insensitive, whole word) of the README words for each vendor.
declare -A VENDOR_WORDS=(
  [cuda]='cuda' [cub]='cub|cccl|thrust' [cublas]='cublas|cublaslt' [cusolver]='cusolver'
  [cudnn]='cudnn(\.h)?'
  [nccl]='nccl' [nvml]='nvml' [openblas]='openblas|cblas(\.h)?' [openmp]='openmp'
  [mpi]='mpi' [http]='http|httplib|cpp-httplib'
  [onnx]='libonnx(-dev)?' [r]='r headers|r api|cpp11'
)

errors=0
fail() {
  echo "check-layers: $*" >&2
  errors=$((errors + 1))
}

rank_of() {  # prints the ORDER position of a layer (a listed sub-folder, else its top folder)
  local top=${1%%/*} i
  for i in "${!ORDER[@]}"; do
    [[ ${ORDER[$i]} == */* && ($1 == "${ORDER[$i]}" || $1 == "${ORDER[$i]}"/*) ]] &&
      echo "$i" && return
  done
  for i in "${!ORDER[@]}"; do
    [[ ${ORDER[$i]} == "$top" ]] && echo "$i" && return
  done
}

is_sub_layer() { local s; for s in "${ORDER[@]}"; do [[ $s == */* && $s == "$1" ]] && return 0; done; return 1; }

# The layer a public header path (rcuda/<layer>/..., rcuda/<layer>.h) belongs to: a listed
# sub-folder (rcuda/io/onnx.h, rcuda/io/onnx/x.h: io/onnx) or its top folder.
public_layer() {
  local sub=${1#rcuda/} two
  if [[ $sub == */* ]]; then
    two=${sub%%/*}/$(sed -e 's|/.*||' -e 's|\.h$||' <<<"${sub#*/}")
    is_sub_layer "$two" && echo "$two" && return
    echo "${sub%%/*}"
  else
    echo "${sub%.h}"
  fi
}

# ---- the folders and what each README allows ----------------------------------------------------

declare -A ALLOW=()     # "folder layer" -> full | public
declare -A ALLOW_HDR=() # "folder header" -> 1
declare -A VENDOR=()    # "folder vendor" -> 1
declare -A HAS_README=()
declare -A reported=()

readme_sentence() {  # the first sentence after "May include:", joined onto one line
  local text
  text=$(sed -n '/May include:/,$p' "$1")
  text=${text//$'\n'/ }
  sed -e 's/.*May include:[[:space:]]*//' -e 's/\.[[:space:]].*//' -e 's/\.$//' <<<"$text"
}

folders=()
while IFS= read -r readme; do
  folder=${readme#src/}
  folder=${folder%/README.md}
  folders+=("$folder")
done < <(grep -rl --include=README.md '' src)
for folder in "${folders[@]}"; do HAS_README[$folder]=1; done

for folder in "${folders[@]}"; do
  readme="src/$folder/README.md"
  if ! grep -q 'May include:' "$readme"; then
    fail "$readme: no \"May include:\" line"
    continue
  fi
  sentence=$(readme_sentence "$readme")
  # Paths in backticks, then the sentence without them and without parentheses.
  rest=$sentence
  while [[ $rest =~ \`([^\`]*)\` ]]; do
    ALLOW_HDR["$folder ${BASH_REMATCH[1]}"]=1
    rest=${rest/"${BASH_REMATCH[0]}"/}
  done
  # shellcheck disable=SC2001 # nested patterns: sed is clearer than ${rest//...}
  plain=$(sed -e 's/([^()]*)//g' <<<"$rest")
  lower=" ${rest,,} "  # vendors may be named in parentheses: "OpenBLAS (cblas.h)"
  for v in "${VENDOR_NAMES[@]}"; do
    word="[^a-z0-9_.-](${VENDOR_WORDS[$v]})[^a-z0-9_-]"
    [[ $lower =~ $word ]] && VENDOR["$folder $v"]=1
  done
  # Items: split on commas and " and ".
  items=$(sed -e 's/ and /,/g' -e 's/,/\n/g' <<<"$plain" | sed -e 's/^[[:space:]]*//' \
    -e 's/[[:space:]]*$//')
  own_rank=$(rank_of "$folder")
  while IFS= read -r item; do
    [[ -z $item ]] && continue
    layer="" kind=""
    if [[ $item =~ ^([a-z_/]+)\'s\ public\ (api|headers)$ ]]; then
      layer=${BASH_REMATCH[1]} kind=public
    elif [[ $item =~ ^[a-z_/]+$ ]]; then
      layer=$item kind=full
    fi
    [[ -z $layer ]] && continue
    known=""
    [[ -n ${HAS_README[$layer]:-} || -n $(rank_of "$layer") ]] && known=1
    [[ -z $known ]] && continue  # a plain word such as "only"
    ALLOW["$folder $layer"]=$kind
    rank=$(rank_of "$layer")
    if [[ -n $own_rank && -n $rank ]] && ((rank > own_rank)); then
      fail "$readme: \"May include:\" allows $layer, a layer above ${folder%%/*}"
    fi
  done <<<"$items"
done

# A layer of the ordered list without a README yet (its public headers may come first) may
# include every layer under it.
for i in "${!ORDER[@]}"; do
  [[ -n ${HAS_README[${ORDER[$i]}]:-} ]] && continue
  for ((j = 0; j < i; ++j)); do ALLOW["${ORDER[$i]} ${ORDER[$j]}"]=full; done
done

while IFS= read -r hit; do  # every top folder of src/ (and listed sub-folder) holding sources
  dir=${hit#src/}
  [[ $dir == */* ]] || continue
  sub=${dir%/*}
  if is_sub_layer "$sub"; then dir=$sub; else dir=${dir%%/*}; fi
  [[ -n ${HAS_README[$dir]:-} || -n ${reported[$dir]:-} ]] && continue
  reported[$dir]=1
  fail "src/$dir has no README.md with a \"May include:\" line"
done < <(grep -rlE --include='*.h' --include='*.cpp' --include='*.cu' --include='*.cuh' '' src)

# The folder (README key) that a path under src/ belongs to: its nearest folder with a README.
folder_of() {
  local dir=$1
  while [[ $dir == */* ]]; do
    dir=${dir%/*}
    if [[ -n ${HAS_README[$dir]:-} ]] || is_sub_layer "$dir"; then
      echo "$dir"
      return
    fi
  done
  echo "${1%%/*}"  # a top folder without a README (reported above) or one not made yet
}

# a/b/../c -> a/c
normalise() {
  local IFS=/ part out=()
  for part in $1; do
    case $part in
      '' | .) ;;
      ..) ((${#out[@]})) && unset 'out[${#out[@]}-1]' ;;
      *) out+=("$part") ;;
    esac
  done
  echo "${out[*]}"
}

is_layer_name() { [[ -n ${HAS_README[$1]:-} || -n $(rank_of "$1") ]]; }

# The layers the umbrella header includes.
umbrella_layers=()
declare -A seen_umbrella=()
while IFS= read -r line; do
  [[ $line =~ \"rcuda/([a-z_]+)/ ]] || continue
  [[ -n ${seen_umbrella[${BASH_REMATCH[1]}]:-} ]] && continue
  seen_umbrella[${BASH_REMATCH[1]}]=1
  umbrella_layers+=("${BASH_REMATCH[1]}")
done < <(grep -E '^[[:space:]]*#[[:space:]]*include' include/rcuda/rcuda.h 2>/dev/null)

# ---- every include --------------------------------------------------------------------------

check_layer() {  # file line include folder target_layer public(0|1)
  local file=$1 line=$2 inc=$3 folder=$4 target=$5 public=$6
  [[ $target == "$folder" || $target == "$folder"/* ]] && return  # its own files and sub-folders
  local kind=${ALLOW["$folder $target"]:-}
  [[ $kind == full ]] && return
  [[ $kind == public && $public == 1 ]] && return
  [[ -n ${ALLOW_HDR["$folder $inc"]:-} ]] && return
  local why="layer $target"
  [[ $kind == public ]] && why="$target's internal headers (only its public API is allowed)"
  fail "$file:$line: #include \"$inc\": $why, which src/$folder/README.md's \"May include:\" does not allow"
}

INCLUDE_RE='include[[:space:]]*([<"])([^">]+)[">]'
while IFS= read -r hit; do
  file=${hit%%:*}
  rest=${hit#*:}
  line=${rest%%:*}
  text=${rest#*:}
  [[ $text =~ $INCLUDE_RE ]] || continue
  bracket=${BASH_REMATCH[1]} inc=${BASH_REMATCH[2]}

  public_header=0
  if [[ $file == include/rcuda/* ]]; then
    public_header=1
    sub=${file#include/rcuda/}
    if [[ $sub == rcuda.h ]]; then continue; fi  # the umbrella includes everything
    folder=$(public_layer "rcuda/$sub")
  else
    folder=$(folder_of "${file#src/}")
  fi

  # Vendor headers: only where the README names the vendor, never in public headers.
  vendor=""
  for v in "${VENDOR_NAMES[@]}"; do
    for glob in ${VENDOR_GLOBS[$v]}; do
      # shellcheck disable=SC2053
      [[ $inc == $glob ]] && vendor=$v && break 2
    done
  done
  if [[ -n $vendor ]]; then
    if ((public_header)); then
      fail "$file:$line: #include <$inc>: a public header includes a $vendor header"
    elif [[ -z ${VENDOR["$folder $vendor"]:-} ]]; then
      fail "$file:$line: #include <$inc>: $vendor headers, which src/$folder/README.md's \"May include:\" does not name"
    fi
    continue
  fi

  # rcuda's own headers: public (rcuda/...), relative to the file, or relative to src/.
  if [[ $inc == rcuda/rcuda.h ]]; then
    for layer in "${umbrella_layers[@]}"; do
      check_layer "$file" "$line" "$inc" "$folder" "$layer" 1
    done
    continue
  fi
  if [[ $inc == rcuda/*/* ]]; then
    check_layer "$file" "$line" "$inc" "$folder" "$(public_layer "$inc")" 1
    continue
  fi
  if [[ $inc == rcuda/*.h ]]; then
    layer=$(public_layer "$inc")
    is_layer_name "$layer" && check_layer "$file" "$line" "$inc" "$folder" "$layer" 1
    continue
  fi
  [[ $bracket == '<' ]] && continue  # system and third-party headers
  path=""
  relative=$(normalise "${file%/*}/$inc")
  if [[ -e $relative && $relative == include/rcuda/*/* ]]; then
    check_layer "$file" "$line" "$inc" "$folder" "$(public_layer "${relative#include/}")" 1
    continue
  elif [[ $relative == src/* && (-e $relative || $inc == ../*) ]]; then
    path=${relative#src/}
  fi
  if [[ -z $path && $inc == */* ]] && is_layer_name "${inc%%/*}"; then
    path=$(normalise "$inc")
  fi
  [[ -z $path ]] && continue  # a generated header or a sibling of an include directory
  check_layer "$file" "$line" "$inc" "$folder" "$(folder_of "$path")" 0
done < <(grep -rnE '^[[:space:]]*#[[:space:]]*include[[:space:]]*[<"]' src include \
  --include='*.h' --include='*.hpp' --include='*.cpp' --include='*.cc' --include='*.c' \
  --include='*.cu' --include='*.cuh')

if ((errors)); then
  echo "check-layers: $errors violation(s) of the layering (docs/ARCHITECTURE.md)" >&2
  exit 1
fi
echo "check-layers: every include follows its folder's \"May include:\" line"
