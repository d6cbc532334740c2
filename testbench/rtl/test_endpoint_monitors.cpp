// What takes an Active link_endpoint down (endpoint_bench.h): heartbeats and their timeout, the
// error-rate window, loss of signal or of block lock, the peer restarting training, disabling.
#include "endpoint_bench.h"

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

// ---------------------------------------------------------------- exact timing and recovery corners
// (endpoint_bench.h: written for the mutation score, timing exact to the cycle)

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

TEST_CASE("losing block lock with the light still on retrains an Active link with BlockLockLost") {
  PeerBench b;
  b.train();
  for (int i = 0; i < 40; ++i) b.to_dut.push_front({3, 0});  // more than UNLOCK_BAD invalid headers in a row
  REQUIRE(b.run_until([&] { return b.state() != LinkState::Active; }, 60));
  CHECK(b.state() == LinkState::Retrain);
  CHECK(b.reason() == Reason::BlockLockLost);
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
