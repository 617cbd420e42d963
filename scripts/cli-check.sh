#!/usr/bin/env bash
# End-to-end checks of the `rcuda` command line, run by `make test` after the C++ tests:
# stress (options, no GPU, and on a GPU a run, its baseline and SIGINT), doctor (text, exit
# status, JSON against docs/doctor-schema.json), monitor and exporter
# driven by the fake NVML library (tests/telemetry/fake_nvml.c), exporter output through
# `promtool check metrics` and an OpenMetrics parser, `rcuda serve` (health, one inference,
# metrics through promtool, SIGTERM) and a small bench.
#
#   scripts/cli-check.sh [BUILD_DIR]       (default: build)
#   CLI_CHECK_ONLY=stress scripts/cli-check.sh [BUILD_DIR]   (the stress part alone)
#
# Needs python3 with jsonschema (Debian: python3-jsonschema), promtool (Debian: prometheus)
# and curl. A missing tool fails the check that needs it, saying which package provides it.
set -uo pipefail

BUILD=${1:-build}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
RCUDA="$BUILD/apps/cli/rcuda"
FAKE="$BUILD/tests/libfake_nvml.so"
WORK=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$WORK"' EXIT
failures=0

ok() { echo "ok   - $1"; }
bad() { echo "FAIL - $1"; failures=$((failures + 1)); }
need() { command -v "$1" >/dev/null || { bad "$2: '$1' not found (install $3)"; return 1; }; }

for f in "$RCUDA" "$FAKE"; do
  [ -e "$f" ] || { echo "cli-check: $f is missing: build first (cmake --build $BUILD)"; exit 1; }
done

# A python3 that has jsonschema: the one on PATH, else Debian's.
PY=python3
$PY -c 'import jsonschema' 2>/dev/null || PY=/usr/bin/python3

# ---- stress ---------------------------------------------------------------------------------
# Options and bad values; without a GPU (this machine, or CUDA_VISIBLE_DEVICES= on a GPU machine)
# exit 4 and a report, valid against docs/stress-schema.json, saying why. With a GPU: a short run
# passes and saves a baseline, a second compares with it, a bad baseline file or device stops it
# before it starts (exit 2), Ctrl-C stops a level-2 run with a valid partial report (exit 5).
# CLI_CHECK_ONLY=stress runs this part alone (the GPU machine: scripts/cli-check.sh build-gpu).
help=$("$RCUDA" stress --help 2>&1)
missing=""
for opt in --seconds --level --json --save-baseline --baseline --threshold --device; do
  grep -q -- "$opt" <<<"$help" || missing="$missing $opt"
done
if [ -z "$missing" ]; then ok "stress --help lists every option"; else bad "stress --help lacks:$missing"; fi
for case in "--level 7" "--level 0" "--level two" "--seconds -1" "--seconds 0" "--threshold 1.5" "--device -2"; do
  CUDA_VISIBLE_DEVICES= "$RCUDA" stress $case >"$WORK/stress-bad.out" 2>"$WORK/stress-bad.err"
  rc=$?
  if [ $rc -ne 0 ] && [ $rc -ne 4 ] && [ ! -s "$WORK/stress-bad.out" ] && grep -q -- "${case%% *}" "$WORK/stress-bad.err"; then
    ok "stress $case: exit $rc, $(head -1 "$WORK/stress-bad.err")"
  else bad "stress $case: exit $rc, '$(cat "$WORK/stress-bad.err" "$WORK/stress-bad.out")'"; fi
done
CUDA_VISIBLE_DEVICES= "$RCUDA" stress --json >"$WORK/stress-nogpu.json" 2>"$WORK/stress-nogpu.err"
rc=$?
if [ $rc -eq 4 ] && grep -q "no CUDA device to stress: ." "$WORK/stress-nogpu.err" &&
   $PY "$ROOT/tests/cli/validate_stress_json.py" "$WORK/stress-nogpu.json" --exit-code 4 &&
   $PY -c 'import json, sys; r = json.load(open(sys.argv[1])); assert r["verdict"] == "no_gpu" and r["no_gpu_reason"]' "$WORK/stress-nogpu.json"; then
  ok "stress --json without a GPU exits 4 with a valid report saying why"
else bad "stress --json without a GPU: exit $rc, $(cat "$WORK/stress-nogpu.err")"; cat "$WORK/stress-nogpu.json"; fi
CUDA_VISIBLE_DEVICES= "$RCUDA" stress >"$WORK/stress-nogpu.txt" 2>/dev/null
rc=$?
if [ $rc -eq 4 ] && grep -q "^NO GPU: no CUDA device to stress: ." "$WORK/stress-nogpu.txt"; then ok "stress without a GPU: text says why, exit 4"
else bad "stress without a GPU (text): exit $rc"; cat "$WORK/stress-nogpu.txt"; fi

"$RCUDA" stress --seconds 6 --json --baseline "$WORK/stress-base.json" --save-baseline >"$WORK/stress1.json" 2>"$WORK/stress1.err"
rc=$?
if [ $rc -eq 4 ]; then
  ok "stress on a GPU: skipped, none here ($(tail -1 "$WORK/stress1.err"))"
else
  if [ $rc -eq 0 ] && $PY "$ROOT/tests/cli/validate_stress_json.py" "$WORK/stress1.json" --exit-code 0 &&
     $PY -c 'import json, sys; r = json.load(open(sys.argv[1])); assert all(g["baseline"]["saved"] and g["wrong_elements"] == 0 and len(g["figures"]) >= 4 for g in r["gpus"])' "$WORK/stress1.json"; then
    ok "stress --seconds 6 on $(grep -c '"uuid"' "$WORK/stress1.json") GPU(s): pass, valid report, baseline saved"
  else bad "stress --seconds 6: exit $rc"; tail -20 "$WORK/stress1.err"; fi
  "$RCUDA" stress --seconds 6 --json --baseline "$WORK/stress-base.json" --threshold 0.5 >"$WORK/stress2.json" 2>/dev/null
  rc=$?
  if [ $rc -eq 0 ] && $PY "$ROOT/tests/cli/validate_stress_json.py" "$WORK/stress2.json" --exit-code 0 &&
     $PY -c 'import json, sys; r = json.load(open(sys.argv[1])); assert all(g["baseline"]["found"] and all(f["ratio"] for f in g["figures"]) for g in r["gpus"])' "$WORK/stress2.json"; then
    ok "stress against its baseline: every figure compared ($($PY -c 'import json, sys; print(", ".join("%s %.2f" % (f["name"], f["ratio"]) for f in json.load(open(sys.argv[1]))["gpus"][0]["figures"]))' "$WORK/stress2.json"))"
  else bad "stress against its baseline: exit $rc"; fi
  echo '{"format": "something else"}' >"$WORK/stress-bad-base.json"
  "$RCUDA" stress --seconds 6 --baseline "$WORK/stress-bad-base.json" >/dev/null 2>"$WORK/stress-bad-base.err"
  rc=$?
  if [ $rc -eq 2 ] && grep -q "stress-bad-base.json is not a baseline file" "$WORK/stress-bad-base.err"; then ok "stress refuses a bad baseline file before the run (exit 2)"
  else bad "stress with a bad baseline file: exit $rc, $(cat "$WORK/stress-bad-base.err")"; fi
  "$RCUDA" stress --device 99 >/dev/null 2>"$WORK/stress-dev.err"
  rc=$?
  if [ $rc -eq 2 ] && grep -q -- "--device 99 does not exist" "$WORK/stress-dev.err"; then ok "stress --device 99: exit 2, $(cat "$WORK/stress-dev.err")"
  else bad "stress --device 99: exit $rc, $(cat "$WORK/stress-dev.err")"; fi
  "$RCUDA" stress --level 2 --json >"$WORK/stress-int.json" 2>"$WORK/stress-int.err" &
  pid=$!
  sleep 12
  t0=$(date +%s%N)
  kill -INT $pid
  wait $pid
  rc=$?
  took=$(awk -v ns=$(($(date +%s%N) - t0)) 'BEGIN {printf "%.1f", ns / 1e9}')
  if [ $rc -eq 5 ] && awk -v t="$took" 'BEGIN {exit !(t < 15)}' &&
     $PY "$ROOT/tests/cli/validate_stress_json.py" "$WORK/stress-int.json" --exit-code 5 &&
     $PY -c 'import json, sys; r = json.load(open(sys.argv[1])); assert r["interrupted"] and r["verdict"] == "interrupted"' "$WORK/stress-int.json"; then
    ok "stress --level 2 stops on SIGINT within ${took}s with a valid partial report (exit 5)"
  else bad "stress on SIGINT: exit $rc after ${took}s"; tail -5 "$WORK/stress-int.err"; fi
fi
if [ "${CLI_CHECK_ONLY:-}" = stress ]; then
  echo
  if [ $failures -eq 0 ]; then echo "cli-check: stress: all passed"; else echo "cli-check: stress: $failures failed"; fi
  exit $((failures > 0))
fi

# ---- doctor ---------------------------------------------------------------------------------
"$RCUDA" doctor >"$WORK/doctor.txt" 2>&1
rc=$?
if [ $rc -eq 0 ] || grep -q "^  FAIL" "$WORK/doctor.txt"; then ok "doctor exits $rc (1 only with a FAIL)"; else bad "doctor exits $rc without a FAIL"; cat "$WORK/doctor.txt"; fi
if grep -q "^  cuda:0" "$WORK/doctor.txt" || grep -q "CUDA is not available: ." "$WORK/doctor.txt"; then
  ok "doctor lists devices or says why CUDA is not available"
else bad "doctor neither lists devices nor says why CUDA is unavailable"; fi
"$RCUDA" doctor --json >"$WORK/doctor.json" 2>"$WORK/doctor.err"
if $PY "$ROOT/tests/cli/validate_doctor_json.py" "$WORK/doctor.json"; then ok "doctor --json matches docs/doctor-schema.json"
else bad "doctor --json does not match the schema (python3-jsonschema installed?)"; fi

# ---- monitor (fake NVML) --------------------------------------------------------------------
export RCUDA_NVML_LIBRARY="$FAKE" FAKE_NVML_GPUS=2 FAKE_NVML_TEMPERATURE=55 FAKE_NVML_POWER_MW=123456
"$RCUDA" monitor --duration 1 --interval 200 --output "$WORK/m.csv" 2>"$WORK/m.err"
rows=$(($(wc -l <"$WORK/m.csv") - 1))
if [ "$rows" -eq 10 ] && head -1 "$WORK/m.csv" | grep -q '^timestamp,gpu,uuid,temperature_celsius,power_watts,'; then
  ok "monitor --duration 1 --interval 200 writes 5 samples x 2 GPUs of CSV"
else bad "monitor CSV: $rows rows"; cat "$WORK/m.csv"; fi
if awk -F, 'NR>1 && !($2==0 && $4==55 && $5==123.456 || $2==1 && $4==56 && $5==124.456) {exit 1}' "$WORK/m.csv"; then
  ok "monitor CSV carries the values set through FAKE_NVML_*"
else bad "monitor CSV values differ from the fake's"; cat "$WORK/m.csv"; fi
"$RCUDA" monitor --duration 0.5 --format jsonl >"$WORK/m.jsonl" 2>/dev/null
if $PY -c '
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
assert len(rows) >= 4 and {r["gpu"] for r in rows} == {0, 1}
assert all(r["power_watts"] == 123.456 + r["gpu"] and r["sm_clock_hertz"] == 1980e6 + 1e6 * r["gpu"] for r in rows)
' "$WORK/m.jsonl"; then ok "monitor --format jsonl: one JSON object per GPU per sample"
else bad "monitor JSONL"; cat "$WORK/m.jsonl"; fi

"$RCUDA" monitor --duration 0.5 --profile >/dev/null 2>"$WORK/prof.err"
if grep -q '^nvmlDeviceGetPowerUsage  *6 ' "$WORK/prof.err" && [ "$(grep -c '^nvmlDevice' "$WORK/prof.err")" -eq 5 ]; then
  ok "monitor --profile reports calls and time per NVML function"
else bad "monitor --profile"; cat "$WORK/prof.err"; fi

# monitor and exporter run with one OpenBLAS thread unless the user chose a number.
env -u OPENBLAS_NUM_THREADS "$RCUDA" monitor --duration 1 >/dev/null 2>&1 &
pid=$!; sleep 0.5
blas_default=$(tr '\0' '\n' </proc/$pid/environ | grep '^OPENBLAS_NUM_THREADS=' || true); wait $pid
OPENBLAS_NUM_THREADS=3 "$RCUDA" monitor --duration 1 >/dev/null 2>&1 &
pid=$!; sleep 0.5
blas_user=$(tr '\0' '\n' </proc/$pid/environ | grep '^OPENBLAS_NUM_THREADS=' || true); wait $pid
if [ "$blas_default" = OPENBLAS_NUM_THREADS=1 ] && [ "$blas_user" = OPENBLAS_NUM_THREADS=3 ]; then
  ok "monitor runs with OPENBLAS_NUM_THREADS=1 unless the user set it"
else bad "monitor's OpenBLAS threads: '$blas_default' / '$blas_user'"; fi

# SIGINT: stops, exits 0, last line complete, CPU use reported on stderr (target < 1%).
"$RCUDA" monitor --interval 200 >"$WORK/int.csv" 2>"$WORK/int.err" &
pid=$!
sleep 2.1
kill -INT $pid
wait $pid
rc=$?
last=$(tail -c 1 "$WORK/int.csv" | od -An -c | tr -d ' ')
fields=$(tail -1 "$WORK/int.csv" | awk -F, '{print NF}')
if [ $rc -eq 0 ] && [ "$last" = '\n' ] && [ "$fields" -eq 10 ]; then ok "monitor ends cleanly on SIGINT with a complete last line"
else bad "monitor on SIGINT: exit $rc, last byte '$last', $fields fields"; fi
cpu=$(sed -n 's/.*after it \([0-9.]*\)% of one core.*/\1/p' "$WORK/int.err")
if [ -n "$cpu" ] && awk -v c="$cpu" 'BEGIN {exit !(c < 1.0)}'; then ok "monitor's own CPU use at 200 ms: $cpu% of one core (< 1%)"
else bad "monitor CPU use: '$(cat "$WORK/int.err")'"; fi
FAKE_NVML_INIT_ERROR=9 "$RCUDA" monitor --duration 0.2 >/dev/null 2>"$WORK/noinit.err"
rc=$?
if [ $rc -ne 0 ] && grep -q "Driver Not Loaded" "$WORK/noinit.err"; then ok "monitor without NVML exits $rc and says why"
else bad "monitor without NVML: exit $rc, '$(cat "$WORK/noinit.err")'"; fi

# ---- exporter (fake NVML) -------------------------------------------------------------------
start_exporter() {  # args: extra options; sets PORT and EXPORTER_PID
  "$RCUDA" exporter --port 0 "$@" 2>"$WORK/exp.err" &
  EXPORTER_PID=$!
  PORT=""
  for _ in $(seq 50); do
    PORT=$(sed -n 's#.*serving http://[^:]*:\([0-9]*\)/metrics#\1#p' "$WORK/exp.err")
    [ -n "$PORT" ] && break
    sleep 0.1
  done
}
if need curl exporter "curl"; then
  start_exporter --interval 200
  if [ -z "$PORT" ]; then bad "exporter did not start: $(cat "$WORK/exp.err")"; else
    if grep -q "127.0.0.1" "$WORK/exp.err"; then ok "exporter binds to loopback by default"; else bad "exporter bind address"; fi
    curl -sS -D "$WORK/prom.h" "http://127.0.0.1:$PORT/metrics" >"$WORK/prom.txt"
    if grep -qi '^content-type: text/plain; version=0.0.4' "$WORK/prom.h" &&
       grep -q '^rcuda_gpu_temperature_celsius{gpu="1",uuid="GPU-fa4e0000-0000-0000-0000-000000000001"} 56$' "$WORK/prom.txt" &&
       grep -q '^rcuda_gpu_power_watts{gpu="0",uuid="GPU-fa4e0000-0000-0000-0000-000000000000"} 123.456$' "$WORK/prom.txt" &&
       grep -q '^rcuda_gpu_memory_total_bytes{gpu="0",' "$WORK/prom.txt" &&
       grep -q '^rcuda_build_info{version=' "$WORK/prom.txt"; then
      ok "exporter /metrics: Prometheus text with the fake's values in base units"
    else bad "exporter /metrics content"; cat "$WORK/prom.h" "$WORK/prom.txt"; fi
    if need promtool "promtool check metrics" "Debian package prometheus"; then
      if promtool check metrics <"$WORK/prom.txt"; then ok "promtool check metrics: no problems"
      else bad "promtool check metrics"; fi
    fi
    curl -sS -D "$WORK/om.h" -H 'Accept: application/openmetrics-text; version=1.0.0' \
      "http://127.0.0.1:$PORT/metrics" >"$WORK/om.txt"
    if grep -qi '^content-type: application/openmetrics-text' "$WORK/om.h" &&
       $PY "$ROOT/tests/cli/check_openmetrics.py" "$WORK/om.txt"; then ok "exporter OpenMetrics on Accept, ending in # EOF"
    else bad "exporter OpenMetrics"; cat "$WORK/om.h" "$WORK/om.txt"; fi
    code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT/nope")
    if [ "$code" = 404 ]; then ok "exporter: unknown path is 404"; else bad "exporter: unknown path gave $code"; fi
    kill -INT $EXPORTER_PID
    wait $EXPORTER_PID
    rc=$?
    if [ $rc -eq 0 ]; then ok "exporter stops cleanly on SIGINT"; else bad "exporter exit $rc on SIGINT"; fi
  fi

  # A slow NVML (each reading 400 ms) must not slow a scrape: it serves the latest sample.
  FAKE_NVML_DELAY_MS=400 start_exporter --interval 200
  if [ -n "$PORT" ]; then
    sleep 0.5
    t=$(curl -s -o /dev/null -w '%{time_total}' "http://127.0.0.1:$PORT/metrics")
    if awk -v t="$t" 'BEGIN {exit !(t < 0.2)}'; then ok "scrape with a slow NVML took ${t}s (< the 0.2 s interval)"
    else bad "scrape with a slow NVML took ${t}s"; fi
    kill -INT $EXPORTER_PID; wait $EXPORTER_PID
  else bad "exporter (slow NVML) did not start"; fi

  # Without NVML the exporter still serves build information and says GPU metrics are off.
  RCUDA_NVML_LIBRARY=/nonexistent.so start_exporter
  if [ -n "$PORT" ] && curl -s "http://127.0.0.1:$PORT/metrics" | grep -q '^rcuda_nvml_available 0$'; then
    ok "exporter without NVML serves rcuda_nvml_available 0"
  else bad "exporter without NVML"; fi
  [ -n "$PORT" ] && { kill -INT $EXPORTER_PID; wait $EXPORTER_PID; }
fi
unset RCUDA_NVML_LIBRARY

# ---- serve ----------------------------------------------------------------------------------
# A temporary repository with tests/onnx_models' MLP (x: [batch, 16] -> output: [batch, 4]).
if need curl serve "curl"; then
  mkdir -p "$WORK/repo/mlp/1"
  cp "$ROOT/tests/onnx_models/mlp_torchscript.onnx" "$WORK/repo/mlp/1/model.onnx"
  echo '{"max_batch_size": 8}' >"$WORK/repo/mlp/config.json"
  help=$("$RCUDA" serve --help 2>&1)
  missing=""
  for opt in --model-repository --http-port --metrics-port --host --max-request-bytes \
             --http-threads --model-control-mode --vetiver-model --device; do
    grep -q -- "$opt" <<<"$help" || missing="$missing $opt"
  done
  if [ -z "$missing" ]; then ok "serve --help lists every option"; else bad "serve --help lacks:$missing"; fi

  "$RCUDA" serve --model-repository "$WORK/repo" --http-port 0 --metrics-port 0 --device cpu \
    2>"$WORK/serve.err" &
  SERVE_PID=$!
  SPORT=""; MPORT=""
  for _ in $(seq 100); do
    SPORT=$(sed -n 's#.*serving http://[^:]*:\([0-9]*\) .*#\1#p' "$WORK/serve.err")
    MPORT=$(sed -n 's#.*(metrics http://[^:]*:\([0-9]*\)/metrics)#\1#p' "$WORK/serve.err")
    [ -n "$SPORT" ] && break
    sleep 0.1
  done
  if [ -z "$SPORT" ]; then bad "serve did not start: $(cat "$WORK/serve.err")"; else
    if grep -q "model mlp version 1: READY" "$WORK/serve.err"; then ok "serve reports each model's load"
    else bad "serve's load report: $(cat "$WORK/serve.err")"; fi
    code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$SPORT/v2/health/ready")
    if [ "$code" = 200 ]; then ok "serve: /v2/health/ready is 200"; else bad "serve: ready gave $code"; fi
    curl -sS -X POST -H 'Content-Type: application/json' "http://127.0.0.1:$SPORT/v2/models/mlp/infer" \
      -d '{"id": "cli", "inputs": [{"name": "x", "datatype": "FP32", "shape": [2, 16],
           "data": [[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16], [0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0]]}]}' \
      >"$WORK/infer.json"
    if $PY -c '
import json, sys
r = json.load(open(sys.argv[1]))
o = r["outputs"][0]
assert r["id"] == "cli" and r["model_name"] == "mlp" and o["name"] == "output"
assert o["shape"] == [2, 4] and len(o["data"]) == 8 and o["datatype"] == "FP32"
' "$WORK/infer.json"; then ok "serve: KServe v2 infer answers [2, 4] outputs"
    else bad "serve infer: $(cat "$WORK/infer.json")"; fi
    curl -sS "http://127.0.0.1:$MPORT/metrics" >"$WORK/serve-prom.txt"
    if grep -q '^rcuda_inference_request_success_total{model="mlp",version="1"} 1$' "$WORK/serve-prom.txt"; then
      ok "serve metrics count the request"
    else bad "serve metrics"; cat "$WORK/serve-prom.txt"; fi
    if need promtool "serve metrics through promtool" "Debian package prometheus"; then
      if promtool check metrics <"$WORK/serve-prom.txt"; then ok "serve metrics: promtool check metrics passes"
      else bad "serve metrics: promtool check metrics"; fi
    fi
    kill -TERM $SERVE_PID
    wait $SERVE_PID
    rc=$?
    if [ $rc -eq 0 ] && grep -q "rcuda serve: stopped" "$WORK/serve.err"; then ok "serve drains and exits 0 on SIGTERM"
    else bad "serve exit $rc on SIGTERM: $(tail -3 "$WORK/serve.err")"; fi
  fi
fi

# ---- bench ----------------------------------------------------------------------------------
if "$RCUDA" bench --size 256 --repeat 2 >"$WORK/bench.txt" 2>&1 &&
   grep -q '^randn 256x256 ' "$WORK/bench.txt" && grep -q '^matmul 256x256 fp32 ' "$WORK/bench.txt"; then
  ok "bench --size 256 prints randn and matmul rows"
else bad "bench"; cat "$WORK/bench.txt"; fi

echo
if [ $failures -eq 0 ]; then echo "cli-check: all passed"; else echo "cli-check: $failures failed"; fi
[ $failures -eq 0 ]
