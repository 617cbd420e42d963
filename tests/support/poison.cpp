// Every test binary poisons new allocations (Note [Poisoned allocations]) so that an output
// element a kernel forgets to write fails the comparison instead of passing as zero. This runs
// before main(), before the first allocation reads the variable.
#include <cstdlib>

namespace {
const int poison_set = setenv("RCUDA_POISON_ALLOCATIONS", "1", /*overwrite=*/0);
}  // namespace
