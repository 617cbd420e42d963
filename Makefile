# The two commands a newcomer needs: `make demo` and `make test`. Everything else is here too.
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=
RCUDA_WITH_CUDA ?= AUTO
# ccache hits across checkouts in different folders (CI builds a fresh clone elsewhere).
export CCACHE_BASEDIR := $(CURDIR)

.PHONY: all deps configure build engine demo r-install layers test bench format lint clean

all: build

deps:
	@scripts/install-deps.sh

$(BUILD)/build.ninja: | deps
	cmake -S . -B $(BUILD) -G Ninja -DRCUDA_WITH_CUDA=$(RCUDA_WITH_CUDA) $(CMAKE_FLAGS)

configure: $(BUILD)/build.ninja

build: configure
	cmake --build $(BUILD) -j $(JOBS)

# What the demo and the R package need: the library and the command-line tool, not the tests
# and benchmarks (half of a fresh build's compile time).
engine: configure
	cmake --build $(BUILD) -j $(JOBS) --target rcuda rcuda_cli

# The main job: the environment's diagnosis, then a CNN trained on Fashion-MNIST from R on the
# best device (examples/train_fashion_mnist.R; its PNG and model go to fashion-mnist-output/).
demo: engine r-install
	$(BUILD)/apps/cli/rcuda doctor || true
	R_LIBS=$(BUILD)/r-lib Rscript examples/train_fashion_mnist.R

# R's own compiles behind ccache too (scripts/ccache.Makevars), unless the user set a Makevars.
R_CCACHE = $(if $(and $(shell command -v ccache),$(if $(R_MAKEVARS_USER),,1)),R_MAKEVARS_USER=$(CURDIR)/scripts/ccache.Makevars)

# The R package, installed into $(BUILD)/r-lib against this build of the engine.
r-install: engine
	@mkdir -p $(BUILD)/r-lib
	rm -f r/src/*.o r/src/*.so  # compiled against older headers, which R's make does not track
	RCUDA_HOME=$(CURDIR) RCUDA_BUILD=$(abspath $(BUILD)) $(R_CCACHE) R CMD INSTALL --no-multiarch -l $(BUILD)/r-lib r >$(BUILD)/r-install.log 2>&1 || (cat $(BUILD)/r-install.log; exit 1)

# Every include follows its folder's "May include:" line (docs/ARCHITECTURE.md); runs before the
# build, in a second.
layers:
	@scripts/check-layers.sh

# The process groups' tests run under Open MPI's mpirun, which refuses root unless told (containers
# and CI run as root).
MPIRUN = $(if $(filter 0,$(shell id -u)),OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 )mpirun --oversubscribe

# The engine first; then the tarball check of the R package runs beside the rest of the build and
# the C++ tests (Note [The R check beside the C++ build] in scripts/run-tests.sh).
test: layers engine
	BUILD=$(BUILD) JOBS=$(JOBS) MPIRUN="$(MPIRUN)" scripts/run-tests.sh

bench: build
	$(BUILD)/bench/bench_cpu

format:
	git ls-files '*.cpp' '*.h' '*.cu' '*.cuh' | xargs clang-format -i

lint: configure
	git ls-files 'src/*.cpp' | xargs clang-tidy -p $(BUILD) --quiet

clean:
	rm -rf $(BUILD)
