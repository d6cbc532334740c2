// Directed testbenches for link_endpoint against a software peer built from the reference codec
// (sim/link_codec): training, the deframer, the framer, credits, replay and the monitors. The
// software peer speaks block by block, so each test controls exactly what the RTL sees.
// Expectations use link_endpoint's default parameters (rtl/link/link_endpoint.sv).
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

// On an Active link: this side's XPU sends three one-word messages (frames 0, 1, 2) and the peer
// two (100, 101), nothing acknowledged yet.
void exchange_frames(PeerBench& b) {
  for (uint64_t i = 0; i < 3; ++i) b.xpu_tx.push_back({i, true});
  b.push_frame(0, {100}, true);
  b.push_frame(1, {101}, true);
  b.run(80);
  REQUIRE(b.sof_seqs() == std::vector<uint16_t>{0, 1, 2});
}

}  // namespace

TEST_CASE("training walks every state in order, exchanges identities and raises the interrupt") {
  PeerBench b;
  b.train();
  CHECK(b.states == std::vector<LinkState>{LinkState::Reset, LinkState::Detect, LinkState::BlockLock,
                                           LinkState::Ts1, LinkState::Ts2, LinkState::CreditInit,
                                           LinkState::Active});
  CHECK(b.reason() == Reason::None);
  CHECK(b.m.peer_xpu_o == kPeerXpu);
  CHECK(b.m.irq_o);
  b.run(20);
  CHECK(b.m.irq_o);  // sticky: stays set with no state change until cleared
  auto ts1 = b.ctl_sent(0, CtlType::Ts1);
  REQUIRE(ts1.size() >= kTsCount);
  CHECK(ts1[0].second.fields == kSelfXpu);  // {0, lane 0, xpu}: nothing else in the fields
  auto ts2 = b.ctl_sent(0, CtlType::Ts2);
  REQUIRE_FALSE(ts2.empty());
  CHECK(ts2[0].second.fields == kSelfXpu);
  auto idles = b.ctl_sent(0, CtlType::Idle);
  REQUIRE_FALSE(idles.empty());
  CHECK(idles[0].second.fields == 0);
  auto ci = b.ctl_sent(0, CtlType::CreditInit);
  REQUIRE_FALSE(ci.empty());
  CHECK((ci[0].second.fields >> 16) == 8);  // credit limit: the receive buffer's 8 frames
  b.m.irq_clear_i = 1;
  b.tick();
  b.m.irq_clear_i = 0;
  b.tick();
  CHECK_FALSE(b.m.irq_o);
}

TEST_CASE("out of reset the lane stays dark for RESET_CYCLES, then Detect") {
  PeerBench b;
  REQUIRE(b.state() == LinkState::Reset);
  CHECK_FALSE(b.m.irq_o);  // no state change yet
  uint64_t t0 = b.cycle;
  while (b.state() == LinkState::Reset && b.cycle - t0 < 100) {
    CHECK_FALSE(b.m.laser_o);
    b.tick();
  }
  CHECK(b.state() == LinkState::Detect);
  CHECK(b.cycle - t0 == kResetCycles + 1);
  CHECK(b.m.laser_o);
}

TEST_CASE("training takes exactly TS_COUNT training sets from the peer in Ts1 and in Ts2; TS1s do not count in Ts2") {
  PeerBench b;
  REQUIRE(b.run_until([&] { return b.state() == LinkState::Ts1; }, 5000));
  b.push_ctl(CtlType::Ts1, kPeerXpu, kTsCount - 1);
  b.run(4 * kTsCount);  // then idles
  CHECK(b.state() == LinkState::Ts1);
  b.push_ctl(CtlType::Ts1, kPeerXpu);
  REQUIRE(b.run_until([&] { return b.state() == LinkState::Ts2; }, 10));
  for (int i = 0; i < kTsCount - 1; ++i) {
    b.push_ctl(CtlType::Ts2, kPeerXpu);
    b.push_ctl(CtlType::Ts1, kPeerXpu);
  }
  b.run(6 * kTsCount);
  CHECK(b.state() == LinkState::Ts2);
  b.push_ctl(CtlType::Ts2, kPeerXpu);
  CHECK(b.run_until([&] { return b.state() == LinkState::CreditInit; }, 10));
}

TEST_CASE("a peer on another lane than 0 trains when it is the expected one") {
  PeerBench b;
  b.m.expect_lane_i = 3;
  b.train(8, kPeerXpu, 3);
  CHECK(b.state() == LinkState::Active);
  CHECK(b.m.peer_lane_o == 3);
}

TEST_CASE("a retrain request pulls an Active link into Retrain, dark, and it trains again") {
  PeerBench b;
  b.train();
  REQUIRE(b.state() == LinkState::Active);
  b.m.retrain_req_i = 1;
  b.tick();
  CHECK(b.state() == LinkState::Retrain);
  CHECK(b.reason() == Reason::RetrainRequest);
  b.tick();
  CHECK_FALSE(b.m.laser_o);  // a requested retrain goes dark, so the peer notices too
  b.auto_hb = false;
  b.to_dut.clear();
  b.train();
  CHECK(b.state() == LinkState::Active);
  CHECK(b.m.cnt_retrains_o == 1);
}

TEST_CASE("a link to the wrong peer goes to Disabled with WrongPeer and never to Active") {
  PeerBench b;
  REQUIRE(b.run_until([&] { return b.state() == LinkState::Ts1; }, 5000));
  for (int i = 0; i < 20000; ++i) {
    if (b.to_dut.size() < 4) b.push_ctl(CtlType::Ts1, 9);
    b.tick();
    REQUIRE(b.state() != LinkState::Active);
  }
  CHECK(b.state() == LinkState::Disabled);
  CHECK(b.reason() == Reason::WrongPeer);
  CHECK(b.m.laser_o);  // lit (idles), so a controller moving circuits can still verify the light
  b.m.retrain_req_i = 1;  // the controller fixed the circuit and asks again
  b.tick();
  CHECK(b.state() == LinkState::Detect);
}

TEST_CASE("with the peer check off, any peer trains") {
  PeerBench b;
  b.m.check_peer_i = 0;
  b.train(8, 9);
  CHECK(b.state() == LinkState::Active);
  CHECK(b.m.peer_xpu_o == 9);
}

TEST_CASE("a silent peer times out of Ts1; that Retrain keeps the lane lit") {
  PeerBench b;
  REQUIRE(b.run_until([&] { return b.state() == LinkState::Ts1; }, 5000));
  uint64_t t0 = b.cycle;
  REQUIRE(b.run_until([&] { return b.state() == LinkState::Retrain; }, kTsTimeout + 10));
  CHECK(b.cycle - t0 == kTsTimeout + 1);  // exact (see "exact timing" below)
  CHECK(b.reason() == Reason::Ts1Timeout);
  uint64_t t1 = b.cycle;
  b.tick();
  CHECK(b.m.laser_o);  // only dropping an Active link (or a request) goes dark
  REQUIRE(b.run_until([&] { return b.state() == LinkState::Detect; }, kRetrainHold + 10));
  CHECK(b.cycle - t1 == kRetrainHold + 1);
  CHECK(b.m.cnt_retrains_o == 1);
}

// A peer that answers Ts1 (and, for CreditInit, Ts2) with its training sets, then nothing more.
static void train_to_ts2_or_credit_init(PeerBench& b, bool reach_credit_init) {
  REQUIRE(b.run_until([&] { return b.state() == LinkState::Ts1; }, 5000));
  b.push_ctl(CtlType::Ts1, kPeerXpu, kTsCount);
  REQUIRE(b.run_until([&] { return b.state() == LinkState::Ts2; }, 100));
  if (reach_credit_init) {
    b.push_ctl(CtlType::Ts2, kPeerXpu, kTsCount);
    REQUIRE(b.run_until([&] { return b.state() == LinkState::CreditInit; }, 100));
  }
}

TEST_CASE("a peer that stops after Ts1 times out of Ts2, or of CreditInit after Ts2") {
  for (bool reach_credit_init : {false, true}) {
    INFO(reach_credit_init);
    PeerBench b;
    train_to_ts2_or_credit_init(b, reach_credit_init);
    LinkState s = b.state();
    uint64_t t0 = b.cycle;
    REQUIRE(b.run_until([&] { return b.state() != s; }, kTsTimeout + 10));
    CHECK(b.cycle - t0 == kTsTimeout + 1);
    CHECK(b.state() == LinkState::Retrain);
    CHECK(b.reason() == (reach_credit_init ? Reason::CreditTimeout : Reason::Ts2Timeout));
    b.run(2);  // the transition's cover point samples at the next edge
  }
}

TEST_CASE("loss of signal in Ts2 or CreditInit retrains with LossOfSignal") {
  for (bool reach_credit_init : {false, true}) {
    INFO(reach_credit_init);
    PeerBench b;
    train_to_ts2_or_credit_init(b, reach_credit_init);
    b.light = false;
    REQUIRE(b.run_until([&] { return b.state() == LinkState::Retrain; }, 10));
    CHECK(b.reason() == Reason::LossOfSignal);
    b.run(2);  // the transition's cover point samples at the next edge
  }
}

TEST_CASE("no light: Detect times out and says so, laser still on") {
  PeerBench b;
  b.light = false;
  REQUIRE(b.run_until([&] { return b.state() == LinkState::Detect; }, 100));
  uint64_t t0 = b.cycle;
  REQUIRE(b.run_until([&] { return b.reason() == Reason::DetectTimeout; }, kDetectTimeout + 10));
  CHECK(b.cycle - t0 == kDetectTimeout + 1);
  b.run(100);
  CHECK(b.state() == LinkState::Detect);
  CHECK(b.reason() == Reason::DetectTimeout);
  CHECK(b.m.laser_o);
}

TEST_CASE("deframer: a good frame is delivered whole and acknowledged") {
  PeerBench b;
  b.train();
  size_t mark = b.from_dut.size();
  std::vector<uint64_t> words{11, 22, 33, 44, 55};
  b.push_frame(0, words, true);
  b.run(100);
  REQUIRE(b.delivered.size() == 5);
  for (size_t i = 0; i < 5; ++i) {
    CHECK(b.delivered[i].first == words[i]);
    CHECK(b.delivered[i].second == (i == 4));
  }
  CHECK(b.m.cnt_frames_rx_o == 1);
  auto acks = b.ctl_sent(mark, CtlType::Ack);
  REQUIRE_FALSE(acks.empty());
  CHECK((acks.back().second.fields & 0xFFFF) == 1);
  CHECK((acks.back().second.fields >> 16) == 9);  // credit returned once the XPU drained it
}

TEST_CASE("deframer: an acknowledgement due while the transmitter sends frames goes out once it is free") {
  PeerBench b;
  b.train();
  for (int i = 0; i < 48; ++i) b.xpu_tx.push_back({static_cast<uint64_t>(i), i == 47});  // 3 full frames
  b.run(8);  // the transmitter is inside its first frame
  size_t mark = b.from_dut.size();
  b.push_frame(0, {5}, true);  // its EOF arrives while frames go out
  b.run(120);
  REQUIRE(b.delivered.size() == 1);
  auto acks = b.ctl_sent(mark, CtlType::Ack);
  REQUIRE_FALSE(acks.empty());
  CHECK((acks[0].second.fields & 0xFFFF) == 1);
  CHECK(acks[0].first - b.from_dut[mark].cycle < 100);  // not left to the next heartbeat
}

TEST_CASE("deframer: data words that look like control types are data") {
  PeerBench b;
  b.train();
  // Low bytes equal to the SOF, EOF and Ack type codes: only the sync header makes a block control.
  const std::vector<uint64_t> words{0x1234'5678'9ABC'DE78ull, 0x78, 0x87, 0x4B};
  b.push_frame(0, words, true);
  b.run(100);
  REQUIRE(b.delivered.size() == words.size());
  for (size_t i = 0; i < words.size(); ++i) CHECK(b.delivered[i].first == words[i]);
  CHECK(b.m.cnt_crc_err_o == 0);
}

TEST_CASE("deframer: a control block of an unknown type with a good check counts as a bad block and nothing else") {
  PeerBench b;
  b.train();
  uint32_t bad_before = b.m.cnt_bad_blocks_o;
  b.to_dut.push_back({static_cast<uint8_t>(mxtb::link::kSyncCtrl), make_ctl(static_cast<CtlType>(0x99), 0, b.peer_id)});
  b.run(20);
  CHECK(b.m.cnt_bad_blocks_o == bad_before + 1);
  CHECK(b.state() == LinkState::Active);
  b.push_frame(0, {3}, true);
  b.run(60);
  CHECK(b.delivered.size() == 1);
}

TEST_CASE("deframer: a frame failing its CRC is dropped, counted and NAKed; the resend is delivered") {
  PeerBench b;
  b.train();
  size_t mark = b.from_dut.size();
  b.push_frame(0, {1, 2, 3}, true, /*corrupt_word=*/1);
  b.run(100);
  CHECK(b.delivered.empty());
  CHECK(b.m.cnt_crc_err_o == 1);
  auto naks = b.ctl_sent(mark, CtlType::Nak);
  REQUIRE(naks.size() == 1);
  CHECK((naks[0].second.fields & 0xFFFF) == 0);
  b.push_frame(0, {1, 2, 3}, true);
  b.run(100);
  CHECK(b.delivered.size() == 3);
}

TEST_CASE("deframer: a frame longer than its SOF said is dropped and counted, even when its CRC fits the words the SOF announced") {
  PeerBench b;
  b.train();
  uint64_t sof = make_ctl(CtlType::Sof, 0u | (2u << 16) | (1u << 24), b.peer_id);  // seq 0, 2 words, eom
  // The CRC covers the sender's identity, the SOF's low 40 bits and the two announced words; a
  // third data block follows them.
  uint64_t identity = (uint64_t{b.peer_id.xpu} << 48) | (uint64_t{b.peer_id.lane} << 40);
  uint32_t crc = crc32_advance(0xFFFFFFFFu, identity | (sof & ((uint64_t{1} << 40) - 1)));
  crc = crc32_advance(crc32_advance(crc, 11), 22);
  b.to_dut.push_back({static_cast<uint8_t>(mxtb::link::kSyncCtrl), sof});
  for (uint64_t w : {11, 22, 33}) b.to_dut.push_back({static_cast<uint8_t>(mxtb::link::kSyncData), w});
  b.to_dut.push_back({static_cast<uint8_t>(mxtb::link::kSyncCtrl), make_ctl(CtlType::Eof, ~crc, b.peer_id)});
  b.run(100);
  CHECK(b.delivered.empty());
  CHECK(b.m.cnt_crc_err_o == 1);  // a length error: counted once, with the CRC errors
  b.push_frame(0, {11, 22}, true);  // the same frame as announced: delivered
  b.run(100);
  REQUIRE(b.delivered.size() == 2);
  CHECK(b.delivered[1].first == 22);
}

TEST_CASE("deframer: a frame longer than its SOF said is counted at its extra word, even when the next SOF cuts it off") {
  // The length error is the extra word's, not the EOF's: a frame that runs long and never ends
  // (the next SOF follows) is still one counted error; a frame merely cut off by a SOF is not.
  PeerBench b;
  b.train();
  const uint64_t sof = make_ctl(CtlType::Sof, 0u | (2u << 16) | (1u << 24), b.peer_id);  // seq 0, 2 words, eom
  b.to_dut.push_back({static_cast<uint8_t>(mxtb::link::kSyncCtrl), sof});
  for (uint64_t w : {11, 22, 33}) b.to_dut.push_back({static_cast<uint8_t>(mxtb::link::kSyncData), w});
  b.push_frame(0, {11, 22}, true);  // no EOF before it: the resend of the same frame
  b.run(100);
  CHECK(b.m.cnt_crc_err_o == 1);
  REQUIRE(b.delivered.size() == 2);
  CHECK(b.delivered[1].first == 22);
  // Cut off at its announced length (two words, no EOF): lost, but no length or CRC error.
  b.to_dut.push_back({static_cast<uint8_t>(mxtb::link::kSyncCtrl), make_ctl(CtlType::Sof, 1u | (2u << 16) | (1u << 24), b.peer_id)});
  for (uint64_t w : {44, 55}) b.to_dut.push_back({static_cast<uint8_t>(mxtb::link::kSyncData), w});
  b.push_frame(1, {44, 55}, true);
  b.run(100);
  CHECK(b.m.cnt_crc_err_o == 1);
  REQUIRE(b.delivered.size() == 4);
  CHECK(b.delivered[3].first == 55);
}

TEST_CASE("deframer: a peer ignoring its credit: the frame past the receive buffer is not stored") {
  PeerBench b;
  b.train();
  b.m.rx_ready_i = 0;  // the XPU drains nothing
  for (uint16_t s = 0; s < 9; ++s) b.push_frame(s, {100u + s}, true);  // 8 slots, 9 frames
  b.run(200);
  CHECK(b.delivered.empty());
  b.m.rx_ready_i = 1;
  b.run(100);
  REQUIRE(b.delivered.size() == 8);
  for (size_t i = 0; i < 8; ++i) CHECK(b.delivered[i].first == 100 + i);
  b.push_frame(8, {108}, true);  // its replay, now that there is room
  b.run(100);
  REQUIRE(b.delivered.size() == 9);
  CHECK(b.delivered[8].first == 108);
}

TEST_CASE("deframer: a stray frame outside the window leaves a frame waiting in its slot untouched") {
  PeerBench b;
  b.train();
  b.m.rx_ready_i = 0;
  b.push_frame(0, {1, 2, 3}, false);  // waits in slot 0
  b.run(60);
  b.push_frame(8, {9}, true);  // slot 0 again, 8 frames ahead: not accepted
  b.run(60);
  b.m.rx_ready_i = 1;
  b.run(60);
  REQUIRE(b.delivered.size() == 3);
  for (size_t i = 0; i < 3; ++i) {
    CHECK(b.delivered[i].first == i + 1);
    CHECK_FALSE(b.delivered[i].second);  // no end of message: frame 0 did not carry one
  }
}

TEST_CASE("deframer: a duplicate is dropped and acknowledged again; a gap is NAKed") {
  PeerBench b;
  b.train();
  b.push_frame(0, {7}, true);
  b.run(60);
  size_t mark = b.from_dut.size();
  b.push_frame(0, {7}, true);  // replayed duplicate
  b.run(60);
  CHECK(b.delivered.size() == 1);
  auto acks = b.ctl_sent(mark, CtlType::Ack);
  REQUIRE_FALSE(acks.empty());
  CHECK((acks[0].second.fields & 0xFFFF) == 1);
  mark = b.from_dut.size();
  b.push_frame(2, {9}, true);  // seq 1 went missing
  b.run(60);
  CHECK(b.delivered.size() == 1);
  auto naks = b.ctl_sent(mark, CtlType::Nak);
  REQUIRE(naks.size() == 1);
  CHECK((naks[0].second.fields & 0xFFFF) == 1);
  b.push_frame(3, {10}, true);  // more frames past the same gap: still one NAK per gap
  b.push_frame(4, {11}, true);
  b.run(60);
  CHECK(b.ctl_sent(mark, CtlType::Nak).size() == 1);
}

TEST_CASE("deframer: a frame with a broken sync header inside is dropped") {
  PeerBench b;
  b.train();
  size_t mark = b.from_dut.size();
  b.push_frame(0, {1, 2, 3}, true);
  b.to_dut[2].sync = 3;  // second data block arrives with an invalid header
  b.run(80);
  CHECK(b.delivered.empty());
  CHECK(b.m.cnt_bad_blocks_o == 1);
  CHECK(b.m.cnt_crc_err_o == 0);  // dropped for its header, not counted again as a CRC error
  auto naks = b.ctl_sent(mark, CtlType::Nak);
  REQUIRE_FALSE(naks.empty());  // the loss is NAKed at once, not left to the replay timer
  CHECK(naks[0].first - b.from_dut[mark].cycle < 60);
}

TEST_CASE("framer: XPU words leave as SOF, data, EOF exactly as the reference encodes them") {
  PeerBench b;
  b.train();
  size_t mark = b.from_dut.size();
  std::vector<uint64_t> words{0xAAAA, 0xBBBB, 0xCCCC, 0xDDDD, 0xEEEE};
  for (size_t i = 0; i < words.size(); ++i) b.xpu_tx.push_back({words[i], i + 1 == words.size()});
  b.run(60);
  auto want = encode_frame(0, words, true, kSelf);
  std::vector<Block> got;
  bool in_frame = false;
  for (size_t i = mark; i < b.from_dut.size(); ++i) {
    const Block& blk = b.from_dut[i].block;
    auto c = parse_ctl(blk.payload, kSelf);
    if (blk.sync == mxtb::link::kSyncCtrl && c && c->type == CtlType::Sof) in_frame = true;
    if (in_frame) got.push_back(blk);
    if (in_frame && blk.sync == mxtb::link::kSyncCtrl && c && c->type == CtlType::Eof) break;
  }
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    CHECK(got[i].sync == want[i].sync);
    CHECK(got[i].payload == want[i].payload);
  }
  CHECK(b.m.cnt_frames_tx_o == 1);
}

TEST_CASE("framer: a message longer than a frame is split and reassembled with one end of message") {
  PeerBench b;
  b.train();
  for (int i = 0; i < 40; ++i) b.xpu_tx.push_back({static_cast<uint64_t>(i), i == 39});
  b.run(200);
  CHECK(b.sof_seqs() == std::vector<uint16_t>{0, 1, 2});  // 16 + 16 + 8 words
  auto sofs = b.ctl_sent(0, CtlType::Sof);
  REQUIRE(sofs.size() == 3);
  CHECK(((sofs[0].second.fields >> 24) & 1) == 0);
  CHECK(((sofs[1].second.fields >> 24) & 1) == 0);
  CHECK(((sofs[2].second.fields >> 24) & 1) == 1);
  CHECK(((sofs[0].second.fields >> 16) & 0xFF) == 16);  // full frames carry MAX_WORDS
  CHECK(((sofs[1].second.fields >> 16) & 0xFF) == 16);
  CHECK(((sofs[2].second.fields >> 16) & 0xFF) == 8);
  std::vector<uint64_t> sent;
  for (auto& s : b.from_dut)
    if (s.block.sync == mxtb::link::kSyncData) sent.push_back(s.block.payload);
  REQUIRE(sent.size() == 40);
  for (size_t i = 0; i < sent.size(); ++i) CHECK(sent[i] == i);
}

TEST_CASE("credits: the transmitter sends no new frame beyond the peer's credit limit") {
  PeerBench b;
  b.train(/*credit=*/2);
  for (int msg = 0; msg < 4; ++msg) b.xpu_tx.push_back({static_cast<uint64_t>(msg), true});
  b.run(300);
  CHECK(b.sof_seqs() == std::vector<uint16_t>{0, 1});
  b.peer_expect = 2;
  b.peer_credit = 4;
  b.push_ctl(CtlType::Ack, b.ack_fields());
  b.run(100);
  CHECK(b.sof_seqs() == std::vector<uint16_t>{0, 1, 2, 3});
}

TEST_CASE("credits: the receiver returns credit as its XPU drains frames") {
  PeerBench b;
  b.train();
  b.m.rx_ready_i = 0;
  for (uint16_t s = 0; s < 8; ++s) b.push_frame(s, {s}, true);
  b.run(200);
  auto acks = b.ctl_sent(0, CtlType::Ack);
  REQUIRE_FALSE(acks.empty());
  CHECK((acks.back().second.fields & 0xFFFF) == 8);   // all 8 accepted ...
  CHECK((acks.back().second.fields >> 16) == 8);      // ... and no credit back yet
  CHECK(b.delivered.empty());
  size_t mark = b.from_dut.size();
  b.m.rx_ready_i = 1;
  b.run(100);
  CHECK(b.delivered.size() == 8);
  auto later = b.ctl_sent(mark, CtlType::Ack);
  REQUIRE_FALSE(later.empty());
  CHECK((later.back().second.fields >> 16) == 16);
}

TEST_CASE("replay: without an acknowledgement the frame goes out again after the replay timeout") {
  PeerBench b;
  b.train();
  b.xpu_tx.push_back({42, true});
  b.run(kReplayTimeout + 200);
  auto sofs = b.ctl_sent(0, CtlType::Sof);
  REQUIRE(sofs.size() >= 2);
  CHECK((sofs[1].second.fields & 0xFFFF) == 0);
  CHECK(sofs[1].first - sofs[0].first >= kReplayTimeout);
  CHECK(b.m.cnt_replays_o >= 1);
  CHECK(b.m.cnt_frames_tx_o == 1);  // a replay is not a new frame
}

TEST_CASE("replay: a frame acknowledged by an Ack block, or by heartbeats alone, is not sent again") {
  for (bool by_ack : {true, false}) {
    INFO(by_ack);
    PeerBench b;
    b.train();
    b.xpu_tx.push_back({42, true});
    b.run(40);
    REQUIRE(b.sof_seqs() == std::vector<uint16_t>{0});
    b.peer_expect = 1;  // what the heartbeats acknowledge from now on
    if (by_ack) {
      b.auto_hb = false;
      b.push_ctl(CtlType::Ack, b.ack_fields());
    }
    b.run(kReplayTimeout + 300);
    CHECK(b.sof_seqs() == std::vector<uint16_t>{0});
    CHECK(b.m.cnt_replays_o == 0);
  }
}

TEST_CASE("replay: an acknowledgement past the last frame sent is ignored") {
  PeerBench b;
  b.train();
  b.xpu_tx.push_back({1, true});
  b.xpu_tx.push_back({2, true});
  b.run(60);
  b.peer_expect = 2;  // both acknowledged
  b.run(300);
  b.peer_expect = 5;  // beyond anything sent: must not count
  b.run(300);
  b.peer_expect = 2;
  size_t mark = b.from_dut.size();
  b.xpu_tx.push_back({3, true});  // frame 2, never acknowledged: replayed after the timeout
  b.run(kReplayTimeout + 300);
  auto seqs = b.sof_seqs(mark);
  REQUIRE(seqs.size() >= 2);
  CHECK(seqs[0] == 2);
  CHECK(seqs[1] == 2);
}

TEST_CASE("replay: a NAK goes back at once to the first frame it did not acknowledge") {
  PeerBench b;
  b.train();
  for (uint64_t i = 0; i < 3; ++i) b.xpu_tx.push_back({i, true});
  b.run(60);
  REQUIRE(b.sof_seqs() == std::vector<uint16_t>{0, 1, 2});
  size_t mark = b.from_dut.size();
  b.peer_expect = 1;
  b.push_ctl(CtlType::Nak, b.ack_fields());
  b.run(60);
  CHECK(b.sof_seqs(mark) == std::vector<uint16_t>{1, 2});
}

TEST_CASE("replay: MAX_REPLAYS go-backs without progress retrain the link") {
  PeerBench b;
  b.train();
  b.xpu_tx.push_back({1, true});
  REQUIRE(b.run_until([&] { return b.state() != LinkState::Active; }, (kMaxReplays + 3) * (kReplayTimeout + 50)));
  CHECK(b.state() == LinkState::Retrain);
  CHECK(b.reason() == Reason::ReplayExhausted);
  CHECK(b.m.cnt_replays_o == kMaxReplays + 1);
}

TEST_CASE("heartbeats go out every HB_PERIOD; a silent peer times out") {
  PeerBench b;
  b.train();
  size_t mark = b.from_dut.size();
  b.run(2000);
  auto hbs = b.ctl_sent(mark, CtlType::Heartbeat);
  REQUIRE(hbs.size() >= 5);
  for (size_t i = 1; i < hbs.size(); ++i) {
    CHECK(hbs[i].first - hbs[i - 1].first <= kHbPeriod + 2);
    CHECK(hbs[i].first - hbs[i - 1].first >= kHbPeriod);  // not more often either
  }
  b.auto_hb = false;
  uint64_t t0 = b.cycle;
  REQUIRE(b.run_until([&] { return b.state() != LinkState::Active; }, kHbTimeout + 300));
  CHECK(b.reason() == Reason::HeartbeatTimeout);
  CHECK(b.cycle - t0 >= kHbTimeout - 200);
}

TEST_CASE("the error-rate window retrains a link whose bad blocks exceed the threshold") {
  PeerBench b;
  b.train();
  for (int i = 0; i < 4000 && b.state() == LinkState::Active; ++i) {
    if (i % 8 == 0) b.to_dut.push_back({3, 0});  // 1 invalid header in 8: under block lock's limit
    b.tick();
  }
  CHECK(b.state() == LinkState::Retrain);
  CHECK(b.reason() == Reason::ErrorRate);
}

TEST_CASE("bad blocks under the threshold in every window never retrain, however many in all") {
  PeerBench b;
  b.train();
  // 20 a window (ERR_WINDOW 4096, ERR_THRESHOLD 32) for five windows: 100 in all.
  for (int i = 0; i < 5 * 4096; ++i) {
    if (i % 205 == 0) b.to_dut.push_back({3, 0});
    b.tick();
  }
  CHECK(b.state() == LinkState::Active);
  CHECK(b.m.cnt_bad_blocks_o >= 99);
}

TEST_CASE("a peer that restarts training pulls an Active link into Retrain") {
  PeerBench b;
  b.train();
  b.push_ctl(CtlType::Ts1, kPeerXpu);
  b.run(10);
  CHECK(b.state() == LinkState::Retrain);
  CHECK(b.reason() == Reason::PeerRetrain);
}

TEST_CASE("loss of signal while Active retrains with LossOfSignal; disabling wins over all") {
  PeerBench b;
  b.train();
  b.light = false;
  b.run(3);
  CHECK(b.state() == LinkState::Retrain);
  CHECK(b.reason() == Reason::LossOfSignal);
  CHECK_FALSE(b.m.laser_o);  // dark, so the peer retrains too
  b.m.enable_i = 0;
  b.run(2);
  CHECK(b.state() == LinkState::Disabled);
  CHECK(b.reason() == Reason::AdminDisabled);
}

TEST_CASE("disabling an Active link takes it straight to Disabled, dark, and enabling trains it again") {
  PeerBench b;
  b.train();
  REQUIRE(b.state() == LinkState::Active);
  const size_t seen = b.states.size();
  b.m.enable_i = 0;
  b.run(3);
  CHECK(b.state() == LinkState::Disabled);
  CHECK(b.reason() == Reason::AdminDisabled);
  CHECK_FALSE(b.m.laser_o);
  CHECK(std::vector<LinkState>(b.states.begin() + static_cast<long>(seen), b.states.end()) ==
        std::vector<LinkState>{LinkState::Disabled});  // no detour through Retrain
  b.m.enable_i = 1;
  CHECK(b.run_until([&] { return b.state() == LinkState::Detect; }, 10));
}

TEST_CASE("a retrain to the same peer keeps sequence state; a new peer starts both directions at 0") {
  PeerBench b;
  b.m.check_peer_i = 0;
  b.train(8, kPeerXpu);
  exchange_frames(b);
  b.peer_expect = 3;
  b.push_ctl(CtlType::Ack, b.ack_fields());
  b.run(20);
  REQUIRE(b.delivered.size() == 2);

  auto lose_light_and_retrain = [&](uint16_t peer) {
    b.blink_to_retrain();
    if (peer != kPeerXpu) b.peer_expect = 0;  // a fresh peer expects its first frame
    b.train(8, peer);
    REQUIRE(b.state() == LinkState::Active);
  };

  lose_light_and_retrain(kPeerXpu);  // same peer: nothing is forgotten
  size_t mark = b.from_dut.size();
  b.xpu_tx.push_back({3, true});
  b.run(60);
  CHECK(b.sof_seqs(mark) == std::vector<uint16_t>{3});
  b.peer_expect = 4;
  b.push_ctl(CtlType::Ack, b.ack_fields());
  b.run(20);

  size_t before_spare = b.from_dut.size();
  lose_light_and_retrain(9);  // the spare: fresh sequence space both ways
  CHECK(b.m.peer_xpu_o == 9);
  // Its CreditInit already advertises what the flush will leave: expect 0, RX_SLOTS credit
  // (not this side's expect 2 from the old peer).
  auto inits = b.ctl_sent(before_spare, CtlType::CreditInit);
  REQUIRE_FALSE(inits.empty());
  for (auto& [c, ctl] : inits) CHECK(ctl.fields == (8u << 16));
  mark = b.from_dut.size();
  b.xpu_tx.push_back({4, true});
  b.push_frame(0, {200}, true);  // the new peer's first frame is sequence 0
  b.run(60);
  CHECK(b.sof_seqs(mark) == std::vector<uint16_t>{0});
  REQUIRE(b.delivered.size() == 3);
  CHECK(b.delivered[2].first == 200);
}

TEST_CASE("TS2s carry the flush flag exactly when the link meets a new peer") {
  PeerBench b;
  b.m.check_peer_i = 0;
  auto ts2_flags = [&](size_t from) {
    std::vector<uint32_t> flags;
    for (auto& [c, ctl] : b.ctl_sent(from, CtlType::Ts2)) flags.push_back(ctl.fields >> 24);
    return flags;
  };
  auto all_are = [](const std::vector<uint32_t>& v, uint32_t x) {
    return !v.empty() && std::all_of(v.begin(), v.end(), [&](uint32_t f) { return f == x; });
  };
  b.train(8, kPeerXpu);
  CHECK(all_are(ts2_flags(0), 0));  // the first peer: nothing to flush
  size_t mark = b.from_dut.size();
  b.blink_to_retrain();
  b.train(8, kPeerXpu);
  CHECK(all_are(ts2_flags(mark), 0));  // the same peer again
  mark = b.from_dut.size();
  b.blink_to_retrain();
  b.train(8, 9);
  CHECK(all_are(ts2_flags(mark), 1));  // a new peer: flag set (bit 32 of the block, bit 24 of the fields)
  mark = b.from_dut.size();
  b.blink_to_retrain();
  b.train(8, kPeerXpu);
  CHECK(all_are(ts2_flags(mark), 1));  // back to the first: new again, since it was Active with 9
}

TEST_CASE("a peer whose TS2s carry the flush flag makes this side flush too, though it is the same peer") {
  // The one-sided peer change: the peer (XPU 2) was Active with another XPU meanwhile and comes
  // back flushed; this side never changed peer. Without the flag it would resume at sequence 3
  // while the peer expects 0 (traces/scenarios/link/peer-moves-and-returns.json shows the retrain
  // loop that follows with three real endpoints).
  PeerBench b;
  b.train(8, kPeerXpu);
  exchange_frames(b);
  REQUIRE(b.delivered.size() == 2);
  b.peer_expect = 1;  // frames 1 and 2 unacknowledged: the flush drops them
  b.push_ctl(CtlType::Ack, b.ack_fields());
  b.run(20);

  b.blink_to_retrain();
  b.peer_expect = 0;  // the peer restarted at 0
  size_t before = b.from_dut.size();
  b.train(8, kPeerXpu, 0, /*flush_flag=*/true);
  REQUIRE(b.state() == LinkState::Active);
  CHECK(b.m.peer_xpu_o == kPeerXpu);
  // The CreditInit already advertises the flushed state: expect 0, RX_SLOTS credit (not expect 2).
  auto inits = b.ctl_sent(before, CtlType::CreditInit);
  REQUIRE_FALSE(inits.empty());
  for (auto& [c, ctl] : inits) CHECK(ctl.fields == (8u << 16));
  size_t mark = b.from_dut.size();
  b.xpu_tx.push_back({7, true});
  b.push_frame(0, {300}, true);  // the peer's first frame after its flush
  b.run(kReplayTimeout / 2);
  CHECK(b.sof_seqs(mark) == std::vector<uint16_t>{0});  // not 1 and 2 again, not 3
  REQUIRE(b.delivered.size() == 3);
  CHECK(b.delivered[2].first == 300);
  CHECK(b.state() == LinkState::Active);
}

TEST_CASE("the flush flag counts from the trained peer's TS2s in Ts1, Ts2 and CreditInit, from no one else") {
  // The flag is learnt from the identity the link trains with: in Ts1 from the candidate (the peer
  // may already be in Ts2), and in CreditInit too (this side may leave Ts2 on the peer's TS2 count
  // while the peer, still in Ts2, has yet to send a flagged one). A flagged TS2 from any other
  // identity, or from a Ts1 candidate that was replaced, is no reason to flush; nor is a TS2 from
  // the candidate without the flag (the peer already in Ts2, the same peer: mutation seed 11's
  // survivor link_train.sv:192 flushed on any TS2 in Ts1, one-sidedly).
  enum class Where { Ts1Peer, Ts1PeerUnflagged, Ts1ReplacedCandidate, CreditInitPeer, CreditInitStranger };
  for (Where w : {Where::Ts1Peer, Where::Ts1PeerUnflagged, Where::Ts1ReplacedCandidate, Where::CreditInitPeer,
                  Where::CreditInitStranger}) {
    CAPTURE(static_cast<int>(w));
    const bool flush = w == Where::Ts1Peer || w == Where::CreditInitPeer;
    PeerBench b;
    b.train(8, kPeerXpu);
    exchange_frames(b);
    b.peer_expect = 3;  // everything acknowledged: without a flush the next frame is sequence 3
    b.push_ctl(CtlType::Ack, b.ack_fields());
    b.run(20);
    b.blink_to_retrain();
    REQUIRE(b.run_until([&] { return b.state() == LinkState::Ts1; }, 5000));
    const uint32_t ts = kPeerXpu, flag = 1u << 24, stranger = kPeerXpu | (5u << 16);  // TS fields {lane, xpu}
    if (w == Where::Ts1ReplacedCandidate) b.push_ctl(CtlType::Ts2, stranger | flag, 5);
    const bool ts1_sends_ts2 = w == Where::Ts1Peer || w == Where::Ts1PeerUnflagged;
    const uint32_t ts1_flag = w == Where::Ts1Peer ? flag : 0;
    for (LinkState st : {LinkState::Ts1, LinkState::Ts2}) {
      if (st == LinkState::Ts1 && ts1_sends_ts2) {
        // Exactly TS_COUNT of the candidate's TS2s, none left on the way to arrive in Ts2: the
        // flag must come from the ones counted in Ts1 (mutation seed 13: the candidate's flag
        // forced to 0 survived, since a flagged TS2 still on the way reached Ts2 and set it there).
        b.to_dut.clear();
        b.run(40);
        REQUIRE(b.state() == LinkState::Ts1);
        for (int n = 0; n < kTsCount; b.tick())
          if (b.to_dut.size() < 4) b.push_ctl(CtlType::Ts2, ts | ts1_flag), ++n;
        for (int i = 0; i < 500 && b.state() == LinkState::Ts1; ++i) b.tick();
        REQUIRE(b.state() == LinkState::Ts2);
        REQUIRE(b.to_dut.empty());
        continue;
      }
      for (int i = 0; i < 5000 && b.state() == st; ++i) {
        if (b.to_dut.size() < 4) {
          if (st == LinkState::Ts1 && ts1_sends_ts2) b.push_ctl(CtlType::Ts2, ts | ts1_flag);
          else b.push_ctl(st == LinkState::Ts1 ? CtlType::Ts1 : CtlType::Ts2, ts);
        }
        b.tick();
      }
    }
    REQUIRE(b.state() == LinkState::CreditInit);
    b.to_dut.clear();
    if (w == Where::CreditInitPeer) b.push_ctl(CtlType::Ts2, ts | flag, 3);
    if (w == Where::CreditInitStranger) b.push_ctl(CtlType::Ts2, stranger | flag, 3);
    b.peer_expect = flush ? 0 : 3;
    for (int i = 0; i < 5000 && b.state() == LinkState::CreditInit; ++i) {
      if (b.to_dut.size() < 2) b.push_ctl(CtlType::CreditInit, b.ack_fields());
      b.tick();
    }
    REQUIRE(b.state() == LinkState::Active);
    b.auto_hb = true;
    size_t mark = b.from_dut.size();
    b.xpu_tx.push_back({9, true});
    b.run(80);
    CHECK(b.sof_seqs(mark) == std::vector<uint16_t>{static_cast<uint16_t>(flush ? 0 : 3)});
  }
}

TEST_CASE("a peer at XPU 0, lane 0 (the Ts1 candidate's cleared identity) retrains without a flush") {
  // The candidate registers are cleared on every state change, so this peer's first TS in Ts1
  // matches the cleared candidate and counts on: the candidate's flag must be cleared with them
  // (mutation seed 13: link_train.sv:275 setting it outside Ts1 survived every test whose peer had
  // another identity).
  PeerBench b;
  b.m.expect_xpu_i = 0;
  b.m.expect_lane_i = 0;
  b.train(8, 0, 0);
  exchange_frames(b);
  b.peer_expect = 3;  // everything acknowledged: without a flush the next frame is sequence 3
  b.push_ctl(CtlType::Ack, b.ack_fields());
  b.run(20);
  b.blink_to_retrain();
  b.train(8, 0, 0);  // the same peer, its TS2s without the flag
  REQUIRE(b.state() == LinkState::Active);
  const size_t mark = b.from_dut.size();
  b.xpu_tx.push_back({9, true});
  b.run(80);
  CHECK(b.sof_seqs(mark) == std::vector<uint16_t>{3});
}

TEST_CASE("a link never Active before keeps what its XPU queued when its peer's TS2s carry the flush flag") {
  PeerBench b;
  b.xpu_tx.push_back({42, true});  // handed over before the first Active: nothing to flush
  b.train(8, kPeerXpu, 0, /*flush_flag=*/true);
  REQUIRE(b.state() == LinkState::Active);
  b.run(60);
  CHECK(b.sof_seqs() == std::vector<uint16_t>{0});
  auto inits = b.ctl_sent(0, CtlType::CreditInit);
  REQUIRE_FALSE(inits.empty());
  CHECK(inits.front().second.fields == (8u << 16));  // expect 0 and credit 8 all the same
}

TEST_CASE("frames and acknowledgements from a transmitter other than the trained peer are refused") {
  PeerBench b;
  b.train();
  b.peer_id = EndpointIdentity{7, 0};  // the circuit silently moved to another lane
  b.push_frame(0, {1, 2, 3}, true);
  b.xpu_tx.push_back({5, true});
  b.run(60);
  b.peer_expect = 1;
  b.push_ctl(CtlType::Ack, b.ack_fields());  // would acknowledge a frame the real peer never got
  b.run(40);
  CHECK(b.delivered.empty());
  CHECK(b.m.cnt_frames_rx_o == 0);
  CHECK(b.m.cnt_bad_blocks_o >= 3);  // SOF, EOF and the Ack fail their identity-bound checks
  b.peer_id = EndpointIdentity{kPeerXpu, 0};
  b.peer_expect = 0;
  b.run(kReplayTimeout + 100);
  CHECK(b.sof_seqs().size() >= 2);  // the unacknowledged frame was sent again: nothing was lost
}

// ---------------------------------------------------------------- exact timing and recovery corners
// Written for the mutation score (docs/coverage.md). Timing is exact: a condition that holds in a
// state's n-th cycle (the entry cycle is cycle 0) changes the state at the next edge, so a state
// left on a timeout T lasts T + 1 cycles (docs/link-layer.md).

TEST_CASE("training: Reset, Detect and every training step last exactly as their parameters say") {
  constexpr int kDetectStable = 64;
  PeerBench b;
  b.light = false;
  REQUIRE(b.run_until([&] { return b.state() == LinkState::Detect; }, 100));
  CHECK(b.cycle == kResetCycles + 1);
  b.run(10);
  b.light = true;  // signal detect from here: Detect waits DETECT_STABLE cycles of it
  uint64_t t0 = b.cycle;
  REQUIRE(b.run_until([&] { return b.state() != LinkState::Detect; }, 200));
  CHECK(b.state() == LinkState::BlockLock);
  CHECK(b.cycle - t0 == kDetectStable + 1);
  // An eager peer: TS2s back to back from before Ts1 (they count in Ts1 too) and its CreditInit
  // as soon as the link is in CreditInit. Ts1 and Ts2 see a training set every cycle from their
  // first and CreditInit sees the peer's CreditInit within a few cycles, so each step lasts
  // exactly TS_COUNT + 1 cycles (the TS_COUNT training sets, and TS_COUNT sent).
  uint32_t ts = kPeerXpu;
  std::vector<std::pair<LinkState, uint64_t>> entered;
  for (int i = 0; i < 20000 && b.state() != LinkState::Active; ++i) {
    while (b.to_dut.size() < 2) {
      if (b.state() == LinkState::CreditInit) b.push_ctl(CtlType::CreditInit, b.ack_fields());
      else b.push_ctl(CtlType::Ts2, ts);
    }
    LinkState before = b.state();
    b.tick();
    if (b.state() != before) entered.push_back({b.state(), b.cycle});
  }
  REQUIRE(b.state() == LinkState::Active);
  std::vector<LinkState> order;
  for (auto& e : entered) order.push_back(e.first);
  REQUIRE(order == std::vector<LinkState>{LinkState::Ts1, LinkState::Ts2, LinkState::CreditInit, LinkState::Active});
  CHECK(entered[1].second - entered[0].second == kTsCount + 1);  // Ts1
  CHECK(entered[2].second - entered[1].second == kTsCount + 1);  // Ts2
  CHECK(entered[3].second - entered[2].second == kTsCount + 1);  // CreditInit
}

TEST_CASE("training: block lock never found: BlockLock times out after LOCK_TIMEOUT") {
  constexpr int kLockTimeout = 8192;
  PeerBench b;
  // Invalid sync headers only: no offset of the lane ever gives LOCK_GOOD valid headers in a row.
  auto garbage = [&] { while (b.to_dut.size() < 2) b.to_dut.push_back({3, 0}); };
  for (int i = 0; i < 200 && b.state() != LinkState::BlockLock; ++i) {
    garbage();
    b.tick();
  }
  REQUIRE(b.state() == LinkState::BlockLock);
  uint64_t t0 = b.cycle;
  for (int i = 0; i < kLockTimeout + 10 && b.state() == LinkState::BlockLock; ++i) {
    garbage();
    b.tick();
  }
  CHECK(b.state() == LinkState::Retrain);
  CHECK(b.reason() == Reason::LockTimeout);
  CHECK(b.cycle - t0 == kLockTimeout + 1);
}

// A bad block that keeps block lock: a control block whose check fails.
static Block bad_check_block() {
  return {static_cast<uint8_t>(mxtb::link::kSyncCtrl), make_ctl(CtlType::Idle, 0) ^ (uint64_t{1} << 50)};
}

TEST_CASE("error rate: windows of exactly ERR_WINDOW cycles, back to back from the cycle the link became Active") {
  constexpr int kWindow = 4096, kThreshold = 32;
  PeerBench b;
  b.train();
  const uint64_t active_at = b.cycle;  // window 0 is cycles [0, ERR_WINDOW) from here
  // The receive path's latency: the first bad block, put on the lane now, is counted after L cycles.
  b.to_dut.push_front(bad_check_block());
  uint64_t sent = b.cycle;
  REQUIRE(b.run_until([&] { return b.m.cnt_bad_blocks_o == 1; }, 50));
  const uint64_t lat = b.cycle - sent;  // a block sent in cycle c is counted in the window cycle c - active_at + lat - 1
  // Put a bad block on the lane so that it counts in cycle `at` (from Active).
  auto bad_at = [&](uint64_t at) {
    REQUIRE(b.cycle <= active_at + at + 1 - lat);
    b.run(active_at + at + 1 - lat - b.cycle);
    b.to_dut.push_front(bad_check_block());
    b.tick();
  };
  // Window 0 holds that one, then THRESHOLD - 1 more ending two cycles before window 1:
  // THRESHOLD in all, not more, so the link stays Active...
  for (uint64_t at = kWindow - 2 - (kThreshold - 1); at < kWindow - 2; ++at) bad_at(at);
  // ... and one more in the first cycle of window 1 starts that window's count: still Active.
  bad_at(kWindow);
  b.run(20);
  CHECK(b.m.cnt_bad_blocks_o == kThreshold + 1);
  CHECK(b.state() == LinkState::Active);
  // Window 2: THRESHOLD + 1 spread over the whole window, from its second cycle, one every 120
  // cycles, and the last in its last cycle but one: retrain on the last.
  for (int k = 0; k < kThreshold; ++k) bad_at(2 * kWindow + 1 + 120 * static_cast<uint64_t>(k));
  REQUIRE(b.state() == LinkState::Active);
  bad_at(3 * kWindow - 2);
  b.run(3);
  CHECK(b.state() == LinkState::Retrain);
  CHECK(b.reason() == Reason::ErrorRate);
}

TEST_CASE("a link whose peer is on lane 3 keeps sequence state through a retrain to that same peer") {
  PeerBench b;
  b.m.expect_lane_i = 3;
  b.train(8, kPeerXpu, 3);
  b.xpu_tx.push_back({1, true});
  b.run(60);
  REQUIRE(b.sof_seqs() == std::vector<uint16_t>{0});
  b.peer_expect = 1;
  b.run(300);  // a heartbeat acknowledges it
  b.blink_to_retrain();
  b.train(8, kPeerXpu, 3);
  REQUIRE(b.state() == LinkState::Active);
  size_t mark = b.from_dut.size();
  b.xpu_tx.push_back({2, true});
  b.run(60);
  CHECK(b.sof_seqs(mark) == std::vector<uint16_t>{1});  // not a new peer: no flush, no restart at 0
}

TEST_CASE("after a retrain the frames the peer's CreditInit does not acknowledge go out again at once") {
  PeerBench b;
  b.train();
  for (uint64_t i = 0; i < 3; ++i) b.xpu_tx.push_back({i, true});
  b.run(60);
  REQUIRE(b.sof_seqs() == std::vector<uint16_t>{0, 1, 2});  // none acknowledged yet
  b.blink_to_retrain();
  b.peer_expect = 1;  // the peer got frame 0 and says so in its CreditInit, and nowhere else
  size_t mark = b.from_dut.size();
  b.train();
  REQUIRE(b.state() == LinkState::Active);
  b.run(100);  // well inside REPLAY_TIMEOUT
  CHECK(b.sof_seqs(mark) == std::vector<uint16_t>{1, 2});
  CHECK(b.m.cnt_replays_o == 0);  // resuming after training is not a replay
}

TEST_CASE("after a retrain the transmitter resumes at the acknowledgement that comes with entering Active") {
  // A peer's heartbeat in CreditInit (its CreditInit itself lost) makes the link Active and
  // acknowledges in the same cycle: the transmitter must resume from that acknowledgement then,
  // and the first frame the peer still lacks goes out as soon as when the acknowledgement did
  // not move. (Resuming from the one before costs a cycle: `enter_active_o` must be high on entry.)
  auto first_sof_after_entry = [](uint16_t acked) {
    PeerBench b;
    b.train();
    for (uint64_t i = 0; i < 3; ++i) b.xpu_tx.push_back({i, true});
    b.run(60);
    REQUIRE(b.sof_seqs() == std::vector<uint16_t>{0, 1, 2});
    b.blink_to_retrain();
    REQUIRE(b.run_until([&] { return b.state() == LinkState::Ts1; }, 5000));
    auto feed = [&](LinkState st, CtlType t, uint32_t fields) {
      for (int i = 0; i < 5000 && b.state() == st; ++i) {
        if (b.to_dut.size() < 4) b.push_ctl(t, fields);
        b.tick();
      }
    };
    feed(LinkState::Ts1, CtlType::Ts1, kPeerXpu);
    feed(LinkState::Ts2, CtlType::Ts2, kPeerXpu);
    REQUIRE(b.state() == LinkState::CreditInit);
    b.to_dut.clear();
    b.run(kTsCount + 4);  // idles: no CreditInit seen, so only a heartbeat can end CreditInit
    REQUIRE(b.state() == LinkState::CreditInit);
    b.peer_expect = acked;
    b.push_ctl(CtlType::Heartbeat, b.ack_fields());
    const size_t mark = b.from_dut.size();
    REQUIRE(b.run_until([&] { return b.state() == LinkState::Active; }, 20));
    const uint64_t entered = b.cycle;
    b.auto_hb = true;
    b.run(40);
    auto sofs = b.ctl_sent(mark, CtlType::Sof);
    REQUIRE_FALSE(sofs.empty());
    CHECK((sofs[0].second.fields & 0xFFFF) == acked);
    return sofs[0].first - entered;
  };
  const uint64_t ack_unchanged = first_sof_after_entry(0);
  const uint64_t ack_advanced = first_sof_after_entry(1);
  MESSAGE("first SOF after entering Active: " << ack_unchanged << " cycles (ack unchanged), " << ack_advanced
                                              << " (ack advanced on entry)");
  CHECK(ack_advanced == ack_unchanged);
}

TEST_CASE("the transmitter takes at most REPLAY_DEPTH unacknowledged frames from its XPU") {
  constexpr int kReplayDepth = 8;
  PeerBench b;
  b.train(/*credit=*/32);
  for (uint64_t i = 0; i < kReplayDepth + 2; ++i) b.xpu_tx.push_back({i, true});
  b.run(300);  // nothing acknowledged
  CHECK(b.xpu_tx.size() == 2);
  CHECK(b.m.tx_ready_o == 0);
  CHECK(b.sof_seqs().size() == kReplayDepth);
  b.peer_expect = 1;  // one acknowledged: one more slot
  b.run(300);
  CHECK(b.xpu_tx.size() == 1);
  auto seqs = b.sof_seqs();
  REQUIRE(seqs.size() == kReplayDepth + 1);
  CHECK(seqs.back() == kReplayDepth);
}

TEST_CASE("replay: an acknowledgement overtaking the send pointer mid sequence space is caught up with, nothing resent") {
  // The transmitter compares sequence numbers as differences from the acknowledgement, modulo
  // 2^16. Around ack 32,766 a sum where a difference belongs (hi + ack) wraps past 2^16: the
  // transmitter then either resends an acknowledged frame or never moves its send pointer again.
  // So the link first carries 32,760 frames, acknowledged eight at a time.
  PeerBench b;
  b.train();
  uint16_t next = 0;
  auto send = [&](uint16_t n) {
    const size_t mark = b.from_dut.size();
    for (uint16_t i = 0; i < n; ++i) b.xpu_tx.push_back({uint64_t{next} + i, true});
    REQUIRE(b.run_until([&] { return b.sof_seqs(mark).size() == n; }, 400));
    CHECK(b.sof_seqs(mark).front() == next);
    next = static_cast<uint16_t>(next + n);
  };
  auto ack_all = [&] {
    b.peer_expect = next;
    b.peer_credit = static_cast<uint16_t>(next + 8);
    b.push_ctl(CtlType::Ack, b.ack_fields());
  };
  constexpr uint16_t kStart = 32760;
  while (next < kStart) {
    send(static_cast<uint16_t>(std::min(8, kStart - next)));
    ack_all();
  }
  send(6);   // frames 32,760 to 32,765 on the lane, none acknowledged
  b.run(20);  // the last EOF out: the transmitter idles
  REQUIRE(b.xpu_tx.empty());
  const size_t mark = b.from_dut.size();
  b.peer_expect = kStart;  // a NAK for the first of them (go back to 32,760) ...
  b.push_ctl(CtlType::Nak, b.ack_fields());
  b.peer_expect = next;  // ... overtaken on the next clock by an acknowledgement of all six
  b.peer_credit = static_cast<uint16_t>(next + 8);
  b.push_ctl(CtlType::Ack, b.ack_fields());
  b.run(60);
  CHECK(b.sof_seqs(mark).empty());  // nothing the peer acknowledged goes out again
  b.xpu_tx.push_back({99, true});
  b.run(60);
  CHECK(b.sof_seqs(mark) == std::vector<uint16_t>{next});  // and the next frame goes out
}

TEST_CASE("Idle blocks carry no fields, in training and while Active") {
  PeerBench b;
  b.train();
  b.run(600);
  auto idles = b.ctl_sent(0, CtlType::Idle);
  size_t active_idles = 0;
  for (auto& [c, ctl] : idles) {
    CHECK(ctl.fields == 0);
    active_idles += c > b.cycle - 600;
  }
  CHECK(active_idles > 100);
}

TEST_CASE("replay: a NAK that arrives while a frame is on the lane goes back once that frame ends") {
  PeerBench b;
  b.train();
  b.xpu_tx.push_back({1, true});
  b.xpu_tx.push_back({2, true});
  b.run(40);
  REQUIRE(b.sof_seqs() == std::vector<uint16_t>{0, 1});
  for (int i = 0; i < 16; ++i) b.xpu_tx.push_back({static_cast<uint64_t>(100 + i), i == 15});  // frame 2: 16 words
  REQUIRE(b.run_until([&] { return b.sof_seqs().size() == 3; }, 40));
  b.peer_expect = 1;  // frame 1 was lost: NAK it while frame 2's data words go out
  b.to_dut.push_front({static_cast<uint8_t>(mxtb::link::kSyncCtrl), make_ctl(CtlType::Nak, b.ack_fields(), b.peer_id)});
  b.run(8);
  REQUIRE(b.ctl_sent(0, CtlType::Eof).size() == 2);  // still inside frame 2
  b.run(80);
  CHECK(b.sof_seqs() == std::vector<uint16_t>{0, 1, 2, 1, 2});  // at once, not after the replay timeout
  CHECK(b.m.cnt_replays_o == 1);
}

TEST_CASE("replay: frames already sent go out again without credit, even below a CreditInit's lower limit") {
  PeerBench b;
  b.train(/*credit=*/3);
  for (uint64_t i = 0; i < 4; ++i) b.xpu_tx.push_back({i, true});
  b.run(60);
  REQUIRE(b.sof_seqs() == std::vector<uint16_t>{0, 1, 2});  // the limit: 3 frames
  b.blink_to_retrain();
  b.peer_expect = 1;
  size_t mark = b.from_dut.size();
  b.train(/*credit=*/1);  // a peer that lost its buffer: a limit below the frames already sent
  REQUIRE(b.state() == LinkState::Active);
  b.run(100);
  CHECK(b.sof_seqs(mark) == std::vector<uint16_t>{1, 2});  // replays need no credit; frame 3 does
  b.peer_credit = 4;
  b.run(300);  // the next heartbeat grants it
  CHECK(b.sof_seqs(mark) == std::vector<uint16_t>{1, 2, 3});
}

TEST_CASE("deframer: an acknowledgement due in the middle of a frame going out is sent after it, not dropped") {
  PeerBench b;
  b.train();
  b.m.rx_ready_i = 0;  // no drain, so no later acknowledgement request
  for (int i = 0; i < 16; ++i) b.xpu_tx.push_back({static_cast<uint64_t>(i), i == 15});
  REQUIRE(b.run_until([&] { return b.sof_seqs().size() == 1; }, 40));
  size_t mark = b.from_dut.size();
  auto frame = encode_frame(0, {5}, true, b.peer_id);
  for (auto it = frame.rbegin(); it != frame.rend(); ++it) b.to_dut.push_front(*it);
  b.run(8);
  REQUIRE(b.m.cnt_frames_rx_o == 1);  // accepted while the 16 data words go out
  REQUIRE(b.ctl_sent(0, CtlType::Eof).empty());
  b.run(30);
  auto acks = b.ctl_sent(mark, CtlType::Ack);
  REQUIRE(acks.size() == 1);
  CHECK((acks[0].second.fields & 0xFFFF) == 1);
  CHECK(acks[0].first - b.ctl_sent(0, CtlType::Eof)[0].first == 1);  // the block after the EOF
}

TEST_CASE("credits: a stale lower limit, or one half the sequence space ahead, is ignored") {
  PeerBench b;
  b.train(/*credit=*/2);
  for (uint64_t i = 0; i < 4; ++i) b.xpu_tx.push_back({i, true});
  b.run(100);
  REQUIRE(b.sof_seqs() == std::vector<uint16_t>{0, 1});
  b.peer_credit = 6;
  b.run(300);  // a heartbeat grants up to 6
  REQUIRE(b.sof_seqs() == std::vector<uint16_t>{0, 1, 2, 3});
  b.auto_hb = false;
  b.push_ctl(CtlType::Heartbeat, (b.ack_fields() & 0xFFFFu) | (2u << 16));  // an old limit, 2: behind
  b.run(20);
  b.xpu_tx.push_back({4, true});
  b.xpu_tx.push_back({5, true});
  b.run(60);
  CHECK(b.sof_seqs() == std::vector<uint16_t>{0, 1, 2, 3, 4, 5});  // the limit is still 6
  b.push_ctl(CtlType::Heartbeat, (b.ack_fields() & 0xFFFFu) | ((6u + 0x8000u) << 16));  // neither ahead nor behind
  b.run(20);
  b.xpu_tx.push_back({6, true});
  b.run(60);
  CHECK(b.sof_seqs().size() == 6);  // frame 6 waits: the limit did not move
  b.push_ctl(CtlType::Heartbeat, (b.ack_fields() & 0xFFFFu) | (7u << 16));
  b.run(60);
  CHECK(b.sof_seqs().size() == 7);
  // A limit half the sequence space ahead of the next frame, reached in two steps forward, is no
  // credit either: serial arithmetic cannot tell it from one behind.
  b.push_ctl(CtlType::Heartbeat, (b.ack_fields() & 0xFFFFu) | ((7u + 0x4000u) << 16));
  b.push_ctl(CtlType::Heartbeat, (b.ack_fields() & 0xFFFFu) | ((7u + 0x8000u) << 16));
  b.run(20);
  b.xpu_tx.push_back({7, true});
  b.run(60);
  CHECK(b.sof_seqs().size() == 7);
}

TEST_CASE("losing block lock with the light still on retrains an Active link with BlockLockLost") {
  PeerBench b;
  b.train();
  for (int i = 0; i < 40; ++i) b.to_dut.push_front({3, 0});  // more than UNLOCK_BAD invalid headers in a row
  REQUIRE(b.run_until([&] { return b.state() != LinkState::Active; }, 60));
  CHECK(b.state() == LinkState::Retrain);
  CHECK(b.reason() == Reason::BlockLockLost);
}

TEST_CASE("replay: acknowledgements advance step by step; frames acknowledged in two steps are not sent again") {
  PeerBench b;
  b.train();
  for (uint64_t i = 0; i < 4; ++i) b.xpu_tx.push_back({i, true});
  b.run(60);
  REQUIRE(b.sof_seqs() == std::vector<uint16_t>{0, 1, 2, 3});
  b.peer_expect = 2;
  b.push_ctl(CtlType::Ack, b.ack_fields());
  b.run(20);
  b.peer_expect = 4;
  b.push_ctl(CtlType::Ack, b.ack_fields());
  b.run(kReplayTimeout + 200);
  CHECK(b.sof_seqs() == std::vector<uint16_t>{0, 1, 2, 3});
  CHECK(b.m.cnt_replays_o == 0);
}

TEST_CASE("replay: the replay timer runs only while frames are unacknowledged; a frame after a long quiet spell waits it out") {
  PeerBench b;
  b.train();
  b.run(3 * kReplayTimeout);  // Active, nothing to send
  b.xpu_tx.push_back({7, true});
  b.run(kReplayTimeout - 100);
  CHECK(b.sof_seqs() == std::vector<uint16_t>{0});  // not replayed at once
  CHECK(b.m.cnt_replays_o == 0);
  b.run(200);
  CHECK(b.sof_seqs() == std::vector<uint16_t>{0, 0});  // REPLAY_TIMEOUT after it went out
}

TEST_CASE("frames the XPU hands over before the link first becomes Active go out once it is") {
  PeerBench b;
  b.xpu_tx.push_back({1, true});
  b.xpu_tx.push_back({2, true});
  b.run(50);  // still training: taken into the replay buffer, not sent
  CHECK(b.xpu_tx.empty());
  b.train();
  b.run(60);  // the first peer is no new peer: nothing is flushed, the CreditInit's credit is used
  CHECK(b.sof_seqs() == std::vector<uint16_t>{0, 1});
}

TEST_CASE("heartbeat timeout: HB_TIMEOUT cycles after the last Ack, Nak or Heartbeat was taken, to the cycle") {
  // Each of the three is liveness (docs/link-layer.md, "heartbeat"); mutation seed 13 left a Nak
  // that was not (link_rx.sv:166) unnoticed, since the tests' peers always heartbeat as well.
  for (CtlType last_word : {CtlType::Heartbeat, CtlType::Ack, CtlType::Nak}) {
    CAPTURE(static_cast<int>(last_word));
    PeerBench b;
    b.train();
    b.auto_hb = false;
    b.run(20);
    // The receive path's latency, measured with a bad block: every block takes the same path.
    b.to_dut.push_front(bad_check_block());
    uint64_t sent = b.cycle;
    REQUIRE(b.run_until([&] { return b.m.cnt_bad_blocks_o == 1; }, 50));
    const uint64_t lat = b.cycle - sent;
    b.run(20);
    b.push_ctl(CtlType::Heartbeat, b.ack_fields());
    b.run(kHbTimeout / 2);  // the last one below comes well after this heartbeat
    b.push_ctl(last_word, b.ack_fields());
    const uint64_t last = b.cycle;  // taken lat cycles from now: the timeout counts from there
    REQUIRE(b.run_until([&] { return b.state() != LinkState::Active; }, kHbTimeout + 100));
    CHECK(b.reason() == Reason::HeartbeatTimeout);
    CHECK(b.cycle == last + lat + kHbTimeout + 1);
  }
}

TEST_CASE("heartbeats: an idle Active link sends one every HB_PERIOD + 1 cycles, to the cycle") {
  // The counter restarts at 0 in the heartbeat's cycle and the next goes out once it reaches
  // HB_PERIOD: HB_PERIOD + 1 cycles apart when nothing else is on the lane.
  PeerBench b;
  b.train();
  b.run(300);
  size_t mark = b.from_dut.size();
  b.run(2000);
  auto hbs = b.ctl_sent(mark, CtlType::Heartbeat);
  REQUIRE(hbs.size() >= 6);
  for (size_t i = 1; i < hbs.size(); ++i) CHECK(hbs[i].first - hbs[i - 1].first == kHbPeriod + 1);
  CHECK(b.ctl_sent(mark, CtlType::Ack).empty());  // nothing to acknowledge: heartbeats only
}

TEST_CASE("heartbeats: one that carries a pending acknowledgement takes its place: no Ack repeats it") {
  // The transmitter is kept busy with frames while the peer's frame arrives and the heartbeat
  // falls due; at the next free cycle the heartbeat wins over the Ack and carries the same
  // fields, so the acknowledgement is sent, and must not go out again as an Ack. The frame's
  // arrival is swept over a heartbeat period so that some runs make the two coincide.
  int coincided = 0;
  for (int offset = 0; offset <= kHbPeriod + 40; ++offset) {
    PeerBench b;
    b.train(/*credit=*/1000);
    b.auto_hb = false;
    for (uint64_t i = 0; i < 2000; ++i) b.xpu_tx.push_back({i, i % 16 == 15});  // 16-word messages
    // The peer acknowledges every frame as it comes, so the transmitter never runs out of
    // replay room and stays busy.
    size_t seen = 0;
    auto run_acking = [&](uint64_t n) {
      for (uint64_t i = 0; i < n; i += 4) {
        for (; seen < b.from_dut.size(); ++seen) {
          const auto& blk = b.from_dut[seen].block;
          if (blk.sync != mxtb::link::kSyncCtrl) continue;
          if (auto c = parse_ctl(blk.payload, kSelf); c && c->type == CtlType::Sof)
            b.peer_expect = static_cast<uint16_t>((c->fields & 0xFFFF) + 1);
        }
        if (b.to_dut.size() < 2) b.push_ctl(CtlType::Ack, b.ack_fields());
        b.run(4);
      }
    };
    run_acking(static_cast<uint64_t>(offset));
    const size_t mark = b.from_dut.size();
    b.push_frame(0, {42}, true);
    run_acking(400);
    REQUIRE(b.delivered.size() == 1);
    // The acknowledgement-carrying blocks after the frame: expect 1 appears, then no block
    // repeats the fields of a heartbeat before it as an Ack.
    bool after_hb = false;
    uint32_t hb_fields = 0;
    for (auto& [c, ctl] : b.ctl_sent(mark)) {
      if (ctl.type == CtlType::Heartbeat) {
        after_hb = true;
        hb_fields = ctl.fields;
      } else if (ctl.type == CtlType::Ack) {
        INFO("offset " << offset << ", Ack at cycle " << c);
        CHECK_FALSE((after_hb && hb_fields == ctl.fields));
        after_hb = false;
      }
    }
    // Did a heartbeat, rather than an Ack, first carry the frame's acknowledgement (expect 1)?
    bool acked_by_hb = false;
    for (auto& [c, ctl] : b.ctl_sent(mark)) {
      if ((ctl.type == CtlType::Heartbeat || ctl.type == CtlType::Ack) && (ctl.fields & 0xFFFF) == 1) {
        acked_by_hb = ctl.type == CtlType::Heartbeat;
        break;
      }
    }
    coincided += acked_by_hb;
  }
  MESSAGE(coincided << " runs had a heartbeat carry the frame's acknowledgement");
  CHECK(coincided > 0);  // the sweep reached the case it is for
}

TEST_CASE("a retrain to another lane of the same XPU is a new peer: both directions start at 0") {
  PeerBench b;
  b.m.check_peer_i = 0;
  b.train(8, kPeerXpu, 0);
  for (uint64_t i = 0; i < 2; ++i) b.xpu_tx.push_back({i, true});
  b.push_frame(0, {100}, true);
  b.run(60);
  REQUIRE(b.sof_seqs() == std::vector<uint16_t>{0, 1});
  REQUIRE(b.delivered.size() == 1);
  b.blink_to_retrain();
  b.peer_expect = 0;  // a fresh peer expects its first frame
  const size_t before = b.from_dut.size();
  b.train(8, kPeerXpu, 1);
  REQUIRE(b.state() == LinkState::Active);
  CHECK(b.m.peer_xpu_o == kPeerXpu);
  CHECK(b.m.peer_lane_o == 1);
  // Its CreditInit advertises the state after the flush: expect 0, not 1 from lane 0.
  auto inits = b.ctl_sent(before, CtlType::CreditInit);
  REQUIRE_FALSE(inits.empty());
  for (auto& [c, ctl] : inits) CHECK(ctl.fields == (8u << 16));
  const size_t mark = b.from_dut.size();
  b.xpu_tx.push_back({2, true});
  b.push_frame(0, {200}, true);  // the new peer's first frame is sequence 0
  b.run(60);
  CHECK(b.sof_seqs(mark) == std::vector<uint16_t>{0});
  REQUIRE(b.delivered.size() == 2);
  CHECK(b.delivered[1].first == 200);
}

TEST_CASE("credits: a retrain to the same peer takes its CreditInit's limit as is, even below the one before") {
  PeerBench b;
  b.train(/*credit=*/8);
  for (uint64_t i = 0; i < 3; ++i) b.xpu_tx.push_back({i, true});
  b.run(60);
  REQUIRE(b.sof_seqs() == std::vector<uint16_t>{0, 1, 2});
  b.peer_expect = 3;
  b.peer_credit = 11;
  b.run(300);  // a heartbeat acknowledges 0..2 and moves the limit to 11
  b.blink_to_retrain();
  // The same peer comes back with two receive slots left: its CreditInit says expect 3, limit 5.
  b.train(/*credit=*/5);
  REQUIRE(b.state() == LinkState::Active);
  const size_t mark = b.from_dut.size();
  for (uint64_t i = 3; i < 9; ++i) b.xpu_tx.push_back({i, true});
  b.run(200);  // well inside REPLAY_TIMEOUT; the heartbeats repeat limit 5
  CHECK(b.sof_seqs(mark) == std::vector<uint16_t>{3, 4});
}

TEST_CASE("credits: a limit 0x7FFF ahead, the farthest serial arithmetic can tell, is taken") {
  PeerBench b;
  b.train(/*credit=*/2);
  b.auto_hb = false;
  for (uint64_t i = 0; i < 3; ++i) b.xpu_tx.push_back({i, true});
  b.run(100);
  REQUIRE(b.sof_seqs() == std::vector<uint16_t>{0, 1});
  b.push_ctl(CtlType::Heartbeat, (b.ack_fields() & 0xFFFFu) | ((2u + 0x7FFFu) << 16));
  b.run(60);
  CHECK(b.sof_seqs() == std::vector<uint16_t>{0, 1, 2});
}

TEST_CASE("deframer: a frame half the sequence space behind is a duplicate; one a step further is a gap") {
  // expect - seq <= 0x8000 (and seq != expect) is behind: a replay, acknowledged again. From
  // 0x8001 on, the frame counts as ahead: a gap, NAKed.
  auto answer_to = [](uint16_t back) {
    PeerBench b;
    b.train();
    b.push_frame(0, {7}, true);
    b.run(60);
    REQUIRE(b.delivered.size() == 1);  // expect is 1
    const size_t mark = b.from_dut.size();
    b.push_frame(static_cast<uint16_t>(1 - back), {9}, true);
    b.run(60);
    CHECK(b.delivered.size() == 1);
    return std::make_pair(b.ctl_sent(mark, CtlType::Ack).size(), b.ctl_sent(mark, CtlType::Nak).size());
  };
  auto [acks_at_half, naks_at_half] = answer_to(0x8000);
  CHECK(acks_at_half == 1);
  CHECK(naks_at_half == 0);
  auto [acks_past_half, naks_past_half] = answer_to(0x8001);
  CHECK(acks_past_half == 0);
  CHECK(naks_past_half == 1);
}
