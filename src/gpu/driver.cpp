#include "gpu/driver.h"

#include "wick/error.h"

namespace wick::gpu {

// Drivers without capture: the runtime asks can_capture() first, so these only fail on a bug.
void Driver::begin_capture() {
  fail(ErrorKind::Unsupported, "capture", caps().name, " cannot record work for replay");
}

std::unique_ptr<Recording> Driver::end_capture() {
  fail(ErrorKind::Unsupported, "capture", caps().name, " cannot record work for replay");
}

void Driver::replay(const Recording&, uint64_t) {
  fail(ErrorKind::Unsupported, "replay", caps().name, " cannot replay recorded work");
}

Allocation Driver::adopt(uint64_t, size_t) {
  fail(ErrorKind::Device, "from_blob", caps().name,
       ": this API's memory has no address other code can use, so wick cannot use other code's "
       "memory in place: copy it to the cpu and use to_device");
}

}  // namespace wick::gpu
