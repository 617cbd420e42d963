// Which backends exist. Each backend registers a factory from its own translation unit; the
// instance is made on first use, so a CUDA build runs on machines without a driver until a CUDA
// tensor is asked for.
#include "backend/once.h"
#include "rcuda/backend/backend.h"
#include "rcuda/core/error.h"

namespace rcuda {
namespace {

struct Entry {
  Backend* (*factory)() = nullptr;
  backend::OnceValue<Backend*> instance;  // Note [Made once, read often]
};

Entry* entries() {
  static Entry table[kNumDeviceTypes];
  return table;
}

}  // namespace

void register_backend(DeviceType type, Backend* (*factory)()) {
  entries()[static_cast<int>(type)].factory = factory;
}

bool backend_available(DeviceType type) {
  return entries()[static_cast<int>(type)].factory != nullptr;
}

Backend& backend_for(Device device) {
  Entry& e = entries()[static_cast<int>(device.type)];
  if (Backend* made = e.instance.peek()) return *made;
  RCUDA_CHECK(e.factory != nullptr, DeviceError, device.str(),
              " requested but rcuda was built without support for it");
  return *e.instance.get(e.factory);
}

}  // namespace rcuda
