set -u
source .devdeps-lean/device-env.sh
cmake -S . -B build-gpu -G Ninja -DRCUDA_WITH_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 -DRCUDA_BUILD_TESTS=OFF -DRCUDA_BUILD_BENCH=OFF > $OUT/configure.log 2>&1 && cmake --build build-gpu -j 16 > $OUT/build.log 2>&1 || { tail -30 $OUT/build.log; exit 1; }
make r-install BUILD=build-gpu > $OUT/rinstall.log 2>&1 || { tail -30 $OUT/rinstall.log build-gpu/r-install.log; exit 1; }
export RCUDA_FASHION_MNIST=$PWD/.devdata/fashion-mnist RCUDA_OUT=$OUT/demo
build-gpu/apps/cli/rcuda doctor > $OUT/doctor.txt 2>&1; tail -3 $OUT/doctor.txt
R_LIBS=build-gpu/r-lib Rscript examples/train_fashion_mnist.R 2>&1 | tee $OUT/demo.txt | tail -40
