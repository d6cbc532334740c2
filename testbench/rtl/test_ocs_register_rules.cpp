// Every register rule of docs/ocs-controller.md ("Register map", the state machine, the event log,
// interrupts, watchdog and safe state) and docs/generated/ocs-regs.md that test_ocs_controller.cpp
// and the RTL's assertions did not yet check, or checked in one direction only: each test says
// which rule it pins, and checks it both ways where that applies (it happens when the rule holds,
// and not when it does not). The traceability table is the last section of docs/ocs-controller.md
// ("Every register rule and what checks it").
//
// Same bench as test_ocs_controller.cpp (ocs_bench.h) on Vocs_ctl_small: 8 ports, 20 elements,
// 4 links, 8 log entries, DAC update slot 4, settle 50, photodiode timeout 32, 256 scratch words.
//
// A few rules need states that no directed run reaches in reasonable time (a cycle counter past
// 2^32, a saturated EVENT_DROPPED, more than 255 element writes with 20 elements): those tests set
// the one register concerned through the verilated model's root (rootp, Verilator 5 names) and
// then let the RTL run; they are marked "(poked)".
#include "ocs_bench.h"

#include "Vocs_ctl_small___024root.h"

#include <cstdint>
#include <sstream>
#include <string>

namespace {

// Words of each window that exist at the shrunk model's parameters (past them: SLVERR).
uint32_t words_in_model(const mxtb::ocs::RegInfo& r) {
  if (r.offset == reg::link_status::kOffset) return 4;                                   // N_LINKS
  if (r.offset == reg::staged_map::kOffset || r.offset == reg::active_map::kOffset) return kPorts;
  if (r.offset == reg::staged_dac::kOffset || r.offset == reg::active_dac::kOffset) return kElems;
  if (r.offset == reg::scratch::kOffset) return 256;                                     // SCRATCH_WORDS
  return r.count;
}

// What each register reads right after reset on Vocs_ctl_small: the generated resets, except the
// parameters the shrunk model overrides (PARAMS, SIZES, and the resets rtl/models.cmake sets).
uint32_t small_reset(const mxtb::ocs::RegInfo& r) {
  if (r.offset == reg::params::kOffset) return (12u << 16) | (4u << 8) | 8u;
  if (r.offset == reg::sizes::kOffset) return (static_cast<uint32_t>(kDepth) << 16) | kElems;
  if (r.offset == reg::dac_update_cycles::kOffset) return kUpdate;
  if (r.offset == reg::settle_cycles::kOffset) return kSettle;
  if (r.offset == reg::pd_timeout::kOffset) return 32;
  return r.reset;
}

// Every register and every window word within the parameters reads its reset value (SCRATCH is
// not reset; TIME_LO counts). Returns the mismatches.
std::vector<std::string> reset_mismatches(Small& b) {
  std::vector<std::string> bad;
  for (const auto& r : mxtb::ocs::kRegisters) {
    if (r.offset == reg::scratch::kOffset || r.offset == reg::time_lo::kOffset) continue;
    for (uint32_t i = 0; i < words_in_model(r); ++i) {
      uint32_t got = b.rd(r.offset + 4 * i);
      if (got != small_reset(r)) {
        std::ostringstream s;
        s << r.name << "[" << i << "] = 0x" << std::hex << got << ", reset 0x" << small_reset(r);
        bad.push_back(s.str());
      }
    }
  }
  return bad;
}

void mid_run_reset(Small& b) {
  REQUIRE(b.pd_pending.empty());
  b.m.rst_ni = 0;
  b.m.eval();
  b.tick();
  b.m.rst_ni = 1;
  b.m.eval();
}

uint32_t status_word(State s, bool busy, bool safe, Error e, uint32_t gen) {
  return static_cast<uint32_t>(s) | (busy ? reg::status::kBusyMask : 0u) | (safe ? reg::status::kSafeMask : 0u) |
         (static_cast<uint32_t>(e) << reg::status::kLastErrShift) | (gen << reg::status::kActiveGenShift);
}

uint32_t irq_sticky(Small& b) { return b.rd(reg::irq_status::kOffset) & 0x1F; }

// Elements 0..19 staged to `code`, then committed as `gen` (a pass): every staged code known.
void commit_all_codes(Small& b, int code, uint32_t gen) {
  for (int e = 0; e < kElems; ++e) b.stage_dac(e, code);
  b.commit(gen);
  REQUIRE(b.last_err() == Error::None);
  REQUIRE(b.active_gen() == gen);
}

// Drives the log to overflow with link 1 toggling: `changes` link events, 3 cycles apart.
void link_toggles(Small& b, int changes) {
  for (int i = 0; i < changes; ++i) {
    b.links[1] = (i % 2) ? 1 : 2;
    b.run(3);
  }
}

auto& root(Small& b) { return *b.m.rootp; }

}  // namespace

// Rule: every field's reset value (generated resets; the shrunk model's parameter overrides);
// STAGED_DAC/ACTIVE_DAC reset to SAFE_CODE_RESET; an asynchronous reset in mid-run brings every
// register back to it (the other direction: they all held other values before), except SCRATCH,
// which is "not reset" and keeps its contents; TIME_HI (latched 1 before) reads 0 again.
TEST_CASE("ocs rules: every register's reset value; a reset in mid-run restores them all, SCRATCH excepted") {
  Small b;
  CHECK(reset_mismatches(b).empty());
  CHECK_FALSE(b.m.irq_o);
  CHECK_FALSE(b.m.safe_o);

  // Move every register away from its reset value.
  commit_baseline(b);                   // active tables, generation 1, WRITE_TOTAL, WRITE_COUNT
  b.stage_dac(2, 2002);
  b.pd_dbm[5] = -1500;                  // entry 2 -> port 5 fails: ERROR, VERIFY_FAIL, irq commit_fail
  b.commit(2);
  REQUIRE(b.last_err() == Error::VerifyLow);
  b.stage_map(0, 3);
  b.stage_dac(15, 321);
  const std::pair<uint32_t, uint32_t> rw[] = {
      {reg::dac_min::kOffset, 5},          {reg::dac_max::kOffset, 4000},          {reg::safe_code::kOffset, 9},
      {reg::dac_update_cycles::kOffset, 6}, {reg::settle_cycles::kOffset, 77},     {reg::verify_min_dbm::kOffset, 0x100},
      {reg::pd_timeout::kOffset, 40},       {reg::irq_mask::kOffset, 0x3},         {reg::watchdog_timeout::kOffset, 100000}};
  for (auto [addr, v] : rw) b.wr(addr, v);
  link_toggles(b, 12);                  // log full, EVENT_DROPPED > 0
  b.links[1] = 0;                       // links back to their reset input before the reset
  b.run(3);
  b.wr(reg::scratch::addr(7), 0xDEADBEEF);
  root(b).ocs_controller__DOT__time_q = (1ull << 32) + 0x100;  // (poked) so that TIME_HI latches 1
  b.tick();
  b.rd(reg::time_lo::kOffset);
  REQUIRE(b.rd(reg::time_hi::kOffset) == 1);
  REQUIRE(b.rd(reg::watchdog_count::kOffset) > 0);
  REQUIRE(b.rd(reg::event_count::kOffset) == kDepth);
  REQUIRE(reset_mismatches(b).size() > 20);  // the "before" direction: most registers differ now
  link_toggles(b, 4);                   // that scan read EVENT_DROPPED (clearing it): drop more
  b.links[1] = 0;
  b.run(3);
  REQUIRE(root(b).ocs_controller__DOT__u_log__DOT__dropped_q != 0);

  mid_run_reset(b);
  auto bad = reset_mismatches(b);
  for (auto& s : bad) FAIL_CHECK(s);
  CHECK(bad.empty());
  CHECK(b.rd(reg::time_lo::kOffset) < 1000);
  CHECK(b.rd(reg::scratch::addr(7)) == 0xDEADBEEF);  // SCRATCH: not reset
  CHECK_FALSE(b.m.safe_o);
  CHECK_FALSE(b.m.irq_o);
}

// Rule (Responses): any address outside the map answers SLVERR, as does a window word past its
// parameter; reads of mapped words answer OKAY; a write answers OKAY exactly on rw, wo and w1c
// registers and on window words within their parameter (ro and rc: SLVERR). An error read returns
// 0. The whole 16-bit word address space, read and written (value 0).
TEST_CASE("ocs rules: the whole address space: OKAY exactly on mapped words within the parameters, writes only to rw/wo/w1c") {
  Small b;
  std::vector<std::string> bad;
  int okay_reads = 0, okay_writes = 0;
  for (uint32_t a = 0; a < 0x10000; a += 4) {
    const mxtb::ocs::RegInfo* r = mxtb::ocs::register_at(a);
    const bool mapped = r && (a - r->offset) / 4 < words_in_model(*r);
    const bool writable = mapped && (r->access == mxtb::ocs::Access::RW || r->access == mxtb::ocs::Access::WO ||
                                     r->access == mxtb::ocs::Access::W1C);
    auto [rresp, rdata] = b.read_resp(a);
    uint32_t wresp = b.write_resp(a, 0);
    okay_reads += rresp == kOkay;
    okay_writes += wresp == kOkay;
    if (rresp != (mapped ? kOkay : kSlverr) || (rresp == kSlverr && rdata != 0) ||
        wresp != (writable ? kOkay : kSlverr)) {
      std::ostringstream s;
      s << std::hex << "0x" << a << " (" << (r ? r->name : "unmapped") << "): read " << rresp << "/0x" << rdata
        << ", write " << wresp;
      bad.push_back(s.str());
    }
  }
  if (!bad.empty()) MESSAGE(bad.size() << " wrong, first " << bad.front());
  CHECK(bad.empty());
  // Both directions were exercised: 31 scalars + 4 + 8 + 8 + 20 + 20 + 256 window words read OKAY.
  CHECK(okay_reads == 31 + 4 + 8 + 8 + 20 + 20 + 256);
  CHECK(okay_writes == 14 + 8 + 20 + 256);  // 10 rw + 3 wo + 1 w1c scalars, staged tables, scratch
}

// Rule (Ports: s_axil_awaddr): byte address, bits 1:0 ignored (reads and writes).
TEST_CASE("ocs rules: address bits 1:0 are ignored") {
  Small b;
  CHECK(b.write_resp(reg::scratch::addr(9) + 3, 0x600DF00D) == kOkay);
  CHECK(b.rd(reg::scratch::addr(9)) == 0x600DF00D);
  CHECK(b.rd(reg::scratch::addr(9) + 1) == 0x600DF00D);
  CHECK(b.rd(reg::scratch::addr(10)) == 0);  // the next word is not the one written
  CHECK(b.rd(reg::id::kOffset + 2) == reg::id::kReset);
  CHECK(b.write_resp(reg::id::kOffset + 1, 0) == kSlverr);  // still the read-only ID
  CHECK(b.write_resp(reg::dac_max::kOffset + 3, 1234) == kOkay);
  CHECK(b.rd(reg::dac_max::kOffset) == 1234);
}

// Rule: a write to a read-only (ro) or read-clear (rc) register answers SLVERR and changes
// nothing: the value stays, and the read side effects do not happen on a write (EVENT_INFO does
// not pop, EVENT_DROPPED does not clear, TIME_LO does not latch TIME_HI, WATCHDOG_COUNT does not
// restart). The other direction (the read side effects happen on reads) is pinned below and in
// test_ocs_controller.cpp.
TEST_CASE("ocs rules: writes to ro and rc registers answer SLVERR and have no effect, side effects included") {
  Small b;
  commit_baseline(b);
  b.stage_dac(2, 2002);
  b.pd_dbm[5] = -1500;
  b.commit(2);  // fails: ERROR, VERIFY_FAIL, WRITE_COUNT, STATUS.last_err all non-zero
  b.links[2] = static_cast<int>(LinkState::Active);
  b.reasons[3] = static_cast<int>(Reason::WrongPeer);
  b.run(3);
  b.dac.clear();
  std::vector<uint32_t> addrs;
  for (const auto& r : mxtb::ocs::kRegisters) {
    if (r.access != mxtb::ocs::Access::RO) continue;
    if (r.offset == reg::time_lo::kOffset || r.offset == reg::watchdog_count::kOffset) continue;  // move alone
    for (uint32_t i = 0; i < words_in_model(r); ++i) addrs.push_back(r.offset + 4 * i);
  }
  const uint32_t events = b.rd(reg::event_count::kOffset);
  REQUIRE(events > 2);
  for (uint32_t a : addrs) {
    INFO("address 0x" << std::hex << a);
    const uint32_t before = b.rd(a);
    CHECK(b.write_resp(a, ~before) == kSlverr);
    CHECK(b.write_resp(a, 0) == kSlverr);
    CHECK(b.rd(a) == before);
  }
  CHECK(b.dac.empty());
  // rc: EVENT_INFO is not popped, EVENT_DROPPED not cleared by a write.
  CHECK(b.rd(reg::event_count::kOffset) == events);
  CHECK(b.write_resp(reg::event_info::kOffset, 0xFFFFFFFF) == kSlverr);
  CHECK(b.rd(reg::event_count::kOffset) == events);
  link_toggles(b, 12);
  CHECK(b.write_resp(reg::event_dropped::kOffset, 0) == kSlverr);
  const uint32_t dropped = b.rd(reg::event_dropped::kOffset);
  CHECK(dropped > 0);
  CHECK(b.rd(reg::event_dropped::kOffset) == 0);  // the read does clear
  // WATCHDOG_COUNT: a write is no restart.
  b.wr(reg::watchdog_timeout::kOffset, 100000);
  const uint64_t armed = b.write_cycle;
  b.run(50);
  CHECK(b.write_resp(reg::watchdog_count::kOffset, 0) == kSlverr);
  const uint64_t at = b.cycle;
  CHECK(b.rd(reg::watchdog_count::kOffset) == at - armed - 1);
  // TIME_LO: a write answers SLVERR and latches nothing (poked: the counter's high word is 1).
  root(b).ocs_controller__DOT__time_q = (1ull << 32) + 0x40;
  b.tick();
  CHECK(b.write_resp(reg::time_lo::kOffset, 0) == kSlverr);
  CHECK(b.write_resp(reg::time_hi::kOffset, 0) == kSlverr);
  CHECK(b.rd(reg::time_hi::kOffset) == 0);
  b.rd(reg::time_lo::kOffset);
  CHECK(b.rd(reg::time_hi::kOffset) == 1);
}

// Rule: reads of write-only registers give 0 (COMMIT, SAFE_CLEAR, WATCHDOG_KICK), OKAY, after
// writes of non-zero values too.
TEST_CASE("ocs rules: write-only registers read 0") {
  Small b;
  b.stage_full_map();
  b.stage_dac(3, 333);
  b.wr(reg::commit::kOffset, 0xBEEF);
  b.wr(reg::watchdog_kick::kOffset, 0xFFFFFFFF);
  b.wr(reg::safe_clear::kOffset, 1);  // in a commit: ignored, but OKAY
  for (uint32_t a : {reg::commit::kOffset, reg::safe_clear::kOffset, reg::watchdog_kick::kOffset}) {
    INFO("address 0x" << std::hex << a);
    auto [resp, data] = b.read_resp(a);
    CHECK(resp == kOkay);
    CHECK(data == 0);
  }
  REQUIRE(b.wait_idle());
  CHECK(b.active_gen() == 0xBEEF);
  CHECK(b.rd(reg::commit::kOffset) == 0);
}

// Rule (Ports: s_axil_wstrb; Departures): wstrb is honoured for the scalar rw registers (each
// byte lane written only when its strobe is set: a write with no strobe changes nothing); and
// each register keeps only its field's bits (16-bit fields, the 6-bit IRQ_MASK, the 32-bit
// SETTLE_CYCLES and WATCHDOG_TIMEOUT; the DAC code registers answer SLVERR instead, below).
TEST_CASE("ocs rules: the scalar rw registers honour wstrb and keep only their fields' bits") {
  Small b;
  struct Rw {
    uint32_t addr;
    uint32_t width_mask;
  };
  const Rw regs[] = {{reg::dac_min::kOffset, 0xFFF},          {reg::dac_max::kOffset, 0xFFF},
                     {reg::safe_code::kOffset, 0xFFF},        {reg::dac_update_cycles::kOffset, 0xFFFF},
                     {reg::settle_cycles::kOffset, 0xFFFFFFFF}, {reg::verify_min_dbm::kOffset, 0xFFFF},
                     {reg::pd_timeout::kOffset, 0xFFFF},      {reg::irq_mask::kOffset, 0x3F},
                     {reg::watchdog_timeout::kOffset, 0xFFFFFFFF}};
  for (const Rw& r : regs) {
    INFO("address 0x" << std::hex << r.addr);
    const uint32_t old = 0x765 & r.width_mask;
    b.wr(r.addr, old);
    // byte 1 only: the new byte 1, the old byte 0 (without strobes: 0xA9C)
    CHECK(b.write_resp(r.addr, 0xA9C, 0x2) == kOkay);
    CHECK(b.rd(r.addr) == (0xA65u & r.width_mask));
    // no strobe: nothing written
    CHECK(b.write_resp(r.addr, 0x0F0, 0x0) == kOkay);
    CHECK(b.rd(r.addr) == (0xA65u & r.width_mask));
    // byte 0 only, with data in the unstrobed lanes that would not fit a DAC code: taken
    CHECK(b.write_resp(r.addr, 0xFFFFF09C, 0x1) == kOkay);
    CHECK(b.rd(r.addr) == (0xA9Cu & r.width_mask));
    if (r.width_mask != 0xFFF) {  // field widths: the bits above the field are not kept
      b.wr(r.addr, 0xFFFFFFFF);
      CHECK(b.rd(r.addr) == r.width_mask);
    }
    if (r.addr == reg::watchdog_timeout::kOffset) b.wr(r.addr, 0);
  }
}

// Rule (Ports: s_axil_wstrb; Departures "Whole-word table writes"): table entries and command
// registers take the whole word, whatever wstrb says: STAGED_MAP and STAGED_DAC (a code's high
// bits are checked even in an unstrobed lane), COMMIT, SAFE_CLEAR, WATCHDOG_KICK and the w1c
// IRQ_STATUS.
TEST_CASE("ocs rules: table entries and command registers take the whole word, wstrb ignored") {
  Small b;
  CHECK(b.write_resp(reg::staged_map::addr(2), reg::staged_map::kValidMask | 5u, 0x1) == kOkay);
  CHECK(b.rd(reg::staged_map::addr(2)) == (reg::staged_map::kValidMask | 5u));  // the valid bit of byte 3 too
  CHECK(b.write_resp(reg::staged_map::addr(2), 0x00000003, 0x8) == kOkay);
  CHECK(b.rd(reg::staged_map::addr(2)) == 3u);  // byte 0 taken, byte 3 (valid) cleared
  b.stage_dac(4, 0x456);
  CHECK(b.write_resp(reg::staged_dac::addr(4), 0x1023, 0x1) == kSlverr);  // bit 12 in an unstrobed lane
  CHECK(b.rd(reg::staged_dac::addr(4)) == 0x456);
  CHECK(b.write_resp(reg::staged_dac::addr(4), 0x0123, 0x2) == kOkay);
  CHECK(b.rd(reg::staged_dac::addr(4)) == 0x123);  // byte 0 taken without its strobe
  // COMMIT with no strobe at all commits the whole generation.
  b.stage_full_map();
  CHECK(b.write_resp(reg::commit::kOffset, 0x0102, 0x0) == kOkay);
  REQUIRE(b.wait_idle());
  CHECK(b.active_gen() == 0x0102);
  // IRQ_STATUS: commit_done (bit 2) cleared by a write without strobes.
  REQUIRE((b.rd(reg::irq_status::kOffset) & reg::irq_status::kCommitDoneMask) != 0);
  CHECK(b.write_resp(reg::irq_status::kOffset, 0x1F, 0x0) == kOkay);
  CHECK((b.rd(reg::irq_status::kOffset) & 0x1F) == 0);
  // WATCHDOG_KICK without strobes restarts the count.
  b.wr(reg::watchdog_timeout::kOffset, 1000);
  b.run(200);
  CHECK(b.write_resp(reg::watchdog_kick::kOffset, 0, 0x0) == kOkay);
  const uint64_t kick = b.write_cycle;
  const uint64_t at = b.cycle;
  CHECK(b.rd(reg::watchdog_count::kOffset) == at - kick - 1);
  // SAFE_CLEAR without strobes leaves Safe.
  b.wr(reg::watchdog_timeout::kOffset, 10);
  b.run(kElems * kUpdate + 30);
  REQUIRE(b.state() == State::Safe);
  b.wr(reg::watchdog_timeout::kOffset, 0);
  CHECK(b.write_resp(reg::safe_clear::kOffset, 1, 0x0) == kOkay);
  CHECK(b.state() == State::Idle);
}

// Rule: a DAC code with bits at or above DAC_BITS (12 here) answers SLVERR on DAC_MIN, DAC_MAX,
// SAFE_CODE and STAGED_DAC, and the register keeps its value; the largest code (4095) is taken.
TEST_CASE("ocs rules: DAC code registers take codes below 2^DAC_BITS and refuse any higher bit") {
  Small b;
  for (uint32_t a : {reg::dac_min::kOffset, reg::dac_max::kOffset, reg::safe_code::kOffset, reg::staged_dac::addr(4),
                     reg::staged_dac::addr(kElems - 1)}) {
    INFO("address 0x" << std::hex << a);
    CHECK(b.write_resp(a, 0xFFF) == kOkay);
    CHECK(b.rd(a) == 0xFFF);
    CHECK(b.write_resp(a, 0x123) == kOkay);
    for (uint32_t v : {0x1000u, 0x1123u, 0x8000u, 0x10000u, 0x80000123u}) {
      CHECK(b.write_resp(a, v) == kSlverr);
      CHECK(b.rd(a) == 0x123);
    }
  }
}

// Rule (Validate, DAC_MIN/DAC_MAX): every staged code within [DAC_MIN, DAC_MAX]: codes exactly at
// either bound pass, one outside either bound is rejected (DacRange, the element).
TEST_CASE("ocs rules: codes exactly at DAC_MIN and DAC_MAX pass, one beyond either is rejected") {
  Small b;
  b.stage_full_map();
  commit_all_codes(b, 500, 1);
  b.wr(reg::dac_min::kOffset, 100);
  b.wr(reg::dac_max::kOffset, 3000);
  b.stage_dac(3, 100);
  b.stage_dac(4, 3000);
  b.commit(2);
  CHECK(b.last_err() == Error::None);
  CHECK(b.rd(reg::active_dac::addr(3)) == 100);
  CHECK(b.rd(reg::active_dac::addr(4)) == 3000);
  b.stage_dac(3, 99);
  b.commit(3);
  CHECK(b.last_err() == Error::DacRange);
  CHECK(b.rd(reg::error::kOffset) == ((3u << 16) | (3u << 8) | static_cast<uint32_t>(Error::DacRange)));
  b.stage_dac(3, 100);
  b.stage_dac(4, 3001);
  b.commit(4);
  CHECK(b.last_err() == Error::DacRange);
  CHECK(b.rd(reg::error::kOffset) == ((4u << 16) | (4u << 8) | static_cast<uint32_t>(Error::DacRange)));
  CHECK(b.active_gen() == 2);
}

// Rule (COMMIT.gen 15:0; Idle): the generation is bits 15:0 of the write; a COMMIT of the active
// generation is a no-op (stays Idle, CommitNoop, irq commit_done, nothing written) — including
// generation 0 right after reset, when active_gen is 0 — and a different generation commits.
// A no-op changes neither the tables nor WRITE_COUNT, WRITE_TOTAL or VERIFY_FAIL.
TEST_CASE("ocs rules: COMMIT.gen is bits 15:0; the active generation, 0 after reset included, is a no-op") {
  Small b;
  b.stage_full_map();
  b.stage_dac(2, 500);
  b.wr(reg::commit::kOffset, 0);  // active generation after reset: 0
  REQUIRE(b.wait_idle());
  b.run(100);
  CHECK(b.dac.empty());
  CHECK(b.pd_reqs.empty());
  CHECK(b.rd(reg::active_dac::addr(2)) == 0);
  CHECK(b.rd(reg::active_map::addr(0)) == 0);
  auto ev = b.drain_events();
  REQUIRE(ev.size() == 1);
  CHECK(ev[0].type() == Event::CommitNoop);
  CHECK(irq_sticky(b) == reg::irq_status::kCommitDoneMask);
  b.wr(reg::irq_status::kOffset, 0x1F);
  // bits 31:16 are not part of the generation
  b.wr(reg::commit::kOffset, 0x00030001);
  REQUIRE(b.wait_idle());
  CHECK(b.active_gen() == 1);
  CHECK(b.rd(reg::active_dac::addr(2)) == 500);
  ev = b.drain_events();
  REQUIRE(ev.size() == 4);
  CHECK(ev[0].type() == Event::CommitStart);
  CHECK(ev[0].data() == 1);
  // a failed commit leaves WRITE_COUNT, VERIFY_FAIL non-zero; a no-op then changes none of them
  b.stage_dac(6, 600);
  b.pd_dbm[5] = -1500;
  b.commit(2);
  REQUIRE(b.last_err() == Error::VerifyLow);
  b.drain_events();
  b.wr(reg::irq_status::kOffset, 0x1F);
  const uint32_t wc = b.rd(reg::write_count::kOffset), wt = b.rd(reg::write_total::kOffset),
                 vf = b.rd(reg::verify_fail::kOffset);
  REQUIRE(wc != 0);
  REQUIRE(vf != 0);
  const auto act = b.active_dac();
  b.dac.clear();
  b.pd_reqs.clear();
  b.wr(reg::commit::kOffset, 0xFFFF0001);  // generation 1, the active one
  REQUIRE(b.wait_idle());
  CHECK(b.dac.empty());
  CHECK(b.pd_reqs.empty());
  CHECK(b.active_gen() == 1);
  CHECK(b.active_dac() == act);
  CHECK(b.rd(reg::write_count::kOffset) == wc);
  CHECK(b.rd(reg::write_total::kOffset) == wt);
  CHECK(b.rd(reg::verify_fail::kOffset) == vf);
  CHECK(irq_sticky(b) == reg::irq_status::kCommitDoneMask);
  ev = b.drain_events();
  REQUIRE(ev.size() == 1);
  CHECK(ev[0].type() == Event::CommitNoop);
  CHECK(ev[0].data() == 1);
}

// Rules (SAFE_CLEAR.clear, STATUS.busy, staged tables, COMMIT in Safe): SAFE_CLEAR with bit 0 set
// leaves Safe only once the sweep is done — ignored in Idle and during the sweep (not remembered),
// ignored with bit 0 clear whatever the other bits, always OKAY; staged-table writes and COMMIT
// answer SLVERR during the sweep; after it staged writes (map and codes) are allowed and COMMIT is
// not; after SAFE_CLEAR the active generation is 0, so COMMIT(0) is a no-op.
TEST_CASE("ocs rules: SAFE_CLEAR acts only after the sweep; staged writes refused during the sweep, allowed after") {
  Small b;
  commit_baseline(b);
  // Idle: SAFE_CLEAR does nothing, logs nothing.
  CHECK(b.write_resp(reg::safe_clear::kOffset, 1) == kOkay);
  CHECK(b.state() == State::Idle);
  CHECK(b.rd(reg::event_count::kOffset) == 0);
  // Into Safe with a long sweep (20 elements x 20 cycles).
  b.wr(reg::dac_update_cycles::kOffset, 20);
  b.wr(reg::watchdog_timeout::kOffset, 10);
  b.run(12);
  REQUIRE(b.m.safe_o);
  uint32_t st = b.rd(reg::status::kOffset);
  REQUIRE((st & reg::status::kBusyMask) != 0);
  CHECK(b.write_resp(reg::staged_dac::addr(1), 7) == kSlverr);
  CHECK(b.write_resp(reg::staged_map::addr(1), 0) == kSlverr);
  CHECK(b.write_resp(reg::commit::kOffset, 9) == kSlverr);
  CHECK(b.write_resp(reg::safe_clear::kOffset, 1) == kOkay);  // during the sweep: ignored
  b.run(3);
  CHECK(b.m.safe_o);
  CHECK(b.state() == State::Safe);
  REQUIRE((b.rd(reg::status::kOffset) & reg::status::kBusyMask) != 0);  // all of the above during the sweep
  CHECK(b.rd(reg::staged_dac::addr(1)) == 1001);
  CHECK(b.rd(reg::staged_map::addr(1)) == (reg::staged_map::kValidMask | 6u));
  b.run(kElems * 20 + 10);
  st = b.rd(reg::status::kOffset);
  REQUIRE((st & reg::status::kBusyMask) == 0);  // sweep done
  CHECK(static_cast<State>(st & reg::status::kStateMask) == State::Safe);  // the early SAFE_CLEAR was not kept
  b.wr(reg::watchdog_timeout::kOffset, 0);
  // After the sweep: staged writes allowed, COMMIT not, SAFE_CLEAR with bit 0 clear ignored.
  CHECK(b.write_resp(reg::staged_dac::addr(1), 7) == kOkay);
  CHECK(b.write_resp(reg::staged_map::addr(1), reg::staged_map::kValidMask | 6u) == kOkay);
  CHECK(b.rd(reg::staged_dac::addr(1)) == 7);
  CHECK(b.write_resp(reg::commit::kOffset, 9) == kSlverr);
  CHECK(b.write_resp(reg::safe_clear::kOffset, 0xFFFFFFFE) == kOkay);
  b.run(5);
  CHECK(b.m.safe_o);
  CHECK(b.write_resp(reg::safe_clear::kOffset, 1) == kOkay);
  CHECK_FALSE(b.m.safe_o);
  CHECK(b.state() == State::Idle);
  // The sweep left generation 0: committing it is a no-op.
  b.drain_events();
  b.dac.clear();
  b.wr(reg::commit::kOffset, 0);
  REQUIRE(b.wait_idle());
  b.run(50);
  CHECK(b.dac.empty());
  auto ev = b.drain_events();
  REQUIRE(ev.size() == 1);
  CHECK(ev[0].type() == Event::CommitNoop);
}

// Rule (DAC_MIN, DAC_MAX, SAFE_CODE): a commit checks and writes its codes against one range, and
// the sweep writes one safe code, so these answer SLVERR while busy and keep their values; in Idle
// and holding safe they are written. (Found by rtl_board's random traffic through the board top:
// a SAFE_CODE written mid-sweep left the swept elements with two codes.)
TEST_CASE("ocs rules: DAC_MIN, DAC_MAX and SAFE_CODE answer SLVERR while a commit or the sweep runs, and change nothing") {
  Small b;
  commit_baseline(b);
  const uint32_t limits[] = {reg::dac_min::kOffset, reg::dac_max::kOffset, reg::safe_code::kOffset};
  auto refused_all = [&] {
    const uint32_t before[] = {b.rd(limits[0]), b.rd(limits[1]), b.rd(limits[2])};
    REQUIRE((b.rd(reg::status::kOffset) & reg::status::kBusyMask) != 0);
    for (uint32_t a : limits) CHECK(b.write_resp(a, 100) == kSlverr);
    REQUIRE((b.rd(reg::status::kOffset) & reg::status::kBusyMask) != 0);  // every write above while busy
    for (int i = 0; i < 3; ++i) CHECK(b.rd(limits[i]) == before[i]);
  };
  // A commit that programs 5 elements, 40 cycles apart.
  b.wr(reg::dac_update_cycles::kOffset, 40);
  for (int e = 0; e < 5; ++e) b.stage_dac(e, 2000 + e);
  b.wr(reg::commit::kOffset, 2);
  b.run(30);
  CHECK(b.state() == State::Program);
  refused_all();
  REQUIRE(b.wait_idle());
  CHECK(b.last_err() == Error::None);
  // Idle: taken.
  CHECK(b.write_resp(reg::dac_min::kOffset, 3) == kOkay);
  CHECK(b.rd(reg::dac_min::kOffset) == 3);
  // The sweep (20 elements x 40 cycles).
  b.wr(reg::watchdog_timeout::kOffset, 10);
  b.run(12);
  REQUIRE(b.m.safe_o);
  refused_all();
  b.run(kElems * 40 + 10);
  REQUIRE((b.rd(reg::status::kOffset) & reg::status::kBusyMask) == 0);  // holding safe: taken again
  for (uint32_t a : limits) CHECK(b.write_resp(a, 9) == kOkay);
  for (uint32_t a : limits) CHECK(b.rd(a) == 9);
}

// Rule (STATUS): state 2:0, busy 4, safe 5, last_err 11:8, active_gen 31:16, nothing else: the
// whole word in a commit's rollback, in the safe sweep, holding safe and after a pass; STATUS.safe
// equals safe_o.
TEST_CASE("ocs rules: STATUS holds its five fields in place and nothing else") {
  Small b;
  commit_baseline(b, 0x1234);
  CHECK(b.rd(reg::status::kOffset) == status_word(State::Idle, false, false, Error::None, 0x1234));
  b.stage_dac(2, 2002);
  b.pd_dbm[kPorts - 1] = -3000;  // entry 0 fails: rollback
  b.wr(reg::settle_cycles::kOffset, 300);
  b.wr(reg::commit::kOffset, 0x1235);
  bool seen_rollback = false;
  for (int i = 0; i < 1000 && !seen_rollback; ++i) {
    uint32_t st = b.rd(reg::status::kOffset);
    if (static_cast<State>(st & reg::status::kStateMask) == State::Rollback) {
      seen_rollback = true;
      CHECK(st == status_word(State::Rollback, true, false, Error::VerifyLow, 0x1234));
    }
  }
  CHECK(seen_rollback);
  REQUIRE(b.wait_idle());
  CHECK(b.rd(reg::status::kOffset) == status_word(State::Idle, false, false, Error::VerifyLow, 0x1234));
  b.wr(reg::watchdog_timeout::kOffset, 10);
  b.run(12);
  REQUIRE(b.m.safe_o);
  CHECK(b.rd(reg::status::kOffset) == status_word(State::Safe, true, true, Error::Watchdog, 0x1234));
  b.run(kElems * kUpdate + 10);
  CHECK(b.rd(reg::status::kOffset) == status_word(State::Safe, false, true, Error::Watchdog, 0));
  b.wr(reg::watchdog_timeout::kOffset, 0);
  b.wr(reg::safe_clear::kOffset, 1);
  CHECK_FALSE(b.m.safe_o);
  CHECK(b.rd(reg::status::kOffset) == status_word(State::Idle, false, false, Error::Watchdog, 0));
}

// Rules (IRQ_STATUS.commit_done, commit_fail): commit_done on VerifyPass or CommitNoop only;
// commit_fail on CommitRejected, or on RollbackDone after a failed verify — not when the verify
// fails (the rollback is still running), never on a pass; neither bit for a commit the watchdog
// abandons (watchdog bit only).
TEST_CASE("ocs rules: commit_done and commit_fail are set by their events only") {
  Small b;
  commit_baseline(b);
  CHECK(irq_sticky(b) == 0);
  b.stage_dac(7, 1234);
  b.commit(2);  // pass
  CHECK(irq_sticky(b) == reg::irq_status::kCommitDoneMask);
  b.wr(reg::irq_status::kOffset, 0x1F);
  b.stage_map(5, kPorts - 1 - 1);  // duplicate target: rejected
  b.commit(3);
  REQUIRE(b.last_err() == Error::DupTarget);
  CHECK(irq_sticky(b) == reg::irq_status::kCommitFailMask);
  b.wr(reg::irq_status::kOffset, 0x1F);
  b.stage_map(5, kPorts - 1 - 5);
  // A failing verify: nothing until the rollback is done.
  b.stage_dac(8, 1500);
  b.pd_dbm[3] = -3000;
  b.wr(reg::settle_cycles::kOffset, 200);
  b.wr(reg::commit::kOffset, 4);
  int rollback_reads = 0;
  for (int i = 0; i < 2000; ++i) {
    uint32_t st = b.rd(reg::status::kOffset);
    auto s = static_cast<State>(st & reg::status::kStateMask);
    if (s == State::Idle) break;
    uint32_t irq = irq_sticky(b);
    INFO("state " << static_cast<int>(s));
    CHECK(irq == 0);
    rollback_reads += s == State::Rollback;
  }
  CHECK(rollback_reads > 10);
  REQUIRE(b.last_err() == Error::VerifyLow);
  CHECK(irq_sticky(b) == reg::irq_status::kCommitFailMask);
  b.wr(reg::irq_status::kOffset, 0x1F);
  // The watchdog abandons a commit: neither commit bit.
  b.pd_dbm[3] = 0;
  b.wr(reg::settle_cycles::kOffset, 5000);
  b.stage_dac(9, 999);
  b.wr(reg::commit::kOffset, 5);
  b.wr(reg::watchdog_timeout::kOffset, 200);
  b.run(400 + kElems * kUpdate);
  REQUIRE(b.m.safe_o);
  CHECK(irq_sticky(b) == reg::irq_status::kWatchdogMask);
}

// Rules (IRQ_STATUS.link_down, link_up): link_down when a link's state leaves Active, link_up when
// it enters Active; neither for a change between other states, nor for a reason change while
// Active; both when one link enters and another leaves in the same cycle.
TEST_CASE("ocs rules: link_down and link_up only for a state leaving or entering Active") {
  Small b;
  const int active = static_cast<int>(LinkState::Active);
  auto step = [&](int link, int state, int reason) {
    b.links[static_cast<size_t>(link)] = state;
    b.reasons[static_cast<size_t>(link)] = reason;
    b.run(2);
    uint32_t irq = irq_sticky(b);
    b.wr(reg::irq_status::kOffset, 0x1F);
    return irq;
  };
  CHECK(step(1, static_cast<int>(LinkState::Detect), 0) == 0);
  CHECK(step(1, static_cast<int>(LinkState::Ts1), 0) == 0);
  CHECK(step(1, active, 0) == reg::irq_status::kLinkUpMask);
  CHECK(step(1, active, static_cast<int>(Reason::HeartbeatTimeout)) == 0);  // reason only, still Active
  CHECK(step(1, static_cast<int>(LinkState::Retrain), static_cast<int>(Reason::LossOfSignal)) ==
        reg::irq_status::kLinkDownMask);
  CHECK(step(1, static_cast<int>(LinkState::Disabled), static_cast<int>(Reason::WrongPeer)) == 0);
  CHECK(step(3, active, 0) == reg::irq_status::kLinkUpMask);  // the last link counts too
  CHECK(step(3, static_cast<int>(LinkState::Disabled), 0) == reg::irq_status::kLinkDownMask);
  // One link up and another down in the same cycle: both.
  CHECK(step(0, active, 0) == reg::irq_status::kLinkUpMask);
  b.links[0] = static_cast<int>(LinkState::Retrain);
  CHECK(step(2, active, 0) == (reg::irq_status::kLinkUpMask | reg::irq_status::kLinkDownMask));
}

// Rules (IRQ_STATUS w1c, IRQ_MASK): each of the five sticky bits is cleared by writing 1 to it and
// to no other bit (writing 0 clears nothing); IRQ_MASK bit i masks IRQ_STATUS bit i and no other
// (irq_o = |(IRQ_STATUS & ~IRQ_MASK)); IRQ_MASK keeps bits 5:0 only.
TEST_CASE("ocs rules: every sticky IRQ_STATUS bit clears alone on a 1; every IRQ_MASK bit masks its own bit") {
  Small b;
  const int active = static_cast<int>(LinkState::Active);
  b.links[1] = active;  // link_up
  b.run(3);
  b.links[1] = static_cast<int>(LinkState::Retrain);  // link_down
  b.run(3);
  b.wr(reg::commit::kOffset, 0);  // no-op: commit_done
  b.stage_map(0, 3);
  b.stage_map(1, 3);
  b.commit(1);  // duplicate target: commit_fail
  b.wr(reg::watchdog_timeout::kOffset, 10);
  b.run(20);  // watchdog
  REQUIRE(b.m.safe_o);
  CHECK(irq_sticky(b) == 0x1F);
  b.wr(reg::irq_status::kOffset, 0);
  CHECK(irq_sticky(b) == 0x1F);
  b.wr(reg::irq_mask::kOffset, 0xFFFFFFFF);
  CHECK(b.rd(reg::irq_mask::kOffset) == 0x3F);
  CHECK_FALSE(b.m.irq_o);
  uint32_t left = 0x1F;
  for (uint32_t bit = 0; bit < 5; ++bit) {
    INFO("bit " << bit);
    const uint32_t m = 1u << bit;
    b.wr(reg::irq_mask::kOffset, 0x3F & ~m);  // only this bit unmasked
    CHECK(b.m.irq_o);
    b.wr(reg::irq_status::kOffset, m);
    left &= ~m;
    CHECK(irq_sticky(b) == left);
    CHECK_FALSE(b.m.irq_o);  // its bit is clear, every other bit masked
    b.wr(reg::irq_mask::kOffset, 0x3F);
  }
}

// Rule (IRQ_STATUS.event_log, IRQ_MASK reset): bit 5 is the log's non-empty level: set while it
// holds an event, cleared only by popping the last one (not by writing 1); masked at reset, so it
// raises irq_o only once unmasked.
TEST_CASE("ocs rules: the event_log bit is the log's level and is masked at reset") {
  Small b;
  CHECK((b.rd(reg::irq_status::kOffset) & reg::irq_status::kEventLogMask) == 0);
  b.links[1] = static_cast<int>(LinkState::Detect);  // not Active: no sticky bit
  b.run(3);
  b.links[1] = static_cast<int>(LinkState::BlockLock);
  b.run(3);
  REQUIRE(b.rd(reg::event_count::kOffset) == 2);
  CHECK(b.rd(reg::irq_status::kOffset) == reg::irq_status::kEventLogMask);
  CHECK_FALSE(b.m.irq_o);  // reset mask 0x20
  b.wr(reg::irq_mask::kOffset, 0);
  CHECK(b.m.irq_o);
  b.wr(reg::irq_status::kOffset, 0x3F);
  CHECK(b.rd(reg::irq_status::kOffset) == reg::irq_status::kEventLogMask);
  b.rd(reg::event_info::kOffset);  // one of two popped: still set
  CHECK(b.rd(reg::irq_status::kOffset) == reg::irq_status::kEventLogMask);
  CHECK(b.m.irq_o);
  b.rd(reg::event_info::kOffset);
  CHECK(b.rd(reg::irq_status::kOffset) == 0);
  CHECK_FALSE(b.m.irq_o);
}

// Rules (WATCHDOG_TIMEOUT, _KICK, _COUNT): the count is the cycles since the last restart, exactly
// (read in cycle c after a restart written in cycle w: c - w - 1, so it reaches T - 1 in the cycle
// the watchdog expires, T cycles after the restart); a kick of any value, or a WATCHDOG_TIMEOUT
// write, restarts it; kicks more often than T cycles keep it from expiring (no Safe, no watchdog
// bit); WATCHDOG_TIMEOUT = 0 disarms an armed watchdog (count 0, never expires); WATCHDOG_TIMEOUT
// reads back what was written.
TEST_CASE("ocs rules: WATCHDOG_COUNT counts exactly from the last restart; kicks keep it alive; 0 disarms") {
  Small b;
  b.wr(reg::watchdog_timeout::kOffset, 1000);
  const uint64_t armed = b.write_cycle;
  CHECK(b.rd(reg::watchdog_timeout::kOffset) == 1000);
  b.run(37);
  uint64_t at = b.cycle;
  CHECK(b.rd(reg::watchdog_count::kOffset) == at - armed - 1);
  b.run(100);
  at = b.cycle;
  CHECK(b.rd(reg::watchdog_count::kOffset) == at - armed - 1);
  for (uint32_t v : {0u, 1u, 0xFFFFFFFFu, 0x80000000u}) {
    b.run(50);
    b.wr(reg::watchdog_kick::kOffset, v);
    const uint64_t kick = b.write_cycle;
    at = b.cycle;
    CHECK(b.rd(reg::watchdog_count::kOffset) == at - kick - 1);
  }
  // Kicked about every 83 cycles with T = 100: never expires.
  b.wr(reg::watchdog_timeout::kOffset, 100);
  for (int i = 0; i < 20; ++i) {
    b.run(80);
    b.wr(reg::watchdog_kick::kOffset, static_cast<uint32_t>(i));
  }
  CHECK_FALSE(b.m.safe_o);
  CHECK(b.safe_seen == 0);
  CHECK((b.rd(reg::irq_status::kOffset) & reg::irq_status::kWatchdogMask) == 0);
  // Disarmed while counting: the count drops to 0 and stays there, nothing expires.
  b.run(60);
  b.wr(reg::watchdog_timeout::kOffset, 0);
  b.run(500);
  CHECK(b.rd(reg::watchdog_count::kOffset) == 0);
  b.wr(reg::watchdog_kick::kOffset, 1);
  CHECK(b.rd(reg::watchdog_count::kOffset) == 0);
  CHECK(b.safe_seen == 0);
  CHECK(b.state() == State::Idle);
  CHECK((b.rd(reg::irq_status::kOffset) & reg::irq_status::kWatchdogMask) == 0);
  // Armed again and left alone: expires T cycles after the write, sets its bit.
  b.wr(reg::watchdog_timeout::kOffset, 64);
  const uint64_t rearmed = b.write_cycle;
  b.run(80);
  CHECK(b.safe_seen == rearmed + 64 + 1);
  CHECK((b.rd(reg::irq_status::kOffset) & reg::irq_status::kWatchdogMask) != 0);
}

// Rule (VERIFY_MIN_DBM): the threshold is the register's value, compared signed: a reading equal
// to it passes, one below fails — at a positive threshold (where an unsigned comparison would let
// -0.01 dBm pass) and at a negative one other than the reset value (where it would fail +3 dBm).
TEST_CASE("ocs rules: VERIFY_MIN_DBM is the written threshold, compared signed") {
  Small b;
  commit_baseline(b);
  b.wr(reg::verify_min_dbm::kOffset, 250);
  for (auto& d : b.pd_dbm) d = 250;
  b.commit(2);
  CHECK(b.last_err() == Error::None);
  b.pd_dbm[5] = 249;
  b.commit(3);
  CHECK(b.last_err() == Error::VerifyLow);
  CHECK(b.rd(reg::verify_fail::kOffset) == ((249u << 16) | 5u));
  b.pd_dbm[5] = -1;
  b.commit(4);
  CHECK(b.last_err() == Error::VerifyLow);
  CHECK(b.rd(reg::verify_fail::kOffset) == ((0xFFFFu << 16) | 5u));
  b.wr(reg::verify_min_dbm::kOffset, static_cast<uint16_t>(-2000));
  b.pd_dbm[5] = -2000;
  b.commit(5);
  CHECK(b.last_err() == Error::None);
  b.pd_dbm[5] = 300;
  b.commit(6);
  CHECK(b.last_err() == Error::None);
  b.pd_dbm[5] = -2001;
  b.commit(7);
  CHECK(b.last_err() == Error::VerifyLow);
  CHECK(b.active_gen() == 6);
}

// Rule (PdTimeout; VERIFY_FAIL.dbm "0 after a timeout"; ERROR.index the entry): a photodiode that
// never answers fails verify with PdTimeout, VERIFY_FAIL = {dbm 0, the output port} (replacing
// the reading an earlier VerifyLow left), ERROR = {gen, the port-map entry, PdTimeout}, event
// VerifyFail with code PdTimeout and the output port.
TEST_CASE("ocs rules: a photodiode timeout reports dBm 0, the output port and the entry") {
  Small b;
  commit_baseline(b);
  b.stage_dac(2, 2002);
  b.pd_dbm[5] = -1500;
  b.commit(2);
  REQUIRE(b.rd(reg::verify_fail::kOffset) == ((static_cast<uint32_t>(static_cast<uint16_t>(-1500)) << 16) | 5u));
  b.drain_events();
  b.stage_map(0, 0, false);  // entry 1 (-> port 6) is the first one verified
  b.pd_answers = false;
  b.commit(3);
  CHECK(b.last_err() == Error::PdTimeout);
  CHECK(b.rd(reg::verify_fail::kOffset) == 6u);
  CHECK(b.rd(reg::error::kOffset) == ((3u << 16) | (1u << 8) | static_cast<uint32_t>(Error::PdTimeout)));
  auto ev = b.drain_events();
  auto fail = std::find_if(ev.begin(), ev.end(), [](const Ev& e) { return e.type() == Event::VerifyFail; });
  REQUIRE(fail != ev.end());
  CHECK(static_cast<Error>(fail->code()) == Error::PdTimeout);
  CHECK(fail->index() == 6);
  CHECK(fail->data() == 3);
}

// Rule (DAC_UPDATE_CYCLES): the rollback and the safe sweep also write one element per update
// slot of the register's current value: neighbours exactly a slot apart, never closer; 0 acts as 1.
TEST_CASE("ocs rules: rollback and safe sweep writes keep DAC_UPDATE_CYCLES apart; 0 acts as 1") {
  for (int update : {7, 0}) {
    INFO("update " << update);
    const uint64_t slot = static_cast<uint64_t>(std::max(update, 1));
    Small b;
    commit_baseline(b);
    b.wr(reg::dac_update_cycles::kOffset, static_cast<uint32_t>(update));
    b.stage_dac(2, 2002);
    b.stage_dac(3, 2003);
    b.stage_dac(10, 2010);
    b.pd_dbm[kPorts - 1] = -3000;
    b.commit(2);
    REQUIRE(b.last_err() == Error::VerifyLow);
    REQUIRE(b.dac.size() == 6);
    for (size_t i = 1; i < 6; ++i) CHECK(b.dac[i].cycle - b.dac[i - 1].cycle >= slot);
    CHECK(b.dac[4].cycle - b.dac[3].cycle == slot);  // rollback of 2 then 3: back to back slots
    CHECK(b.dac[4].elem == 3);
    b.dac.clear();
    b.wr(reg::watchdog_timeout::kOffset, 5);
    b.run(kElems * 8 + 20);
    REQUIRE(b.dac.size() == static_cast<size_t>(kElems));
    for (size_t i = 1; i < b.dac.size(); ++i) CHECK(b.dac[i].cycle - b.dac[i - 1].cycle == slot);
  }
}

// Rule (Watchdog and safe state): after SAFE_CLEAR the next commit writes every element whose
// staged code differs from SAFE_CODE — and only those.
TEST_CASE("ocs rules: after the safe state a commit writes exactly the elements whose staged code differs from SAFE_CODE") {
  Small b;
  commit_baseline(b);  // staged: 0..4 = 1000 + e, the rest 0
  b.wr(reg::safe_code::kOffset, 77);
  b.wr(reg::watchdog_timeout::kOffset, 10);
  b.run(20 + kElems * kUpdate);
  REQUIRE(b.m.safe_o);
  b.wr(reg::watchdog_timeout::kOffset, 0);
  for (int e : {0, 1, 2, 10}) b.stage_dac(e, 77);
  b.wr(reg::safe_clear::kOffset, 1);
  b.dac.clear();
  b.commit(2);
  REQUIRE(b.last_err() == Error::None);
  std::vector<int> written;
  for (auto& w : b.dac) written.push_back(w.elem);
  std::vector<int> expect;
  for (int e = 0; e < kElems; ++e)
    if (e != 0 && e != 1 && e != 2 && e != 10) expect.push_back(e);
  CHECK(written == expect);
}

// Rules (EVENT_TS_LO/HI, EVENT_COUNT, EVENT_INFO rc): reading the timestamp or the count pops
// nothing; each EVENT_INFO read pops exactly one entry and returns that entry, even when the read
// response is held for many cycles (read side effects once per read).
TEST_CASE("ocs rules: only an EVENT_INFO read pops, exactly one entry per read") {
  Small b;
  for (int i = 1; i <= 3; ++i) {
    b.links[0] = i;
    b.run(4);
  }
  REQUIRE(b.rd(reg::event_count::kOffset) == 3);
  const uint32_t ts0 = b.rd(reg::event_ts_lo::kOffset);
  for (int i = 0; i < 4; ++i) {
    CHECK(b.rd(reg::event_ts_lo::kOffset) == ts0);
    CHECK(b.rd(reg::event_ts_hi::kOffset) == 0);
    CHECK(b.rd(reg::event_count::kOffset) == 3);
  }
  // EVENT_INFO with the response held 10 cycles.
  b.m.s_axil_araddr = static_cast<uint16_t>(reg::event_info::kOffset);
  b.m.s_axil_arvalid = 1;
  b.m.s_axil_rready = 0;
  b.m.eval();
  REQUIRE(b.m.s_axil_arready);
  b.tick();
  b.m.s_axil_arvalid = 0;
  for (int i = 0; i < 10; ++i) {
    CHECK(b.m.s_axil_rvalid);
    b.tick();
  }
  const uint32_t info = b.m.s_axil_rdata;
  b.m.s_axil_rready = 1;
  b.tick();
  b.m.s_axil_rready = 0;
  CHECK((info & 0xF) == static_cast<uint32_t>(Event::LinkChange));
  CHECK(((info >> 4) & 0xF) == 1);  // the first change (state 1)
  CHECK(b.rd(reg::event_count::kOffset) == 2);
  CHECK(b.rd(reg::event_ts_lo::kOffset) > ts0);
  CHECK(((b.rd(reg::event_info::kOffset) >> 4) & 0xF) == 2);
  CHECK(b.rd(reg::event_count::kOffset) == 1);
}

// Rule (Event log): simultaneous events share a timestamp and the controller's enters the log
// before a link's.
TEST_CASE("ocs rules: a controller event and a link change in the same cycle: same timestamp, controller's first") {
  Small b;
  commit_baseline(b);
  b.stage_dac(5, 555);
  b.links[2] = static_cast<int>(LinkState::Detect);  // driven in the cycle COMMIT is taken
  b.wr(reg::commit::kOffset, 2);
  const uint64_t w = b.write_cycle;
  REQUIRE(b.wait_idle());
  auto ev = b.drain_events();
  REQUIRE(ev.size() == 5);
  CHECK(ev[0].type() == Event::CommitStart);
  CHECK(ev[1].type() == Event::LinkChange);
  CHECK(ev[1].index() == 2);
  CHECK(ev[0].ts == w);
  CHECK(ev[1].ts == w);
}

// Rules (TIME_LO/TIME_HI, EVENT_TS_HI) (poked: the counter set past 2^32): TIME_HI is what the last
// TIME_LO read latched — its reset value 0 before any such read, unchanged while the counter's high
// word moves on, updated by the next TIME_LO read; the counter carries into its high word; an
// event's timestamp keeps bits 63:32 (EVENT_TS_HI), and an empty log reads 0 there too.
TEST_CASE("ocs rules: TIME_HI is latched by TIME_LO reads; timestamps keep 64 bits (poked)") {
  Small b;
  root(b).ocs_controller__DOT__time_q = (1ull << 32) + 10;
  b.tick();
  CHECK(b.rd(reg::time_hi::kOffset) == 0);  // not latched yet
  uint32_t lo = b.rd(reg::time_lo::kOffset);
  CHECK(lo >= 10);
  CHECK(lo < 40);
  CHECK(b.rd(reg::time_hi::kOffset) == 1);
  root(b).ocs_controller__DOT__time_q = (2ull << 32) - 16;
  b.run(40);  // the counter carries into its high word: 2
  CHECK(b.rd(reg::time_hi::kOffset) == 1);  // still the latched value
  lo = b.rd(reg::time_lo::kOffset);
  CHECK(lo < 100);
  CHECK(b.rd(reg::time_hi::kOffset) == 2);
  b.links[1] = 3;
  b.run(2);
  CHECK(b.rd(reg::event_ts_hi::kOffset) == 2);
  CHECK(b.rd(reg::event_ts_lo::kOffset) > lo);
  CHECK(b.rd(reg::event_ts_lo::kOffset) < lo + 20);
  b.rd(reg::event_info::kOffset);
  CHECK(b.rd(reg::event_ts_hi::kOffset) == 0);  // empty
  CHECK(b.rd(reg::event_ts_lo::kOffset) == 0);
}

// Rule (EVENT_DROPPED) (poked: the count set near 2^32): the count saturates instead of wrapping,
// and the read clears it.
TEST_CASE("ocs rules: EVENT_DROPPED saturates at 2^32 - 1 (poked)") {
  Small b;
  root(b).ocs_controller__DOT__u_log__DOT__dropped_q = 0xFFFFFFFE;
  root(b).ocs_controller__DOT__u_log__DOT__dropped_d = 0xFFFFFFFE;
  b.tick();
  link_toggles(b, 10);  // 7 kept, the marker, 3 dropped
  CHECK(b.rd(reg::event_count::kOffset) == kDepth);
  CHECK(b.rd(reg::event_dropped::kOffset) == 0xFFFFFFFF);
  CHECK(b.rd(reg::event_dropped::kOffset) == 0);
}

// Rule (event table: ProgramDone and RollbackDone index "elements written, saturates at 255";
// WRITE_COUNT 16-bit fields) (poked: the counts set to 300 in mid-commit, as 20 elements cannot
// reach them): the event's index saturates at 255 while WRITE_COUNT keeps the full count.
TEST_CASE("ocs rules: ProgramDone and RollbackDone counts saturate at 255; WRITE_COUNT does not (poked)") {
  Small b;
  commit_baseline(b);
  b.stage_dac(3, 2003);
  b.stage_dac(9, 2009);
  b.wr(reg::commit::kOffset, 2);
  for (int i = 0; i < 500 && !b.m.dac_valid_o; ++i) b.tick();
  REQUIRE(b.m.dac_valid_o);  // element 3 written; element 9 to come
  root(b).ocs_controller__DOT__u_seq__DOT__cnt_prog_q = 300;
  root(b).ocs_controller__DOT__u_seq__DOT__cnt_prog_d = 300;
  REQUIRE(b.wait_idle());
  REQUIRE(b.last_err() == Error::None);
  CHECK(reg::write_count::kFields[0].get(b.rd(reg::write_count::kOffset)) == 301);
  auto ev = b.drain_events();
  REQUIRE(ev.size() == 4);
  CHECK(ev[1].type() == Event::ProgramDone);
  CHECK(ev[1].index() == 255);
  // Rollback: the same for its count.
  b.stage_dac(3, 3003);
  b.stage_dac(9, 3009);
  b.pd_dbm[kPorts - 1] = -3000;
  b.dac.clear();
  b.wr(reg::commit::kOffset, 3);
  for (int i = 0; i < 2000 && b.dac.size() < 3; ++i) b.tick();
  REQUIRE(b.dac.size() == 3);  // two program writes, the first rollback write
  root(b).ocs_controller__DOT__u_seq__DOT__cnt_rb_q = 300;
  root(b).ocs_controller__DOT__u_seq__DOT__cnt_rb_d = 300;
  REQUIRE(b.wait_idle());
  REQUIRE(b.last_err() == Error::VerifyLow);
  CHECK(b.rd(reg::write_count::kOffset) == ((301u << 16) | 2u));
  ev = b.drain_events();
  REQUIRE_FALSE(ev.empty());
  CHECK(ev.back().type() == Event::RollbackDone);
  CHECK(ev.back().index() == 255);
}

// Rule (WRITE_COUNT: "element writes of the last commit that passed validation; a rejected or
// no-op commit writes nothing and leaves the counts as they were"): the counts are cleared only
// when a commit enters Program. (This test first found the register map saying "of the last
// commit", which a rejected commit also is; the map now names the commit.)
TEST_CASE("ocs rules: WRITE_COUNT after a rejected commit keeps the last validated commit's counts") {
  Small b;
  commit_baseline(b);
  b.stage_dac(2, 2002);
  b.stage_dac(3, 2003);
  b.commit(2);
  REQUIRE(b.rd(reg::write_count::kOffset) == 2);
  b.stage_map(5, kPorts - 1 - 1);  // duplicate target: rejected, nothing written
  b.dac.clear();
  b.commit(3);
  REQUIRE(b.last_err() == Error::DupTarget);
  REQUIRE(b.dac.empty());
  CHECK(b.rd(reg::write_count::kOffset) == 2);
  // The next commit that passes validation counts afresh: one element written.
  b.stage_map(5, kPorts - 1 - 5);  // the full map again
  b.stage_dac(4, 2004);
  b.commit(4);
  REQUIRE(b.last_err() == Error::None);
  CHECK(b.rd(reg::write_count::kOffset) == 1);
}
