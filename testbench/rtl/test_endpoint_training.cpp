// link_endpoint's training (endpoint_bench.h): the states in order, identities and the
// interrupt, the peer check, every training timeout and loss of signal on the way to Active, a
// retrain request; and, to the cycle, how long Reset, Detect and each training step last.
#include "endpoint_bench.h"

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

// ---------------------------------------------------------------- exact timing and recovery corners
// (endpoint_bench.h: written for the mutation score, timing exact to the cycle)

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
  const uint64_t block_lock_entered = b.cycle;
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
  // Block lock counts valid headers from the first cycle of light: LOCK_GOOD (64) of them are in
  // by the time Detect's DETECT_STABLE + 1 cycles end, so BlockLock lasts one cycle.
  CHECK(entered[0].second - block_lock_entered == 1);
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
