// The emulated server's FPGA is the board top (rtl/board/mxtb_board.sv), one model clocked with
// the link layers: IPbus datagrams go into its UDP port (sim/server/board_port.h), its transactor
// reaches the controller through the top's decoder and arbiter, the RAM as block RAM, and the
// emulator's block through the port the emulator answers. Checked here on the server itself.
#include "server_datagrams.h"
#include "sim/server/server_sim.h"

#include <doctest/doctest.h>
#include <fmt/format.h>
#include <mxtb/emu_regs.h>
#include <mxtb/ocs_regs.h>

#include <stdexcept>
#include <vector>

using namespace mxtb;
using namespace mxtb::sim;
using namespace mxtb::sim::test;

namespace doctest {
template <>
struct StringMaker<std::vector<uint32_t>> {
  static String convert(const std::vector<uint32_t>& v) {
    std::string s = "{";
    for (uint32_t w : v) s += " " + fmt::format("{:08x}", w);
    return String((s + " }").c_str());
  }
};
}  // namespace doctest

namespace {

constexpr uint32_t kRam = 0x20000, kEmu = 0x10000;
uint32_t ctrl(uint32_t byte_offset) { return byte_offset / 4; }
// A reply's transaction header for a request's: info Success (0).
uint32_t ok(uint32_t request_header) { return request_header & ~0xFu; }
// ... and for a write refused or answered with a bus error: no word written, info 5.
uint32_t write_error(uint32_t request_header) { return (request_header & ~0xFF0Fu) | 0x5u; }

ServerConfig small_server(ServerEngine engine = ServerEngine::Fast, int threads = 1) {
  ServerConfig cfg;
  cfg.engine = engine;
  cfg.threads = threads;
  return cfg;
}

}  // namespace

TEST_CASE("a datagram into the server's top: the controller's ID, the block RAM, refusals, in board cycles") {
  ServerSim sim(small_server());
  sim.step(100);
  const uint32_t rd = tx_header(kRead, 1, 1);
  auto o = run_datagram(sim, to_bytes({control_header(), rd, ctrl(ocs::reg::id::kOffset)}));
  REQUIRE(o.reply);
  CHECK(to_words(*o.reply) == std::vector<uint32_t>{control_header(), ok(rd), ocs::reg::id::kReset});
  CHECK(o.kind == 0);
  CHECK(o.fault == 15);
  // The controller's register read costs what the top's does (docs/board.md: STATUS 17 cycles).
  CHECK(o.cycles == 17);

  const uint32_t wr = tx_header(kWrite, 3, 2), rb = tx_header(kRead, 3, 3);
  o = run_datagram(sim, to_bytes({control_header(), wr, kRam + 40, 7, 8, 9, rb, kRam + 40}));
  REQUIRE(o.reply);
  CHECK(to_words(*o.reply) == std::vector<uint32_t>{control_header(), ok(wr), ok(rb), 7, 8, 9});

  // A write to a read-only register is refused before the bus: a bus error on write.
  const uint32_t ro = tx_header(kWrite, 1, 4);
  o = run_datagram(sim, to_bytes({control_header(), ro, ctrl(ocs::reg::id::kOffset), 1}));
  REQUIRE(o.reply);
  CHECK(to_words(*o.reply) == std::vector<uint32_t>{control_header(), write_error(ro)});

  // A bad packet header is dropped: no reply, the fault counted.
  o = run_datagram(sim, to_bytes({0x100000F0u, rd, 0}));
  CHECK_FALSE(o.reply);
  CHECK(o.kind == 3);
  CHECK(o.fault != 15);
}

TEST_CASE("the emulator's block answers late (RUN_UNTIL): the transactor waits past its AXI_TIMEOUT, no timeout") {
  for (int threads : {1, 3}) {
    INFO("threads " << threads);
    ServerSim sim(small_server(ServerEngine::Fast, threads));
    sim.step(50);
    EmulatorBlock late;
    late.delay_cycles = 70'000;  // beyond the transactor's AXI_TIMEOUT of 65,535
    const uint32_t rd = tx_header(kRead, 1, 5), wr = tx_header(kWrite, 1, 6);
    auto o = run_datagram(sim, to_bytes({control_header(), rd, kEmu + emu::reg::id::kOffset / 4, wr,
                                         kEmu + emu::reg::run_until::kOffset / 4, 3}),
                          late);
    REQUIRE(o.reply);
    CHECK(to_words(*o.reply) ==
          std::vector<uint32_t>{control_header(), ok(rd), 0xE0000000u | emu::reg::id::kOffset, ok(wr)});
    CHECK(o.emulator_wait_cycles >= 140'000);
    CHECK(o.cycles > o.emulator_wait_cycles);
    CHECK(o.cycles < o.emulator_wait_cycles + 100);

    // The block refuses: a bus error on write, and the packet ends there.
    EmulatorBlock refuses;
    refuses.answer = [](const EmuAccess&) { return std::pair<bool, uint32_t>{false, 0}; };
    o = run_datagram(sim, to_bytes({control_header(), wr, kEmu + emu::reg::run_until::kOffset / 4, 3, rd, kRam}), refuses);
    REQUIRE(o.reply);
    CHECK(to_words(*o.reply) == std::vector<uint32_t>{control_header(), write_error(wr)});
  }
}

TEST_CASE("the emulator's block answered within the clock streams a word a clock, as the block RAM") {
  ServerSim sim(small_server());
  sim.step(30);
  int asked = 0;
  sim.set_emulator_responder([&](const EmuAccess& a) -> std::optional<std::pair<bool, uint32_t>> {
    ++asked;
    if (a.write) return std::nullopt;  // writes: outside the clock
    return std::pair<bool, uint32_t>{true, 0xD0000000u | a.offset};
  });
  const uint32_t rd = tx_header(kNonIncRead, 100, 1);
  auto emu_block = run_datagram(sim, to_bytes({control_header(), rd, kEmu + emu::reg::event_head::kOffset / 4}));
  REQUIRE(emu_block.reply);
  const auto w = to_words(*emu_block.reply);
  REQUIRE(w.size() == 102);
  CHECK(w[1] == ok(rd));
  for (size_t k = 2; k < 102; ++k) CHECK(w[k] == (0xD0000000u | emu::reg::event_head::kOffset));
  CHECK(asked == 100);
  CHECK(emu_block.emulator_wait_cycles == 0);
  auto ram_block = run_datagram(sim, to_bytes({control_header(), tx_header(kNonIncRead, 100, 2), kRam}));
  CHECK(emu_block.cycles == ram_block.cycles);

  // A write the responder leaves to the emulator: step() stops, and the answer comes after.
  const uint32_t wr = tx_header(kWrite, 1, 3);
  EmulatorBlock block;
  block.delay_cycles = 10;
  auto o = run_datagram(sim, to_bytes({control_header(), wr, kEmu + emu::reg::event_pop::kOffset / 4, 1}), block);
  REQUIRE(o.reply);
  CHECK(to_words(*o.reply) == std::vector<uint32_t>{control_header(), ok(wr)});
  CHECK(o.emulator_wait_cycles >= 10);
  CHECK(asked == 101);
}

TEST_CASE("the firmware's port and the UDP port share the controller through the top's arbiter") {
  ServerSim sim(small_server());
  sim.step(20);
  // A 200-word non-incrementing read of SCRATCH streams from the UDP port; the firmware writes
  // SCRATCH in the middle of it. The arbiter lets the write in (round robin: the block does not
  // starve it): the block sees the old word, then the new one, never back.
  const uint32_t scratch = ocs::reg::scratch::kOffset;
  for (uint64_t offset : {30u, 60u, 120u}) {
    INFO("write started " << offset << " clocks into the datagram");
    sim.start_write(scratch, 0xAAAA0000u);
    while (!sim.bus_result_ready()) sim.step(1000);
    sim.take_bus_result();
    const uint32_t rd = tx_header(kNonIncRead, 200, 7);
    sim.start_datagram(to_bytes({control_header(), rd, ctrl(scratch)}));
    const uint64_t start = sim.cycle();
    while (sim.cycle() < start + offset) sim.step(start + offset - sim.cycle());
    sim.start_write(scratch, 0x5555u);
    bool fw_done = false;
    std::optional<DatagramOutcome> o;
    for (int k = 0; k < 1000 && !(fw_done && o); ++k) {
      sim.step(1000);
      if (auto r = sim.take_bus_result()) {
        CHECK(r->resp == 0);
        fw_done = true;
      }
      if (!o) o = sim.take_datagram_outcome();
    }
    REQUIRE(fw_done);
    REQUIRE(o);
    REQUIRE(o->reply);
    const auto w = to_words(*o->reply);
    REQUIRE(w.size() == 202);
    CHECK(w[1] == ok(rd));
    size_t old_words = 0;
    while (old_words < 200 && w[2 + old_words] == 0xAAAA0000u) ++old_words;
    CHECK(old_words > 0);
    CHECK(old_words < 200);
    for (size_t k = 2 + old_words; k < 202; ++k) CHECK(w[k] == 0x5555u);
  }
}

TEST_CASE("the board port refuses a second datagram in flight, an empty one and an unasked answer") {
  ServerSim sim(small_server());
  CHECK_THROWS_AS(sim.start_datagram({}), std::invalid_argument);
  CHECK_THROWS_AS(sim.start_datagram(std::vector<uint8_t>(65536, 0)), std::invalid_argument);
  CHECK_THROWS_AS(sim.answer_emulator(true, 0), std::logic_error);
  sim.start_datagram(to_bytes({control_header(), tx_header(kRead, 1, 0), kRam}));
  CHECK_THROWS_AS(sim.start_datagram(to_bytes({control_header()})), std::logic_error);
  while (!sim.board_event()) sim.step(1000);
  auto o = sim.take_datagram_outcome();
  REQUIRE(o);
  CHECK(o->reply);
}
