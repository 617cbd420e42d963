#include "rcuda/core/error.h"
#include "rcuda/memory/allocator.h"

namespace rcuda {
namespace {

Allocator& cpu_lookup(int /*device_index*/) { return cpu_allocator(); }

using Lookup = Allocator& (*)(int);
Lookup* lookups() {
  static Lookup table[kNumDeviceTypes] = {&cpu_lookup, nullptr};
  return table;
}

}  // namespace

void register_allocator(DeviceType type, Allocator& (*lookup)(int)) {
  lookups()[static_cast<int>(type)] = lookup;
}

Allocator& allocator_for(Device device) {
  Lookup lookup = lookups()[static_cast<int>(device.type)];
  RCUDA_CHECK(lookup != nullptr, DeviceError, "allocator: no allocator for device ", device.str(),
              " (rcuda was built without support for it)");
  return lookup(device.index);
}

}  // namespace rcuda
