set -u
scripts/gpu-check.sh build || exit 1
source .devdeps/device-env.sh
export RCUDA_GOLDEN_DIR=/tmp/rcuda-golden
python3 tests/golden/make_golden_grads.py $RCUDA_GOLDEN_DIR > $OUT/golden.log 2>&1
build-gpu/tests/rcuda_tests --gtest_filter='Cuda*:Golden*:*Training*:*Cross*:Nn*' > $OUT/tests.log 2>&1
echo "tests exit $?: $(grep -E '^\[  PASSED' $OUT/tests.log) $(grep -cE '^\[  FAILED  \] [A-Za-z]' $OUT/tests.log) failed"
grep -E "^\[  FAILED|^\[  SKIPPED" $OUT/tests.log | head
scripts/gpu-check.sh train r train_r 2>&1 | grep -vE "^(rcuda|torch|loss)_.*(first|last|float64)" 
grep -E "FAIL|Error|error" $OUT/r-check.log | head -30
