// crc32_d64 (rtl/common) against the software CRC in sim/link_codec: the CRC-32 masks for one
// 64-bit word.
#include "Vcrc32_d64.h"
#include "rtl/cov/coverage_dump.h"
#include "sim/link/link_codec.h"
#include "verilated.h"

#include <doctest/doctest.h>

#include <random>

using namespace mxtb::sim;

TEST_CASE("crc32_d64 equals the software CRC for random states and words") {
  VerilatedContext ctx;
  Vcrc32_d64 m(&ctx);
  mxtb::rtl::CoverageDump cov{ctx, "rtl_units"};
  std::mt19937_64 rng(1);
  for (int i = 0; i < 20000; ++i) {
    uint32_t state = static_cast<uint32_t>(rng());
    uint64_t word = rng();
    if (i < 64) word = uint64_t{1} << i;  // every data bit alone
    m.crc_i = state;
    m.data_i = word;
    m.eval();
    REQUIRE(m.crc_o == crc32_advance(state, word));
  }
}
