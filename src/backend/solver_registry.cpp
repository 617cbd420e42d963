// Which solvers exist (rcuda/backend/solver.h): each registers a factory from its own
// translation unit; the instance is made on first use, as the backends' are (registry.cpp).
#include "backend/once.h"
#include "rcuda/backend/solver.h"
#include "rcuda/core/error.h"

namespace rcuda {
namespace {

struct SolverEntry {
  Solver* (*factory)() = nullptr;
  backend::OnceValue<Solver*> instance;  // Note [Made once, read often]
};

SolverEntry* solver_entries() {
  static SolverEntry table[kNumDeviceTypes];
  return table;
}

}  // namespace

void Solver::eig(Tensor& a, Tensor&, Tensor&, bool, Tensor&) {
  throw DeviceError("linalg.eig: the " + a.device().str() +
                    " solver has no general eigensolver (the op runs it on the CPU)");
}

void register_solver(DeviceType type, Solver* (*factory)()) {
  solver_entries()[static_cast<int>(type)].factory = factory;
}

Solver& solver_for(Device device) {
  SolverEntry& e = solver_entries()[static_cast<int>(device.type)];
  if (Solver* made = e.instance.peek()) return *made;
  RCUDA_CHECK(e.factory != nullptr, DeviceError, "linalg: ", device.str(),
              " has no solver: rcuda was built without support for it");
  return *e.instance.get(e.factory);
}

}  // namespace rcuda
