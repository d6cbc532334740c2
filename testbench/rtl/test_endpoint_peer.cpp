// link_endpoint and its trained peer (endpoint_bench.h): blocks from anyone else refused; a retrain
// to the same peer keeps sequence state, to a new one (another XPU or lane, or a peer whose TS2s
// carry the flush flag) restarts both directions at 0; what the transmitter resumes with.
#include "endpoint_bench.h"

namespace {

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
// (endpoint_bench.h: written for the mutation score, timing exact to the cycle)

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
