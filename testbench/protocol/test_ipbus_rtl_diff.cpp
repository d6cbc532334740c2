// The RTL IPbus transactor against the C++ target (ipbus_rtl_diff.h): random datagrams of every
// class over several seeds, directed cases for each kind of bad input (both sides must agree, and
// on the answer the IPbus rules give), bus errors in the middle of a block and in an RMW's write;
// and, on the RTL alone (the C++ target has no bus timeouts), a bus that does not answer.
#include "testbench/protocol/ipbus_rtl_diff.h"

#include "protocol/board_map.h"

#include <mxtb/emu_regs.h>

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <map>

using namespace mxtb::testbench::ipbus_diff;
using mxtb::protocol::kRamBase;
using mxtb::protocol::kRamWords;
using ipbus::ByteOrder;
using ipbus::Fault;
using ipbus::InfoCode;
using ipbus::PacketType;
using ipbus::TxType;

namespace {

constexpr uint64_t kFillSeed = 7;

uint8_t fault_number(Fault f) { return static_cast<uint8_t>(f); }

std::unique_ptr<DiffRunner> rtl_pair(const std::set<uint32_t>& refused = {}, RtlTiming timing = {}, uint32_t n_buffers = 16) {
  return std::make_unique<DiffRunner>(std::make_unique<CppSide>(kFillSeed, n_buffers),
                                      std::make_unique<RtlSide>(kFillSeed, timing, n_buffers), refused);
}

std::vector<uint8_t> bytes(const std::vector<uint32_t>& words, ByteOrder order = ByteOrder::Big) { return ipbus::to_bytes(words, order); }

std::vector<uint32_t> words_of(const std::vector<uint8_t>& b, ByteOrder order) {
  std::vector<uint32_t> w;
  for (size_t i = 0; i + 4 <= b.size(); i += 4)
    w.push_back(order == ByteOrder::Big ? uint32_t{b[i]} << 24 | uint32_t{b[i + 1]} << 16 | uint32_t{b[i + 2]} << 8 | b[i + 3]
                                        : uint32_t{b[i + 3]} << 24 | uint32_t{b[i + 2]} << 16 | uint32_t{b[i + 1]} << 8 | b[i]);
  return w;
}

// Runs one datagram through both sides: they must agree; returns the (common) answer.
Answer agree(DiffRunner& r, const std::vector<uint8_t>& d) {
  auto m = r.run(d);
  if (m) FAIL_CHECK(describe(*m));
  CHECK_FALSE(m.has_value());
  return r.last_device();
}

// Both sides drop the datagram with `fault`, and the RTL's stat port says so.
void expect_dropped(DiffRunner& r, const std::vector<uint8_t>& d, Fault fault) {
  INFO("datagram " << hex(d));
  Answer a = agree(r, d);
  CHECK_FALSE(r.last_reference().reply.has_value());
  CHECK(r.last_reference().kind == Answer::kKindDropped);
  CHECK(r.last_reference().fault == fault_number(fault));
  CHECK_FALSE(a.reply.has_value());
  CHECK(a.kind == Answer::kKindDropped);
  CHECK(a.fault == fault_number(fault));
}

// Both sides answer a control packet whose last transaction fails with `code`; returns the reply's words.
std::vector<uint32_t> expect_tx_error(DiffRunner& r, const std::vector<uint32_t>& request, InfoCode code, Fault fault) {
  INFO("request " << hex(bytes(request)));
  Answer a = agree(r, bytes(request));
  REQUIRE(r.last_reference().reply.has_value());
  REQUIRE(a.reply.has_value());
  CHECK(a.kind == Answer::kKindControl);
  CHECK(a.fault == fault_number(fault));
  auto w = words_of(*a.reply, ByteOrder::Big);
  REQUIRE(w.size() >= 2);
  CHECK((w.back() & 0xF) == static_cast<uint32_t>(code));
  if (code == InfoCode::BadHeader) {
    // The offending header echoed with only its info code changed.
    CHECK(std::any_of(request.begin() + 1, request.end(), [&](uint32_t q) { return (q & ~0xFu) == (w.back() & ~0xFu); }));
  } else {
    CHECK(((w.back() >> 8) & 0xFF) == 0);  // a bus error's header says no words moved
  }
  return w;
}

}  // namespace

// ---- the harness itself, without the RTL: it must agree with itself and reach every class ----

TEST_CASE("C++ against C++: the harness agrees with itself, and the generator reaches every class and fault") {
  for (uint64_t seed : {1u, 2u}) {
    auto refused = random_refused_words(seed);
    DiffRunner r(std::make_unique<CppSide>(kFillSeed), std::make_unique<CppSide>(kFillSeed), refused);
    DatagramGenerator gen(seed);
    gen.aim_at(refused);
    std::map<DatagramClass, uint64_t> classes;
    uint64_t refused_after_accesses = 0;
    for (int i = 0; i < 20000; ++i) {
      Datagram d = gen.next(r.next_expected_id());
      ++classes[d.cls];
      auto m = r.run(d.bytes);
      if (m) FAIL(describe(*m));
      // A bus error on a refused word after other accesses of the packet went through.
      const auto& log = r.reference().board().log;
      if (r.last_reference().fault == fault_number(Fault::BusError) && log.size() > 1 && !log.back().ok) ++refused_after_accesses;
    }
    for (size_t c = 0; c < static_cast<size_t>(DatagramClass::kCount); ++c) {
      INFO("class " << std::string(to_string(static_cast<DatagramClass>(c))));
      CHECK(classes[static_cast<DatagramClass>(c)] > 50);
    }
    const auto& s = r.stats();
    for (size_t f = 0; f < s.faults.size(); ++f) {
      INFO("fault " << std::string(ipbus::to_string(static_cast<Fault>(f))));
      CHECK(s.faults[f] > 10);
    }
    for (size_t k = 0; k < s.kinds.size(); ++k) CHECK(s.kinds[k] > 100);
    CHECK(refused_after_accesses > 10);
  }
}

TEST_CASE("each generated class meets the fault it is made for") {
  // Class -> the faults it may meet (a malformed packet can fail earlier than its flaw, e.g. a
  // truncated one that still looks like a header; mostly it must meet its own).
  const std::map<DatagramClass, Fault> meant{
      {DatagramClass::OutOfSequence, Fault::OutOfSequence}, {DatagramClass::StrayBytes, Fault::Truncated},
      {DatagramClass::BadVersion, Fault::BadPacketHeader},  {DatagramClass::BadReserved, Fault::BadPacketHeader},
      {DatagramClass::BadQualifier, Fault::BadPacketHeader}, {DatagramClass::BadPacketType, Fault::BadPacketHeader},
      {DatagramClass::BadStatusLength, Fault::BadStatus},   {DatagramClass::BadResendLength, Fault::BadResend},
      {DatagramClass::BadTxHeader, Fault::BadTransaction},  {DatagramClass::BadInfoCode, Fault::BadTransaction},
      {DatagramClass::RmwWords, Fault::BadTransaction},     {DatagramClass::BodyPastEnd, Fault::BadTransaction},
      {DatagramClass::ReplyPastMtu, Fault::BadTransaction}, {DatagramClass::Oversized, Fault::Oversized},
  };
  for (const auto& [cls, fault] : meant) {
    CppSide side(kFillSeed);
    DatagramGenerator gen(3);
    int hits = 0;
    constexpr int kTries = 300;
    for (int i = 0; i < kTries; ++i) {
      Answer a = side.handle(gen.make(cls, side.target().next_expected_id()).bytes);
      hits += a.fault == fault_number(fault);
    }
    INFO("class " << std::string(to_string(cls)) << ": " << hits << " of " << kTries << " met " << std::string(ipbus::to_string(fault)));
    // Random transactions before the bad one may fail with a bus error first (near the windows'
    // edges, as they are meant to be).
    CHECK(hits >= kTries / 4);
  }
}

// ---- the RTL against the C++ target ----

TEST_CASE("RTL against C++: 10^5 random datagrams over five seeds") {
  uint64_t total = 0, mismatches = 0;
  for (uint64_t seed = 1; seed <= 5; ++seed) {
    auto refused = random_refused_words(seed);
    RtlTiming timing;
    timing.seed = seed * 7919;
    auto r = rtl_pair(refused, timing);
    DatagramGenerator gen(seed);
    gen.aim_at(refused);
    int shown = 0;
    for (int i = 0; i < 20000; ++i) {
      // Now and then the board's reset between two datagrams: every register of the running
      // transactor must go back to what a fresh target has (the resend requests that follow ask
      // for ids it kept before).
      if (i % 997 == 996) r->reset_targets();
      Datagram d = gen.next(r->next_expected_id());
      auto m = r->run(d.bytes);
      if (!m) continue;
      if (shown++ < 3) {
        auto small = minimise(m->datagram, [&](uint64_t attempt) {
          RtlTiming t = timing;
          t.seed += attempt;
          return rtl_pair(refused, t);
        });
        MESSAGE(fmt::format("seed {}, datagram {} ({}):\n{}minimised on fresh sides: {}", seed, i, to_string(d.cls), describe(*m),
                            hex(small)));
      }
      if (r->stats().mismatches >= 20) break;  // the RTL is broken this way throughout: no need for 20000 reports
    }
    total += r->stats().datagrams;
    mismatches += r->stats().mismatches;
    MESSAGE(fmt::format("seed {}: {} datagrams, {} mismatches, {:.0f} RTL datagrams/s, {:.1f} cycles/datagram", seed,
                        r->stats().datagrams, r->stats().mismatches, r->stats().datagrams / r->stats().device_seconds,
                        double(r->stats().device_cycles) / r->stats().datagrams));
  }
  CHECK(mismatches == 0);
  CHECK(total == 100000);
}

TEST_CASE("RTL against C++: bad input of each kind, the same answer on both sides and the right one") {
  auto r = rtl_pair();
  DatagramGenerator gen(11);
  const uint32_t ctrl0 = packet_header(PacketType::Control, 0);
  const std::vector<uint32_t> good{ctrl0, tx_header(TxType::Read, 2), kRamBase + 4};

  SUBCASE("truncated: shorter than a word, and not whole words") {
    expect_dropped(*r, {0x20}, Fault::Truncated);
    expect_dropped(*r, {0x20, 0x00, 0x00}, Fault::Truncated);
    auto d = bytes(good);
    d.resize(7);
    expect_dropped(*r, d, Fault::Truncated);
  }
  SUBCASE("stray bytes after a valid packet") {
    for (size_t n = 1; n <= 3; ++n) {
      auto d = bytes(good);
      d.insert(d.end(), n, 0xA5);
      expect_dropped(*r, d, Fault::Truncated);
    }
  }
  SUBCASE("bad packet header: version, reserved bits, qualifier, type") {
    for (uint32_t h : {0x100000F0u, 0x300000F0u, 0x210000F0u, 0x2F0000F0u, 0x200000E0u, 0x20000000u, 0x200000F3u, 0x200000FFu}) {
      auto w = good;
      w[0] = h;
      expect_dropped(*r, bytes(w), Fault::BadPacketHeader);
    }
  }
  SUBCASE("random bytes that are no header in either byte order") {
    expect_dropped(*r, {0x12, 0x34, 0x56, 0x78, 0x9A, 0xBC, 0xDE, 0xF0}, Fault::BadPacketHeader);
  }
  SUBCASE("oversized: one byte past the MTU, and 1600 bytes") {
    auto w = gen.control_packet(0, 20);
    while (w.size() * 4 < 1600) w.push_back(0);
    auto d = bytes(w);
    d.resize(ipbus::kMtuBytes + 1);
    expect_dropped(*r, d, Fault::Oversized);
    d.resize(1600);
    expect_dropped(*r, d, Fault::Oversized);
    // Exactly the MTU is allowed: a 368-word packet of non-incrementing writes of 0 words.
    std::vector<uint32_t> fits{ctrl0, tx_header(TxType::NonIncWrite, 1), kRamBase, 42};
    while (fits.size() + 2 <= ipbus::kMtuWords) {
      fits.push_back(tx_header(TxType::NonIncWrite, 0));
      fits.push_back(kRamBase);
    }
    REQUIRE(fits.size() * 4 == ipbus::kMtuBytes);
    Answer a = agree(*r, bytes(fits));
    CHECK(a.kind == Answer::kKindControl);
    CHECK(a.fault == Answer::kNoFault);
  }
  SUBCASE("status requests: 16 words answered big-endian; any other length dropped") {
    std::vector<uint32_t> st(ipbus::kStatusWords, 0);
    st[0] = packet_header(PacketType::Status, 0);
    agree(*r, bytes(good));
    Answer a = agree(*r, bytes(st, ByteOrder::Little));
    REQUIRE(a.reply);
    CHECK(a.kind == Answer::kKindStatus);
    auto w = words_of(*a.reply, ByteOrder::Big);
    REQUIRE(w.size() == ipbus::kStatusWords);
    CHECK(w[1] == ipbus::kMtuBytes);
    CHECK(w[2] == 16);
    CHECK(w[3] == packet_header(PacketType::Control, 1));
    CHECK(w[8] == ctrl0);
    st.resize(15);
    expect_dropped(*r, bytes(st), Fault::BadStatus);
    st.resize(17);
    expect_dropped(*r, bytes(st), Fault::BadStatus);
  }
  SUBCASE("resend: the stored reply again; unknown ids, id 0 and long requests dropped") {
    auto w = good;
    w[0] = packet_header(PacketType::Control, 1);
    Answer first = agree(*r, bytes(w, ByteOrder::Little));
    REQUIRE(first.reply);
    Answer again = agree(*r, bytes({packet_header(PacketType::Resend, 1)}));
    CHECK(again.kind == Answer::kKindResend);
    REQUIRE(again.reply);
    CHECK(*again.reply == *first.reply);  // as sent: little-endian
    expect_dropped(*r, bytes({packet_header(PacketType::Resend, 2)}), Fault::BadResend);
    expect_dropped(*r, bytes({packet_header(PacketType::Resend, 0)}), Fault::BadResend);
    expect_dropped(*r, bytes({packet_header(PacketType::Resend, 1), 0}), Fault::BadResend);
  }
  SUBCASE("resend after the reply buffers have moved on: dropped") {
    for (uint16_t id = 1; id <= 17; ++id) agree(*r, bytes({packet_header(PacketType::Control, id)}));
    expect_dropped(*r, bytes({packet_header(PacketType::Resend, 1)}), Fault::BadResend);
    Answer a = agree(*r, bytes({packet_header(PacketType::Resend, 2)}));
    CHECK(a.kind == Answer::kKindResend);
  }
  SUBCASE("out of sequence: neither 0 nor the next expected id") {
    expect_dropped(*r, bytes({packet_header(PacketType::Control, 2)}), Fault::OutOfSequence);
    expect_dropped(*r, bytes({packet_header(PacketType::Control, 0xFFFF)}), Fault::OutOfSequence);
    Answer a = agree(*r, bytes({packet_header(PacketType::Control, 1)}));
    CHECK(a.fault == Answer::kNoFault);
    expect_dropped(*r, bytes({packet_header(PacketType::Control, 1)}), Fault::OutOfSequence);  // a repeat
  }
  SUBCASE("bad transaction headers: version, type, info code; the packet stops there") {
    for (uint32_t bad : {0x10000100u | 0xF, 0x30000100u | 0xF, 0x20000160u | 0xF, 0x200001F0u | 0xF, tx_header(TxType::Read, 1, 0, InfoCode::Success),
                         tx_header(TxType::Write, 1, 0, InfoCode::WriteError), tx_header(TxType::Read, 1, 0, static_cast<InfoCode>(0xE))}) {
      std::vector<uint32_t> w{ctrl0, tx_header(TxType::Write, 1, 5), kRamBase, 0x1234, bad, kRamBase, 0, tx_header(TxType::Write, 1), kRamBase + 1, 7};
      auto reply = expect_tx_error(*r, w, InfoCode::BadHeader, Fault::BadTransaction);
      CHECK(reply.size() == 3);  // the packet header, the write's, the bad one's
    }
  }
  SUBCASE("RMW of other than one word") {
    for (uint32_t words : {0u, 2u, 255u})
      expect_tx_error(*r, {ctrl0, tx_header(TxType::RmwSum, words), kRamBase, 1}, InfoCode::BadHeader, Fault::BadTransaction);
    expect_tx_error(*r, {ctrl0, tx_header(TxType::RmwBits, 3), kRamBase, 1, 2}, InfoCode::BadHeader, Fault::BadTransaction);
  }
  SUBCASE("body past the packet's end") {
    expect_tx_error(*r, {ctrl0, tx_header(TxType::Write, 4), kRamBase, 1, 2}, InfoCode::BadHeader, Fault::BadTransaction);
    expect_tx_error(*r, {ctrl0, tx_header(TxType::Read, 1)}, InfoCode::BadHeader, Fault::BadTransaction);
    expect_tx_error(*r, {ctrl0, tx_header(TxType::RmwBits, 1), kRamBase, 1}, InfoCode::BadHeader, Fault::BadTransaction);
  }
  SUBCASE("a reply that would pass the MTU") {
    auto reply = expect_tx_error(*r, {ctrl0, tx_header(TxType::Read, 255), kRamBase, tx_header(TxType::Read, 255), kRamBase},
                                 InfoCode::BadHeader, Fault::BadTransaction);
    CHECK(reply.size() == 1 + 256 + 1);
    // With more requests behind it, one word must stay free for the next header.
    std::vector<uint32_t> w{ctrl0, tx_header(TxType::Read, 255), kRamBase, tx_header(TxType::Read, 110), kRamBase};
    Answer a = agree(*r, bytes(w));
    CHECK(a.fault == Answer::kNoFault);  // 1 + 256 + 111 = 368 words: exactly the MTU
    w.push_back(tx_header(TxType::Read, 0));
    w.push_back(kRamBase);
    expect_tx_error(*r, w, InfoCode::BadHeader, Fault::BadTransaction);
  }
  SUBCASE("bus errors: holes, the windows' ends, RO written, WO read") {
    // Past the RAM's end by one word; 0 words at its very end are fine.
    expect_tx_error(*r, {ctrl0, tx_header(TxType::Read, 2), kRamBase + kRamWords - 1}, InfoCode::ReadError, Fault::BusError);
    Answer a = agree(*r, bytes({ctrl0, tx_header(TxType::Read, 0), kRamBase + kRamWords}));
    CHECK(a.fault == Answer::kNoFault);
    expect_tx_error(*r, {ctrl0, tx_header(TxType::Write, 1), kRamBase + kRamWords, 0}, InfoCode::WriteError, Fault::BusError);
    expect_tx_error(*r, {ctrl0, tx_header(TxType::Read, 1), mxtb::protocol::kControllerWords}, InfoCode::ReadError, Fault::BusError);
    expect_tx_error(*r, {ctrl0, tx_header(TxType::Read, 0), mxtb::protocol::kControllerWords}, InfoCode::ReadError, Fault::BusError);
    expect_tx_error(*r, {ctrl0, tx_header(TxType::Read, 1), 0x18000}, InfoCode::ReadError, Fault::BusError);
    // A register written that is read-only, and the RMW of one (a read and a write: refused whole).
    const uint32_t id_reg = mxtb::ocs::reg::id::kOffset / 4;
    expect_tx_error(*r, {ctrl0, tx_header(TxType::Write, 1), id_reg, 0}, InfoCode::WriteError, Fault::BusError);
    expect_tx_error(*r, {ctrl0, tx_header(TxType::RmwSum, 1), id_reg, 1}, InfoCode::ReadError, Fault::BusError);
    CHECK(r->reference().board().log.empty());
    CHECK(r->device().board().log.empty());
  }
  SUBCASE("random bytes behind a valid header") {
    std::mt19937_64 rng(5);
    for (int i = 0; i < 200; ++i) {
      std::vector<uint8_t> d(4 + rng() % 200);
      for (auto& b : d) b = static_cast<uint8_t>(rng());
      auto h = bytes({packet_header(PacketType::Control, 0)}, rng() & 1 ? ByteOrder::Little : ByteOrder::Big);
      std::copy(h.begin(), h.end(), d.begin());
      agree(*r, d);
    }
  }
}

TEST_CASE("RTL against C++: a refused word mid-block stops the block there on both sides") {
  const uint32_t refused_ram = kRamBase + 10;
  const uint32_t scratch = mxtb::ocs::reg::scratch::kOffset / 4;
  const uint32_t refused_scratch = scratch + 3;
  auto r = rtl_pair({refused_ram, refused_scratch});
  const uint32_t ctrl0 = packet_header(PacketType::Control, 0);

  SUBCASE("a block write into the RAM") {
    std::vector<uint32_t> w{ctrl0, tx_header(TxType::Write, 8), kRamBase + 6};
    for (uint32_t i = 0; i < 8; ++i) w.push_back(0xC0DE0000u + i);
    w.insert(w.end(), {tx_header(TxType::Write, 1), kRamBase, 0x5555});  // never runs
    std::vector<uint32_t> before;
    for (uint32_t a = kRamBase; a < kRamBase + 16; ++a) before.push_back(r->reference().board().peek(a));
    auto reply = expect_tx_error(*r, w, InfoCode::WriteError, Fault::BusError);
    CHECK(reply.size() == 2);
    for (auto* side : {&r->reference(), &r->device()}) {
      INFO(side->name());
      const auto& board = side->board();
      for (uint32_t i = 0; i < 16; ++i) {
        const uint32_t a = kRamBase + i;
        const bool written = i >= 6 && i < 10;
        CHECK(board.peek(a) == (written ? 0xC0DE0000u + (i - 6) : before[i]));
      }
      REQUIRE(board.log.size() == 5);
      CHECK(board.log[3] == BusAccess{true, kRamBase + 9, 0xC0DE0003u, true});
      CHECK(board.log[4] == BusAccess{true, refused_ram, 0xC0DE0004u, false});
    }
  }
  SUBCASE("a block write into a controller window") {
    std::vector<uint32_t> w{ctrl0, tx_header(TxType::Write, 6), scratch};
    for (uint32_t i = 0; i < 6; ++i) w.push_back(0xAB000000u + i);
    expect_tx_error(*r, w, InfoCode::WriteError, Fault::BusError);
    for (auto* side : {&r->reference(), &r->device()}) {
      INFO(side->name());
      for (uint32_t i = 0; i < 3; ++i) CHECK(side->board().peek(scratch + i) == 0xAB000000u + i);
      CHECK(side->board().peek(scratch + 3) != 0xAB000003u);
      CHECK(side->board().log.size() == 4);
    }
  }
  SUBCASE("a block read and an RMW: the error header alone") {
    auto reply = expect_tx_error(*r, {ctrl0, tx_header(TxType::Read, 4), kRamBase + 8}, InfoCode::ReadError, Fault::BusError);
    CHECK(reply.size() == 2);
    expect_tx_error(*r, {ctrl0, tx_header(TxType::RmwBits, 1), refused_ram, 0, 1}, InfoCode::ReadError, Fault::BusError);
    // A non-incrementing write stops at its first word.
    expect_tx_error(*r, {ctrl0, tx_header(TxType::NonIncWrite, 3), refused_scratch, 1, 2, 3}, InfoCode::WriteError, Fault::BusError);
    CHECK(r->device().board().log.size() == 1);
  }
}

TEST_CASE("RTL against C++: packet ids wrap from 0xFFFF to 1 alike") {
  auto r = rtl_pair({}, RtlTiming::eager(3));
  uint16_t id = 1;
  for (uint32_t n = 0; n < 0xFFFF; ++n, id = ipbus::next_packet_id(id)) {
    auto m = r->run(bytes({packet_header(PacketType::Control, id)}));
    if (m) FAIL(describe(*m));
  }
  CHECK(r->next_expected_id() == 1);
  Answer a = agree(*r, bytes({packet_header(PacketType::Control, 1)}));
  CHECK(a.fault == Answer::kNoFault);
  Answer resend = agree(*r, bytes({packet_header(PacketType::Resend, 0xFFFF)}));
  CHECK(resend.kind == Answer::kKindResend);
}

TEST_CASE("RTL against C++: raw bytes as libFuzzer would give them (run_one)") {
  auto r = rtl_pair(random_refused_words(9));
  std::mt19937_64 rng(9);
  DatagramGenerator gen(9);
  uint64_t mismatches = 0;
  for (int i = 0; i < 3000; ++i) {
    // Raw bytes, and mutated valid datagrams (what a fuzzer's corpus turns into).
    std::vector<uint8_t> d = gen.next(r->next_expected_id()).bytes;
    for (size_t flips = rng() % 4; flips-- && !d.empty();) d[rng() % d.size()] ^= static_cast<uint8_t>(1u << (rng() % 8));
    if (rng() % 10 == 0) d.resize(rng() % 9);
    if (auto m = r->run_one(d.data(), d.size())) {
      if (mismatches++ < 3) MESSAGE(describe(*m));
    }
  }
  CHECK(mismatches == 0);
  CHECK(r->stats().skipped_empty > 0);
  CHECK(r->stats().datagrams + r->stats().skipped_empty == 3000);
}

// ---- the RTL alone: what the C++ target has no counterpart for ----

namespace {

constexpr uint64_t kAxiTimeout = 65535;  // the transactor's default AXI_TIMEOUT

// The RTL's answer to a control packet (big-endian) as words; checks that it is a control reply
// with `fault` (a Fault's number, or Answer::kNoFault) and that the transactor kept the AXI and stream rules.
std::vector<uint32_t> rtl_reply(RtlSide& rtl, const std::vector<uint32_t>& request, uint8_t fault) {
  INFO("request " << hex(bytes(request)));
  rtl.board().log.clear();
  Answer a = rtl.handle(bytes(request));
  CHECK(a.failure.empty());
  if (!a.failure.empty()) MESSAGE(a.failure);
  CHECK(a.kind == Answer::kKindControl);
  CHECK(a.fault == fault);
  REQUIRE(a.reply.has_value());
  return words_of(*a.reply, ByteOrder::Big);
}

// A transaction header as a bus error or timeout answers it: no words, the info code.
uint32_t failed(uint32_t header, InfoCode code) { return (header & 0xFFFF00F0u) | static_cast<uint32_t>(code); }

}  // namespace

TEST_CASE("RTL alone: a bus that does not answer: read and write timeouts, the orphan access, recovery") {
  const uint32_t ctrl0 = packet_header(PacketType::Control, 0);
  const uint32_t silent = kRamBase + 5;
  RtlTiming timing = RtlTiming::eager(5);
  timing.silent = {silent};
  const BoardRegisters expected(kFillSeed);  // what the board holds at first, for the reads' data
  for (const bool write : {false, true}) {
    INFO((write ? "a write" : "a read") << " that is never answered in time");
    RtlSide rtl(kFillSeed, timing);

    // 1. A block whose third word's access is taken but not answered: the transaction ends after
    //    AXI_TIMEOUT cycles with the timeout code; the words before it moved, the one after did not.
    const uint32_t block = tx_header(write ? TxType::Write : TxType::Read, 4, 0x12);
    std::vector<uint32_t> request{ctrl0, block, kRamBase + 3};
    if (write) request.insert(request.end(), {0xD0D00003u, 0xD0D00004u, 0xD0D00005u, 0xD0D00006u});
    request.insert(request.end(), {tx_header(TxType::Write, 1, 0x13), kRamBase + 100, 0x77});  // never runs
    const uint64_t c0 = rtl.cycles();
    auto reply = rtl_reply(rtl, request, fault_number(Fault::BusError));
    const uint64_t took = rtl.cycles() - c0;
    CHECK(took > kAxiTimeout);
    CHECK(took < kAxiTimeout + 200);
    CHECK(reply == std::vector<uint32_t>{ctrl0, failed(block, write ? InfoCode::WriteTimeout : InfoCode::ReadTimeout)});
    REQUIRE(rtl.board().log.size() == 3);
    for (uint32_t i = 0; i < 3; ++i) {
      CHECK(rtl.board().log[i].write == write);
      CHECK(rtl.board().log[i].addr == kRamBase + 3 + i);
    }
    CHECK(rtl.board().peek(kRamBase + 100) == expected.peek(kRamBase + 100));
    CHECK(rtl.bus_outstanding());  // the orphan: its response is still to come

    // 2. While the orphan is outstanding every access times out at once, without touching the bus,
    //    with its own direction's code; one of 0 words moves nothing and succeeds.
    const uint32_t rd = tx_header(TxType::Read, 1, 0x21), wr = tx_header(TxType::Write, 1, 0x22), nir = tx_header(TxType::NonIncRead, 2, 0x23),
                   rmw = tx_header(TxType::RmwSum, 1, 0x24), rmwb = tx_header(TxType::RmwBits, 1, 0x25), none = tx_header(TxType::Read, 0, 0x26);
    struct Case {
      std::vector<uint32_t> request, reply;
    };
    const std::vector<Case> cases{
        {{ctrl0, rd, kRamBase}, {ctrl0, failed(rd, InfoCode::ReadTimeout)}},
        {{ctrl0, wr, kRamBase, 0x99}, {ctrl0, failed(wr, InfoCode::WriteTimeout)}},
        {{ctrl0, nir, kRamBase + 7}, {ctrl0, failed(nir, InfoCode::ReadTimeout)}},
        {{ctrl0, rmw, kRamBase, 1}, {ctrl0, failed(rmw, InfoCode::ReadTimeout)}},
        {{ctrl0, rmwb, kRamBase, 0, 1}, {ctrl0, failed(rmwb, InfoCode::ReadTimeout)}},
        {{ctrl0, none, kRamBase, rd, kRamBase}, {ctrl0, none & ~0xFu, failed(rd, InfoCode::ReadTimeout)}},
    };
    for (const auto& c : cases) {
      const uint64_t c1 = rtl.cycles();
      CHECK(rtl_reply(rtl, c.request, fault_number(Fault::BusError)) == c.reply);
      CHECK(rtl.cycles() - c1 < 200);
      CHECK(rtl.board().log.empty());
    }
    CHECK(rtl.board().peek(kRamBase) == expected.peek(kRamBase));
    // A refused access is refused as ever (the window check comes first): an error, not a timeout.
    const uint32_t past = tx_header(TxType::Read, 2, 0x27);
    CHECK(rtl_reply(rtl, {ctrl0, past, kRamBase + kRamWords - 1}, fault_number(Fault::BusError)) ==
          std::vector<uint32_t>{ctrl0, failed(past, InfoCode::ReadError)});
    CHECK(rtl.bus_outstanding());

    // 3. The late response arrives (and is taken: nothing else happens); accesses work again.
    CHECK(rtl.idle(timing.silent_delay) == "");
    CHECK_FALSE(rtl.bus_outstanding());
    const uint32_t rd2 = tx_header(TxType::Read, 2, 0x31), wr2 = tx_header(TxType::Write, 1, 0x32);
    reply = rtl_reply(rtl, {ctrl0, wr2, kRamBase + 1, 0xFEED, rd2, kRamBase}, Answer::kNoFault);
    CHECK(reply == std::vector<uint32_t>{ctrl0, wr2 & ~0xFu, rd2 & ~0xFu, expected.peek(kRamBase), 0xFEED});
    CHECK(rtl.board().log.size() == 3);
  }
}

// The timeout's edge, exactly: an access may be answered as late as AXI_TIMEOUT cycles after its
// first cycle on the bus (the request's, counted as cycle 0); a response one cycle later finds the
// access timed out. The slave here answers `delay` + 1 cycles after it took the request, which it
// takes in its first cycle (all ready).
TEST_CASE("RTL alone: the bus timeout's edge: a response AXI_TIMEOUT cycles after the request is taken, one cycle later is a timeout") {
  const uint32_t ctrl0 = packet_header(PacketType::Control, 0);
  const uint32_t word = kRamBase + 11;
  const BoardRegisters expected(kFillSeed);
  for (const bool write : {false, true}) {
    for (const bool in_time : {true, false}) {
      const std::string what = std::string(write ? "a write" : "a read") + (in_time ? " answered in the last cycle it may be" : " answered a cycle too late");
      INFO(what);
      RtlTiming timing = RtlTiming::eager(7);
      timing.silent = {word};
      timing.silent_delay = static_cast<uint32_t>(kAxiTimeout - (in_time ? 1 : 0));
      RtlSide rtl(kFillSeed, timing);
      const uint32_t tx = tx_header(write ? TxType::Write : TxType::Read, 1, 0x51);
      std::vector<uint32_t> request{ctrl0, tx, word};
      if (write) request.push_back(0xC0FFEE);
      std::vector<uint32_t> want{ctrl0};
      if (in_time) {
        want.push_back(tx & ~0xFu);
        if (!write) want.push_back(expected.peek(word));
      } else {
        want.push_back(failed(tx, write ? InfoCode::WriteTimeout : InfoCode::ReadTimeout));
      }
      CHECK(rtl_reply(rtl, request, in_time ? Answer::kNoFault : fault_number(Fault::BusError)) == want);
      // The late response, a cycle after the timeout, is taken as the orphan's: the next access works.
      CHECK(rtl.idle(4) == "");
      CHECK_FALSE(rtl.bus_outstanding());
      const uint32_t rd = tx_header(TxType::Read, 1, 0x52);
      CHECK(rtl_reply(rtl, {ctrl0, rd, kRamBase}, Answer::kNoFault) == std::vector<uint32_t>{ctrl0, rd & ~0xFu, expected.peek(kRamBase)});
    }
  }
}

// The emulator's block answers RUN_UNTIL and ADVANCE_NS once simulated time has passed, the
// transactor clocked all the while: an access of its window has no timeout, however late the
// answer (docs/board.md). The same lateness on the RAM is a timeout (the test above).
TEST_CASE("RTL alone: an access of the emulator's block waits past AXI_TIMEOUT for its response") {
  const uint32_t ctrl0 = packet_header(PacketType::Control, 0);
  const uint32_t word = mxtb::protocol::emulator(mxtb::emu::reg::run_timeout_ns::kOffset);
  const BoardRegisters expected(kFillSeed);
  for (const bool write : {false, true}) {
    INFO((write ? "a write" : "a read"));
    RtlTiming timing = RtlTiming::eager(9);
    timing.silent = {word};
    timing.silent_delay = static_cast<uint32_t>(kAxiTimeout + 5000);
    RtlSide rtl(kFillSeed, timing);
    const uint64_t c0 = rtl.cycles();
    const uint32_t tx = tx_header(write ? TxType::Write : TxType::Read, 1, 0x61);
    std::vector<uint32_t> request{ctrl0, tx, word};
    if (write) request.push_back(1234);
    std::vector<uint32_t> want{ctrl0, tx & ~0xFu};
    if (!write) want.push_back(expected.peek(word));
    CHECK(rtl_reply(rtl, request, Answer::kNoFault) == want);
    CHECK(rtl.cycles() - c0 > kAxiTimeout + 5000);
    if (write) CHECK(rtl.board().peek(word) == 1234);
    CHECK_FALSE(rtl.bus_outstanding());
  }
}

// A write's address and data taken in different cycles, by a slave whose ready for a channel
// stays low once it has taken that channel, until the response: the transactor must see the
// later one taken in the cycle it is (found by tools/mutate.py, seed 15: a copy that waits for the
// address's ready again after taking it hangs on such a slave and times out).
TEST_CASE("RTL alone: writes to a slave that lowers each ready once its channel is taken") {
  const uint32_t ctrl0 = packet_header(PacketType::Control, 0);
  RtlTiming timing;
  timing.seed = 21;
  timing.axi_ready_stall = 0.5;
  timing.ready_only_when_free = true;
  RtlSide rtl(kFillSeed, timing);
  for (uint32_t i = 0; i < 200; ++i) {
    INFO("write " << i);
    const uint32_t word = kRamBase + i % 64, wr = tx_header(TxType::Write, 1, 0x70), rd = tx_header(TxType::Read, 1, 0x71);
    REQUIRE(rtl_reply(rtl, {ctrl0, wr, word, 0xA5000000u + i, rd, word}, Answer::kNoFault) ==
            std::vector<uint32_t>{ctrl0, wr & ~0xFu, rd & ~0xFu, 0xA5000000u + i});
  }
}

TEST_CASE("RTL against C++: an RMW whose read goes through and whose write is refused") {
  const uint32_t ctrl0 = packet_header(PacketType::Control, 0);
  const uint32_t word = kRamBase + 9;
  auto r = rtl_pair();
  for (auto* side : {&r->reference(), &r->device()}) side->board().refused_writes = {word};
  const uint32_t before = r->reference().board().peek(word);
  for (uint32_t rmw : {tx_header(TxType::RmwSum, 1, 0x41), tx_header(TxType::RmwBits, 1, 0x42)}) {
    std::vector<uint32_t> w{ctrl0, rmw, word, 0x0F0F0F0F};
    if (((rmw >> 4) & 0xF) == static_cast<uint32_t>(TxType::RmwBits)) w.push_back(0x100);
    w.insert(w.end(), {tx_header(TxType::Write, 1), kRamBase, 0x5555});  // never runs
    // As the C++ target's bus: an RMW's failure is a read error, whichever half failed.
    auto reply = expect_tx_error(*r, w, InfoCode::ReadError, Fault::BusError);
    CHECK(reply.size() == 2);
    for (auto* side : {&r->reference(), &r->device()}) {
      INFO(side->name());
      const auto& log = side->board().log;
      REQUIRE(log.size() == 2);
      CHECK(log[0] == BusAccess{false, word, before, true});
      CHECK(log[1].write);
      CHECK_FALSE(log[1].ok);
      CHECK(side->board().peek(word) == before);
    }
  }
}

TEST_CASE("RTL alone: an RMW whose write is never answered in time: a read timeout, then recovery") {
  const uint32_t ctrl0 = packet_header(PacketType::Control, 0);
  const uint32_t word = kRamBase + 9;
  RtlTiming timing = RtlTiming::eager(6);
  timing.silent_writes = {word};
  RtlSide rtl(kFillSeed, timing);
  const uint32_t before = rtl.board().peek(word);
  const uint32_t rmw = tx_header(TxType::RmwSum, 1, 0x51);
  const uint64_t c0 = rtl.cycles();
  auto reply = rtl_reply(rtl, {ctrl0, rmw, word, 1, tx_header(TxType::Read, 1), kRamBase}, fault_number(Fault::BusError));
  CHECK(rtl.cycles() - c0 > kAxiTimeout);
  CHECK(rtl.cycles() - c0 < kAxiTimeout + 200);
  CHECK(reply == std::vector<uint32_t>{ctrl0, failed(rmw, InfoCode::ReadTimeout)});
  REQUIRE(rtl.board().log.size() == 2);
  CHECK(rtl.board().log[1] == BusAccess{true, word, before + 1, true});  // taken, only answered late
  CHECK(rtl.bus_outstanding());
  CHECK(rtl.idle(timing.silent_delay) == "");
  CHECK_FALSE(rtl.bus_outstanding());
  const uint32_t rd = tx_header(TxType::Read, 1, 0x52);
  CHECK(rtl_reply(rtl, {ctrl0, rd, word}, Answer::kNoFault) == std::vector<uint32_t>{ctrl0, rd & ~0xFu, before + 1});
}

TEST_CASE("RTL alone: blocks stream a word a cycle in, on the bus and out, after at most 10 cycles of header") {
  // With a slave that answers the cycle after a request and no gaps or stalls, a packet of one
  // N-word transaction takes its request beats, one bus cycle a word and its reply words, and a
  // fixed header latency of 10 cycles (docs/ipbus-rtl.md, "Cycles"). A slower executor or reply
  // path fails here, though it would still answer right.
  constexpr uint64_t kHeaderCycles = 10;
  RtlSide rtl(kFillSeed, RtlTiming::eager(3));
  const uint32_t ctrl0 = packet_header(PacketType::Control, 0);
  for (const uint32_t n : {1u, 2u, 100u, 255u}) {
    CAPTURE(n);
    std::vector<uint32_t> write{ctrl0, tx_header(TxType::Write, n, 1), kRamBase + 9};
    for (uint32_t i = 0; i < n; ++i) write.push_back(0xC0DE0000u + i);
    uint64_t c0 = rtl.cycles();
    auto w = rtl_reply(rtl, write, Answer::kNoFault);
    CHECK(w == std::vector<uint32_t>{ctrl0, tx_header(TxType::Write, n, 1, InfoCode::Success)});
    CHECK(rtl.cycles() - c0 == write.size() + n + w.size() + kHeaderCycles);
    CHECK(rtl.board().log.size() == n);

    c0 = rtl.cycles();
    auto r = rtl_reply(rtl, {ctrl0, tx_header(TxType::Read, n, 2), kRamBase + 9}, Answer::kNoFault);
    REQUIRE(r.size() == 2 + n);
    for (uint32_t i = 0; i < n; ++i) CHECK(r[2 + i] == 0xC0DE0000u + i);
    CHECK(rtl.cycles() - c0 == 3 + n + r.size() + kHeaderCycles);
  }
  // An RMW sum: a cycle to read its term, its read, then its write from the cycle after the
  // read's response (a write never starts while a read is open: ipb_one_bus_transaction).
  const uint64_t c0 = rtl.cycles();
  auto m = rtl_reply(rtl, {ctrl0, tx_header(TxType::RmwSum, 1, 3), kRamBase + 9, 5}, Answer::kNoFault);
  REQUIRE(m.size() == 3);
  CHECK(m[2] == 0xC0DE0000u);
  CHECK(rtl.cycles() - c0 == 4 + 1 + 1 + 2 + 3 + kHeaderCycles);
}

TEST_CASE("RTL against C++: a reply filled to the MTU by a 0-word read leaves the next slot's kept reply intact") {
  // Reply slots lie end to end in one buffer, so a reply word written one past the MTU would be
  // the next slot's first word. A 0-word read ending a reply at exactly the MTU sits at that edge;
  // a resend of the reply kept in the next slot shows whether anything was written there.
  auto r = rtl_pair({}, RtlTiming::eager(4));
  for (uint16_t id = 1; id <= 16; ++id) {
    Answer a = agree(*r, bytes({packet_header(PacketType::Control, id), tx_header(TxType::Read, 1), kRamBase + id}));
    CHECK(a.kind == Answer::kKindControl);
  }
  // Packet 17 reuses slot 0 (packet 1's); slot 1 keeps packet 2's reply. Its reply: the packet
  // header, 1 + 255, 1 + 109 and the 0-word read's header: 368 words.
  const std::vector<uint32_t> edge{packet_header(PacketType::Control, 17), tx_header(TxType::Read, 255), kRamBase,
                                   tx_header(TxType::Read, 109), kRamBase + 255, tx_header(TxType::Read, 0), kRamBase};
  Answer full = agree(*r, bytes(edge));
  REQUIRE(full.reply);
  CHECK(full.reply->size() == ipbus::kMtuBytes);
  CHECK(full.fault == Answer::kNoFault);
  Answer again = agree(*r, bytes({packet_header(PacketType::Resend, 2)}));
  REQUIRE(again.reply);
  CHECK(words_of(*again.reply, ByteOrder::Big)[0] == packet_header(PacketType::Control, 2));
}

TEST_CASE("RTL against C++: the board's reset between datagrams forgets kept replies, the expected id and the history") {
  // Every slot kept (ids 1..17: slot 0 holds 17, the rest 2..16), little- and big-endian replies,
  // a packet of id 0, so that each register the reset clears holds something else first.
  auto r = rtl_pair({}, RtlTiming::eager(8));
  for (uint16_t id = 1; id <= 17; ++id) {
    const ByteOrder order = id % 2 ? ByteOrder::Little : ByteOrder::Big;
    Answer a = agree(*r, bytes({packet_header(PacketType::Control, id), tx_header(TxType::Read, 2), kRamBase + id}, order));
    CHECK(a.kind == Answer::kKindControl);
  }
  agree(*r, bytes({packet_header(PacketType::Control, 0), tx_header(TxType::Write, 1), kRamBase, 0xABCD}));
  CHECK(r->next_expected_id() == 18);

  r->reset_targets();
  CHECK(r->next_expected_id() == 1);
  // The status reply of a fresh target: next id 1, no history, no headers.
  std::vector<uint32_t> status(16, 0);
  status[0] = packet_header(PacketType::Status, 0);
  Answer s = agree(*r, bytes(status));
  REQUIRE(s.reply);
  const auto w = words_of(*s.reply, ByteOrder::Big);
  REQUIRE(w.size() == 16);
  CHECK(w[3] == packet_header(PacketType::Control, 1));
  // Resend requests of every id kept before the reset: none is kept now.
  for (uint16_t id = 1; id <= 17; ++id) {
    INFO("resend of id " << id);
    Answer a = agree(*r, bytes({packet_header(PacketType::Resend, id)}));
    CHECK_FALSE(a.reply.has_value());
  }
  // Id 1 is the next expected again, and its reply is kept for a resend in its own byte order.
  Answer one = agree(*r, bytes({packet_header(PacketType::Control, 1), tx_header(TxType::Read, 1), kRamBase}));
  CHECK(one.kind == Answer::kKindControl);
  Answer again = agree(*r, bytes({packet_header(PacketType::Resend, 1)}));
  REQUIRE(again.reply);
  CHECK(*again.reply == *one.reply);
}

// The ring of kept replies wraps at N_BUFFERS. At 16 (the board's), 4 and 2 (the proofs') the
// slot index wraps by overflow alone, so a wrong wrap there keeps the same replies; at 3 it keeps
// fewer, or indexes past the ring. Both sides at 3 buffers: exactly the last three replies are
// kept, through several turns of the ring, then the differential fuzzing.
TEST_CASE("RTL against C++ at N_BUFFERS 3: exactly the last three replies are kept, round the ring") {
  REQUIRE(RtlSide::has_model(3));
  auto r = rtl_pair({}, RtlTiming::eager(5), 3);
  std::map<uint16_t, std::vector<uint8_t>> replies;
  for (uint16_t id = 1; id <= 10; ++id) {
    Answer a = agree(*r, bytes({packet_header(PacketType::Control, id), tx_header(TxType::Read, 1), kRamBase + id}));
    REQUIRE(a.reply);
    replies[id] = *a.reply;
    for (uint16_t back = 1; back <= id; ++back) {
      INFO("after id " << id << ", resend of id " << back);
      Answer again = agree(*r, bytes({packet_header(PacketType::Resend, back)}));
      if (id - back < 3) {
        REQUIRE(again.reply);
        CHECK(*again.reply == replies[back]);
      } else {
        CHECK_FALSE(again.reply.has_value());
      }
    }
  }
  // The status reply names three buffers.
  std::vector<uint32_t> status(16, 0);
  status[0] = packet_header(PacketType::Status, 0);
  Answer s = agree(*r, bytes(status));
  REQUIRE(s.reply);
  CHECK(words_of(*s.reply, ByteOrder::Big).at(2) == 3u);

  uint64_t mismatches = 0;
  for (uint64_t seed = 1; seed <= 2; ++seed) {
    RtlTiming timing;
    timing.seed = seed * 104729;
    auto f = rtl_pair({}, timing, 3);
    DatagramGenerator gen(seed + 40);
    for (int i = 0; i < 3000 && f->stats().mismatches < 5; ++i) {
      auto m = f->run(gen.next(f->next_expected_id()).bytes);
      if (m) MESSAGE(describe(*m));
    }
    mismatches += f->stats().mismatches;
  }
  CHECK(mismatches == 0);
}

TEST_CASE("RtlSide: a model of another N_BUFFERS is refused by name") {
  CHECK_THROWS_WITH_AS(RtlSide(kFillSeed, {}, 8), doctest::Contains("N_BUFFERS 8"), std::invalid_argument);
}

// Which accesses may wait past AXI_TIMEOUT is decided by the access's address: the emulator's
// block, from its first word (its ID) on, and nothing below it (the controller's window times out
// like the RAM). launch_emu's edges, each way.
TEST_CASE("RTL alone: the emulator's block has no timeout from its first word; the controller's window times out") {
  const uint32_t ctrl0 = packet_header(PacketType::Control, 0);
  const BoardRegisters expected(kFillSeed);
  struct Case {
    const char* what;
    uint32_t word;
    bool waits;
  };
  for (const Case& c : {Case{"the emulator block's first word (ID)", mxtb::protocol::kEmulatorBase, true},
                        Case{"the controller's first word (ID)", 0, false}}) {
    INFO(c.what);
    RtlTiming timing = RtlTiming::eager(10);
    timing.silent = {c.word};
    timing.silent_delay = static_cast<uint32_t>(kAxiTimeout + 100);
    RtlSide rtl(kFillSeed, timing);
    const uint32_t rd = tx_header(TxType::Read, 1, 0x71);
    const uint64_t c0 = rtl.cycles();
    if (c.waits) {
      CHECK(rtl_reply(rtl, {ctrl0, rd, c.word}, Answer::kNoFault) == std::vector<uint32_t>{ctrl0, rd & ~0xFu, expected.peek(c.word)});
      CHECK(rtl.cycles() - c0 > kAxiTimeout + 100);
    } else {
      CHECK(rtl_reply(rtl, {ctrl0, rd, c.word}, fault_number(Fault::BusError)) ==
            std::vector<uint32_t>{ctrl0, failed(rd, InfoCode::ReadTimeout)});
      CHECK(rtl.cycles() - c0 < kAxiTimeout + 100);
    }
  }
}

// An access answered two cycles before its timeout leaves the count one short of AXI_TIMEOUT
// while the bus is idle: the next transaction's access must start afresh, not inherit a timeout.
TEST_CASE("RTL alone: an access answered just before the timeout, then another transaction's access: both in time") {
  const uint32_t ctrl0 = packet_header(PacketType::Control, 0);
  const BoardRegisters expected(kFillSeed);
  for (const uint32_t early : {1u, 2u, 3u}) {
    INFO("answered " << early << " cycles before the last one in time");
    RtlTiming timing = RtlTiming::eager(11);
    const uint32_t slow = kRamBase + 20;
    timing.silent = {slow};
    timing.silent_delay = static_cast<uint32_t>(kAxiTimeout - 1 - early);
    RtlSide rtl(kFillSeed, timing);
    const uint32_t a = tx_header(TxType::Read, 1, 0x81), b = tx_header(TxType::Read, 1, 0x82);
    CHECK(rtl_reply(rtl, {ctrl0, a, slow, b, kRamBase}, Answer::kNoFault) ==
          std::vector<uint32_t>{ctrl0, a & ~0xFu, expected.peek(slow), b & ~0xFu, expected.peek(kRamBase)});
  }
}

TEST_CASE("RTL against C++: a long write at the end of a nearly full reply leaves the next slot's kept reply intact") {
  // A write's reply is its header alone, so a write of 255 words may start with the reply nearly
  // at the MTU; nothing of its bus traffic may be written past its header, where the next slot's
  // kept reply lies (slots end to end, as in the 0-word read test above).
  auto r = rtl_pair({}, RtlTiming::eager(12));
  for (uint16_t id = 1; id <= 16; ++id) {
    Answer a = agree(*r, bytes({packet_header(PacketType::Control, id), tx_header(TxType::Read, 1), kRamBase + id}));
    CHECK(a.kind == Answer::kKindControl);
  }
  // Packet 17 reuses slot 0; slot 1 keeps packet 2's reply. Its reply: header, 1 + 255, 1 + 100,
  // then the write's header at word 358; the write's 255 words would reach past word 368.
  std::vector<uint32_t> p{packet_header(PacketType::Control, 17), tx_header(TxType::Read, 255), kRamBase,
                          tx_header(TxType::Read, 100), kRamBase + 255, tx_header(TxType::Write, 255), kRamBase + 1000};
  for (uint32_t i = 0; i < 255; ++i) p.push_back(0xBEEF0000u + i);
  Answer full = agree(*r, bytes(p));
  REQUIRE(full.reply);
  CHECK(full.fault == Answer::kNoFault);
  CHECK(full.reply->size() == 4 * (1 + 256 + 101 + 1));
  Answer again = agree(*r, bytes({packet_header(PacketType::Resend, 2)}));
  REQUIRE(again.reply);
  const auto w = words_of(*again.reply, ByteOrder::Big);
  REQUIRE(w.size() == 3);
  CHECK(w[0] == packet_header(PacketType::Control, 2));
}

// The orphan's late response may arrive in the very cycle a later packet's access would start:
// that access still counts as timed out (the bus was not the executor's to use when the cycle
// began), so nothing of it may reach the bus. The response's arrival is swept over a range of
// cycles so that one of them is that cycle.
TEST_CASE("RTL alone: the orphan's response in the cycle a later access would start: no access starts for a transaction that timed out") {
  const uint32_t ctrl0 = packet_header(PacketType::Control, 0);
  const uint32_t silent = kRamBase + 30, target = kRamBase + 31;
  const BoardRegisters expected(kFillSeed);
  // Two words: while the orphan holds the bus, the executor counts one access on it, so a wrongly
  // started access would be the block's second word.
  const uint32_t rd = tx_header(TxType::Read, 1, 0x91), wr = tx_header(TxType::Write, 2, 0x92);
  int coincided = 0;
  for (uint32_t late = 0; late < 120; ++late) {
    CAPTURE(late);
    RtlTiming timing = RtlTiming::eager(13);
    timing.silent = {silent};
    timing.silent_delay = static_cast<uint32_t>(kAxiTimeout + late);
    RtlSide rtl(kFillSeed, timing);
    REQUIRE(rtl_reply(rtl, {ctrl0, rd, silent}, fault_number(Fault::BusError)) ==
            std::vector<uint32_t>{ctrl0, failed(rd, InfoCode::ReadTimeout)});
    const bool pending = rtl.bus_outstanding();
    rtl.board().log.clear();
    const Answer a = rtl.handle(bytes({ctrl0, wr, target, 0x600D0000u + late, 0x601D0000u + late}));
    CHECK(a.failure.empty());
    REQUIRE(a.reply.has_value());
    const auto w = words_of(*a.reply, ByteOrder::Big);
    // Either the orphan was still out (a write timeout, nothing moved) or it had come back before
    // (the write went through); never a timeout whose word was written anyway.
    if (w == std::vector<uint32_t>{ctrl0, failed(wr, InfoCode::WriteTimeout)}) {
      CHECK(rtl.board().peek(target) == expected.peek(target));
      CHECK(rtl.board().peek(target + 1) == expected.peek(target + 1));
      CHECK(rtl.board().log.empty());
      CHECK(pending);
      if (!rtl.bus_outstanding()) ++coincided;  // the response came during this packet
    } else {
      CHECK(w == std::vector<uint32_t>{ctrl0, wr & ~0xFu});
      CHECK(rtl.board().peek(target) == 0x600D0000u + late);
      CHECK(rtl.board().peek(target + 1) == 0x601D0000u + late);
    }
  }
  CHECK(coincided > 0);  // some responses arrived while the second packet ran
}

// A slave that takes a write's address and data in different cycles: the write's response can
// come the cycle after the later one, and the transactor must be ready for it then (bus_q in B_B
// from the edge the second is taken), or every word costs a cycle more. Two cycles a word, as
// the streaming rule gives for this slave: the next word starts as the response is taken.
TEST_CASE("RTL alone: a slave that takes a write's address and data a cycle apart: two cycles a word, no more") {
  const uint32_t ctrl0 = packet_header(PacketType::Control, 0);
  for (const auto order : {RtlTiming::WriteOrder::DataFirst, RtlTiming::WriteOrder::AddressFirst}) {
    INFO((order == RtlTiming::WriteOrder::DataFirst ? "data first" : "address first"));
    RtlTiming timing = RtlTiming::eager(14);
    timing.write_order = order;
    RtlSide rtl(kFillSeed, timing);
    auto cycles_of = [&](uint32_t n) {
      std::vector<uint32_t> write{ctrl0, tx_header(TxType::Write, n, 1), kRamBase + 40};
      for (uint32_t i = 0; i < n; ++i) write.push_back(0xA0000000u + i);
      const uint64_t c0 = rtl.cycles();
      CHECK(rtl_reply(rtl, write, Answer::kNoFault) == std::vector<uint32_t>{ctrl0, tx_header(TxType::Write, n, 1, InfoCode::Success)});
      CHECK(rtl.board().log.size() == n);
      // The request is n beats longer; the bus two cycles a word.
      return rtl.cycles() - c0 - n;
    };
    const uint64_t one = cycles_of(1), fifty = cycles_of(50);
    CHECK(fifty - one == 2 * 49);
    CHECK(rtl.board().peek(kRamBase + 40 + 49) == 0xA0000000u + 49);
  }
}
