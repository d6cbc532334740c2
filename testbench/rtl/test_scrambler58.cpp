// scrambler58 (rtl/common) against the bit-serial reference in sim/link_codec, through the
// scrambler pair, whose descrambler must undo it.
#include "scrambler_pair_bench.h"

#include "rtl/cov/coverage_dump.h"
#include "sim/link/link_codec.h"
#include "verilated.h"

#include <doctest/doctest.h>

#include <random>

using namespace mxtb::sim;

TEST_CASE("scrambler58 matches the bit-serial reference and the descrambler undoes it") {
  VerilatedContext ctx;
  Vscrambler_pair_tb m(&ctx);
  mxtb::rtl::CoverageDump cov{ctx, "rtl_units"};
  m.en_i = 1;
  m.clk_i = 0;
  m.rst_ni = 1;
  m.eval();
  m.rst_ni = 0;  // an asynchronous reset needs its falling edge
  m.eval();
  m.rst_ni = 1;
  m.eval();
  Scrambler58 ref;
  std::mt19937_64 rng(3);
  for (int i = 0; i < 5000; ++i) {
    uint64_t plain = (i % 7 == 0) ? 0 : rng();
    m.data_i = plain;
    m.eval();
    uint64_t line = m.scrambled_o;
    REQUIRE(line == ref.scramble(plain));
    m.line_i = line;
    m.eval();
    if (i > 0) REQUIRE(m.descrambled_o == plain);  // the descrambler starts from zeros: one word to sync
    tick(m);
  }
}
