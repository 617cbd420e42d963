set -u
scripts/gpu-check.sh build tests train r
P=$PWD/.devprof/x/usr/lib/x86_64-linux-gnu
PP="perl .devprof/x/usr/bin/google-pprof"
LD_LIBRARY_PATH=$P:${LD_LIBRARY_PATH:-} LD_PRELOAD=$P/libprofiler.so.0 CPUPROFILE=$OUT/train.prof CPUPROFILE_FREQUENCY=4000 build-gpu/bench/bench_train /tmp/rcuda-train --device cuda --steps 20 --profile-steps 6000 > $OUT/train_prof.txt 2>&1
tail -3 $OUT/train_prof.txt
$PP --text --cum build-gpu/bench/bench_train $OUT/train.prof 2>/dev/null | grep -E "rcuda|cublasLtMatmul@|cudaLaunchKernel|cudaMallocFromPool|cudaFreeAsync" | head -45
OMP_NUM_THREADS=1 LD_LIBRARY_PATH=$P:${LD_LIBRARY_PATH:-} LD_PRELOAD=$P/libprofiler.so.0 CPUPROFILE=$OUT/op.prof CPUPROFILE_FREQUENCY=4000 build-gpu/bench/bench_op_overhead > $OUT/op_prof.txt 2>&1
$PP --text --cum build-gpu/bench/bench_op_overhead $OUT/op.prof 2>/dev/null | head -60 > $OUT/op_cum.txt
$PP --text build-gpu/bench/bench_op_overhead $OUT/op.prof 2>/dev/null | head -40 > $OUT/op_flat.txt
