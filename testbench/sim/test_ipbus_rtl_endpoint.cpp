// The RTL transactor's environment in the emulator (sim/ipbus_rtl_endpoint.h), over a bus written
// here: replies and bus accesses for each kind of datagram, and the board-time bookkeeping: every
// cycle the transactor is clocked is paid in simulated time exactly once (before a synced access,
// by the access itself, or after the datagram), never twice, never not at all.
#include "protocol/board_map.h"
#include "protocol/ipbus/codec.h"
#include "protocol/ipbus/target.h"
#include "sim/ipbus_rtl_endpoint.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <stdexcept>
#include <vector>

namespace ipbus = mxtb::protocol::ipbus;
using ipbus::InfoCode;
using ipbus::TxType;
using mxtb::sim::IpbusRtlEndpoint;
namespace protocol = mxtb::protocol;

namespace {

uint32_t tx(TxType t, uint32_t words, uint16_t id) { return ipbus::encode(ipbus::TxHeader{id, static_cast<uint8_t>(words), t, InfoCode::Request}); }
uint32_t control(uint16_t id) { return ipbus::encode(ipbus::PacketHeader{ipbus::PacketType::Control, id}); }

// Words: the RAM answers unsynced in 1 cycle; controller words synced in `controller_cycles`;
// a word in `refused` answers SLVERR.
struct RecordingBus : IpbusRtlEndpoint::Bus {
  std::map<uint32_t, uint32_t> mem;
  std::vector<uint32_t> refused;
  uint64_t controller_cycles = 5;
  struct Seen {
    bool write;
    uint32_t word, data;
    uint64_t unpaid;
  };
  std::vector<Seen> seen;
  uint64_t paid = 0;  // simulated time passed, in board cycles
  IpbusRtlEndpoint::BusResult access(bool write, uint32_t word, uint32_t data, uint64_t unpaid) override {
    seen.push_back({write, word, data, unpaid});
    IpbusRtlEndpoint::BusResult r;
    r.ok = std::find(refused.begin(), refused.end(), word) == refused.end();
    if (r.ok && write) mem[word] = data;
    r.data = r.ok && !write ? mem[word] : 0;
    if (word < protocol::kControllerWords) {
      r.synced = true;
      r.cycles = controller_cycles;
      paid += unpaid + controller_cycles;
    } else {
      r.cycles = 1;
    }
    return r;
  }
};

std::vector<uint32_t> reply_words(const IpbusRtlEndpoint::Outcome& o) {
  REQUIRE(o.reply.has_value());
  auto w = ipbus::to_words(o.reply->data(), o.reply->size(), nullptr);
  REQUIRE(w.has_value());
  return w->words;
}

}  // namespace

TEST_CASE("a control packet: RAM and controller words, the reply, and every cycle paid exactly once") {
  IpbusRtlEndpoint ep;
  RecordingBus bus;
  const uint32_t scratch = protocol::controller(mxtb::ocs::reg::scratch::kOffset);
  bus.mem[scratch + 1] = 0x5A5A0001;
  const std::vector<uint32_t> request{control(0),
                                      tx(TxType::Write, 2, 1), protocol::kRamBase + 3, 0x11, 0x22,
                                      tx(TxType::Read, 2, 2), protocol::kRamBase + 3,
                                      tx(TxType::Write, 1, 3), scratch, 0xCAFE,
                                      tx(TxType::Read, 2, 4), scratch};
  auto o = ep.handle(ipbus::to_bytes(request, ipbus::ByteOrder::Big), bus);
  CHECK(o.kind == 0);
  CHECK(o.fault == 15);
  const std::vector<uint32_t> expected{control(0),
                                       tx(TxType::Write, 2, 1) & ~0xFu, tx(TxType::Read, 2, 2) & ~0xFu, 0x11, 0x22,
                                       tx(TxType::Write, 1, 3) & ~0xFu, tx(TxType::Read, 2, 4) & ~0xFu, 0xCAFE, 0x5A5A0001};
  CHECK(reply_words(o) == expected);
  CHECK(mxtb::sim::executed_transactions(*o.reply) == 4);
  REQUIRE(bus.seen.size() == 7);
  CHECK(bus.seen[0].word == protocol::kRamBase + 3);
  CHECK(bus.seen[4].word == scratch);
  CHECK(bus.seen[4].write);
  // The first controller access pays every cycle before it; the second only those since.
  CHECK(bus.seen[4].unpaid > 0);
  CHECK(bus.seen[5].unpaid < bus.seen[4].unpaid);
  CHECK(bus.paid + o.unpaid_cycles == o.cycles);

  // The next datagram starts with nothing owed.
  auto again = ep.handle(ipbus::to_bytes({control(0), tx(TxType::Read, 1, 5), scratch}, ipbus::ByteOrder::Little), bus);
  CHECK(bus.seen.back().unpaid > 0);
  CHECK(bus.seen.back().unpaid < again.cycles);
  CHECK(bus.paid + o.unpaid_cycles + again.unpaid_cycles == o.cycles + again.cycles);
  CHECK(ep.cycle() >= o.cycles + again.cycles);
}

TEST_CASE("a refused word: the bus error in the reply, the packet ends there") {
  IpbusRtlEndpoint ep;
  RecordingBus bus;
  bus.refused = {protocol::kRamBase + 1};
  auto o = ep.handle(ipbus::to_bytes({control(0), tx(TxType::Write, 3, 1), protocol::kRamBase, 1, 2, 3,
                                      tx(TxType::Read, 1, 2), protocol::kRamBase}, ipbus::ByteOrder::Big), bus);
  CHECK(o.kind == 0);
  CHECK(o.fault == static_cast<uint8_t>(ipbus::Fault::BusError));
  CHECK(reply_words(o) == std::vector<uint32_t>{control(0), (tx(TxType::Write, 0, 1) & ~0xFu) | static_cast<uint32_t>(InfoCode::WriteError)});
  CHECK(mxtb::sim::executed_transactions(*o.reply) == 1);
  CHECK(bus.seen.size() == 2);  // the block stopped at the refused word; the read never ran
}

TEST_CASE("status, a bad header, and bad calls") {
  IpbusRtlEndpoint ep;
  RecordingBus bus;
  std::vector<uint32_t> status(16, 0);
  status[0] = ipbus::encode(ipbus::PacketHeader{ipbus::PacketType::Status, 0});
  auto s = ep.handle(ipbus::to_bytes(status, ipbus::ByteOrder::Big), bus);
  CHECK(s.kind == 1);
  REQUIRE(s.reply.has_value());
  CHECK(s.reply->size() == 64);
  CHECK(mxtb::sim::executed_transactions(*s.reply) == 0);

  auto bad = ep.handle({0x30, 0x00, 0x00, 0xF0}, bus);  // version 3
  CHECK(bad.kind == 3);
  CHECK(bad.fault == static_cast<uint8_t>(ipbus::Fault::BadPacketHeader));
  CHECK_FALSE(bad.reply.has_value());
  CHECK(bus.seen.empty());
  CHECK(s.unpaid_cycles == s.cycles);  // nothing synced: all of it owed after the datagram

  CHECK_THROWS_AS(ep.handle({}, bus), std::invalid_argument);
  // A transactor that cannot finish within the bound is named hung, not waited on forever.
  CHECK_THROWS_WITH_AS(ep.handle(ipbus::to_bytes(status, ipbus::ByteOrder::Big), bus, 3), doctest::Contains("hung"), std::runtime_error);
}
