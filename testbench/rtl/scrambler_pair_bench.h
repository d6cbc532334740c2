// The scrambler pair (testbench/rtl/scrambler_pair_tb.sv: scrambler58 into descrambler58), shared
// by test_scrambler58.cpp and test_descrambler58.cpp: one clock edge. Moved here unchanged from
// test_units.cpp.
#pragma once

#include "Vscrambler_pair_tb.h"

namespace {
void tick(Vscrambler_pair_tb& m) {
  m.clk_i = 1;
  m.eval();
  m.clk_i = 0;
  m.eval();
}
}  // namespace
