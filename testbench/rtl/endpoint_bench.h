// The directed testbench of link_endpoint (docs/link-layer.md) against a software peer built from
// the reference codec (sim/link_codec), shared by the test_endpoint_*.cpp files, one per concern:
// training, the receiver (deframer), the transmitter (framer, replay), credits, the monitors that
// take an Active link down, and the trained peer across retrains. The software peer speaks block
// by block, so each test controls exactly what the RTL sees. Expectations use link_endpoint's
// default parameters (rtl/link/link_endpoint.sv). Moved here unchanged from test_endpoint.cpp.
//
// Each file ends with its "exact timing and recovery corners", written for the mutation score
// (docs/coverage.md). Timing is exact: a condition that holds in a state's n-th cycle (the entry
// cycle is cycle 0) changes the state at the next edge, so a state left on a timeout T lasts
// T + 1 cycles (docs/link-layer.md).
#pragma once

#include "Vlink_endpoint.h"
#include "rtl/cov/coverage_dump.h"
#include "sim/link/link_codec.h"
#include "verilated.h"

#include <mxtb/link_defs.h>

#include <doctest/doctest.h>

#include <algorithm>
#include <deque>
#include <functional>
#include <vector>

using namespace mxtb::sim;
using mxtb::link::CtlType;
using mxtb::link::LinkState;
using mxtb::link::Reason;

namespace {

constexpr int kTsCount = 16, kHbPeriod = 256, kHbTimeout = 2048, kReplayTimeout = 1024;
constexpr int kMaxReplays = 8, kTsTimeout = 8192, kRetrainHold = 256, kDetectTimeout = 65536;
constexpr int kResetCycles = 16;
constexpr uint16_t kSelfXpu = 1, kPeerXpu = 2;
constexpr EndpointIdentity kSelf{kSelfXpu, 0};

struct Sent {
  uint64_t cycle;
  Block block;
};

class PeerBench {
 public:
  PeerBench() {
    m.xpu_id_i = kSelfXpu;
    m.lane_id_i = 0;
    m.expect_xpu_i = kPeerXpu;
    m.expect_lane_i = 0;
    m.check_peer_i = 1;
    m.enable_i = 1;
    m.rx_ready_i = 1;
    m.irq_clear_i = 0;
    m.rst_ni = 0;
    m.clk_i = 0;
    m.eval();
    m.clk_i = 1;
    m.eval();
    m.clk_i = 0;
    m.rst_ni = 1;
    m.eval();
    states.push_back(state());
  }

  LinkState state() const { return static_cast<LinkState>(m.state_o); }
  Reason reason() const { return static_cast<Reason>(m.reason_o); }

  void push_ctl(CtlType t, uint32_t fields, int n = 1) {
    for (int i = 0; i < n; ++i) to_dut.push_back({static_cast<uint8_t>(mxtb::link::kSyncCtrl), make_ctl(t, fields, peer_id)});
  }
  void push_frame(uint16_t seq, const std::vector<uint64_t>& words, bool eom, int corrupt_word = -1) {
    auto blocks = encode_frame(seq, words, eom, peer_id);
    if (corrupt_word >= 0) blocks[1 + corrupt_word].payload ^= 0x10;
    for (auto& b : blocks) to_dut.push_back(b);
  }
  uint32_t ack_fields() const { return peer_expect | (uint32_t{peer_credit} << 16); }

  void tick() {
    if (auto_hb && cycle % 200 == 0) push_ctl(CtlType::Heartbeat, ack_fields());
    Block b{static_cast<uint8_t>(mxtb::link::kSyncCtrl), make_ctl(CtlType::Idle, 0)};
    if (!to_dut.empty()) {
      b = to_dut.front();
      to_dut.pop_front();
    }
    Raw66 raw = Raw66::block(b.sync, scr.scramble(b.payload));
    m.lane_rx_i[0] = static_cast<uint32_t>(raw.lo);
    m.lane_rx_i[1] = static_cast<uint32_t>(raw.lo >> 32);
    m.lane_rx_i[2] = raw.hi;
    m.lane_sd_i = light;

    bool tx_fire = false;
    if (!xpu_tx.empty()) {
      m.tx_valid_i = 1;
      m.tx_data_i = xpu_tx.front().first;
      m.tx_last_i = xpu_tx.front().second;
      tx_fire = m.tx_ready_o;
    } else {
      m.tx_valid_i = 0;
    }
    if (m.rx_valid_o && m.rx_ready_i) delivered.push_back({m.rx_data_o, static_cast<bool>(m.rx_last_o)});

    m.clk_i = 1;
    m.eval();
    m.clk_i = 0;
    m.eval();
    m.retrain_req_i = 0;
    if (tx_fire) xpu_tx.pop_front();
    ++cycle;

    if (m.laser_o) {
      Raw66 o{uint64_t{m.lane_tx_o[0]} | (uint64_t{m.lane_tx_o[1]} << 32), static_cast<uint8_t>(m.lane_tx_o[2] & 3)};
      uint64_t payload = dscr.descramble(o.payload());
      if (laser_was_on) from_dut.push_back({cycle, {o.sync(), payload}});  // first block after dark: descrambler syncing
    }
    laser_was_on = m.laser_o;
    if (state() != states.back()) states.push_back(state());
  }

  void run(uint64_t n) {
    for (uint64_t i = 0; i < n; ++i) tick();
  }
  bool run_until(const std::function<bool()>& done, uint64_t max_cycles) {
    for (uint64_t i = 0; i < max_cycles; ++i) {
      if (done()) return true;
      tick();
    }
    return done();
  }

  // The peer's light goes out until the link drops to Retrain (its heartbeats stop), then comes
  // back; what the peer had queued is gone. The next train() brings the link up again.
  void blink_to_retrain() {
    light = false;
    auto_hb = false;
    run(5);
    REQUIRE(state() == LinkState::Retrain);
    light = true;
    to_dut.clear();
  }

  // Plays a well-behaved peer through training: TS1, TS2, CreditInit, as the RTL asks for them.
  // flush_flag: the peer's TS2s say it restarts its sequence state (it was Active with another
  // peer meanwhile).
  void train(uint16_t credit = 8, uint16_t peer_xpu = kPeerXpu, uint8_t peer_lane = 0, bool flush_flag = false) {
    peer_credit = credit;
    peer_id = EndpointIdentity{peer_xpu, peer_lane};
    REQUIRE(run_until([&] { return state() == LinkState::Ts1; }, 5000));
    auto feed = [&](LinkState s, CtlType t, uint32_t fields) {
      for (int i = 0; i < 5000 && state() == s; ++i) {
        if (to_dut.size() < 4) push_ctl(t, fields);
        tick();
      }
    };
    uint32_t ts = peer_xpu | (uint32_t{peer_lane} << 16);  // TS fields: {lane, xpu}
    feed(LinkState::Ts1, CtlType::Ts1, ts);
    feed(LinkState::Ts2, CtlType::Ts2, ts | (uint32_t{flush_flag} << 24));  // flag: payload bit 32
    feed(LinkState::CreditInit, CtlType::CreditInit, ack_fields());
    auto_hb = true;
  }

  // Control blocks the DUT sent since index `from` of from_dut.
  std::vector<std::pair<uint64_t, Ctl>> ctl_sent(size_t from = 0, std::optional<CtlType> only = {}) const {
    std::vector<std::pair<uint64_t, Ctl>> out;
    for (size_t i = from; i < from_dut.size(); ++i) {
      if (from_dut[i].block.sync != mxtb::link::kSyncCtrl) continue;
      if (auto c = parse_ctl(from_dut[i].block.payload, kSelf); c && (!only || c->type == *only))
        out.push_back({from_dut[i].cycle, *c});
    }
    return out;
  }

  std::vector<uint16_t> sof_seqs(size_t from = 0) const {
    std::vector<uint16_t> seqs;
    for (auto& [c, ctl] : ctl_sent(from, CtlType::Sof)) seqs.push_back(ctl.fields & 0xFFFF);
    return seqs;
  }

  VerilatedContext ctx;
  Vlink_endpoint m{&ctx};
  mxtb::rtl::CoverageDump cov{ctx, "rtl_endpoint"};
  Scrambler58 scr;
  Descrambler58 dscr;
  std::deque<Block> to_dut;
  std::deque<std::pair<uint64_t, bool>> xpu_tx;
  std::vector<std::pair<uint64_t, bool>> delivered;
  std::vector<Sent> from_dut;
  std::vector<LinkState> states;
  uint16_t peer_expect = 0, peer_credit = 8;
  EndpointIdentity peer_id{kPeerXpu, 0};  // what this software peer signs its blocks with
  bool light = true, auto_hb = false, laser_was_on = false;
  uint64_t cycle = 0;
};

}  // namespace
