// The directed testbench of ocs_controller (docs/ocs-controller.md), shared by
// test_ocs_controller.cpp and test_ocs_register_rules.cpp: the bench class (AXI4-Lite
// bus-functional model, photodiode responder, DAC write log), the shrunk model's constants and
// commit_baseline(). Moved here unchanged from test_ocs_controller.cpp.
#pragma once

#include "Vocs_controller.h"
#include "Vocs_ctl_small.h"
#include "rtl/cov/coverage_dump.h"
#include "verilated.h"

#include <mxtb/link_defs.h>
#include <mxtb/ocs_regs.h>

#include <doctest/doctest.h>

#include <algorithm>
#include <deque>
#include <ios>
#include <set>
#include <type_traits>
#include <vector>

namespace reg = mxtb::ocs::reg;
using mxtb::link::LinkState;
using mxtb::link::Reason;
using mxtb::ocs::Error;
using mxtb::ocs::Event;
using mxtb::ocs::State;

namespace {

constexpr uint32_t kOkay = 0, kSlverr = 2;

struct DacWrite {
  uint64_t cycle;
  int elem;
  int code;
};

struct Ev {
  uint64_t ts;
  uint32_t info;
  Event type() const { return static_cast<Event>(info & 0xF); }
  uint32_t code() const { return (info >> 4) & 0xF; }
  uint32_t index() const { return (info >> 8) & 0xFF; }
  uint32_t data() const { return info >> 16; }
};

template <class M, int kPorts, int kElems, int kLinks>
class Bench {
 public:
  Bench() : pd_dbm(kPorts, 0), links(kLinks, 0), reasons(kLinks, 0) {
    m.rst_ni = 0;
    m.clk_i = 0;
    m.s_axil_awvalid = m.s_axil_wvalid = m.s_axil_arvalid = 0;
    m.s_axil_bready = m.s_axil_rready = 0;
    m.pd_valid_i = 0;
    drive_links();
    m.eval();
    m.clk_i = 1;
    m.eval();
    m.clk_i = 0;
    m.rst_ni = 1;
    m.eval();
  }

  void drive_links() {
    for (int i = 0; i < kLinks; ++i) {
      set_nibble(m.link_state_i, i, links[i]);
      set_nibble(m.link_reason_i, i, reasons[i]);
    }
  }
  template <class T>
  static void set_nibble(T& v, int i, int x) {
    if constexpr (std::is_integral_v<T>) {
      v = static_cast<T>((v & ~(T{0xF} << (4 * i))) | (T(x & 0xF) << (4 * i)));
    } else {  // VlWide: 32-bit words
      uint32_t& w = v[i / 8];
      int sh = 4 * (i % 8);
      w = (w & ~(0xFu << sh)) | (static_cast<uint32_t>(x & 0xF) << sh);
    }
  }

  void tick() {
    m.pd_valid_i = 0;
    if (!pd_pending.empty() && pd_pending.front().first <= cycle) {
      m.pd_valid_i = 1;
      m.pd_dbm_i = static_cast<uint16_t>(pd_dbm[pd_pending.front().second]);
      REQUIRE(m.pd_port_o == pd_pending.front().second);  // held while the request is outstanding
      pd_pending.pop_front();
    }
    drive_links();
    m.clk_i = 1;
    m.eval();
    m.clk_i = 0;
    m.eval();
    ++cycle;
    if (m.dac_valid_o) {
      ++dac_total;
      dac.push_back({cycle, m.dac_elem_o, static_cast<int>(m.dac_code_o)});
      REQUIRE(m.dac_elem_o < kElems);
      mesh[m.dac_elem_o] = m.dac_code_o;
    }
    if (m.pd_req_o) {
      REQUIRE(m.pd_port_o < kPorts);
      pd_reqs.push_back({cycle, m.pd_port_o});
      if (pd_answers) pd_pending.push_back({cycle + pd_latency, m.pd_port_o});
    }
    if (m.safe_o && !safe_seen) safe_seen = cycle;
    retrain_seen |= static_cast<uint32_t>(m.link_retrain_o);
  }
  void run(int n) {
    for (int i = 0; i < n; ++i) tick();
  }

  // AXI4-Lite bus-functional model: one transaction, every handshake checked.
  uint32_t write_resp(uint32_t addr, uint32_t data, uint8_t strb = 0xF) {
    m.s_axil_awaddr = static_cast<uint16_t>(addr);
    m.s_axil_wdata = data;
    m.s_axil_wstrb = strb;
    m.s_axil_awvalid = m.s_axil_wvalid = 1;
    m.s_axil_bready = 0;
    for (int i = 0;; ++i) {
      REQUIRE(i < 50);
      m.eval();
      REQUIRE(m.s_axil_awready == m.s_axil_wready);
      bool accepted = m.s_axil_awready;
      if (accepted) write_cycle = cycle;  // the cycle the register block sees the write
      tick();
      if (accepted) break;
    }
    m.s_axil_awvalid = m.s_axil_wvalid = 0;
    for (int i = 0; !m.s_axil_bvalid; ++i) {
      REQUIRE(i < 50);
      tick();
    }
    uint32_t resp = m.s_axil_bresp;
    m.s_axil_bready = 1;
    tick();
    m.s_axil_bready = 0;
    CHECK_FALSE(m.s_axil_bvalid);
    return resp;
  }
  std::pair<uint32_t, uint32_t> read_resp(uint32_t addr) {
    m.s_axil_araddr = static_cast<uint16_t>(addr);
    m.s_axil_arvalid = 1;
    m.s_axil_rready = 0;
    for (int i = 0;; ++i) {
      REQUIRE(i < 50);
      m.eval();
      bool accepted = m.s_axil_arready;
      tick();
      if (accepted) break;
    }
    m.s_axil_arvalid = 0;
    for (int i = 0; !m.s_axil_rvalid; ++i) {
      REQUIRE(i < 50);
      tick();
    }
    std::pair<uint32_t, uint32_t> r{m.s_axil_rresp, m.s_axil_rdata};
    m.s_axil_rready = 1;
    tick();
    m.s_axil_rready = 0;
    CHECK_FALSE(m.s_axil_rvalid);
    return r;
  }
  void wr(uint32_t addr, uint32_t data) {
    INFO("write " << std::hex << addr);
    REQUIRE(write_resp(addr, data) == kOkay);
  }
  uint32_t rd(uint32_t addr) {
    INFO("read " << std::hex << addr);
    auto [resp, data] = read_resp(addr);
    REQUIRE(resp == kOkay);
    return data;
  }

  State state() { return static_cast<State>(rd(reg::status::kOffset) & reg::status::kStateMask); }
  uint32_t active_gen() { return reg::status::kFields[4].get(rd(reg::status::kOffset)); }
  Error last_err() { return static_cast<Error>((rd(reg::status::kOffset) & reg::status::kLastErrMask) >> reg::status::kLastErrShift); }
  bool wait_idle(int max_cycles = 20000) {
    for (int i = 0; i < max_cycles; i += 10) {
      if (state() == State::Idle) return true;
      run(10);
    }
    return false;
  }

  void stage_map(int port, int target, bool valid = true) {
    wr(reg::staged_map::addr(port), (valid ? reg::staged_map::kValidMask : 0u) | static_cast<uint32_t>(target));
  }
  void stage_dac(int elem, int code) { wr(reg::staged_dac::addr(elem), static_cast<uint32_t>(code)); }
  // Identity-ish map on every port (i -> kPorts-1-i) so verify reads every photodiode.
  void stage_full_map() {
    for (int p = 0; p < kPorts; ++p) stage_map(p, kPorts - 1 - p);
  }
  std::vector<uint32_t> active_dac() {
    std::vector<uint32_t> v;
    for (int e = 0; e < kElems; ++e) v.push_back(rd(reg::active_dac::addr(e)));
    return v;
  }
  std::vector<uint32_t> active_map() {
    std::vector<uint32_t> v;
    for (int p = 0; p < kPorts; ++p) v.push_back(rd(reg::active_map::addr(p)));
    return v;
  }
  std::vector<Ev> drain_events() {
    std::vector<Ev> v;
    while (rd(reg::event_count::kOffset) != 0) {
      uint64_t lo = rd(reg::event_ts_lo::kOffset), hi = rd(reg::event_ts_hi::kOffset);
      v.push_back({lo | (hi << 32), rd(reg::event_info::kOffset)});
      REQUIRE(v.size() < 1000);
    }
    return v;
  }
  static std::vector<Event> types(const std::vector<Ev>& v) {
    std::vector<Event> t;
    for (auto& e : v) t.push_back(e.type());
    return t;
  }
  void commit(uint32_t gen) {
    wr(reg::commit::kOffset, gen);
    REQUIRE(wait_idle());
  }

  VerilatedContext ctx;
  M m{&ctx};
  mxtb::rtl::CoverageDump cov{ctx, "rtl_ocs"};
  uint64_t cycle = 0;
  std::vector<int16_t> pd_dbm;
  int pd_latency = 3;
  bool pd_answers = true;
  std::deque<std::pair<uint64_t, int>> pd_pending;
  std::vector<std::pair<uint64_t, int>> pd_reqs;
  std::vector<DacWrite> dac;
  uint64_t dac_total = 0;  // every DAC write since reset (dac is cleared by tests)
  int mesh[kElems] = {};
  std::vector<int> links, reasons;
  uint64_t safe_seen = 0;
  uint32_t retrain_seen = 0;  // link_retrain_o bits seen since last cleared
  uint64_t write_cycle = 0;  // equals the controller's cycle counter (TIME) in that cycle
};

using Small = Bench<Vocs_ctl_small, 8, 20, 4>;
constexpr int kPorts = 8, kElems = 20, kUpdate = 4, kSettle = 50, kDepth = 8;

// A good first commit: full map, elements 0..4 set to 1000+e. Returns with the log drained.
void commit_baseline(Small& b, uint32_t gen = 1) {
  b.stage_full_map();
  for (int e = 0; e < 5; ++e) b.stage_dac(e, 1000 + e);
  b.commit(gen);
  REQUIRE(b.last_err() == Error::None);
  REQUIRE(b.active_gen() == gen);
  b.drain_events();
  b.wr(reg::irq_status::kOffset, 0x1F);
  b.dac.clear();
  b.pd_reqs.clear();
}

// The same, with every link's circuit to another link's lane (port p -> 3 - p for the links' ports
// 0..3, p -> 11 - p for the rest): a circuit to a port at or beyond N_LINKS (4) leaves through a
// fibre port and checks no peer (ocs_link_map), so the tests of checked peers use this map.
[[maybe_unused]] void commit_lane_baseline(Small& b, uint32_t gen = 1) {
  for (int p = 0; p < kPorts; ++p) b.stage_map(p, p < 4 ? 3 - p : 11 - p);
  for (int e = 0; e < 5; ++e) b.stage_dac(e, 1000 + e);
  b.commit(gen);
  REQUIRE(b.last_err() == Error::None);
  REQUIRE(b.active_gen() == gen);
  b.drain_events();
  b.wr(reg::irq_status::kOffset, 0x1F);
  b.dac.clear();
  b.pd_reqs.clear();
}

}  // namespace
