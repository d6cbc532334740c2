// link_endpoint's transmitter (endpoint_bench.h): the framer's blocks bit-exact against the
// reference, split messages, Idle fields, at most REPLAY_DEPTH frames taken, the replay timer,
// acknowledgements and NAK go-back, replay exhaustion.
#include "endpoint_bench.h"

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

// ---------------------------------------------------------------- exact timing and recovery corners
// (endpoint_bench.h: written for the mutation score, timing exact to the cycle)

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
