#!/usr/bin/env bash
# `rcuda serve` under load (docs/serving.md, "Load"): hey at 1, 16 and 64 concurrent clients on
# loopback, each run bounded in requests (-n) and seconds (killed past RUN_LIMIT_S), for each model with and
# without dynamic batching; beside each, the model's in-process batched throughput (bench_served:
# the same model and config run through the runtime's batcher by threads in the process, no HTTP).
# Then the overload check: 4x the sustainable rate for OVERLOAD_S seconds, counting status codes,
# with the server's RSS and pool before and after.
#   bench/serve_load.sh [cpu|cuda]        (BUILD: the build folder, default build)
# Prints `name: value` lines and a markdown table; OUT keeps hey's outputs.
set -uo pipefail
cd "$(dirname "$0")/.."
device=${1:-cpu}
BUILD=${BUILD:-build}
OUT=${OUT:-/tmp/rcuda-serve-bench}
REQUESTS=${REQUESTS:-4000}       # per hey run
RUN_LIMIT_S=${RUN_LIMIT_S:-60}   # per hey run
OVERLOAD_S=${OVERLOAD_S:-30}
RCUDA=$BUILD/apps/cli/rcuda
mkdir -p "$OUT"
work=$(mktemp -d)
server_pid=""
cleanup() { [ -n "$server_pid" ] && kill -TERM "$server_pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
for tool in hey python3 "$RCUDA"; do
  command -v "$tool" >/dev/null || { echo "serve_load: $tool not found (scripts/install-deps.sh)"; exit 1; }
done

models=(mlp)
resnet_args=()
if [ "$device" = cuda ]; then
  python3 bench/torch_onnx_resnet.py "$work/resnet" --iters 5 >"$OUT/torch_resnet.txt" 2>&1 ||
    { tail "$OUT/torch_resnet.txt"; exit 1; }
  resnet_args=(--resnet "$work/resnet/resnet18_fp16.onnx")
  models+=(resnet18)
fi
python3 bench/make_serve_models.py "$work/repo" --device "$device" "${resnet_args[@]}" || exit 1

"$RCUDA" serve --model-repository "$work/repo" --http-port 0 --metrics-port 0 --http-threads 512 \
  2>"$OUT/server.log" &
server_pid=$!
for _ in $(seq 1 600); do
  grep -q "serving http" "$OUT/server.log" && break
  sleep 0.1
done
url=$(grep -o "serving http://[0-9.:]*" "$OUT/server.log" | head -1 | sed 's/serving //')
metrics=$(grep -o "metrics http://[0-9.:]*/metrics" "$OUT/server.log" | head -1 | sed 's/metrics //')
[ -n "$url" ] || { cat "$OUT/server.log"; exit 1; }
for _ in $(seq 1 600); do
  curl -sf "$url/v2/health/ready" >/dev/null && break
  sleep 0.2
done

# hey's summary: requests/s, p50 and p99 in ms, and the status codes it saw.
run_hey() {  # name model clients body_args...
  local name=$1 model=$2 clients=$3
  shift 3
  timeout "$RUN_LIMIT_S" hey -n "$REQUESTS" -c "$clients" -m POST "$@" \
    "$url/v2/models/$model/infer" >"$OUT/$name.txt" 2>&1
  local rps p50 p99
  rps=$(awk '/Requests\/sec/ {print $2}' "$OUT/$name.txt")
  p50=$(awk '/ 50% in/ {printf "%.2f", $3 * 1000}' "$OUT/$name.txt")
  p99=$(awk '/ 99% in/ {printf "%.2f", $3 * 1000}' "$OUT/$name.txt")
  echo "${name}_req_per_s: ${rps:-0}"
  echo "${name}_p50_ms: ${p50:-nan}"
  echo "${name}_p99_ms: ${p99:-nan}"
  grep -E "^\s+\[[0-9]+\]" "$OUT/$name.txt" | sed "s/^ */${name}_status /"
}

body_args() {  # model | mlp64 (64 rows a request, binary tensors)
  case $1 in
    resnet18) stem=resnet18_request ;;
    mlp64) stem=mlp_request64 ;;
    *) echo "-T application/json -D $work/mlp_request.json"; return ;;
  esac
  echo "-T application/octet-stream -H Inference-Header-Content-Length:$(cat "$work/$stem.len") -D $work/$stem.bin"
}

# The floor under every figure below: hey and the HTTP layer alone (a GET of /v2/health/live, no
# body, no model), on the same cores as the server.
for clients in 1 16 64; do
  timeout "$RUN_LIMIT_S" hey -n "$REQUESTS" -c "$clients" \
    "$url/v2/health/live" >"$OUT/floor_c$clients.txt" 2>&1
  echo "http_floor_c${clients}_req_per_s: $(awk '/Requests\/sec/ {print $2}' "$OUT/floor_c$clients.txt")"
done

# The floor under each model's requests: the same body POSTed to a model that is not loaded.
# cpp-httplib reads the whole body before routing, so this is hey, the HTTP layer and the body's
# transfer alone, answered 404 without inference: no server can serve these requests faster
# on these cores (the figure the server's own throughput is set against).
for model in "${models[@]}" mlp64; do
  for clients in 16 64; do
    # shellcheck disable=SC2046
    timeout "$RUN_LIMIT_S" hey -n "$REQUESTS" -c "$clients" -m POST $(body_args "$model") \
      "$url/v2/models/not_loaded/infer" >"$OUT/body_floor_${model}_c$clients.txt" 2>&1
    echo "body_floor_${model}_c${clients}_req_per_s: $(awk '/Requests\/sec/ {print $2}' "$OUT/body_floor_${model}_c$clients.txt")"
  done
done

for model in "${models[@]}"; do
  # shellcheck disable=SC2046
  for served in "$model" "${model}_batched"; do
    for clients in 1 16 64; do
      run_hey "${served}_c${clients}" "$served" "$clients" $(body_args "$model")
    done
  done
  # Requests of 64 rows, binary: the HTTP cost spread over a full batch.
  if [ "$model" = mlp ]; then
    for clients in 1 16; do
      # shellcheck disable=SC2046
      run_hey "mlp_batched_rows64_c${clients}" mlp_batched "$clients" $(body_args mlp64)
    done
  fi
  # The same model in the process: 64 threads submitting single rows through the batcher, and
  # one thread submitting full batches of 64 (the model's batched throughput). OpenMP waits
  # passively, as in `rcuda serve` (apps/cli/main.cpp says why).
  OMP_WAIT_POLICY=passive "$BUILD/bench/bench_served" "$work/repo" "${model}_batched" --seconds "${INPROCESS_S:-10}" --threads 64 --rows 1
  OMP_WAIT_POLICY=passive "$BUILD/bench/bench_served" "$work/repo" "${model}_batched" --seconds "${INPROCESS_S:-10}" --threads 1 --rows 64
done

# Overload: 4x the best sustained rate of the batched MLP, from 256 clients (hey -q is per
# client; hey's clients wait for each answer, so only more clients than the queue holds can
# overload it), for OVERLOAD_S seconds, on mlp_overload (a queue of 64, a 100 ms timeout). Only
# 200s and 503s may come back.
rss() { awk '/VmRSS/ {print $2}' /proc/$server_pid/status; }
gpu_bytes() { curl -s "$metrics" | awk '/^rcuda_cuda_memory_allocated_bytes/ {s += $2} END {print s + 0}'; }
best=$(grep -h "Requests/sec" "$OUT"/mlp_batched_c*.txt | awk '{print $2}' | sort -g | tail -1)
per_client=$(python3 -c "print(max(1, int(4 * ${best:-100} / 256)))")
echo "overload_target_req_per_s: $((per_client * 256))"
echo "overload_best_sustained_req_per_s: $best"
echo "overload_rss_kib_before: $(rss)"
echo "overload_gpu_allocated_bytes_before: $(gpu_bytes)"
# Two rounds: memory that grows in the first (thread stacks, allocator arenas, the pool's
# blocks) and not in the second is a working set, not a leak.
for round in 1 2; do
  timeout $((OVERLOAD_S + 20)) hey -z "${OVERLOAD_S}s" -c 256 -q "$per_client" -m POST \
    $(body_args mlp) "$url/v2/models/mlp_overload/infer" >"$OUT/overload$round.txt" 2>&1
  awk -v r="$round" '/Requests\/sec/ {print "overload" r "_answered_req_per_s: " $2}
    / 50% in/ {print "overload" r "_p50_ms: " $3 * 1000} / 99% in/ {print "overload" r "_p99_ms: " $3 * 1000}' \
    "$OUT/overload$round.txt"
  grep -E "^\s+\[[0-9]+\]" "$OUT/overload$round.txt" | sed "s/^ */overload${round}_status /"
  echo "overload${round}_errors: $(awk '/Error distribution/ {e = 1; next} e && NF {n += $1} END {print n + 0}' "$OUT/overload$round.txt")"
  sleep 2
  echo "overload${round}_rss_kib_after: $(rss)"
  echo "overload${round}_gpu_allocated_bytes_after: $(gpu_bytes)"
done
curl -s "$metrics" | grep -E "^rcuda_inference_(inferences|executions|request_failure)_total" | sed 's/^/metric /'

kill -TERM "$server_pid"
wait "$server_pid"
echo "server_exit_status: $?"
server_pid=""
