// link_endpoint's credits (endpoint_bench.h): the peer's limit holds the transmitter back, the
// receiver returns credit as its XPU drains frames, and which limits count.
#include "endpoint_bench.h"

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

// ---------------------------------------------------------------- exact timing and recovery corners
// (endpoint_bench.h: written for the mutation score, timing exact to the cycle)

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
