// link_endpoint's receiver, the deframer (endpoint_bench.h): frames delivered and acknowledged,
// CRC, length and sync-header errors, unknown control types, duplicates and gaps, a peer that
// ignores its credit, acknowledgements due while frames go out.
#include "endpoint_bench.h"

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

// ---------------------------------------------------------------- exact timing and recovery corners
// (endpoint_bench.h: written for the mutation score, timing exact to the cycle)

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

TEST_CASE("deframer: a frame announcing more than MAX_WORDS words is not taken, however good its CRC") {
  // The SOF's length is checked against the endpoint's own MAX_WORDS (16): a 17-word frame with
  // a correct CRC is a peer's error, not a frame; the same sequence number with 16 words is.
  PeerBench b;
  b.train();
  std::vector<uint64_t> long_words(17), words(16);
  for (uint64_t i = 0; i < 17; ++i) long_words[i] = 100 + i;
  for (uint64_t i = 0; i < 16; ++i) words[i] = 200 + i;
  b.push_frame(0, long_words, true);
  b.run(100);
  CHECK(b.delivered.empty());
  CHECK(b.m.cnt_frames_rx_o == 0);
  b.push_frame(0, words, true);
  b.run(100);
  REQUIRE(b.delivered.size() == 16);
  CHECK(b.delivered[0].first == 200);
  CHECK(b.delivered[15].second);
}
