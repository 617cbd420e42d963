set -u
scripts/gpu-check.sh build || exit 1
source .devdeps-lean/device-env.sh
python3 bench/torch_train_mlp.py /tmp/t --device cuda --steps 20 > $OUT/torch.txt 2>&1 || tail $OUT/torch.txt
P=$PWD/.devprof/x/usr/lib/x86_64-linux-gnu
for dev in cuda; do
LD_LIBRARY_PATH=$P:$LD_LIBRARY_PATH LD_PRELOAD=$P/libprofiler.so.0 CPUPROFILE=$OUT/train_$dev.prof CPUPROFILE_FREQUENCY=4000 build-gpu/bench/bench_train /tmp/t --device $dev --steps 20 --profile-steps 6000 > $OUT/train_$dev.txt 2>&1
cat $OUT/train_$dev.txt
perl .devprof/x/usr/bin/google-pprof --text build-gpu/bench/bench_train $OUT/train_$dev.prof > $OUT/pprof_$dev.txt 2>$OUT/pprof_err.txt
perl .devprof/x/usr/bin/google-pprof --text --cum build-gpu/bench/bench_train $OUT/train_$dev.prof > $OUT/pprof_cum_$dev.txt 2>>$OUT/pprof_err.txt
head -45 $OUT/pprof_$dev.txt
done
tail -3 $OUT/pprof_err.txt
