// link_block_lock (rtl/link) through a lane channel (sim/lane_channel) at every bit offset: the
// lock, what it holds through and what drops it, the search after an unlock.
#include "Vlink_block_lock.h"
#include "rtl/cov/coverage_dump.h"
#include "sim/link/lane_channel.h"
#include "sim/link/link_codec.h"
#include "verilated.h"

#include <doctest/doctest.h>

#include <bitset>
#include <set>
#include <vector>

using namespace mxtb::sim;

namespace {
// Drives link_block_lock through a lane channel with a bit offset. With channel latency 1 and
// the block lock's one word of history, the block presented at cycle t is the one sent at t-2.
struct LockBench {
  VerilatedContext ctx;
  Vlink_block_lock m{&ctx};
  mxtb::rtl::CoverageDump cov{ctx, "rtl_units"};
  LaneChannel ch;
  Scrambler58 scr;
  std::vector<Raw66> sent;
  explicit LockBench(uint32_t offset) : ch(LaneChannelConfig{1, offset, 0.0, 0.0, 1}) {
    m.rst_ni = 1;
    m.clk_i = 0;
    m.eval();
    m.rst_ni = 0;
    m.eval();
    m.rst_ni = 1;
    m.eval();
  }
  // Sends one block; returns whether the lock presented the right block, aligned, this cycle.
  bool step(bool break_header = false) {
    Raw66 b = Raw66::block(1, scr.scramble(0x1234));
    if (break_header) b.lo |= 3;  // 2'b11: an invalid sync header
    sent.push_back(b);
    auto out = ch.step(b, true);
    m.sd_i = out.signal_detect;
    m.raw_i[0] = static_cast<uint32_t>(out.raw.lo);
    m.raw_i[1] = static_cast<uint32_t>(out.raw.lo >> 32);
    m.raw_i[2] = out.raw.hi;
    m.eval();
    Raw66 got{uint64_t{m.block_o[0]} | (uint64_t{m.block_o[1]} << 32), static_cast<uint8_t>(m.block_o[2] & 3)};
    bool aligned = m.lock_o && sent.size() >= 3 && got == sent[sent.size() - 3];
    bad_hdr = m.bad_hdr_o;
    slip = find_slip(prev_raw, out.raw, got);
    prev_raw = out.raw;
    m.clk_i = 1;
    m.eval();
    m.clk_i = 0;
    m.eval();
    return aligned;
  }
  // The offset (0..65) in the 132-bit window {this word, the last one} the block was taken at, or
  // -1 when there is none: which bit the search stands on.
  static int find_slip(const Raw66& older, const Raw66& newer, const Raw66& block) {
    std::bitset<132> w;
    for (int i = 0; i < 66; ++i) {
      w[static_cast<size_t>(i)] = i < 64 ? (older.lo >> i) & 1 : (older.hi >> (i - 64)) & 1;
      w[static_cast<size_t>(66 + i)] = i < 64 ? (newer.lo >> i) & 1 : (newer.hi >> (i - 64)) & 1;
    }
    int found = -1;
    for (int k = 0; k < 66; ++k) {
      bool same = true;
      for (int i = 0; i < 66 && same; ++i)
        same = w[static_cast<size_t>(k + i)] == (i < 64 ? ((block.lo >> i) & 1) : ((block.hi >> (i - 64)) & 1));
      if (same) {
        if (found >= 0) return -2;  // ambiguous: the test's data must rule this out
        found = k;
      }
    }
    return found;
  }
  Raw66 prev_raw;
  int slip = -1;  // where the block presented in the last step was taken
  bool bad_hdr = false;  // bad_hdr_o for that block
};
}  // namespace

TEST_CASE("block lock finds the boundary at every bit offset") {
  for (uint32_t offset = 0; offset < 66; ++offset) {
    INFO("offset " << offset);
    LockBench b(offset);
    int cycles = 0;
    while (!b.m.lock_o && cycles < 66 * 40) {
      b.step();
      ++cycles;
    }
    REQUIRE(b.m.lock_o);
    for (int i = 0; i < 50; ++i) CHECK(b.step());
  }
}

TEST_CASE("block lock holds through scattered bad headers and drops on a burst") {
  LockBench b(13);
  for (int i = 0; i < 66 * 40 && !b.m.lock_o; ++i) b.step();
  REQUIRE(b.m.lock_o);
  // bad_hdr_o: locked and the block presented has an invalid header (the lock sees each block
  // two cycles after it is sent)
  for (int i = 0; i < 8; ++i) {
    b.step(i == 3);
    CHECK(b.bad_hdr == (i == 5));
  }
  for (int i = 0; i < 640; ++i) b.step(i % 16 == 0);  // 4 per 64: under UNLOCK_BAD = 8
  CHECK(b.m.lock_o);
  // Eight bad headers in a row; the lock sees each two cycles after it is sent.
  for (int i = 0; i < 10 && b.m.lock_o; ++i) b.step(i < 8);
  CHECK_FALSE(b.m.lock_o);
}

// Clause 49 order: losing lock moves the search one bit on, as an invalid header does while
// searching (offset 65 wraps to 0); it does not restart from offset 0.
TEST_CASE("block lock: after losing lock the search goes on from the next bit offset") {
  std::set<int> locked_at;
  for (uint32_t offset = 0; offset < 66; ++offset) {
    INFO("offset " << offset);
    LockBench b(offset);
    for (int i = 0; i < 66 * 40 && !b.m.lock_o; ++i) b.step();
    REQUIRE(b.m.lock_o);
    b.step();
    const int s = b.slip;
    REQUIRE(s >= 0);
    locked_at.insert(s);
    for (int i = 0; i < 20 && b.m.lock_o; ++i) b.step(true);
    REQUIRE_FALSE(b.m.lock_o);
    b.step(true);  // presents the block at the offset the unlock chose
    CHECK(b.slip == (s + 1) % 66);
  }
  CHECK(locked_at.size() == 66);  // every offset, 64 and 65 among them
}

TEST_CASE("block lock drops at once on loss of signal") {
  LockBench b(0);
  for (int i = 0; i < 66 * 40 && !b.m.lock_o; ++i) b.step();
  REQUIRE(b.m.lock_o);
  b.m.sd_i = 0;
  b.m.eval();
  b.m.clk_i = 1;
  b.m.eval();
  CHECK_FALSE(b.m.lock_o);
}

// docs/link-layer.md: UNLOCK_BAD (8 here) invalid headers within a 64-block window lose lock; the
// windows run back to back from the cycle lock was gained. Both ways: 7 at the end of one window
// and 7 at the start of the next, 14 in a row, keep lock; 8 within one window lose it, at the
// 8th; and a lock gained again after that starts a fresh window with a fresh count (3 early in
// it, 4 at its end and 4 at the start of the next keep the new lock).
TEST_CASE("block lock: UNLOCK_BAD invalid headers within one window unlock, spread over two windows they do not; a new lock starts afresh") {
  LockBench b(29);
  for (int i = 0; i < 66 * 40 && !b.m.lock_o; ++i) b.step();
  REQUIRE(b.m.lock_o);
  // Locked cycle c is step c after lock (cycle 0 the first step after it); the lock sees in it the
  // block sent two steps before, so step s sends the block seen in cycle s + 2. (The 14 in a row
  // below keep lock only with the window edge exactly at cycle 64: one cycle either way puts 8 in
  // one window.)
  auto seen_bad = [](int cycle, std::initializer_list<std::pair<int, int>> spans) {
    for (auto [from, to] : spans)
      if (cycle >= from && cycle <= to) return true;
    return false;
  };
  int s = 0;
  for (; s < 140; ++s) {
    b.step(seen_bad(s + 2, {{57, 63}, {64, 70}}));
    REQUIRE(b.m.lock_o);  // 7 in window 0, 7 in window 1
  }
  for (; s < 260 && b.m.lock_o; ++s) b.step(seen_bad(s + 2, {{200, 207}}));  // 8 in window 3
  CHECK_FALSE(b.m.lock_o);
  CHECK(s == 208);  // lost at the edge of step 207, where the lock saw the 8th (the loop counts it)
  for (int i = 0; i < 66 * 40 && !b.m.lock_o; ++i) b.step();
  REQUIRE(b.m.lock_o);
  for (s = 0; s < 140; ++s) {
    b.step(seen_bad(s + 2, {{2, 4}, {60, 63}, {64, 67}}));
    REQUIRE(b.m.lock_o);  // 7 in the new window 0, 4 in window 1
  }
}
