// Caps the CPU's ISA (cpu::set_isa_cap) for one scope, so a test can run the baseline and every
// wider build this CPU has in one process.
#pragma once

#include "cpu/isa.h"

namespace wick::testing {

class IsaCap {
 public:
  explicit IsaCap(cpu::Isa isa) { cpu::set_isa_cap(isa); }
  ~IsaCap() { cpu::set_isa_cap(cpu::Isa::Avx512); }
  IsaCap(const IsaCap&) = delete;
  IsaCap& operator=(const IsaCap&) = delete;
};

}  // namespace wick::testing
