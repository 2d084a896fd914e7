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

}  // namespace wick::gpu
