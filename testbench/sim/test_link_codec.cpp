// The software reference itself, checked against published values and its own inverses, before
// it is trusted as the oracle for the RTL.
#include "sim/link/link_codec.h"

#include <doctest/doctest.h>

#include <cstring>
#include <random>

using namespace mxtb::sim;
using mxtb::link::CtlType;

TEST_CASE("crc32 matches the published check value") {
  const char* s = "123456789";
  CHECK(crc32(reinterpret_cast<const uint8_t*>(s), std::strlen(s)) == 0xCBF43926u);
  CHECK(crc32(nullptr, 0) == 0u);
}

TEST_CASE("crc32_advance over words equals the byte-wise CRC of their little-endian bytes") {
  std::mt19937_64 rng(7);
  for (int n = 1; n <= 20; ++n) {
    std::vector<uint64_t> words(n);
    std::vector<uint8_t> bytes;
    uint32_t state = 0xFFFFFFFFu;
    for (auto& w : words) {
      w = rng();
      for (int i = 0; i < 8; ++i) bytes.push_back(static_cast<uint8_t>(w >> (8 * i)));
      state = crc32_advance(state, w);
    }
    CHECK(~state == crc32(bytes.data(), bytes.size()));
  }
}

TEST_CASE("descrambler inverts the scrambler and resynchronizes from any state") {
  std::mt19937_64 rng(11);
  Scrambler58 scr;
  Descrambler58 good(scr.state());
  Descrambler58 wrong(0x123456789ABCDull);  // starts out of step
  int wrong_mismatches_after_first = 0;
  for (int i = 0; i < 200; ++i) {
    uint64_t plain = rng();
    uint64_t line = scr.scramble(plain);
    CHECK(good.descramble(line) == plain);
    if (wrong.descramble(line) != plain && i > 0) ++wrong_mismatches_after_first;
  }
  CHECK(wrong_mismatches_after_first == 0);  // 58 bits of history: one 64-bit word is enough
}

TEST_CASE("scrambling whitens a constant stream") {
  Scrambler58 scr;
  uint64_t prev = scr.scramble(0);
  int changes = 0;
  for (int i = 0; i < 100; ++i) {
    uint64_t w = scr.scramble(0);
    changes += w != prev;
    prev = w;
  }
  CHECK(changes > 95);
}

TEST_CASE("control blocks round-trip and every single-bit error is caught") {
  uint64_t ctl = make_ctl(CtlType::Ack, 0x00080003u);
  auto parsed = parse_ctl(ctl);
  REQUIRE(parsed);
  CHECK(parsed->type == CtlType::Ack);
  CHECK(parsed->fields == 0x00080003u);
  for (int bit = 0; bit < 64; ++bit) {
    INFO("bit " << bit);
    CHECK_FALSE(parse_ctl(ctl ^ (uint64_t{1} << bit)));
  }
  CHECK_FALSE(parse_ctl(make_ctl(CtlType::Ack, 0) & ~uint64_t{0xFF}));  // type 0 is not a type
}

TEST_CASE("encode_frame lays out SOF, data and an EOF holding the frame CRC") {
  std::vector<uint64_t> words{1, 2, 3};
  const EndpointIdentity sender{3, 1};
  auto blocks = encode_frame(5, words, true, sender);
  REQUIRE(blocks.size() == 5);
  CHECK_FALSE(parse_ctl(blocks[0].payload));  // bound to its sender
  auto sof = parse_ctl(blocks[0].payload, sender);
  REQUIRE(sof);
  CHECK(sof->type == CtlType::Sof);
  CHECK((sof->fields & 0xFFFF) == 5);
  CHECK(((sof->fields >> 16) & 0xFF) == 3);
  CHECK(((sof->fields >> 24) & 1) == 1);
  CHECK(blocks[1].sync == mxtb::link::kSyncData);
  CHECK(blocks[3].payload == 3);
  auto eof = parse_ctl(blocks[4].payload, sender);
  REQUIRE(eof);
  CHECK(eof->type == CtlType::Eof);
  uint64_t sof_word = (uint64_t{3} << 48) | (uint64_t{1} << 40) | (blocks[0].payload & ((uint64_t{1} << 40) - 1));
  uint32_t crc = crc32_advance(0xFFFFFFFFu, sof_word);
  for (uint64_t w : words) crc = crc32_advance(crc, w);
  CHECK(eof->fields == ~crc);
}

TEST_CASE("Raw66 keeps the sync header in the first two bits on the lane") {
  Raw66 r = Raw66::block(2, 0xC000000000000001ull);
  CHECK(r.sync() == 2);
  CHECK(r.payload() == 0xC000000000000001ull);
  CHECK(r.hi == 3);
}

TEST_CASE("acknowledgement-type blocks are bound to their sender; training blocks are not") {
  EndpointIdentity a{1, 0}, b{2, 0};
  CHECK(parse_ctl(make_ctl(CtlType::Ack, 77, a), a));
  CHECK_FALSE(parse_ctl(make_ctl(CtlType::Ack, 77, a), b));
  CHECK_FALSE(parse_ctl(make_ctl(CtlType::Heartbeat, 77, a), b));
  CHECK_FALSE(parse_ctl(make_ctl(CtlType::CreditInit, 77, a), b));
  CHECK(parse_ctl(make_ctl(CtlType::Ts1, 2, a), b));  // anyone may read a training set
  CHECK(parse_ctl(make_ctl(CtlType::Idle, 0), b));
}
