#include "sim/link/lane_channel.h"

#include <doctest/doctest.h>

#include <stdexcept>

using namespace mxtb::sim;

namespace {
Raw66 word(uint64_t i) { return Raw66::block(1, i * 0x0101010101010101ull + 7); }
}  // namespace

TEST_CASE("a clean channel delays by its latency and reports light") {
  LaneChannelConfig cfg;
  cfg.latency_cycles = 3;
  LaneChannel ch(cfg);
  for (uint64_t t = 0; t < 20; ++t) {
    auto out = ch.step(word(t), true);
    if (t < 3) {
      CHECK_FALSE(out.signal_detect);
    } else {
      CHECK(out.signal_detect);
      CHECK(out.raw == word(t - 3));
    }
  }
}

TEST_CASE("a laser that is off and a dark window both read as no signal") {
  LaneChannel ch(LaneChannelConfig{});
  for (int t = 0; t < 10; ++t) ch.step(word(t), false);
  CHECK_FALSE(ch.step(word(0), true).signal_detect);
  for (int t = 0; t < 10; ++t) ch.step(word(t), true);
  CHECK(ch.step(word(0), true).signal_detect);
  ch.set_dark(true);
  CHECK_FALSE(ch.step(word(0), true).signal_detect);
  CHECK(ch.stats().dark_cycles == 1);
}

TEST_CASE("bit offset shifts the stream across word boundaries without losing bits") {
  LaneChannelConfig cfg;
  cfg.latency_cycles = 1;
  cfg.bit_offset = 5;
  LaneChannel ch(cfg);
  ch.step(word(0), true);
  Raw66 a = ch.step(word(1), true).raw;  // word 0 shifted up by 5, nothing before it
  Raw66 b = ch.step(word(2), true).raw;  // word 1 shifted, top 5 bits of word 0 below
  CHECK((a.lo & 0x1F) == 0);
  CHECK((a.lo >> 5) == (word(0).lo & ((1ull << 59) - 1)));
  uint64_t top5_of_w0 = (word(0).lo >> 61) | (uint64_t{word(0).hi} << 3);
  CHECK((b.lo & 0x1F) == top5_of_w0);
}

TEST_CASE("bit error rate is about what was asked for and reproducible from the seed") {
  LaneChannelConfig cfg;
  cfg.ber = 1e-3;
  cfg.seed = 42;
  LaneChannel a(cfg), b(cfg);
  uint64_t diffs = 0;
  const int n = 20000;
  for (int t = 0; t < n; ++t) {
    Raw66 in = word(t);
    auto oa = a.step(in, true);
    auto ob = b.step(in, true);
    CHECK(oa.raw == ob.raw);
    (void)oa;
  }
  diffs = a.stats().bits_flipped;
  double expect = 1e-3 * 66 * n;
  CHECK(diffs > expect * 0.9);
  CHECK(diffs < expect * 1.1);
}

TEST_CASE("bad channel parameters are rejected with the parameter named") {
  LaneChannelConfig cfg;
  cfg.latency_cycles = 0;
  CHECK_THROWS_WITH_AS(LaneChannel{cfg}, doctest::Contains("latency_cycles"), std::invalid_argument);
  cfg = {};
  cfg.bit_offset = 66;
  CHECK_THROWS_WITH_AS(LaneChannel{cfg}, doctest::Contains("bit_offset"), std::invalid_argument);
  cfg = {};
  cfg.ber = 1.5;
  CHECK_THROWS_WITH_AS(LaneChannel{cfg}, doctest::Contains("ber"), std::invalid_argument);
}
