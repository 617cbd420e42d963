set -u
scripts/gpu-check.sh build tests r train_r
source .devdeps/device-env.sh
build-gpu/bench/bench_conv > $OUT/bench_conv.txt 2>&1; echo "bench_conv exit $?"
PYTHONUNBUFFERED=1 python3 bench/torch_conv.py > $OUT/torch_conv.txt 2>&1; echo "torch_conv exit $?"
python3 bench/compare.py $OUT/bench_conv.txt $OUT/torch_conv.txt 2>&1 | tail -30
grep -E "FAIL|Error" $OUT/r-check.log | head -20
build-gpu/apps/cli/rcuda doctor 2>&1 | grep -iE "cudnn|fail|warn" | head
