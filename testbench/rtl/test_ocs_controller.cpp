// Directed testbenches for ocs_controller (docs/ocs-controller.md). Most run on Vocs_ctl_small:
// 8 ports, 20 elements, 4 links, 8 log entries, DAC update slot 4, settle 50, photodiode timeout
// 32 (rtl/models.cmake). The bench has an AXI4-Lite bus-functional model that checks every
// handshake and response, a photodiode responder (a dBm per port, answering after a few cycles)
// and a log of every DAC write. Register offsets and fields come from the generated
// <mxtb/ocs_regs.h>; the default-parameter model Vocs_controller gets a smoke test.
#include "ocs_bench.h"

TEST_CASE("ocs: reset values, read-only and read/write registers, SLVERR, strobes, scratch RAM, time") {
  Small b;
  // Out of reset, before any clock: no element write, no photodiode request, no interrupt.
  CHECK_FALSE(b.m.dac_valid_o);
  CHECK_FALSE(b.m.pd_req_o);
  CHECK_FALSE(b.m.irq_o);
  CHECK(b.rd(reg::id::kOffset) == reg::id::kReset);
  CHECK(b.rd(reg::version::kOffset) == reg::version::kReset);
  uint32_t params = b.rd(reg::params::kOffset);
  CHECK(reg::params::kFields[0].get(params) == 8);   // n_ports
  CHECK(reg::params::kFields[1].get(params) == 4);   // n_links
  CHECK(reg::params::kFields[2].get(params) == 12);  // dac_bits
  CHECK(b.rd(reg::sizes::kOffset) == ((8u << 16) | 20u));
  CHECK(b.rd(reg::status::kOffset) == 0);
  CHECK(b.rd(reg::dac_min::kOffset) == reg::dac_min::kReset);
  CHECK(b.rd(reg::dac_max::kOffset) == 4095);
  CHECK(b.rd(reg::dac_update_cycles::kOffset) == kUpdate);  // parameter-overridden resets
  CHECK(b.rd(reg::settle_cycles::kOffset) == kSettle);
  CHECK(b.rd(reg::pd_timeout::kOffset) == 32);
  CHECK(b.rd(reg::verify_min_dbm::kOffset) == 0xFC18);  // -10.00 dBm
  CHECK(b.rd(reg::irq_mask::kOffset) == reg::irq_mask::kReset);
  CHECK(b.rd(reg::watchdog_timeout::kOffset) == 0);
  CHECK_FALSE(b.m.irq_o);
  CHECK_FALSE(b.m.safe_o);
  CHECK(b.rd(reg::safe_code::kOffset) == reg::safe_code::kReset);
  CHECK(b.rd(reg::write_total::kOffset) == 0);
  CHECK(b.dac_total == 0);  // no element written out of reset

  // rw round trip, every configuration register
  b.wr(reg::settle_cycles::kOffset, 123456);
  CHECK(b.rd(reg::settle_cycles::kOffset) == 123456);
  const std::pair<uint32_t, uint32_t> rw[] = {
      {reg::dac_min::kOffset, 17},        {reg::dac_max::kOffset, 4000},         {reg::safe_code::kOffset, 2048},
      {reg::dac_update_cycles::kOffset, 9}, {reg::pd_timeout::kOffset, 77},     {reg::verify_min_dbm::kOffset, 0xFB00},
      {reg::irq_mask::kOffset, 0x5},      {reg::watchdog_timeout::kOffset, 0}};
  for (auto [addr, v] : rw) {
    INFO(addr);
    b.wr(addr, v);
    CHECK(b.rd(addr) == v);
  }
  b.wr(reg::dac_min::kOffset, reg::dac_min::kReset);
  b.wr(reg::dac_max::kOffset, 4095);
  b.wr(reg::safe_code::kOffset, reg::safe_code::kReset);
  b.wr(reg::dac_update_cycles::kOffset, kUpdate);
  b.wr(reg::pd_timeout::kOffset, 32);
  b.wr(reg::verify_min_dbm::kOffset, 0xFC18);
  b.wr(reg::irq_mask::kOffset, reg::irq_mask::kReset);
  // ro: SLVERR and unchanged
  CHECK(b.write_resp(reg::id::kOffset, 0) == kSlverr);
  CHECK(b.rd(reg::id::kOffset) == reg::id::kReset);
  CHECK(b.write_resp(reg::active_dac::addr(0), 5) == kSlverr);
  CHECK(b.write_resp(reg::status::kOffset, 0xFFFF) == kSlverr);
  // unmapped, and windows past the parameters
  CHECK(b.read_resp(0x004C).first == kSlverr);
  CHECK(b.read_resp(0x004C).second == 0);  // an error read returns no data
  CHECK(b.write_resp(0x004C, 1) == kSlverr);
  CHECK(b.read_resp(0xFFFC).first == kSlverr);
  CHECK(b.read_resp(reg::staged_map::addr(kPorts)).first == kSlverr);
  CHECK(b.read_resp(0x8000 | reg::status::kOffset).first == kSlverr);  // all 16 address bits decoded
  CHECK(b.write_resp(0x8000 | reg::commit::kOffset, 1) == kSlverr);
  CHECK(b.write_resp(reg::staged_map::addr(kPorts), 1) == kSlverr);
  CHECK(b.read_resp(reg::staged_dac::addr(kElems)).first == kSlverr);
  CHECK(b.read_resp(reg::active_dac::addr(kElems)).first == kSlverr);
  CHECK(b.read_resp(reg::link_status::addr(4)).first == kSlverr);
  CHECK(b.read_resp(reg::staged_map::addr(kPorts - 1)).first == kOkay);
  // DAC codes past DAC_BITS
  CHECK(b.write_resp(reg::dac_min::kOffset, 4096) == kSlverr);
  CHECK(b.write_resp(reg::dac_max::kOffset, 4096) == kSlverr);
  CHECK(b.write_resp(reg::safe_code::kOffset, 0x1000) == kSlverr);
  CHECK(b.rd(reg::dac_max::kOffset) == 4095);
  CHECK(b.rd(reg::safe_code::kOffset) == reg::safe_code::kReset);
  CHECK(b.write_resp(reg::staged_dac::addr(3), 0x1000) == kSlverr);
  CHECK(b.rd(reg::staged_dac::addr(3)) == 0);
  // wo reads give 0
  CHECK(b.rd(reg::commit::kOffset) == 0);

  // scratch: every word, then byte strobes
  for (uint32_t i = 0; i < reg::scratch::kCount; ++i) b.wr(reg::scratch::addr(i), 0x9E3779B9u * (i + 1));
  for (uint32_t i = 0; i < reg::scratch::kCount; ++i) {
    INFO(i);
    CHECK(b.rd(reg::scratch::addr(i)) == 0x9E3779B9u * (i + 1));
  }
  b.wr(reg::scratch::addr(5), 0x11223344);
  CHECK(b.write_resp(reg::scratch::addr(5), 0xAABBCCDD, 0x2) == kOkay);
  CHECK(b.rd(reg::scratch::addr(5)) == 0x1122CC44);
  CHECK(b.write_resp(reg::staged_dac::addr(2), 0x123, 0x1) == kOkay);  // table entries: whole words
  CHECK(b.rd(reg::staged_dac::addr(2)) == 0x123);
  b.wr(reg::settle_cycles::kOffset, 0x00000032);
  CHECK(b.write_resp(reg::settle_cycles::kOffset, 0x0000AB00, 0x2) == kOkay);
  CHECK(b.rd(reg::settle_cycles::kOffset) == 0xAB32);

  // time: free running, TIME_LO latches TIME_HI
  uint32_t t0 = b.rd(reg::time_lo::kOffset);
  b.run(100);
  uint32_t t1 = b.rd(reg::time_lo::kOffset);
  CHECK(t1 - t0 >= 100);
  CHECK(t1 - t0 < 110);
  CHECK(t1 <= b.cycle);
  CHECK(b.rd(reg::time_hi::kOffset) == 0);
}

TEST_CASE("ocs: AXI4-Lite: a read and a write offered together: the write goes first, the read sees it") {
  Small b;
  b.m.s_axil_awaddr = reg::scratch::addr(3);
  b.m.s_axil_wdata = 0x5A5A0001;
  b.m.s_axil_wstrb = 0xF;
  b.m.s_axil_awvalid = b.m.s_axil_wvalid = 1;
  b.m.s_axil_araddr = reg::scratch::addr(3);
  b.m.s_axil_arvalid = 1;
  b.m.s_axil_bready = b.m.s_axil_rready = 0;
  b.m.eval();
  CHECK(b.m.s_axil_awready);
  CHECK(b.m.s_axil_wready);
  CHECK_FALSE(b.m.s_axil_arready);
  b.tick();
  b.m.s_axil_awvalid = b.m.s_axil_wvalid = 0;
  b.m.eval();
  CHECK(b.m.s_axil_bvalid);
  CHECK(b.m.s_axil_bresp == kOkay);
  CHECK(b.m.s_axil_arready);
  b.tick();
  b.m.s_axil_arvalid = 0;
  CHECK(b.m.s_axil_rvalid);
  CHECK(b.m.s_axil_rdata == 0x5A5A0001);
  // responses are held until taken
  b.run(5);
  CHECK(b.m.s_axil_bvalid);
  CHECK(b.m.s_axil_rvalid);
  CHECK(b.m.s_axil_rdata == 0x5A5A0001);
  b.m.s_axil_bready = b.m.s_axil_rready = 1;
  b.tick();
  CHECK_FALSE(b.m.s_axil_bvalid);
  CHECK_FALSE(b.m.s_axil_rvalid);
  // a second write is not accepted while its response is pending
  b.m.s_axil_bready = 0;
  CHECK(b.write_resp(reg::scratch::addr(4), 1) == kOkay);
}

TEST_CASE("ocs: AXI4-Lite: a write address without its data, or data without an address, is not taken") {
  Small b;
  CHECK(b.rd(reg::scratch::addr(5)) == 0);
  b.m.s_axil_awaddr = reg::scratch::addr(5);
  b.m.s_axil_wdata = 0xC0FFEE01;
  b.m.s_axil_wstrb = 0xF;
  b.m.s_axil_bready = 1;
  // The address alone, then the data alone, for a few cycles each: nothing accepted, no
  // response, nothing written.
  for (auto* half : {&b.m.s_axil_awvalid, &b.m.s_axil_wvalid}) {
    *half = 1;
    for (int i = 0; i < 4; ++i) {
      b.m.eval();
      CHECK_FALSE(b.m.s_axil_awready);
      CHECK_FALSE(b.m.s_axil_wready);
      b.tick();
      CHECK_FALSE(b.m.s_axil_bvalid);
    }
    *half = 0;
  }
  b.m.s_axil_bready = 0;
  CHECK(b.rd(reg::scratch::addr(5)) == 0);
  // Both together: taken at once, written once.
  CHECK(b.write_resp(reg::scratch::addr(5), 0xC0FFEE02) == kOkay);
  CHECK(b.rd(reg::scratch::addr(5)) == 0xC0FFEE02);
}

TEST_CASE("ocs: every rejected input leaves the active tables untouched and is reported") {
  Small b;
  commit_baseline(b);
  auto dac0 = b.active_dac();
  auto map0 = b.active_map();
  struct Case {
    const char* what;
    Error err;
    int index;
  };
  const Case cases[] = {{"duplicate target", Error::DupTarget, 5},
                        {"target out of range", Error::TargetRange, 2},
                        {"code above DAC_MAX", Error::DacRange, 11},
                        {"code below DAC_MIN", Error::DacRange, 5}};
  uint32_t gen = 2;
  for (const Case& c : cases) {
    INFO(c.what);
    b.stage_full_map();
    for (int e = 0; e < 5; ++e) b.stage_dac(e, 1000 + e);
    b.stage_dac(11, 0);
    b.wr(reg::dac_min::kOffset, 0);
    b.wr(reg::dac_max::kOffset, 3000);
    b.stage_dac(7, 2000);  // a legal change that must not be written either
    switch (c.err) {
      case Error::DupTarget: b.stage_map(5, kPorts - 1 - 1); break;      // port 1's target again
      case Error::TargetRange: b.stage_map(2, kPorts); break;            // target 8 of 8 ports
      default:
        if (c.index == 11) b.stage_dac(11, 3001);
        else b.wr(reg::dac_min::kOffset, 1);                            // element 5 holds 0
    }
    b.dac.clear();
    b.wr(reg::commit::kOffset, gen);
    REQUIRE(b.wait_idle());
    CHECK(b.dac.empty());
    CHECK(b.pd_reqs.empty());
    CHECK(b.last_err() == c.err);
    uint32_t err = b.rd(reg::error::kOffset);
    CHECK(static_cast<Error>(err & reg::error::kCodeMask) == c.err);
    CHECK(reg::error::kFields[1].get(err) == static_cast<uint32_t>(c.index));
    CHECK(reg::error::kFields[2].get(err) == gen);
    CHECK(b.active_gen() == 1);
    CHECK(b.active_dac() == dac0);
    CHECK(b.active_map() == map0);
    auto ev = b.drain_events();
    REQUIRE(ev.size() == 2);
    CHECK(ev[0].type() == Event::CommitStart);
    CHECK(ev[1].type() == Event::CommitRejected);
    CHECK(static_cast<Error>(ev[1].code()) == c.err);
    CHECK(ev[1].index() == static_cast<uint32_t>(c.index));
    CHECK(ev[1].data() == gen);
    CHECK((b.rd(reg::irq_status::kOffset) & reg::irq_status::kCommitFailMask) != 0);
    CHECK(b.m.irq_o);
    b.wr(reg::irq_status::kOffset, 0x1F);
    CHECK_FALSE(b.m.irq_o);
    b.stage_map(5, kPorts - 1 - 5);
    b.stage_map(2, kPorts - 1 - 2);
    ++gen;
  }
}

TEST_CASE("ocs: committing the active generation again writes nothing") {
  Small b;
  commit_baseline(b, 7);
  b.stage_dac(9, 2222);  // staged differs, but the generation is the active one
  b.wr(reg::commit::kOffset, 7);
  REQUIRE(b.wait_idle());
  b.run(200);
  CHECK(b.dac.empty());
  CHECK(b.pd_reqs.empty());
  CHECK(b.rd(reg::active_dac::addr(9)) == 0);
  CHECK(b.active_gen() == 7);
  auto ev = b.drain_events();
  REQUIRE(ev.size() == 1);
  CHECK(ev[0].type() == Event::CommitNoop);
  CHECK(ev[0].data() == 7);
  CHECK(ev[0].index() == 0);
  CHECK(ev[0].code() == 0);
  CHECK((b.rd(reg::irq_status::kOffset) & reg::irq_status::kCommitDoneMask) != 0);
  // a new generation does write it
  b.commit(8);
  REQUIRE(b.dac.size() == 1);
  CHECK(b.dac[0].elem == 9);
  CHECK(b.dac[0].code == 2222);
}

TEST_CASE("ocs: only changed elements are written, one per update slot; settle is respected; pass activates") {
  Small b;
  commit_baseline(b);
  uint32_t gen = 2;
  for (int update : {kUpdate, 11, 1, 0}) {
    INFO("update " << update);
    const int slot = std::max(update, 1);  // 0 acts as 1 (docs/ocs-controller.md)
    b.wr(reg::dac_update_cycles::kOffset, static_cast<uint32_t>(update));
    b.dac.clear();
    b.pd_reqs.clear();
    int base = 100 * static_cast<int>(gen);
    b.stage_dac(3, base + 3);
    b.stage_dac(4, 1004);  // unchanged value written again: not a change
    b.stage_dac(7, base + 7);
    b.stage_dac(8, base + 8);
    b.stage_dac(19, base + 19);
    b.commit(gen);
    CHECK(b.last_err() == Error::None);
    CHECK(b.active_gen() == gen);
    REQUIRE(b.dac.size() == 4);
    const int elems[] = {3, 7, 8, 19};
    for (int i = 0; i < 4; ++i) {
      CHECK(b.dac[i].elem == elems[i]);
      CHECK(b.dac[i].code == base + elems[i]);
      if (i) CHECK(b.dac[i].cycle - b.dac[i - 1].cycle >= static_cast<uint64_t>(slot));
    }
    CHECK(b.dac[2].cycle - b.dac[1].cycle == static_cast<uint64_t>(slot));  // 7 and 8: back to back slots
    CHECK(b.rd(reg::write_count::kOffset) == 4);
    // settle: the first photodiode request comes SETTLE_CYCLES after the last write, plus the scan
    REQUIRE(b.pd_reqs.size() == static_cast<size_t>(kPorts));
    uint64_t gap = b.pd_reqs[0].first - b.dac.back().cycle;
    CHECK(gap >= static_cast<uint64_t>(kSettle));
    CHECK(gap <= static_cast<uint64_t>(kSettle + 8));
    // verify read each valid entry's target port, in entry order
    for (int p = 0; p < kPorts; ++p) CHECK(b.pd_reqs[p].second == kPorts - 1 - p);
    auto act = b.active_dac();
    CHECK(act[3] == static_cast<uint32_t>(base + 3));
    CHECK(act[19] == static_cast<uint32_t>(base + 19));
    CHECK(act[4] == 1004);
    auto ev = b.drain_events();
    CHECK(Small::types(ev) == std::vector<Event>{Event::CommitStart, Event::ProgramDone, Event::SettleDone,
                                                 Event::VerifyPass});
    CHECK(ev[1].index() == 4);
    for (auto& e : ev) CHECK(e.code() == 0);
    for (size_t i : {0u, 2u, 3u}) CHECK(ev[i].index() == 0);  // a field the type does not name is 0
    for (auto& e : ev) CHECK(e.data() == gen);
    CHECK(ev[2].ts - ev[1].ts == static_cast<uint64_t>(kSettle) + 1);  // 101 at 100 (docs/ocs-controller.md)
    ++gen;
  }
  // a longer settle moves verify out accordingly
  b.wr(reg::settle_cycles::kOffset, 300);
  b.dac.clear();
  b.pd_reqs.clear();
  b.stage_dac(12, 3333);
  b.commit(50);
  REQUIRE(b.dac.size() == 1);
  REQUIRE_FALSE(b.pd_reqs.empty());
  CHECK(b.pd_reqs[0].first - b.dac[0].cycle >= 300);
  CHECK(b.pd_reqs[0].first - b.dac[0].cycle <= 320);
  // the port map became active too
  CHECK(b.rd(reg::active_map::addr(0)) == (reg::active_map::kValidMask | (kPorts - 1)));
}

// Validate takes max(N_PORTS, N_ELEMS) cycles, one entry and one code each (docs/ocs-controller.md).
TEST_CASE("ocs: validate checks every entry in max(N_PORTS, N_ELEMS) cycles, the last one too") {
  Small b;
  commit_baseline(b);
  b.stage_map(0, kPorts - 2);  // a map change only (ports 0 and 1 swap targets): nothing to program
  b.stage_map(1, kPorts - 1);
  b.commit(2);
  REQUIRE(b.last_err() == Error::None);
  auto ev = b.drain_events();
  REQUIRE(Small::types(ev).size() >= 2);
  REQUIRE(ev[0].type() == Event::CommitStart);
  REQUIRE(ev[1].type() == Event::ProgramDone);
  // Validate: one cycle per entry, max(N_PORTS, N_ELEMS) = 20; program scans the 20 elements; one
  // more to leave (289 at the default 144 elements, docs/ocs-controller.md).
  CHECK(ev[1].ts - ev[0].ts == 2 * static_cast<uint64_t>(kElems) + 1);
  // A changed element within the scan costs no more.
  b.stage_map(0, kPorts - 1);
  b.stage_map(1, kPorts - 2);
  b.stage_dac(kElems - 1, 77);
  b.commit(3);
  REQUIRE(b.last_err() == Error::None);
  ev = b.drain_events();
  REQUIRE(ev[1].type() == Event::ProgramDone);
  CHECK(ev[1].ts - ev[0].ts == 2 * static_cast<uint64_t>(kElems) + 1);
  SUBCASE("an error in the last element is found") {
    b.stage_dac(kElems - 1, 4095);
    b.wr(reg::dac_max::kOffset, 4000);
    b.commit(4);
    CHECK(b.last_err() == Error::DacRange);
    CHECK(reg::error::kFields[1].get(b.rd(reg::error::kOffset)) == static_cast<uint32_t>(kElems - 1));
  }
}

TEST_CASE("ocs: verify failure rolls back the changed elements and reports") {
  Small b;
  commit_baseline(b);
  auto dac0 = b.active_dac();
  b.stage_dac(2, 2002);
  b.stage_dac(6, 2006);
  b.stage_dac(15, 2015);
  b.stage_map(3, 0, false);  // entry 3 unused: its target (port 4) is not checked
  b.pd_dbm[4] = -3000;
  b.pd_dbm[5] = -1500;  // entry 2 -> port 5 fails
  b.commit(2);
  CHECK(b.last_err() == Error::VerifyLow);
  CHECK(b.active_gen() == 1);
  CHECK(b.active_dac() == dac0);
  uint32_t vf = b.rd(reg::verify_fail::kOffset);
  CHECK(reg::verify_fail::kFields[0].get(vf) == 5);
  CHECK(static_cast<int16_t>(reg::verify_fail::kFields[1].get(vf)) == -1500);
  CHECK(vf == ((static_cast<uint32_t>(static_cast<uint16_t>(-1500)) << 16) | 5u));  // nothing between the fields
  uint32_t err = b.rd(reg::error::kOffset);
  CHECK(reg::error::kFields[1].get(err) == 2);
  CHECK(err == ((2u << 16) | (2u << 8) | static_cast<uint32_t>(Error::VerifyLow)));  // {gen, index, 0, code}
  // program wrote 3, rollback re-wrote the same 3 with their old codes
  REQUIRE(b.dac.size() == 6);
  for (int i = 0; i < 3; ++i) {
    CHECK(b.dac[3 + i].elem == b.dac[i].elem);
    CHECK(b.dac[3 + i].code == static_cast<int>(dac0[b.dac[i].elem]));
  }
  for (int e = 0; e < kElems; ++e) CHECK(b.mesh[e] == static_cast<int>(dac0[e]));
  CHECK(b.rd(reg::write_count::kOffset) == ((3u << 16) | 3u));
  CHECK(b.rd(reg::write_total::kOffset) == b.dac_total);  // the baseline's 5, then 3 + 3
  CHECK(b.dac_total == 11);
  auto ev = b.drain_events();
  CHECK(Small::types(ev) == std::vector<Event>{Event::CommitStart, Event::ProgramDone, Event::SettleDone,
                                               Event::VerifyFail, Event::RollbackDone});
  CHECK(static_cast<Error>(ev[3].code()) == Error::VerifyLow);
  CHECK(ev[3].index() == 5);
  CHECK(ev[4].index() == 3);
  CHECK(ev[4].code() == 0);
  CHECK(ev[4].ts - ev[3].ts >= static_cast<uint64_t>(kSettle));  // rollback settles too
  // ... exactly as long as the commit did after its last write
  CHECK(ev[4].ts - b.dac[5].cycle == ev[2].ts - b.dac[2].cycle);
  CHECK((b.rd(reg::irq_status::kOffset) & reg::irq_status::kCommitFailMask) != 0);
  CHECK((b.rd(reg::irq_status::kOffset) & reg::irq_status::kCommitDoneMask) == 0);

  SUBCASE("a silent photodiode times out") {
    b.pd_dbm[5] = 0;
    b.pd_answers = false;
    b.dac.clear();
    b.commit(3);
    CHECK(b.last_err() == Error::PdTimeout);
    CHECK(b.dac.size() == 6);
    CHECK(b.active_gen() == 1);
  }
  SUBCASE("the entry after an unused one is verified too") {
    b.pd_dbm[5] = -999;   // entry 2's port: fine now
    b.pd_dbm[3] = -2000;  // entry 4 (after the unused entry 3) -> port 3: dark
    b.commit(3);
    CHECK(b.last_err() == Error::VerifyLow);
    CHECK(reg::verify_fail::kFields[0].get(b.rd(reg::verify_fail::kOffset)) == 3);
  }
  SUBCASE("a reading exactly at VERIFY_MIN_DBM passes, one below fails") {
    b.pd_dbm[5] = -1000;  // -10.00 dBm, the reset threshold
    b.commit(3);
    CHECK(b.last_err() == Error::None);
    CHECK(b.active_gen() == 3);
    b.stage_dac(2, 1999);
    b.pd_dbm[5] = -1001;
    b.commit(4);
    CHECK(b.last_err() == Error::VerifyLow);
    CHECK(b.active_gen() == 3);
  }
  SUBCASE("and passes once the light is there") {
    b.pd_dbm[5] = -999;
    b.commit(3);
    CHECK(b.last_err() == Error::None);
    CHECK(b.active_gen() == 3);
    CHECK(b.rd(reg::active_dac::addr(15)) == 2015);
  }
}

// Written for the mutation score (docs/coverage.md), as the cases below.
TEST_CASE("ocs: rollback restores every changed element, neighbours and the last element included") {
  Small b;
  commit_baseline(b);
  auto dac0 = b.active_dac();
  const int changed[] = {3, 4, 7, 8, kElems - 1};  // two pairs of neighbours, and the last
  for (int e : changed) b.stage_dac(e, 3000 + e);
  b.pd_dbm[kPorts - 1] = -3000;  // entry 0's port: verify fails
  b.commit(2);
  REQUIRE(b.last_err() == Error::VerifyLow);
  REQUIRE(b.dac.size() == 10);  // 5 programmed, 5 rolled back, in element order
  for (int i = 0; i < 5; ++i) {
    CHECK(b.dac[i].elem == changed[i]);
    CHECK(b.dac[5 + i].elem == changed[i]);
    CHECK(b.dac[5 + i].code == static_cast<int>(dac0[changed[i]]));
  }
  for (int e = 0; e < kElems; ++e) CHECK(b.mesh[e] == static_cast<int>(dac0[e]));
  CHECK(b.active_dac() == dac0);
}

// PD_TIMEOUT cycles without an answer fail verify: the time from the request to the failure
// grows by exactly the register's change.
TEST_CASE("ocs: the photodiode timeout is PD_TIMEOUT cycles to the cycle") {
  std::vector<uint64_t> waits;
  for (uint32_t timeout : {32u, 10u, 11u}) {
    INFO("timeout " << timeout);
    Small b;
    commit_baseline(b);
    b.wr(reg::pd_timeout::kOffset, timeout);
    b.stage_dac(2, 2002);
    b.pd_answers = false;
    b.commit(2);
    REQUIRE(b.last_err() == Error::PdTimeout);
    REQUIRE(b.pd_reqs.size() == 1);  // the first entry's request, never answered
    auto ev = b.drain_events();
    auto fail = std::find_if(ev.begin(), ev.end(), [](const Ev& e) { return e.type() == Event::VerifyFail; });
    REQUIRE(fail != ev.end());
    waits.push_back(fail->ts - b.pd_reqs[0].first);
  }
  CHECK(waits[0] - waits[1] == 22);
  CHECK(waits[2] - waits[1] == 1);
}

TEST_CASE("ocs: an answer PD_TIMEOUT cycles after the request is taken, one a cycle later is a timeout") {
  for (int timeout : {32, 10}) {
    for (int late : {0, 1}) {
      INFO("timeout " << timeout << " late " << late);
      Small b;
      commit_baseline(b);
      b.wr(reg::pd_timeout::kOffset, static_cast<uint32_t>(timeout));
      b.pd_latency = timeout + late;  // cycles from pd_req_o to pd_valid_i
      b.stage_dac(2, 2002);
      b.commit(2);
      CHECK(b.last_err() == (late ? Error::PdTimeout : Error::None));
    }
  }
}

// STATUS.busy: high from COMMIT to the end of the commit, rollback and its settle included, and
// during the safe sweep; low in Idle and while holding safe (docs/ocs-controller.md).
TEST_CASE("ocs: STATUS.busy is high in every commit state, rollback's settle included, and in the safe sweep only") {
  Small b;
  commit_baseline(b);
  b.stage_dac(2, 2002);
  b.pd_dbm[kPorts - 1] = -3000;  // verify fails: rollback
  b.wr(reg::commit::kOffset, 2);
  std::set<State> seen;
  for (int i = 0; i < 400; ++i) {
    uint32_t st = b.rd(reg::status::kOffset);
    auto s = static_cast<State>(st & reg::status::kStateMask);
    if (s == State::Idle) break;
    seen.insert(s);
    INFO("state " << static_cast<int>(s));
    CHECK((st & reg::status::kBusyMask) != 0);
  }
  CHECK(seen.count(State::Rollback) == 1);
  REQUIRE(b.wait_idle());
  CHECK((b.rd(reg::status::kOffset) & reg::status::kBusyMask) == 0);
  // The rollback's settle: its last SETTLE_CYCLES cycles, after the last rollback write.
  b.dac.clear();
  b.wr(reg::settle_cycles::kOffset, 400);
  b.wr(reg::commit::kOffset, 3);
  int settling_reads = 0;
  for (int i = 0; i < 2000; ++i) {
    uint32_t st = b.rd(reg::status::kOffset);
    auto s = static_cast<State>(st & reg::status::kStateMask);
    if (s == State::Idle) break;
    CHECK((st & reg::status::kBusyMask) != 0);
    settling_reads += s == State::Rollback && b.dac.size() == 2;
  }
  CHECK(settling_reads > 10);
  // Safe: busy while the sweep writes the elements, not once it holds.
  b.wr(reg::watchdog_timeout::kOffset, 50);
  b.run(60);
  REQUIRE(b.m.safe_o);
  uint32_t st = b.rd(reg::status::kOffset);
  CHECK((st & reg::status::kSafeMask) != 0);
  CHECK((st & reg::status::kBusyMask) != 0);  // sweeping: N_ELEMS writes, one per update slot
  b.run(kElems * kUpdate + 10);
  st = b.rd(reg::status::kOffset);
  CHECK(static_cast<State>(st & reg::status::kStateMask) == State::Safe);
  CHECK((st & reg::status::kBusyMask) == 0);
}

TEST_CASE("ocs: event log order, timestamps, overflow marker and dropped count") {
  Small b;
  uint32_t t_before = b.rd(reg::time_lo::kOffset);
  b.stage_full_map();
  b.stage_dac(1, 500);
  b.wr(reg::commit::kOffset, 1);
  uint64_t commit_cycle = b.write_cycle;
  uint32_t t_commit = b.rd(reg::time_lo::kOffset);
  REQUIRE(b.wait_idle());
  auto ev = b.drain_events();
  REQUIRE(ev.size() == 4);
  CHECK(ev[0].ts == commit_cycle);
  CHECK(ev[0].ts > t_before);
  CHECK(ev[0].ts < t_commit);
  for (size_t i = 1; i < ev.size(); ++i) CHECK(ev[i].ts > ev[i - 1].ts);
  CHECK(b.rd(reg::event_info::kOffset) == 0);  // empty log reads 0
  CHECK(b.rd(reg::event_ts_lo::kOffset) == 0);

  // 10 link changes into an 8-entry log: 7 events, the overflow marker, 3 dropped
  for (int i = 0; i < 10; ++i) {
    b.links[1] = (i % 2) ? 1 : 2;
    b.run(3);
  }
  CHECK(b.rd(reg::event_count::kOffset) == kDepth);
  CHECK(b.rd(reg::event_dropped::kOffset) == 3);
  CHECK(b.rd(reg::event_dropped::kOffset) == 0);  // read clears
  ev = b.drain_events();
  REQUIRE(ev.size() == static_cast<size_t>(kDepth));
  for (int i = 0; i < 7; ++i) {
    CHECK(ev[i].type() == Event::LinkChange);
    CHECK(ev[i].index() == 1);
    CHECK(ev[i].code() == static_cast<uint32_t>((i % 2) ? 1 : 2));
    if (i) CHECK(ev[i].ts - ev[i - 1].ts == 3);
  }
  CHECK(ev[7].type() == Event::Overflow);
  CHECK(ev[7].code() == static_cast<uint32_t>(Event::LinkChange));
  CHECK(ev[7].index() == 0);  // the marker carries only the first lost event's type
  CHECK(ev[7].data() == 0);
  CHECK(ev[7].ts - ev[6].ts == 3);
  // room again: logging resumes
  b.links[1] = 6;
  b.run(3);
  ev = b.drain_events();
  REQUIRE(ev.size() == 1);
  CHECK(ev[0].type() == Event::LinkChange);
  CHECK(ev[0].code() == 6);
  CHECK(b.rd(reg::event_dropped::kOffset) == 0);
}

// One link event waits per link; the log takes one a cycle, lowest link first. A link that changes
// again while its last change still waits loses the new change, and each loss is counted.
TEST_CASE("ocs: a link changing again before its last change was logged: dropped and counted one by one") {
  Small b;
  b.drain_events();
  b.rd(reg::event_dropped::kOffset);  // read clears
  for (size_t i = 0; i < 4; ++i) b.links[i] = 1;
  b.tick();
  b.links[3] = 2;  // link 3's first change waits behind links 0, 1 and 2
  b.tick();
  b.links[3] = 3;
  b.tick();
  b.run(10);
  CHECK(b.rd(reg::event_dropped::kOffset) == 2);
  auto ev = b.drain_events();
  REQUIRE(ev.size() == 4);
  for (uint32_t i = 0; i < 4; ++i) {
    CHECK(ev[i].type() == Event::LinkChange);
    CHECK(ev[i].index() == i);
    CHECK(ev[i].code() == 1);  // link 3's later changes are the ones lost
  }
  CHECK(ev[3].ts == ev[0].ts);  // stamped when the change was seen, not when logged
}

TEST_CASE("ocs: link changes are logged with reason; link down and up raise interrupts; mask and w1c") {
  Small b;
  b.wr(reg::irq_mask::kOffset, 0x20);
  b.links[2] = static_cast<int>(LinkState::Active);
  b.run(2);
  CHECK(b.m.irq_o);
  CHECK((b.rd(reg::irq_status::kOffset) & 0x1F) == reg::irq_status::kLinkUpMask);
  b.wr(reg::irq_status::kOffset, reg::irq_status::kLinkUpMask);
  CHECK_FALSE(b.m.irq_o);
  b.links[2] = static_cast<int>(LinkState::Retrain);
  b.reasons[2] = static_cast<int>(Reason::LossOfSignal);
  b.run(2);
  CHECK(b.m.irq_o);
  CHECK((b.rd(reg::irq_status::kOffset) & 0x1F) == reg::irq_status::kLinkDownMask);
  // Above its six fields (five sticky bits and the log's level) IRQ_STATUS reads zero, with the
  // log holding events and a sticky bit set.
  CHECK(b.rd(reg::event_count::kOffset) != 0);
  CHECK((b.rd(reg::irq_status::kOffset) >> 6) == 0);
  CHECK(b.rd(reg::link_status::addr(2)) == ((static_cast<uint32_t>(Reason::LossOfSignal) << 4) |
                                             static_cast<uint32_t>(LinkState::Retrain)));
  // mask hides it, the status stays
  b.wr(reg::irq_mask::kOffset, 0x20 | reg::irq_status::kLinkDownMask);
  CHECK_FALSE(b.m.irq_o);
  CHECK((b.rd(reg::irq_status::kOffset) & reg::irq_status::kLinkDownMask) != 0);
  b.wr(reg::irq_mask::kOffset, 0x20);
  CHECK(b.m.irq_o);
  b.wr(reg::irq_status::kOffset, reg::irq_status::kLinkUpMask);  // other bit: no effect
  CHECK(b.m.irq_o);
  b.wr(reg::irq_status::kOffset, reg::irq_status::kLinkDownMask);
  CHECK_FALSE(b.m.irq_o);
  // a reason-only change is logged too, but is neither up nor down
  b.reasons[2] = static_cast<int>(Reason::HeartbeatTimeout);
  b.run(2);
  CHECK_FALSE(b.m.irq_o);
  CHECK((b.rd(reg::link_status::addr(1)) >> 8) == 0);  // nothing of link 2's (odd) reason leaks in
  // three links in the same cycle: all logged with the same timestamp
  b.links[0] = 1;
  b.links[1] = 1;
  b.links[3] = 8;
  b.reasons[3] = static_cast<int>(Reason::WrongPeer);
  b.run(2);
  CHECK(b.rd(reg::link_status::addr(3)) == ((static_cast<uint32_t>(Reason::WrongPeer) << 4) | 8u));  // all 4 reason bits
  // event_log level interrupt
  b.wr(reg::irq_mask::kOffset, 0);
  CHECK(b.m.irq_o);
  b.wr(reg::irq_status::kOffset, reg::irq_status::kEventLogMask);  // level: w1c does not clear it
  CHECK(b.m.irq_o);
  auto ev = b.drain_events();
  CHECK_FALSE(b.m.irq_o);
  REQUIRE(ev.size() == 6);
  CHECK(ev[0].index() == 2);
  CHECK(ev[0].code() == static_cast<uint32_t>(LinkState::Active));
  CHECK((ev[0].data() & 0xF) == static_cast<uint32_t>(Reason::None));
  CHECK(ev[1].code() == static_cast<uint32_t>(LinkState::Retrain));
  CHECK((ev[1].data() & 0xF) == static_cast<uint32_t>(Reason::LossOfSignal));
  CHECK((ev[1].data() >> 4) == static_cast<uint32_t>(LinkState::Active));  // previous state
  CHECK(ev[2].code() == static_cast<uint32_t>(LinkState::Retrain));
  CHECK((ev[2].data() & 0xF) == static_cast<uint32_t>(Reason::HeartbeatTimeout));
  CHECK(ev[3].index() == 0);
  CHECK(ev[4].index() == 1);
  CHECK(ev[5].index() == 3);
  CHECK((ev[5].data() & 0xF) == static_cast<uint32_t>(Reason::WrongPeer));
  CHECK(ev[3].ts == ev[4].ts);
  CHECK(ev[4].ts == ev[5].ts);
}

TEST_CASE("ocs: a mapped link held Disabled for a wrong peer retrains when a commit ends, passed or rolled back") {
  Small b;
  for (int i = 0; i < 4; ++i) b.links[static_cast<size_t>(i)] = static_cast<int>(LinkState::Active);
  commit_lane_baseline(b);  // every link's circuit to a lane: all four check their peer
  // Link 0 trained to a stranger while elements moved; link 2 is disabled by its enable; links
  // 1 and 3 are up. Their circuits stay as they are in every commit below.
  b.links[0] = static_cast<int>(LinkState::Disabled);
  b.reasons[0] = static_cast<int>(Reason::WrongPeer);
  b.links[2] = static_cast<int>(LinkState::Disabled);
  b.reasons[2] = static_cast<int>(Reason::AdminDisabled);
  b.run(5);
  b.retrain_seen = 0;
  b.run(200);
  CHECK(b.retrain_seen == 0);  // nothing happens until a commit ends
  b.stage_dac(7, 1234);
  b.commit(2);
  CHECK(b.active_gen() == 2);
  CHECK(b.retrain_seen == 0x1);
  // A rollback moves the elements back: the same.
  b.retrain_seen = 0;
  b.pd_dbm[3] = -3000;
  b.stage_dac(8, 1500);
  b.commit(3);
  CHECK(b.last_err() == Error::VerifyLow);
  CHECK(b.active_gen() == 2);
  CHECK(b.retrain_seen == 0x1);
  // A link no longer held for a wrong peer is left alone.
  b.links[0] = static_cast<int>(LinkState::Active);
  b.reasons[0] = static_cast<int>(Reason::None);
  b.pd_dbm[3] = 0;
  b.retrain_seen = 0;
  b.commit(4);
  CHECK(b.active_gen() == 4);
  CHECK(b.retrain_seen == 0);
}

// Link i's peer is the lane its active entry's target port belongs to: XPU target / LANES, lane
// target % LANES (LANES = 4).
TEST_CASE("ocs: each mapped link expects the XPU and lane of its target port") {
  Small b;
  commit_lane_baseline(b);  // links 0..3 -> ports 3, 2, 1, 0
  for (int link = 0; link < 4; ++link) {
    INFO("link " << link);
    const uint32_t target = static_cast<uint32_t>(3 - link);
    CHECK(((static_cast<uint32_t>(b.m.link_expect_xpu_o) >> (8 * link)) & 0xFF) == target / 4);
    CHECK(((static_cast<uint32_t>(b.m.link_expect_lane_o) >> (8 * link)) & 0xFF) == target % 4);
  }
  b.stage_map(1, 0);  // link 1 -> port 0: XPU 0, lane 0 (link 3 takes port 2)
  b.stage_map(3, 2);
  CHECK(b.rd(reg::staged_map::addr(1)) == (reg::staged_map::kValidMask | 0u));  // read back whole, valid bit too
  b.commit(2);
  REQUIRE(b.last_err() == Error::None);
  CHECK(((static_cast<uint32_t>(b.m.link_expect_xpu_o) >> 8) & 0xFF) == 0);
  CHECK(((static_cast<uint32_t>(b.m.link_expect_lane_o) >> 8) & 0xFF) == 0);
  CHECK(((static_cast<uint32_t>(b.m.link_expect_lane_o) >> 24) & 0xFF) == 2);
}

// docs/ocs-controller.md: XPU numbers are the rack's, the board's straps (xpu_base_i) plus its own
// XPU. Both ways: a link whose circuit ends at a lane expects base + that lane's XPU; a link whose
// circuit leaves through a fibre port still expects no one, whatever the base.
TEST_CASE("ocs: the board's XPU base strap adds to every mapped link's expected XPU, never to no one") {
  Small b;
  b.m.xpu_base_i = 5;
  commit_lane_baseline(b);  // links 0..3 -> ports 3, 2, 1, 0: XPU 0 of this board
  for (int link = 0; link < 4; ++link) {
    INFO("link " << link);
    const uint32_t target = static_cast<uint32_t>(3 - link);
    CHECK(((static_cast<uint32_t>(b.m.link_expect_xpu_o) >> (8 * link)) & 0xFF) == 5 + target / 4);
    CHECK(((static_cast<uint32_t>(b.m.link_expect_lane_o) >> (8 * link)) & 0xFF) == target % 4);
  }
  b.stage_map(0, 4);  // link 0 -> port 4, a fibre port (entry 7 takes port 3)
  b.stage_map(7, 3);
  b.commit(2);
  REQUIRE(b.last_err() == Error::None);
  CHECK((static_cast<uint32_t>(b.m.link_expect_xpu_o) & 0xFF) == 0xFF);
  CHECK(((static_cast<uint32_t>(b.m.link_expect_xpu_o) >> 8) & 0xFF) == 5);
}

// docs/ocs-controller.md: a circuit to a fibre port (at or beyond N_LINKS, 4 here) ends at a lane
// the board cannot name. Both ways: such a link checks no one and expects no one while idle, checks
// (no one) while a commit runs, and retrains when its circuit changes and when a commit ends; it
// does not retrain otherwise, and a link whose circuit ends at a lane does none of this.
TEST_CASE("ocs: a link whose circuit leaves through a fibre port checks no peer and retrains on a change, at a commit's end only when not Active") {
  Small b;
  for (int i = 0; i < 4; ++i) b.links[static_cast<size_t>(i)] = static_cast<int>(LinkState::Active);
  commit_lane_baseline(b);
  b.run(5);
  CHECK(b.m.link_check_o == 0xF);
  b.retrain_seen = 0;
  b.stage_map(0, 4);  // link 0 -> port 4, a fibre port (entry 7 takes port 3)
  b.stage_map(7, 3);
  b.commit(2);
  REQUIRE(b.last_err() == Error::None);
  b.run(2);
  CHECK(b.retrain_seen == 0x1);  // its circuit changed (and a commit ended); no other link's did
  CHECK(b.m.link_check_o == 0xE);  // idle: link 0 checks no one
  CHECK((static_cast<uint32_t>(b.m.link_expect_xpu_o) & 0xFF) == 0xFF);
  CHECK((static_cast<uint32_t>(b.m.link_expect_lane_o) & 0xFF) == 0xFF);
  // Nothing else happens while no commit ends.
  b.retrain_seen = 0;
  b.run(300);
  CHECK(b.retrain_seen == 0);
  // A commit that moves only elements: link 0 checks (no one) while it runs; Active, its circuit
  // unchanged, it does not retrain at the commit's end.
  b.stage_dac(9, 2222);
  b.wr(reg::commit::kOffset, 3);
  bool checked_while_busy = false;
  for (int i = 0; i < 2000 && !checked_while_busy; ++i) {
    b.tick();
    checked_while_busy = b.m.link_check_o == 0xF;
  }
  CHECK(checked_while_busy);
  CHECK((static_cast<uint32_t>(b.m.link_expect_xpu_o) & 0xFF) == 0xFF);
  REQUIRE(b.wait_idle());
  CHECK(b.active_gen() == 3);
  b.run(2);
  CHECK(b.retrain_seen == 0);  // every link up, no circuit changed
  CHECK(b.m.link_check_o == 0xE);
  // The same, with link 0 still training when the commit ends: it starts again.
  b.links[0] = static_cast<int>(LinkState::Ts2);
  b.retrain_seen = 0;
  b.stage_dac(9, 1111);
  b.wr(reg::commit::kOffset, 4);
  REQUIRE(b.wait_idle());
  CHECK(b.active_gen() == 4);
  b.run(2);
  CHECK(b.retrain_seen == 0x1);
}

TEST_CASE("ocs: while a commit moves the elements, an unmapped link expects no one; mapped links keep their peer") {
  Small b;
  commit_lane_baseline(b);
  b.stage_map(3, 0, false);  // link 3 loses its circuit
  b.commit(2);
  auto expect_xpu = [&](int link) { return (static_cast<uint32_t>(b.m.link_expect_xpu_o) >> (8 * link)) & 0xFF; };
  auto expect_lane = [&](int link) { return (static_cast<uint32_t>(b.m.link_expect_lane_o) >> (8 * link)) & 0xFF; };
  b.run(2);
  CHECK((b.m.link_check_o & 0x8) == 0);  // idle: unmapped links check nothing
  CHECK((b.m.link_check_o & 0x7) == 0x7);
  const uint32_t xpu0 = expect_xpu(0), lane0 = expect_lane(0);
  b.stage_dac(9, 2222);
  b.wr(reg::commit::kOffset, 3);
  int busy_cycles = 0;
  for (int i = 0; i < 2000 && b.m.link_check_o != 0x7; ++i) {
    REQUIRE(b.m.link_check_o == 0xF);  // link 3 checks its peer while the commit runs
    CHECK(expect_xpu(3) == 0xFF);      // ... against an identity no lane has
    CHECK(expect_lane(3) == 0xFF);
    CHECK(expect_xpu(0) == xpu0);      // a mapped link keeps expecting its own peer
    CHECK(expect_lane(0) == lane0);
    b.tick();
    ++busy_cycles;
  }
  CHECK(busy_cycles > kSettle);  // the whole commit: validate, program, settle, verify
  REQUIRE(b.wait_idle());
  CHECK(b.active_gen() == 3);
  CHECK(b.m.link_check_o == 0x7);
}

// LINK_HOLD (docs/ocs-controller.md): the host's placement across boards holds the links between
// its boards' commits. Each rule both ways: held, the links without a circuit or with one through a
// fibre check against no one and mapped lane circuits keep their peer, and nothing retrains;
// released, they retrain exactly as at a commit's end (the fibre link only when not Active); the
// watchdog's expiry releases it.
TEST_CASE("ocs: LINK_HOLD: links without a circuit or through a fibre expect no one until released; the release retrains them as a commit's end") {
  Small b;
  for (int i = 0; i < 4; ++i) b.links[static_cast<size_t>(i)] = static_cast<int>(LinkState::Active);
  commit_lane_baseline(b);
  b.stage_map(0, 4);         // link 0 -> a fibre port
  b.stage_map(7, 3);
  b.stage_map(3, 0, false);  // link 3 loses its circuit
  b.commit(2);
  REQUIRE(b.last_err() == Error::None);
  auto expect_xpu = [&](int link) { return (static_cast<uint32_t>(b.m.link_expect_xpu_o) >> (8 * link)) & 0xFF; };
  auto expect_lane = [&](int link) { return (static_cast<uint32_t>(b.m.link_expect_lane_o) >> (8 * link)) & 0xFF; };
  b.run(2);
  CHECK(b.m.link_check_o == 0x6);
  CHECK(b.rd(reg::link_hold::kOffset) == 0);
  const uint32_t xpu1 = expect_xpu(1), lane1 = expect_lane(1);
  REQUIRE(xpu1 != 0xFF);
  b.links[0] = static_cast<int>(LinkState::Ts2);  // the fibre link still training
  b.retrain_seen = 0;
  b.wr(reg::link_hold::kOffset, 1);
  b.run(2);
  CHECK(b.rd(reg::link_hold::kOffset) == 1);
  CHECK(b.m.link_check_o == 0xF);
  CHECK(expect_xpu(0) == 0xFF);
  CHECK(expect_lane(0) == 0xFF);
  CHECK(expect_xpu(3) == 0xFF);
  CHECK(expect_lane(3) == 0xFF);
  CHECK(expect_xpu(1) == xpu1);
  CHECK(expect_lane(1) == lane1);
  b.run(300);
  CHECK(b.retrain_seen == 0);  // holding retrains nothing
  CHECK(b.m.link_check_o == 0xF);
  // What an end (a commit's or the hold's) retrains, exactly once; the checks it leaves.
  auto retrained_once = [&](uint32_t links, uint32_t checked) {
    b.run(2);
    CHECK(b.retrain_seen == links);
    CHECK(b.m.link_check_o == checked);
    b.retrain_seen = 0;
    b.run(50);
    CHECK(b.retrain_seen == 0);
  };
  // A commit during the hold: its end retrains as always, and the hold goes on after it.
  b.stage_dac(9, 2222);
  b.wr(reg::commit::kOffset, 3);
  REQUIRE(b.wait_idle());
  retrained_once(0x9, 0xF);
  CHECK(b.rd(reg::link_hold::kOffset) == 1);  // the commit left the host's hold alone
  // Released: the unmapped link and the fibre link that is not Active retrain, once.
  b.wr(reg::link_hold::kOffset, 0);
  retrained_once(0x9, 0x6);
  // The other way: an Active fibre link keeps running through a hold and its release.
  b.links[0] = static_cast<int>(LinkState::Active);
  b.wr(reg::link_hold::kOffset, 1);
  b.run(5);
  b.wr(reg::link_hold::kOffset, 0);
  b.run(2);
  CHECK(b.retrain_seen == 0x8);
  // The watchdog's expiry ends a hold its host will not end.
  b.wr(reg::link_hold::kOffset, 1);
  b.retrain_seen = 0;
  b.wr(reg::watchdog_timeout::kOffset, 100);
  b.run(150);
  CHECK(b.m.safe_o);
  CHECK(b.rd(reg::link_hold::kOffset) == 0);
  CHECK((b.retrain_seen & 0x8) != 0);
}

TEST_CASE("ocs: watchdog expiry drives the safe state; only SAFE_CLEAR leaves it") {
  Small b;
  commit_baseline(b);
  b.wr(reg::safe_code::kOffset, 77);
  b.wr(reg::watchdog_timeout::kOffset, 100);
  for (int i = 0; i < 10; ++i) {
    b.run(60);
    b.wr(reg::watchdog_kick::kOffset, 0);
  }
  CHECK_FALSE(b.m.safe_o);
  CHECK(b.dac.empty());
  uint64_t kicked = b.write_cycle;
  b.run(150);
  REQUIRE(b.safe_seen != 0);
  CHECK(b.safe_seen == kicked + 100 + 1);  // expires 100 cycles after the kick; safe_o the cycle after
  b.run(kElems * kUpdate + 10);
  CHECK(b.m.safe_o);
  CHECK(b.state() == State::Safe);
  REQUIRE(b.dac.size() == static_cast<size_t>(kElems));
  for (int e = 0; e < kElems; ++e) {
    CHECK(b.dac[e].elem == e);
    CHECK(b.dac[e].code == 77);
    if (e) CHECK(b.dac[e].cycle - b.dac[e - 1].cycle == static_cast<uint64_t>(kUpdate));
  }
  CHECK(b.active_gen() == 0);
  CHECK(b.last_err() == Error::Watchdog);
  for (auto c : b.active_dac()) CHECK(c == 77);
  CHECK(b.rd(reg::active_map::addr(0)) == 0);
  CHECK((b.rd(reg::irq_status::kOffset) & reg::irq_status::kWatchdogMask) != 0);
  CHECK(b.m.irq_o);
  auto ev = b.drain_events();
  REQUIRE(ev.size() == 2);
  CHECK(ev[0].type() == Event::WatchdogExpired);
  CHECK(ev[0].ts == kicked + 100);
  CHECK(ev[0].code() == static_cast<uint32_t>(State::Idle));
  CHECK(ev[0].index() == 0);
  CHECK(ev[0].data() == 0);
  CHECK(reg::error::kFields[2].get(b.rd(reg::error::kOffset)) == 0);  // no commit was running: generation 0
  CHECK(ev[1].type() == Event::SafeDone);
  CHECK(ev[1].index() == static_cast<uint32_t>(kElems));  // every element swept
  CHECK(ev[1].data() == 0);
  CHECK(ev[1].code() == 0);
  CHECK(b.rd(reg::write_total::kOffset) == b.dac_total);  // the safe sweep's writes count too
  // stays safe: no commit, kicks do not help
  CHECK(b.write_resp(reg::commit::kOffset, 9) == kSlverr);
  b.wr(reg::watchdog_kick::kOffset, 0);
  b.run(300);
  CHECK(b.m.safe_o);
  CHECK(b.rd(reg::watchdog_count::kOffset) == 0);
  // staged writes are allowed while holding safe; SAFE_CLEAR with bit 0 clear does nothing
  b.stage_dac(0, 1000);
  b.wr(reg::safe_clear::kOffset, 0);
  CHECK(b.m.safe_o);
  b.wr(reg::safe_clear::kOffset, 1);
  CHECK_FALSE(b.m.safe_o);
  CHECK(b.state() == State::Idle);
  auto cleared = b.drain_events();
  REQUIRE_FALSE(cleared.empty());
  CHECK(cleared.back().type() == Event::SafeCleared);
  CHECK((cleared.back().info >> 4) == 0);  // no code, index or data
  b.wr(reg::watchdog_timeout::kOffset, 0);
  // a fresh commit writes every element that differs from the safe code
  b.dac.clear();
  b.commit(5);
  CHECK(b.last_err() == Error::None);
  CHECK(b.dac.size() == static_cast<size_t>(kElems));  // staged 0..4 = 1000.., the rest 0: all differ from 77
  CHECK(b.active_gen() == 5);
}

// WATCHDOG_COUNT counts from the last kick or WATCHDOG_TIMEOUT write, and stays 0 while the
// watchdog is off (docs/ocs-controller.md).
TEST_CASE("ocs: writing WATCHDOG_TIMEOUT restarts the count; off, it counts nothing") {
  Small b;
  b.run(300);
  CHECK(b.rd(reg::watchdog_count::kOffset) == 0);  // off out of reset
  b.wr(reg::watchdog_timeout::kOffset, 100);
  b.run(70);
  b.wr(reg::watchdog_timeout::kOffset, 200);  // a longer timeout, from this write on
  const uint64_t armed = b.write_cycle;
  b.run(150);
  CHECK_FALSE(b.m.safe_o);
  CHECK(b.rd(reg::watchdog_count::kOffset) > 150);
  b.run(100);
  REQUIRE(b.safe_seen != 0);
  CHECK(b.safe_seen == armed + 200 + 1);
}

TEST_CASE("ocs: the watchdog abandons a commit in progress") {
  Small b;
  commit_baseline(b);
  b.wr(reg::settle_cycles::kOffset, 5000);
  b.stage_dac(10, 1234);
  b.wr(reg::watchdog_timeout::kOffset, 400);
  b.wr(reg::commit::kOffset, 2);
  b.run(600);
  CHECK(b.m.safe_o);
  b.run(200);
  CHECK(b.pd_reqs.empty());  // never verified
  auto ev = b.drain_events();
  REQUIRE(ev.size() >= 3);
  CHECK(ev[0].type() == Event::CommitStart);
  CHECK(ev[1].type() == Event::ProgramDone);
  CHECK(ev[2].type() == Event::WatchdogExpired);
  CHECK(ev[2].code() == static_cast<uint32_t>(State::Settle));
  uint32_t err = b.rd(reg::error::kOffset);
  CHECK(static_cast<Error>(err & 0xF) == Error::Watchdog);
  CHECK(reg::error::kFields[2].get(err) == 2);
  CHECK(b.write_resp(reg::staged_dac::addr(0), 1) == kOkay);  // sweep is done by now
}

// The watchdog must win from every state a commit passes through, a failing one included (the
// sequencer's cover points for each state's transition to Safe): sweep its timeout across the
// commit and collect the state each expiry names.
TEST_CASE("ocs: the watchdog reaches the safe state from every commit state, rollback included") {
  std::set<State> expired_in;
  for (uint32_t timeout = 4; timeout <= 420; timeout += 2) {
    Small b;
    commit_baseline(b);
    b.stage_dac(2, 2002);
    b.stage_map(3, 0, false);
    b.pd_dbm[4] = -3000;
    b.pd_dbm[5] = -1500;  // entry 2 -> port 5 fails verify: the commit rolls back
    b.wr(reg::watchdog_timeout::kOffset, timeout);
    b.wr(reg::commit::kOffset, 2);
    b.run(500);
    INFO("timeout " << timeout);
    REQUIRE(b.m.safe_o);
    for (const auto& e : b.drain_events())
      if (e.type() == Event::WatchdogExpired) expired_in.insert(static_cast<State>(e.code()));
    const std::vector<int> before(std::begin(b.mesh), std::end(b.mesh));
    b.run(100);
    CHECK(std::vector<int>(std::begin(b.mesh), std::end(b.mesh)) == before);  // nothing after the safe sweep
  }
  for (State s : {State::Idle, State::Validate, State::Program, State::Settle, State::Verify, State::Rollback}) {
    INFO("state " << static_cast<int>(s));
    CHECK(expired_in.count(s) == 1);
  }
}

TEST_CASE("ocs: busy rejects COMMIT and staged writes with SLVERR") {
  Small b;
  commit_baseline(b);
  b.stage_dac(1, 3000);
  b.wr(reg::commit::kOffset, 2);
  CHECK(b.write_resp(reg::commit::kOffset, 3) == kSlverr);
  CHECK(b.write_resp(reg::staged_dac::addr(1), 5) == kSlverr);
  CHECK(b.write_resp(reg::staged_map::addr(1), 5) == kSlverr);
  uint32_t st = b.rd(reg::status::kOffset);
  CHECK((st & reg::status::kBusyMask) != 0);
  REQUIRE(b.wait_idle());
  CHECK(b.active_gen() == 2);
  CHECK(b.rd(reg::active_dac::addr(1)) == 3000);
  // Nothing else changes on SLVERR: the refused COMMIT is not queued (no second commit follows,
  // its log holds generation 2's events only) and the refused staged writes left the tables.
  b.run(300);
  CHECK(b.state() == State::Idle);
  CHECK(b.active_gen() == 2);
  CHECK(b.rd(reg::staged_dac::addr(1)) == 3000);
  CHECK(b.rd(reg::staged_map::addr(1)) == (reg::staged_map::kValidMask | 6u));
  auto ev = b.drain_events();
  CHECK(Small::types(ev) == std::vector<Event>{Event::CommitStart, Event::ProgramDone, Event::SettleDone,
                                               Event::VerifyPass});
  for (auto& e : ev) CHECK(e.data() == 2);
}

TEST_CASE("ocs: default-parameter model: generated reset values, sizes and a commit over 32 ports") {
  Bench<Vocs_controller, 32, 144, 20> b;
  for (const auto& r : mxtb::ocs::kRegisters) {
    if (r.count != 1 || r.access != mxtb::ocs::Access::RW) continue;
    INFO(r.name);
    CHECK(b.rd(r.offset) == r.reset);
  }
  CHECK(b.rd(reg::params::kOffset) == reg::params::kReset);  // the documented defaults
  CHECK(b.rd(reg::sizes::kOffset) == reg::sizes::kReset);
  CHECK(b.read_resp(reg::staged_map::addr(31)).first == kOkay);
  CHECK(b.read_resp(reg::staged_map::addr(32)).first == kSlverr);
  CHECK(b.read_resp(reg::active_dac::addr(143)).first == kOkay);
  CHECK(b.read_resp(reg::active_dac::addr(144)).first == kSlverr);
  CHECK(b.read_resp(reg::link_status::addr(19)).first == kOkay);
  b.wr(reg::scratch::addr(255), 0xCAFEF00D);
  CHECK(b.rd(reg::scratch::addr(255)) == 0xCAFEF00D);
  b.wr(reg::settle_cycles::kOffset, 100);
  for (int p = 0; p < 32; ++p) b.stage_map(p, (p + 5) % 32);
  b.stage_dac(0, 10);
  b.stage_dac(143, 20);
  b.commit(1);
  CHECK(b.last_err() == Error::None);
  CHECK(b.active_gen() == 1);
  REQUIRE(b.dac.size() == 2);
  CHECK(b.dac[1].cycle - b.dac[0].cycle >= reg::dac_update_cycles::kCyclesReset);
  CHECK(b.pd_reqs.size() == 32);
  CHECK(b.rd(reg::active_dac::addr(143)) == 20);
  // Phase costs (docs/ocs-controller.md): validate max(N_PORTS, N_ELEMS) + program N_ELEMS + 1
  // (no slot stalls here), settle SETTLE_CYCLES + 1, verify 1 + per valid entry 2 + L (L: cycles
  // from pd_req_o to pd_valid_i, 3 in this bench).
  auto ev = b.drain_events();
  REQUIRE(ev.size() == 4);
  MESSAGE("commit of 2 elements, 32 ports: validate+program " << ev[1].ts - ev[0].ts << ", settle "
          << ev[2].ts - ev[1].ts << ", verify " << ev[3].ts - ev[2].ts << " cycles");
  CHECK(ev[1].ts - ev[0].ts == 144 + 144 + 1);
  CHECK(ev[2].ts - ev[1].ts == 100 + 1);
  CHECK(ev[3].ts - ev[2].ts == 1 + 32 * (2 + 3));
}

// docs/ocs-controller.md: port x * LANES + l is lane l of XPU x. At the board's own parameters
// (4 lanes, 20 links on 32 ports), so that the lane arithmetic and the links above 16 are seen:
// every link's circuit to a lane expects that lane's XPU and lane; one to a fibre port, no one.
TEST_CASE("ocs: default-parameter model: every link expects the XPU and lane of its target port, fibre ports no one") {
  Bench<Vocs_controller, 32, 144, 20> b;
  const auto target_of = [](int port) { return (port * 7 + 13) % 32; };  // a permutation of 0..31
  for (int p = 0; p < 32; ++p) b.stage_map(p, target_of(p));
  b.commit(1);
  REQUIRE(b.last_err() == Error::None);
  for (int link = 0; link < 20; ++link) {
    const int t = target_of(link);
    INFO("link " << link << " -> port " << t);
    const uint32_t xpu = (b.m.link_expect_xpu_o[link / 4] >> (8 * (link % 4))) & 0xFF;
    const uint32_t lane = (b.m.link_expect_lane_o[link / 4] >> (8 * (link % 4))) & 0xFF;
    CHECK(xpu == (t < 20 ? static_cast<uint32_t>(t / 4) : 0xFFu));
    CHECK(lane == (t < 20 ? static_cast<uint32_t>(t % 4) : 0xFFu));
    CHECK(((b.m.link_check_o >> link) & 1u) == (t < 20 ? 1u : 0u));
  }
}
