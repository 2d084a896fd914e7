#include <gtest/gtest.h>

#include "backend/backend.h"

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  // Unwritten output elements must show up as NaN / huge values, never as plausible zeros.
  wick::backend::set_poison_allocations(true);
  return RUN_ALL_TESTS();
}
