// descrambler58 (rtl/common) through the scrambler pair: a corrupted word on the line.
#include "scrambler_pair_bench.h"

#include "rtl/cov/coverage_dump.h"
#include "sim/link/link_codec.h"
#include "verilated.h"

#include <doctest/doctest.h>

#include <random>

using namespace mxtb::sim;

TEST_CASE("descrambler58 resynchronizes one word after a corrupted word") {
  VerilatedContext ctx;
  Vscrambler_pair_tb m(&ctx);
  mxtb::rtl::CoverageDump cov{ctx, "rtl_units"};
  m.en_i = 1;
  m.rst_ni = 1;
  m.eval();
  m.rst_ni = 0;
  m.eval();
  m.rst_ni = 1;
  std::mt19937_64 rng(5);
  int bad_after = 0;
  for (int i = 0; i < 400; ++i) {
    uint64_t plain = rng();
    m.data_i = plain;
    m.eval();
    m.line_i = m.scrambled_o ^ (i == 200 ? 0x8000000000000001ull : 0);
    m.eval();
    bool ok = m.descrambled_o == plain;
    if (i == 200 || i == 201) {
      CHECK_FALSE(ok);  // the error shows where it hit and 39/58 bits later
    } else if (i > 201) {
      bad_after += !ok;
    }
    tick(m);
  }
  CHECK(bad_after == 0);
}
