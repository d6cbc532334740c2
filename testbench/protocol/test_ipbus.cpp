// IPbus 2.0 codec and target without sockets: every transaction type, sequence checking, reply
// buffers, status and resend packets, byte order, and every kind of bad input.
#include "protocol/ipbus/codec.h"
#include "protocol/ipbus/target.h"
#include "protocol/board_map.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <random>
#include <stdexcept>

using namespace mxtb::protocol::ipbus;
using namespace mxtb::protocol;

namespace {

// 256 words at 0x100; anything else is a bus error. Counts the words written.
struct MemPort : BusPort {
  std::vector<uint32_t> mem = std::vector<uint32_t>(256, 0);
  uint64_t writes = 0;
  InfoCode execute(const Access& a, std::vector<uint32_t>& out) override {
    bool inc = a.type == TxType::Read || a.type == TxType::Write;
    uint32_t span = inc ? a.words : 1;
    if (a.addr < 0x100 || uint64_t{a.addr} + span > 0x200)
      return a.type == TxType::Write || a.type == TxType::NonIncWrite ? InfoCode::WriteError : InfoCode::ReadError;
    uint32_t* w = &mem[a.addr - 0x100];
    switch (a.type) {
      case TxType::Read:
        out.insert(out.end(), w, w + a.words);
        break;
      case TxType::NonIncRead: out.insert(out.end(), a.words, *w); break;
      case TxType::Write:
        for (uint32_t i = 0; i < a.words; ++i) w[i] = a.body[i];
        writes += a.words;
        break;
      case TxType::NonIncWrite:
        for (uint32_t i = 0; i < a.words; ++i) *w = a.body[i];
        writes += a.words;
        break;
      case TxType::RmwBits:
        out.push_back(*w);
        *w = (*w & a.body[0]) | a.body[1];
        ++writes;
        break;
      case TxType::RmwSum:
        out.push_back(*w);
        *w += a.body[0];
        ++writes;
        break;
    }
    return InfoCode::Success;
  }
};

uint32_t tx(TxType t, uint32_t words, uint16_t id = 0) { return encode(TxHeader{id, static_cast<uint8_t>(words), t, InfoCode::Request}); }
uint32_t control(uint16_t id) { return encode(PacketHeader{PacketType::Control, id}); }

std::vector<uint32_t> roundtrip(Target& t, const std::vector<uint32_t>& words, ByteOrder order = ByteOrder::Big) {
  auto bytes = to_bytes(words, order);
  auto reply = t.handle(bytes.data(), bytes.size());
  if (!reply) return {};
  auto w = to_words(reply->data(), reply->size(), nullptr);
  REQUIRE(w);
  return w->words;
}

}  // namespace

TEST_CASE("headers encode and decode; bad headers are refused with a reason") {
  uint32_t h = encode(PacketHeader{PacketType::Control, 0x1234});
  CHECK(h == 0x201234F0u);
  auto d = decode_packet_header(h, nullptr);
  REQUIRE(d);
  CHECK(d->id == 0x1234);
  std::string why;
  CHECK_FALSE(decode_packet_header(0x101234F0u, &why));
  CHECK(why == "protocol version is not 2");
  CHECK_FALSE(decode_packet_header(0x201234F3u, &why));
  CHECK(why == "unknown packet type");
  CHECK_FALSE(decode_packet_header(0x201234E0u, &why));
  CHECK(why == "byte-order qualifier is not 0xF");
  uint32_t t = encode(TxHeader{0xABC, 17, TxType::RmwSum, InfoCode::Request});
  CHECK(t == 0x2ABC115Fu);
  auto td = decode_tx_header(t);
  REQUIRE(td);
  CHECK(td->id == 0xABC);
  CHECK(td->words == 17);
  CHECK(td->type == TxType::RmwSum);
  CHECK_FALSE(decode_tx_header(0x2ABC116Fu));  // type 6: configuration space, not served
  CHECK(next_packet_id(0xFFFF) == 1);
}

TEST_CASE("every transaction type against memory, both byte orders") {
  for (ByteOrder order : {ByteOrder::Big, ByteOrder::Little}) {
    MemPort mem;
    Target t(mem);
    auto r = roundtrip(t, {control(1), tx(TxType::Write, 3), 0x100, 7, 8, 9, tx(TxType::Read, 3), 0x100}, order);
    REQUIRE(r.size() == 1 + 1 + 1 + 3);
    CHECK(r[0] == control(1));
    CHECK(decode_tx_header(r[1])->info == InfoCode::Success);
    CHECK(std::vector<uint32_t>(r.begin() + 3, r.end()) == std::vector<uint32_t>{7, 8, 9});
    r = roundtrip(t, {control(2), tx(TxType::NonIncWrite, 2), 0x110, 5, 6, tx(TxType::NonIncRead, 3), 0x110}, order);
    CHECK(std::vector<uint32_t>(r.end() - 3, r.end()) == std::vector<uint32_t>{6, 6, 6});
    r = roundtrip(t, {control(3), tx(TxType::RmwBits, 1), 0x100, 0xFFFFFFF0u, 0x5, tx(TxType::RmwSum, 1), 0x101, 100}, order);
    REQUIRE(r.size() == 5);
    CHECK(r[2] == 7);  // RMW replies carry the value before the change
    CHECK(r[4] == 8);
    CHECK(mem.mem[0] == 5);
    CHECK(mem.mem[1] == 108);
    // The reply goes back in the request's byte order.
    auto bytes = to_bytes({control(4), tx(TxType::Read, 1), 0x100}, order);
    auto raw = t.handle(bytes.data(), bytes.size());
    REQUIRE(raw);
    CHECK(to_words(raw->data(), raw->size(), nullptr)->order == order);
  }
}

TEST_CASE("sequence: out-of-order ids are dropped; a resend replays the reply and never repeats a write") {
  MemPort mem;
  Target t(mem);
  CHECK(t.next_expected_id() == 1);
  auto r1 = roundtrip(t, {control(1), tx(TxType::RmwSum, 1), 0x100, 1});
  CHECK(r1.size() == 3);
  CHECK(mem.mem[0] == 1);
  // The same packet again (a duplicate on the wire): dropped, not executed.
  CHECK(roundtrip(t, {control(1), tx(TxType::RmwSum, 1), 0x100, 1}).empty());
  CHECK(mem.mem[0] == 1);
  CHECK(t.stats().faults[static_cast<size_t>(Fault::OutOfSequence)] == 1);
  // A packet from the future: dropped.
  CHECK(roundtrip(t, {control(5), tx(TxType::RmwSum, 1), 0x100, 1}).empty());
  // Resend of id 1: the stored reply, byte for byte, and no second increment.
  auto resend = roundtrip(t, {encode(PacketHeader{PacketType::Resend, 1})});
  CHECK(resend == r1);
  CHECK(mem.mem[0] == 1);
  CHECK(mem.writes == 1);
  // Resend of an id never seen: dropped and counted.
  CHECK(roundtrip(t, {encode(PacketHeader{PacketType::Resend, 77})}).empty());
  CHECK(t.stats().faults[static_cast<size_t>(Fault::BadResend)] == 1);
  // Id 0 is never sequence-checked and never stored.
  roundtrip(t, {control(0), tx(TxType::RmwSum, 1), 0x100, 1});
  roundtrip(t, {control(0), tx(TxType::RmwSum, 1), 0x100, 1});
  CHECK(mem.mem[0] == 3);
  CHECK(t.next_expected_id() == 2);
}

TEST_CASE("a control packet in execution: status says it arrived and is unanswered; its resend waits, then replays") {
  MemPort port;
  Target t(port);
  auto status = [&] {
    std::vector<uint32_t> req(kStatusWords, 0);
    req[0] = encode(PacketHeader{PacketType::Status, 0});
    auto bytes = to_bytes(req, ByteOrder::Big);
    auto in = t.accept(bytes.data(), bytes.size());
    REQUIRE(in.reply);
    REQUIRE_FALSE(in.control);
    auto w = to_words(in.reply->data(), in.reply->size(), nullptr);
    REQUIRE(w);
    auto s = decode_status_reply(w->words);
    REQUIRE(s);
    return *s;
  };
  auto resend = [&](uint16_t id) {
    auto bytes = to_bytes({encode(PacketHeader{PacketType::Resend, id})}, ByteOrder::Big);
    return t.accept(bytes.data(), bytes.size());
  };
  auto req = to_bytes({control(1), tx(TxType::Write, 1), 0x100, 0xABCDu}, ByteOrder::Big);
  auto in = t.accept(req.data(), req.size());
  REQUIRE(in.control);
  CHECK_FALSE(in.reply);
  CHECK(port.writes == 0);  // taken, not executed

  // Taken: the next expected id moves past it; received, not sent.
  auto s = status();
  CHECK(s.next_expected_id == 2);
  REQUIRE(s.received_headers.size() >= 1);
  CHECK(s.received_headers[0] == control(1));
  CHECK(std::find(s.sent_headers.begin(), s.sent_headers.end(), control(1)) == s.sent_headers.end());
  // A resend of it is not answered and is no fault: the reply follows when it finishes.
  auto early = resend(1);
  CHECK_FALSE(early.reply);
  CHECK_FALSE(early.control);
  CHECK(t.stats().resends_while_running == 1);
  CHECK(t.stats().faults[static_cast<size_t>(Fault::BadResend)] == 0);
  // The same id again is out of sequence: it is not executed twice.
  auto again = t.accept(req.data(), req.size());
  CHECK_FALSE(again.control);
  CHECK(t.stats().faults[static_cast<size_t>(Fault::OutOfSequence)] == 1);

  TargetStats counts;
  auto reply = t.execute(*in.control, counts);
  CHECK(port.writes == 1);
  CHECK(t.stats().transactions == 0);  // a packet's counts land when it finishes
  t.finish(*in.control, reply, counts);
  CHECK(t.stats().transactions == 1);
  s = status();
  REQUIRE(s.sent_headers.size() >= 1);
  CHECK(s.sent_headers[0] == control(1));
  auto late = resend(1);
  REQUIRE(late.reply);
  CHECK(*late.reply == reply);
  CHECK(port.writes == 1);
  // A resend of an id never taken is still a fault.
  CHECK_FALSE(resend(7).reply);
  CHECK(t.stats().faults[static_cast<size_t>(Fault::BadResend)] == 1);
}

TEST_CASE("packets finish in the order they were taken") {
  MemPort port;
  Target t(port);
  auto p1 = to_bytes({control(1), tx(TxType::Read, 1), 0x100}, ByteOrder::Big);
  auto p2 = to_bytes({control(2), tx(TxType::Read, 1), 0x101}, ByteOrder::Big);
  auto a1 = t.accept(p1.data(), p1.size());
  auto a2 = t.accept(p2.data(), p2.size());
  REQUIRE(a1.control);
  REQUIRE(a2.control);
  TargetStats c;
  CHECK_THROWS_AS(t.finish(*a2.control, t.execute(*a2.control, c), c), std::logic_error);
}

TEST_CASE("transactions_within: every transaction, of every type, inside the window; anything malformed is not") {
  const uint32_t h = control(0);
  // A window of 16 words at 0x100.
  auto within = [](const std::vector<uint32_t>& w) { return transactions_within(w, 0x100, 16); };
  CHECK(within({h, tx(TxType::Read, 16), 0x100}));
  CHECK_FALSE(within({h, tx(TxType::Read, 17), 0x100}));  // one word past the end
  CHECK_FALSE(within({h, tx(TxType::Read, 1), 0xFF}));    // one word before it
  CHECK(within({h, tx(TxType::Read, 0), 0x10F}));         // a zero-word read still names its address
  CHECK_FALSE(within({h, tx(TxType::Read, 0), 0x110}));
  CHECK(within({h, tx(TxType::NonIncRead, 200), 0x10F}));  // non-incrementing: one address, any count
  CHECK(within({h, tx(TxType::Write, 2), 0x10E, 1, 2, tx(TxType::NonIncWrite, 1), 0x100, 3}));
  CHECK(within({h, tx(TxType::RmwBits, 1), 0x105, 0xFF, 0x1, tx(TxType::RmwSum, 1), 0x105, 7}));
  CHECK_FALSE(within({h, tx(TxType::Read, 1), 0x100, tx(TxType::Read, 1), 0x200}));  // the second is outside
  CHECK_FALSE(within({h, tx(TxType::Read, 2), 0xFFFFFFFFu}));  // no wrap past 2^32
  CHECK_FALSE(within({h}));                                   // no transaction
  CHECK_FALSE(within({h, tx(TxType::Read, 1)}));              // no address
  CHECK_FALSE(within({h, tx(TxType::Write, 2), 0x100, 1}));   // a body past the packet's end
  CHECK_FALSE(within({h, tx(TxType::RmwBits, 1), 0x100, 1}));
  CHECK_FALSE(within({h, encode(TxHeader{0, 1, TxType::Read, InfoCode::Success}), 0x100}));  // not a request
  CHECK_FALSE(within({h, 0x1000010Fu, 0x100}));  // version 1
}

TEST_CASE("executed_transactions: a control reply's transactions that reached the bus, in either byte order") {
  const uint32_t h = control(0);
  auto ok = [](TxType t, uint8_t words) { return encode(TxHeader{0, words, t, InfoCode::Success}); };
  auto count = [](const std::vector<uint32_t>& w, ByteOrder o = ByteOrder::Big) { return executed_transactions(to_bytes(w, o)); };
  CHECK(count({h, ok(TxType::Read, 2), 5, 6, ok(TxType::Write, 3), ok(TxType::RmwSum, 1), 9}) == 3);
  CHECK(count({h, ok(TxType::Read, 2), 5, 6, ok(TxType::NonIncWrite, 1)}, ByteOrder::Little) == 2);
  // A bus error reached the bus and ends the packet; a refused header did not reach it.
  CHECK(count({h, ok(TxType::Write, 1), encode(TxHeader{0, 0, TxType::Read, InfoCode::ReadError})}) == 2);
  CHECK(count({h, ok(TxType::Write, 1), encode(TxHeader{0, 1, TxType::Read, InfoCode::BadHeader})}) == 1);
  CHECK(count({h}) == 0);
  CHECK(count({encode(PacketHeader{PacketType::Status, 0}), 0, 0}) == 0);  // not a control reply
  CHECK(executed_transactions({1, 2, 3}) == 0);                            // not whole words
}

TEST_CASE("status reply: MTU, buffers, next expected id, always big-endian") {
  MemPort mem;
  Target t(mem, 8);
  roundtrip(t, {control(1), tx(TxType::Read, 1), 0x100});
  std::vector<uint32_t> req(kStatusWords, 0);
  req[0] = encode(PacketHeader{PacketType::Status, 0});
  auto bytes = to_bytes(req, ByteOrder::Little);
  auto raw = t.handle(bytes.data(), bytes.size());
  REQUIRE(raw);
  auto w = to_words(raw->data(), raw->size(), nullptr);
  REQUIRE(w);
  CHECK(w->order == ByteOrder::Big);
  auto s = decode_status_reply(w->words);
  REQUIRE(s);
  CHECK(s->mtu_bytes == kMtuBytes);
  CHECK(s->n_buffers == 8);
  CHECK(s->next_expected_id == 2);
  CHECK(s->received_headers[0] == control(1));
  // A status request of the wrong length is dropped.
  auto short_req = to_bytes({req[0]}, ByteOrder::Big);
  CHECK_FALSE(t.handle(short_req.data(), short_req.size()));
  CHECK(t.stats().faults[static_cast<size_t>(Fault::BadStatus)] == 1);
}

TEST_CASE("bad input: dropped or answered with an error info code, counted, and the target keeps serving") {
  MemPort mem;
  Target t(mem);
  std::vector<std::string> log;
  t.on_fault([&](Fault f, const std::string& what) { log.push_back(std::string(to_string(f)) + ": " + what); });
  auto count = [&](Fault f) { return t.stats().faults[static_cast<size_t>(f)]; };

  std::vector<uint8_t> three{0x20, 0x00, 0x00};
  CHECK_FALSE(t.handle(three.data(), three.size()));
  CHECK(count(Fault::Truncated) == 1);
  std::vector<uint8_t> big(kMtuBytes + 4, 0);
  CHECK_FALSE(t.handle(big.data(), big.size()));
  CHECK(count(Fault::Oversized) == 1);
  auto v1 = to_bytes({0x100001F0u}, ByteOrder::Big);
  CHECK_FALSE(t.handle(v1.data(), v1.size()));
  CHECK(count(Fault::BadPacketHeader) == 1);
  auto type9 = to_bytes({0x200001F9u}, ByteOrder::Big);
  CHECK_FALSE(t.handle(type9.data(), type9.size()));
  CHECK(count(Fault::BadPacketHeader) == 2);

  // A transaction header with version 1: bad-header reply, later transactions not executed.
  auto r = roundtrip(t, {control(1), tx(TxType::Write, 1), 0x100, 42, 0x1000010Fu, 0x100, tx(TxType::Write, 1), 0x101, 43});
  REQUIRE(r.size() == 3);
  CHECK(decode_tx_header(r[1])->info == InfoCode::Success);
  CHECK((r[2] & 0xF) == static_cast<uint32_t>(InfoCode::BadHeader));
  CHECK(mem.mem[0] == 42);
  CHECK(mem.mem[1] == 0);
  // A write whose body is cut short: bad header, nothing written.
  r = roundtrip(t, {control(2), tx(TxType::Write, 4), 0x102, 1, 2});
  REQUIRE(r.size() == 2);
  CHECK((r[1] & 0xF) == static_cast<uint32_t>(InfoCode::BadHeader));
  CHECK(mem.mem[2] == 0);
  // Out of range: bus error, nothing of the block written.
  r = roundtrip(t, {control(3), tx(TxType::Write, 4), 0x1FE, 1, 2, 3, 4});
  REQUIRE(r.size() == 2);
  CHECK((r[1] & 0xF) == static_cast<uint32_t>(InfoCode::WriteError));
  CHECK(mem.mem[0xFE] == 0);
  CHECK(count(Fault::BusError) == 1);
  // A read whose reply would pass the MTU.
  r = roundtrip(t, {control(4), tx(TxType::Read, 255), 0x100, tx(TxType::Read, 255), 0x100});
  REQUIRE(r.size() == 3 + 255);
  CHECK((r.back() & 0xF) == static_cast<uint32_t>(InfoCode::BadHeader));
  CHECK(count(Fault::BadTransaction) == 3);
  CHECK(log.size() == 8);
  CHECK(log[0].rfind("truncated: 3 bytes", 0) == 0);

  // Still serving, in sequence.
  r = roundtrip(t, {control(5), tx(TxType::Read, 1), 0x100});
  REQUIRE(r.size() == 3);
  CHECK(r[2] == 42);
}

TEST_CASE("a reply never passes the MTU, even when a transaction fails after the reply is full") {
  MemPort mem;
  Target t(mem);
  // Reads that fill the reply to exactly the MTU (1 + 256 + 111 = 368 words) succeed.
  auto r = roundtrip(t, {control(0), tx(TxType::NonIncRead, 255), 0x100, tx(TxType::NonIncRead, 110), 0x100});
  REQUIRE(r.size() == kMtuWords);
  CHECK(decode_tx_header(r[257])->info == InfoCode::Success);
  // The same reads followed by a bad transaction: its error header would have been word 369. The
  // second read is refused instead, so that the error fits.
  r = roundtrip(t, {control(0), tx(TxType::NonIncRead, 255), 0x100, tx(TxType::NonIncRead, 110), 0x100, 0x1000010Fu});
  REQUIRE(r.size() == 258);
  CHECK((r[257] & 0xF) == static_cast<uint32_t>(InfoCode::BadHeader));
  CHECK(t.stats().transactions == 3);

  // libFuzzer's crashing input: four non-incrementing reads at address 0 (97, 199, 35 and 32 words:
  // 1472 bytes of reply) and a transaction with info code 0 in a request; the reply was 1476 bytes.
  struct Zeros : BusPort {
    InfoCode execute(const Access& a, std::vector<uint32_t>& out) override {
      if (a.type == TxType::Read || a.type == TxType::NonIncRead) out.insert(out.end(), a.words, 0u);
      return InfoCode::Success;
    }
  } zeros;
  Target z(zeros);
  const std::vector<uint8_t> crash{0x20, 0x00, 0x00, 0xf0, 0x2b, 0x00, 0x61, 0x2f, 0x00, 0x00, 0x00, 0x00, 0x2a,
                                   0xf7, 0xc7, 0x2f, 0x00, 0x00, 0x00, 0x00, 0x2a, 0xf7, 0x23, 0x2f, 0x00, 0x00,
                                   0x00, 0x00, 0x2a, 0x00, 0x20, 0x2f, 0x00, 0x00, 0x00, 0x08, 0x23, 0x2f, 0x00,
                                   0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x2b, 0x0f, 0x00, 0x00, 0x00, 0x0f, 0x00};
  auto reply = z.handle(crash.data(), crash.size());
  REQUIRE(reply);
  CHECK(reply->size() <= kMtuBytes);
  CHECK(reply->size() % 4 == 0);
}

TEST_CASE("seeded random garbage: no crash, and a valid request still works afterwards") {
  MemPort mem;
  Target t(mem);
  std::mt19937_64 rng(20261130);
  for (int i = 0; i < 20000; ++i) {
    size_t n = rng() % 64;
    std::vector<uint8_t> b(n);
    for (auto& x : b) x = static_cast<uint8_t>(rng());
    // Half of them start with a valid header so that the transaction parser is exercised too.
    if (n >= 4 && i % 2) {
      auto h = to_bytes({control(0)}, i % 4 == 1 ? ByteOrder::Big : ByteOrder::Little);
      std::copy(h.begin(), h.end(), b.begin());
    }
    t.handle(b.data(), b.size());
  }
  CHECK(t.stats().datagrams == 20000);
  auto r = roundtrip(t, {control(0), tx(TxType::Write, 1), 0x120, 99, tx(TxType::Read, 1), 0x120});
  REQUIRE(r.size() == 4);
  CHECK(r[3] == 99);
}

TEST_CASE("board map: names resolve to word addresses and back; bad names say why") {
  std::string why;
  auto s = resolve("status", &why);
  REQUIRE(s);
  CHECK(s->addr == mxtb::ocs::reg::status::kOffset / 4);
  auto l = resolve("LINK_STATUS[3]", &why);
  REQUIRE(l);
  CHECK(l->addr == mxtb::ocs::reg::link_status::kOffset / 4 + 3);
  CHECK(describe(l->addr).rfind("LINK_STATUS[3]", 0) == 0);
  auto e = resolve("emu.TIME_NS_LO", &why);
  REQUIRE(e);
  CHECK(e->addr == kEmulatorBase + mxtb::emu::reg::time_ns_lo::kOffset / 4);
  CHECK_FALSE(e->writable);
  CHECK(resolve("ram[4095]", &why)->addr == kRamBase + 4095);
  CHECK_FALSE(resolve("ram[4096]", &why));
  CHECK(why == "'ram[4096]': index 4096 is outside ram (4096 words)");
  CHECK_FALSE(resolve("STATUS[1]", &why));
  CHECK(why == "'STATUS[1]': STATUS is one register, not a window");
  CHECK_FALSE(resolve("NOPE", &why));
  CHECK(why.find("no controller register of that name") != std::string::npos);
  CHECK(resolve("0x20005", &why)->addr == 0x20005);
  CHECK_FALSE(resolve("0x1zz", &why));
}
