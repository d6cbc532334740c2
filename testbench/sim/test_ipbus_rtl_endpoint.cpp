// The board's IPbus side in the emulator (sim/ipbus_rtl_endpoint.h: the transactor, decoder and
// block RAM as RTL), over slaves written here behind its controller and emulator-block ports:
// replies and accesses for each kind of datagram, the scratch RAM answered inside the RTL, and the
// board-time bookkeeping: every cycle the board is clocked is paid in simulated time exactly once
// (before a synced access, by the access itself, or after the datagram), never twice, never not
// at all.
#include "protocol/board_map.h"
#include "protocol/ipbus/codec.h"
#include "protocol/ipbus/target.h"
#include "sim/ipbus_rtl_endpoint.h"

#include <doctest/doctest.h>
#include <mxtb/emu_regs.h>
#include <mxtb/ocs_regs.h>

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

// Words: controller words synced in `controller_cycles`; the emulator block's unsynced, at once;
// a word in `refused` answers SLVERR. The scratch RAM never reaches here: it is the board's.
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

TEST_CASE("a control packet: RAM, controller and emulator-block words, the reply, and every cycle paid exactly once") {
  IpbusRtlEndpoint ep;
  RecordingBus bus;
  const uint32_t scratch = protocol::controller(mxtb::ocs::reg::scratch::kOffset);
  const uint32_t emu_id = protocol::emulator(mxtb::emu::reg::id::kOffset);
  bus.mem[scratch + 1] = 0x5A5A0001;
  bus.mem[emu_id] = 0x454D5531;
  const std::vector<uint32_t> request{control(0),
                                      tx(TxType::Write, 2, 1), protocol::kRamBase + 3, 0x11, 0x22,
                                      tx(TxType::Read, 2, 2), protocol::kRamBase + 3,
                                      tx(TxType::Write, 1, 3), scratch, 0xCAFE,
                                      tx(TxType::Read, 2, 4), scratch,
                                      tx(TxType::Read, 1, 5), emu_id};
  auto o = ep.handle(ipbus::to_bytes(request, ipbus::ByteOrder::Big), bus);
  CHECK(o.kind == 0);
  CHECK(o.fault == 15);
  const std::vector<uint32_t> expected{control(0),
                                       tx(TxType::Write, 2, 1) & ~0xFu, tx(TxType::Read, 2, 2) & ~0xFu, 0x11, 0x22,
                                       tx(TxType::Write, 1, 3) & ~0xFu, tx(TxType::Read, 2, 4) & ~0xFu, 0xCAFE, 0x5A5A0001,
                                       tx(TxType::Read, 1, 5) & ~0xFu, 0x454D5531};
  CHECK(reply_words(o) == expected);
  CHECK(mxtb::sim::executed_transactions(*o.reply) == 5);
  // The RAM's words stayed in the board's block RAM; the others came out of their ports at their
  // IPbus word addresses.
  REQUIRE(bus.seen.size() == 4);
  CHECK(bus.seen[0].word == scratch);
  CHECK(bus.seen[0].write);
  CHECK(bus.seen[1].word == scratch);
  CHECK(bus.seen[2].word == scratch + 1);
  CHECK(bus.seen[3].word == emu_id);
  CHECK_FALSE(bus.seen[3].write);
  // The first controller access pays every cycle before it; the second only those since.
  CHECK(bus.seen[0].unpaid > 0);
  CHECK(bus.seen[1].unpaid < bus.seen[0].unpaid);
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
  const uint32_t scratch = protocol::controller(mxtb::ocs::reg::scratch::kOffset);
  bus.refused = {scratch + 1};
  auto o = ep.handle(ipbus::to_bytes({control(0), tx(TxType::Write, 3, 1), scratch, 1, 2, 3,
                                      tx(TxType::Read, 1, 2), scratch}, ipbus::ByteOrder::Big), bus);
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

TEST_CASE("which datagrams are the testbench's alone: every transaction in the emulator's block") {
  using mxtb::sim::addresses_only_emulator_block;
  namespace er = mxtb::emu::reg;
  const uint32_t head = protocol::emulator(er::event_head::kOffset), pop = protocol::emulator(er::event_pop::kOffset);
  const uint32_t kick = protocol::controller(mxtb::ocs::reg::watchdog_kick::kOffset);
  auto big = [](const std::vector<uint32_t>& w) { return ipbus::to_bytes(w, ipbus::ByteOrder::Big); };
  // An event drain: heads read, pops written, in either byte order.
  const std::vector<uint32_t> drain{control(7), tx(TxType::Read, 4, 1), head, tx(TxType::Write, 1, 2), pop, 1};
  CHECK(addresses_only_emulator_block(big(drain)));
  CHECK(addresses_only_emulator_block(ipbus::to_bytes(drain, ipbus::ByteOrder::Little)));
  // One transaction for the board makes it the board's: the controller, the RAM.
  std::vector<uint32_t> mixed = drain;
  mixed.insert(mixed.end(), {tx(TxType::Write, 1, 3), kick, 1});
  CHECK_FALSE(addresses_only_emulator_block(big(mixed)));
  CHECK_FALSE(addresses_only_emulator_block(big({control(0), tx(TxType::Read, 1, 1), protocol::kRamBase})));
  // A block that starts in the emulator's window and runs past its end.
  const uint32_t last = protocol::kEmulatorBase + protocol::kEmulatorWords - 1;
  CHECK(addresses_only_emulator_block(big({control(0), tx(TxType::NonIncRead, 8, 1), last})));
  CHECK_FALSE(addresses_only_emulator_block(big({control(0), tx(TxType::Read, 2, 1), last})));
  // Not control packets, or not well formed: the board's (they are paid).
  std::vector<uint32_t> status(16, 0);
  status[0] = ipbus::encode(ipbus::PacketHeader{ipbus::PacketType::Status, 0});
  CHECK_FALSE(addresses_only_emulator_block(big(status)));
  CHECK_FALSE(addresses_only_emulator_block(big({control(0)})));
  CHECK_FALSE(addresses_only_emulator_block({0x20, 0x00, 0x00}));
  CHECK_FALSE(addresses_only_emulator_block(big({control(0), tx(TxType::Read, 1, 1)})));  // no address
}
