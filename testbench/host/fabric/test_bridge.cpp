// The socket bridge end to end: the fabric client against `mxtb sim` on loopback (a real child
// process), through a lossy UDP shim, under random garbage, and in every time mode; lockstep runs
// with one seed give identical event logs.
#include "host/fabric/board.h"
#include "host/fabric/client.h"
#include "host/fabric/emulator_process.h"
#include "protocol/board_map.h"
#include "protocol/fabric_map.h"
#include "host/fabric/udp_shim.h"

#include <boost/asio.hpp>
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <random>
#include <thread>

using namespace mxtb::host::fabric;
using mxtb::protocol::controller;
using mxtb::protocol::describe;
using mxtb::protocol::emulator;
using mxtb::protocol::kRamBase;
using mxtb::protocol::kRamWords;
namespace asio = boost::asio;
using asio::ip::udp;
namespace er = mxtb::emu::reg;
namespace reg = mxtb::ocs::reg;

namespace {

using mxtb::host::fabric::LossyShim;

EmulatorProcess& shared_emulator() {
  static EmulatorProcess emu(MXTB_EXE, {"--preset", "electro_optic", "--seed", "3"});
  return emu;
}

// integration_bridge runs this suite with the RTL transactor answering (the default),
// integration_bridge_cpp through the C++ target (MXTB_IPBUS_TARGET=cpp, which every emulator
// started here inherits). Through the RTL every datagram also takes board cycles of simulated
// time: a small one (a few words, a status or resend request) well under this.
bool rtl_target() {
  const char* t = std::getenv("MXTB_IPBUS_TARGET");
  return !t || std::string(t) != "cpp";
}
constexpr uint32_t kSmallDatagramNs = 2000;
constexpr uint32_t kClockNs = 7;  // the emulated server's 6.4 ns clock, rounded up

ClientOptions quick() {
  ClientOptions o;
  o.timeout = std::chrono::milliseconds(2000);
  o.describe = describe;
  return o;
}

std::vector<uint32_t> random_words(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<uint32_t> w(n);
  for (auto& x : w) x = static_cast<uint32_t>(rng());
  return w;
}

}  // namespace

TEST_CASE("every transaction type on the board's RAM; blocks of 1 to 4096 words") {
  Client c(shared_emulator().target(), quick());
  for (uint32_t n : {1u, 2u, 3u, 254u, 255u, 256u, 365u, 366u, 367u, 368u, 1000u, 1024u, 4095u, 4096u}) {
    CAPTURE(n);
    uint32_t at = kRamBase + (kRamWords - n) / 2;
    auto data = random_words(n, n);
    c.write_block(at, data);
    CHECK(c.read_block(at, n) == data);
  }
  c.write_block(kRamBase + 10, {1, 2, 3}, false);  // non-incrementing: the last word stays
  CHECK(c.read(kRamBase + 10) == 3);
  CHECK(c.read_block(kRamBase + 10, 4, false) == std::vector<uint32_t>{3, 3, 3, 3});
  c.write(kRamBase + 11, 0xF0F0F0F0u);
  CHECK(c.rmw_bits(kRamBase + 11, 0xFFFF0000u, 0x0000000Fu) == 0xF0F0F0F0u);
  CHECK(c.read(kRamBase + 11) == 0xF0F0000Fu);
  CHECK(c.rmw_sum(kRamBase + 11, 1) == 0xF0F0000Fu);
  CHECK(c.read(kRamBase + 11) == 0xF0F00010u);
  // Many transactions queued at once go out in as few packets as fit.
  auto before = c.stats().packets_sent;
  std::vector<Pending> p;
  for (uint32_t i = 0; i < 100; ++i) p.push_back(c.queue_read(kRamBase + i));
  c.dispatch();
  CHECK(c.stats().packets_sent - before == 1);
  CHECK(p[11].value() == 0xF0F00010u);
}

TEST_CASE("controller registers are AXI transactions into the RTL; bad accesses name the register and change nothing") {
  Client c(shared_emulator().target(), quick());
  CHECK(c.read(controller(reg::id::kOffset)) == reg::id::kReset);
  uint32_t t0 = c.read(emulator(er::cycle_lo::kOffset));
  c.write(controller(reg::scratch::kOffset, 200), 0xCAFEF00Du);
  CHECK(c.read(controller(reg::scratch::kOffset, 200)) == 0xCAFEF00Du);
  CHECK(c.rmw_sum(controller(reg::scratch::kOffset, 200), 3) == 0xCAFEF00Du);
  CHECK(c.read(controller(reg::scratch::kOffset, 200)) == 0xCAFEF010u);
  // Bus accesses cost clock cycles, even in lockstep.
  CHECK(c.read(emulator(er::cycle_lo::kOffset)) > t0);

  uint32_t status = c.read(controller(reg::status::kOffset));
  try {
    c.write(controller(reg::status::kOffset), 0xFFFFFFFFu);
    FAIL("a write to the read-only STATUS register succeeded");
  } catch (const TransactionError& e) {
    CHECK(e.code == mxtb::protocol::ipbus::InfoCode::WriteError);
    CHECK(std::string(e.what()).find("STATUS") != std::string::npos);
  }
  CHECK(c.read(controller(reg::status::kOffset)) == status);
  // A block write that runs off the end of SCRATCH into nothing: refused whole.
  c.write(controller(reg::scratch::kOffset, 250), 0x11111111u);
  CHECK_THROWS_AS(c.write_block(controller(reg::scratch::kOffset, 250), std::vector<uint32_t>(300, 7)), TransactionError);
  CHECK(c.read(controller(reg::scratch::kOffset, 250)) == 0x11111111u);
  CHECK_THROWS_AS(c.read(0x0000'3F00), TransactionError);       // no register there
  CHECK_THROWS_AS(c.read(0x0003'0000), TransactionError);       // nothing mapped
  CHECK_THROWS_AS(c.read(kRamBase + kRamWords - 1 + 1), TransactionError);
  // Still serving.
  CHECK(c.read(controller(reg::id::kOffset)) == reg::id::kReset);
}

TEST_CASE("emulator block: time moves exactly as asked; bad faults are refused and arm nothing") {
  Client c(shared_emulator().target(), quick());
  auto clock = make_clock(c);
  CHECK(clock->mode() == "lockstep");
  // One packet: the time, ADVANCE_NS by `ns`, the time again. The difference is the step plus
  // the transactor's own clocks between the two reads (through the RTL; none through the C++
  // target), which do not depend on the step: so time moves as asked, through the RTL to the
  // board's next clock edge after it (the transactor runs on in whole 6.4 ns clocks) and to the
  // nanosecond TIME_NS counts in.
  auto advance_in_packet = [&](uint32_t ns) {
    auto t0 = c.queue_read(emulator(er::time_ns_lo::kOffset), 2);
    c.queue_write(emulator(er::advance_ns::kOffset), {ns});
    auto t1 = c.queue_read(emulator(er::time_ns_lo::kOffset), 2);
    c.dispatch(std::chrono::seconds(60));
    return t1.values()[0] - t0.values()[0];
  };
  const uint32_t between = advance_in_packet(0);
  for (uint32_t ns : {5000u, 123u, 6400u}) {
    INFO("ADVANCE_NS " << ns);
    const uint32_t moved = advance_in_packet(ns) - between;
    if (rtl_target()) {
      CHECK(moved + 1 >= ns);
      CHECK(moved <= ns + kClockNs + 1);
    } else {
      CHECK(moved == ns);
    }
  }
  if (rtl_target()) CHECK((between > 0 && between < kSmallDatagramNs));
  else CHECK(between == 0);
  // Nothing moves while the host does not ask, however long it waits: through the RTL each read
  // takes its own board cycles, the same for each (to TIME_NS's nanosecond), waited for or not.
  auto r0 = c.read_block(emulator(er::time_ns_lo::kOffset), 2);
  auto r1 = c.read_block(emulator(er::time_ns_lo::kOffset), 2);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  auto r2 = c.read_block(emulator(er::time_ns_lo::kOffset), 2);
  CHECK(r2[1] == r1[1]);
  const int64_t waited = int64_t{r2[0]} - r1[0], not_waited = int64_t{r1[0]} - r0[0];
  CHECK(std::abs(waited - not_waited) <= 1);
  if (!rtl_target()) CHECK(r2 == r1);
  // A packet the board takes (a read of its RAM) moves time by its board cycles through the RTL
  // (a one-word read: 17 cycles of 6.4 ns), by nothing through the C++ target.
  c.read(kRamBase);
  auto r3 = c.read_block(emulator(er::time_ns_lo::kOffset), 2);
  if (rtl_target()) {
    CHECK(r3[0] - r2[0] >= 100 + (r2[0] - r1[0]));
    CHECK(r3[0] - r2[0] <= kSmallDatagramNs);
  } else {
    CHECK(r3 == r2);
  }

  Board b(c);
  CHECK_THROWS_AS(b.arm_fault(mxtb::emu::FaultKind::KillXpu, 9, 0), TransactionError);
  float nan = std::numeric_limits<float>::quiet_NaN();
  uint32_t nan_bits;
  std::memcpy(&nan_bits, &nan, 4);
  CHECK_THROWS_AS(b.arm_fault(mxtb::emu::FaultKind::LaneBer, 3, nan_bits), TransactionError);
  CHECK_THROWS_AS(b.arm_fault(mxtb::emu::FaultKind::LaneDark, 99, 100), TransactionError);
  CHECK(c.read(emulator(er::faults_pending::kOffset)) == 0);
  CHECK(b.xpu_alive() == 0x1F);
  CHECK_THROWS_AS(c.write(emulator(er::time_ns_lo::kOffset), 1), TransactionError);  // read-only
}

TEST_CASE("through a lossy network every write lands exactly once and every read is right") {
  ClientOptions side = quick();
  side.sequenced = false;  // a second client beside the sequenced one
  Client clean(shared_emulator().target(), side);
  LossyShim shim(shared_emulator().target(), 0.15, 0.1, 0.1, 42);
  ClientOptions o = quick();
  // Long enough that a loaded CI machine's scheduling (tens of ms for the simulation thread to
  // run a datagram through the RTL) is not taken for loss: 31 attempts of 40 ms ran out once.
  o.timeout = std::chrono::milliseconds(100);
  o.retries = 30;
  Client lossy(shim.target(), o);
  clean.write(kRamBase + 100, 0);
  // Sized so that every fault of the shim happens many times (its counts are printed below) and
  // the test stays under half a minute: a dropped datagram costs a 100 ms timeout.
  for (int i = 0; i < 100; ++i) lossy.rmw_sum(kRamBase + 100, 1);
  CHECK(clean.read(kRamBase + 100) == 100);
  for (int i = 0; i < 6; ++i) {
    auto data = random_words(1000, 100 + static_cast<uint64_t>(i));
    lossy.write_block(kRamBase + 500, data);
    CHECK(lossy.read_block(kRamBase + 500, 1000) == data);
  }
  // Time control is a write too: advanced once per request, however often it was resent.
  // Through the RTL every datagram the board takes (resends, status requests and duplicates among
  // them) adds its board cycles: the step is large enough that one extra step would show past them.
  constexpr uint32_t kStep = 150'000;
  const uint32_t datagrams0 = clean.read(emulator(er::ipbus_stats::kOffset));
  auto t0 = clean.read_block(emulator(er::time_ns_lo::kOffset), 2);
  constexpr int kSteps = 4;
  for (int i = 0; i < kSteps; ++i) {
    lossy.queue_write(emulator(er::advance_ns::kOffset), {kStep});
    lossy.dispatch(std::chrono::milliseconds(2000));
  }
  auto t1 = clean.read_block(emulator(er::time_ns_lo::kOffset), 2);
  const uint32_t datagrams = clean.read(emulator(er::ipbus_stats::kOffset)) - datagrams0;
  const uint64_t board_time = rtl_target() ? uint64_t{datagrams} * kSmallDatagramNs : 0;
  INFO("datagrams taken by the board meanwhile: " << datagrams);
  REQUIRE(board_time < kStep);
  CHECK(t1[0] - t0[0] >= kSteps * kStep);
  CHECK(t1[0] - t0[0] <= kSteps * kStep + board_time);
  MESSAGE("shim dropped " << shim.dropped << ", duplicated " << shim.duplicated << ", reordered " << shim.reordered
                          << "; client resend requests " << lossy.stats().resend_requests << ", packets resent "
                          << lossy.stats().packets_resent);
  CHECK(shim.dropped > 0);
  CHECK(lossy.stats().resend_requests + lossy.stats().packets_resent > 0);
}

// A request that ran out of retries while the board's network was down never reached the board,
// which still expects its packet id. The client's next request must take its id from the board
// (before the fix it went on from the abandoned id, the board dropped every packet as out of
// sequence, and the client took the board's wait for the old id for a packet it was executing,
// until busy_limit: 120 s by default, and the rack campaign's silent boards hit it).
TEST_CASE("after a request that timed out, the client's next one goes through: it takes its packet id from the board") {
  LossyShim shim(shared_emulator().target(), 0, 0, 0, 3);
  ClientOptions o = quick();
  o.timeout = std::chrono::milliseconds(100);
  o.retries = 1;
  o.busy_limit = std::chrono::milliseconds(2000);
  Client c(shim.target(), o);
  c.write(kRamBase + 40, 7);
  for (int outage = 0; outage < 3; ++outage) {
    shim.set_down(true);
    CHECK_THROWS_AS(c.write(kRamBase + 40, 8), TimeoutError);  // lost on the way: never executed
    CHECK_THROWS_AS(c.read(kRamBase + 40), TimeoutError);      // still down: out of step still
    shim.set_down(false);
    const auto t0 = std::chrono::steady_clock::now();
    CHECK(c.read(kRamBase + 40) == static_cast<uint32_t>(7 + outage));
    CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::milliseconds(1000));
    c.write(kRamBase + 40, static_cast<uint32_t>(8 + outage));
  }
  CHECK(c.read(kRamBase + 40) == 10);
}

TEST_CASE("sequenced path at 10 % loss both ways: every write executed exactly once") {
  // Plain loss, no duplicates or reordering: every lost request and every lost reply must be
  // recovered by status and resend requests. An increment executed twice would skip a value of
  // the returned old values (0, 1, 2, ... in order); one never executed would repeat one.
  ClientOptions side = quick();
  side.sequenced = false;
  Client clean(shared_emulator().target(), side);
  LossyShim shim(shared_emulator().target(), 0.10, 0.0, 0.0, 7);
  ClientOptions o = quick();
  o.timeout = std::chrono::milliseconds(30);
  o.retries = 40;
  Client lossy(shim.target(), o);
  const uint32_t counter = kRamBase + 200, blocks = kRamBase + 1000;
  clean.write(counter, 0);
  const auto t0 = std::chrono::steady_clock::now();
  uint32_t expect = 0;
  bool in_order = true;
  // One increment per packet: 400 round trips.
  for (int i = 0; i < 400; ++i) in_order &= lossy.rmw_sum(counter, 1) == expect++;
  // 6 batches of 500 increments, several packets in flight each (the window of reply buffers).
  for (int b = 0; b < 6; ++b) {
    std::vector<Pending> p;
    for (int i = 0; i < 500; ++i) p.push_back(lossy.queue_rmw_sum(counter, 1));
    lossy.dispatch();
    for (auto& x : p) in_order &= x.value() == expect++;
  }
  // Plain writes too: 80 blocks of 300 words, each word written once, read back on the clean path.
  uint64_t words_written = 0;
  for (int b = 0; b < 80; ++b) {
    auto data = random_words(300, 1000 + static_cast<uint64_t>(b));
    lossy.write_block(blocks + static_cast<uint32_t>(b % 4) * 300, data);
    words_written += data.size();
    if (b % 4 == 3)
      for (uint32_t k = 0; k < 4; ++k)
        CHECK(clean.read_block(blocks + k * 300, 300) == random_words(300, 1000 + static_cast<uint64_t>(b - 3 + static_cast<int>(k))));
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  CHECK(in_order);
  CHECK(clean.read(counter) == 3400);
  const auto& st = lossy.stats();
  MESSAGE("10% loss both ways: 3400 increments and " << words_written << " words in 80 block writes in " << secs
          << " s; shim dropped " << shim.dropped << " datagrams; client: " << st.packets_sent << " packets sent, "
          << st.timeouts << " timeouts, " << st.status_requests << " status requests, " << st.resend_requests
          << " resend requests, " << st.packets_resent << " packets resent, " << st.stray_replies << " stray replies");
  CHECK(shim.dropped > 100);
  CHECK(st.resend_requests > 0);  // lost replies recovered from the target's buffers
  CHECK(st.packets_resent > 0);   // lost requests sent again
}

TEST_CASE("seeded random garbage at the endpoint: counted, and it still answers") {
  Client c(shared_emulator().target(), quick());
  auto before = c.read_block(emulator(er::ipbus_stats::kOffset), er::ipbus_stats::kCount);
  asio::io_context io;
  udp::socket s(io, udp::v4());
  auto [host, port] = parse_target(shared_emulator().target());
  udp::endpoint to(asio::ip::make_address_v4(host), port);
  std::mt19937_64 rng(7);
  for (int i = 0; i < 3000; ++i) {
    std::vector<uint8_t> b(rng() % 80);
    for (auto& x : b) x = static_cast<uint8_t>(rng());
    if (b.size() >= 4 && i % 3 == 0) {  // a valid id-0 header in front: the transaction parser sees it
      uint8_t h[4] = {0x20, 0x00, 0x00, 0xF0};
      std::memcpy(b.data(), h, 4);
    }
    s.send_to(asio::buffer(b), to);
    if (i % 100 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(2));  // stay within the socket buffer
  }
  std::vector<uint8_t> huge(9000, 0x20);
  s.send_to(asio::buffer(huge), to);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  CHECK(c.read(controller(reg::id::kOffset)) == reg::id::kReset);
  auto after = c.read_block(emulator(er::ipbus_stats::kOffset), er::ipbus_stats::kCount);
  CHECK(after[0] - before[0] >= 2000);  // datagrams (loopback may drop some when its buffer fills)
  CHECK(after[5] > before[5]);          // oversized
  CHECK(after[6] > before[6]);          // truncated
  CHECK(after[7] > before[7]);          // bad packet header
}

namespace {

// One scripted lockstep run: place the tenant, arm the spare, kill XPU 2, fail over.
struct ScriptedRun {
  std::vector<EmuEventRecord> events;
  uint64_t end_ns = 0, messages = 0;
  uint32_t errors = 0, generation = 0;
};

ScriptedRun scripted_run(uint64_t seed) {
  EmulatorProcess emu(MXTB_EXE, {"--preset", "electro_optic", "--seed", std::to_string(seed)});
  Client c(emu.target(), quick());
  Board b(c);
  mxtb::protocol::ServerShape shape;
  mxtb::protocol::TorusPlacement tenant{2, 2, {0, 1, 2, 3}};
  auto map = mxtb::protocol::torus_map(shape, tenant);
  auto backup = mxtb::protocol::torus_map(shape, mxtb::protocol::substitute(tenant, 2, 4));
  REQUIRE(b.set_port_map(map.port_target) == mxtb::mailbox::FwStatus::Ok);
  REQUIRE(b.arm_backup(2, 4, backup.port_target) == mxtb::mailbox::FwStatus::Ok);
  b.clock().wait_ns(30'000);
  b.arm_fault(mxtb::emu::FaultKind::KillXpu, 2, 0, b.clock().now_ns() + 10'000);
  uint32_t fired = b.run_until(er::run_until::kFailoverMask, 2'000'000);
  CHECK((fired & er::run_until::kFailoverMask) != 0);
  b.clock().wait_ns(40'000);
  ScriptedRun r;
  r.events = b.pop_events();
  r.end_ns = b.clock().now_ns();
  r.messages = b.messages_delivered();
  r.errors = b.scoreboard_errors();
  r.generation = b.active_generation();
  return r;
}

}  // namespace

TEST_CASE("firmware mailbox: bad commands change nothing; a re-placement under traffic retrains every circuit") {
  namespace mb = mxtb::mailbox;
  EmulatorProcess emu(MXTB_EXE, {"--preset", "electro_optic", "--seed", "5"});
  Client c(emu.target(), quick());
  Board b(c);
  mxtb::protocol::ServerShape shape;
  auto placed = mxtb::protocol::torus_map(shape, {2, 2, {0, 1, 2, 3}});
  REQUIRE(b.set_port_map(placed.port_target) == mb::FwStatus::Ok);
  const uint32_t gen = b.active_generation();
  CHECK(gen >= 1);
  CHECK(b.active_map(shape.mesh_ports) == placed.port_target);

  // An unknown opcode and a map that sends two inputs to one output: refused by name, nothing moves.
  CHECK(b.mailbox(static_cast<mb::Opcode>(99), {}) == mb::FwStatus::BadCommand);
  auto not_a_permutation = placed.port_target;
  not_a_permutation[1] = not_a_permutation[0];
  CHECK(b.set_port_map(not_a_permutation) == mb::FwStatus::BadMap);
  CHECK(b.arm_backup(2, 2, placed.port_target) == mb::FwStatus::BadCommand);  // the spare is the XPU itself
  CHECK(b.active_generation() == gen);
  CHECK(b.active_map(shape.mesh_ports) == placed.port_target);
  CHECK_FALSE(b.report().armed_xpu);

  // The host re-places the tenant (XPUs 2 and 3 swap positions) while traffic flows, then re-arms.
  b.clock().wait_ns(20'000);
  auto replaced = mxtb::protocol::torus_map(shape, {2, 2, {0, 1, 3, 2}});
  REQUIRE(b.set_port_map(replaced.port_target) == mb::FwStatus::Ok);
  CHECK(b.active_generation() == gen + 1);
  CHECK(b.active_map(shape.mesh_ports) == replaced.port_target);
  auto all_up = [&] {
    auto st = b.link_status();
    for (int l = 0; l < shape.links(); ++l)
      if (replaced.port_target[static_cast<size_t>(l)] >= 0 && st[static_cast<size_t>(l)].state != mxtb::link::LinkState::Active)
        return false;
    return true;
  };
  for (int i = 0; i < 100 && !all_up(); ++i) b.clock().wait_ns(10'000);
  CHECK(all_up());
  auto backup = mxtb::protocol::torus_map(shape, mxtb::protocol::substitute({2, 2, {0, 1, 3, 2}}, 1, 4));
  REQUIRE(b.arm_backup(1, 4, backup.port_target) == mb::FwStatus::Ok);
  auto report = b.report();
  CHECK(report.active_generation == gen + 1);
  REQUIRE(report.armed_xpu);
  CHECK(*report.armed_xpu == 1);
  b.clock().wait_ns(30'000);
  CHECK(b.scoreboard_errors() == 0);
  CHECK(b.messages_delivered() > 0);
}

TEST_CASE("the tenant's job over IPbus: formed, run verified, its events queued; refused forms change nothing") {
  EmulatorProcess emu(MXTB_EXE, {"--preset", "electro_optic", "--seed", "6", "--job-xpus", "0,1,2,3,4"});
  Client c(emu.target(), quick());
  Board b(c);
  mxtb::protocol::ServerShape shape;
  CHECK(b.job_status().state == mxtb::emu::JobState::Idle);
  // Refused: an XPU twice, an XPU that runs no job... (a bus error, nothing formed).
  TenantJobRequest spec;
  spec.bytes = 16 << 10;
  CHECK_THROWS_AS(b.form_job({0, 1, 1}, spec), TransactionError);
  CHECK(b.job_status().state == mxtb::emu::JobState::Idle);
  TenantJobRequest tiny = spec;
  tiny.bytes = 64;
  CHECK_THROWS_AS(b.form_job({0, 1, 3, 2}, tiny), TransactionError);
  CHECK_THROWS_AS(c.write(emulator(er::job_ctrl::kOffset), 3), TransactionError);  // form and stop at once
  CHECK(b.job_status().state == mxtb::emu::JobState::Idle);
  // JOB_RANKS (a byte a rank: rings past JOB_RING's 8 XPUs numbered 0..14, a rack's) is checked
  // the same way.
  CHECK(c.read(emulator(er::job_ranks::kOffset + 4)) == 0xFFFFFFFFu);  // its reset: no rank
  c.write(emulator(er::job_ranks::kOffset), 0xFF010100u);             // XPUs 0, 1, 1
  CHECK_THROWS_AS(c.write(emulator(er::job_ctrl::kOffset), er::job_ctrl::kFormRanksMask), TransactionError);
  c.write(emulator(er::job_ranks::kOffset), 0xFF090100u);  // XPU 9: not one of the server's
  CHECK_THROWS_AS(c.write(emulator(er::job_ctrl::kOffset), er::job_ctrl::kFormRanksMask), TransactionError);
  c.write(emulator(er::job_ranks::kOffset), 0x02030100u);  // XPUs 0, 1, 3, 2, then word 1's 0xFF ends the ring
  CHECK_THROWS_AS(c.write(emulator(er::job_ctrl::kOffset), er::job_ctrl::kFormMask | er::job_ctrl::kFormRanksMask),
                  TransactionError);
  CHECK(b.job_status().state == mxtb::emu::JobState::Idle);
  c.write(emulator(er::job_bytes::kOffset), 16 << 10);  // the refused tiny form above left 64
  c.write(emulator(er::job_ctrl::kOffset), er::job_ctrl::kFormRanksMask);
  CHECK(b.job_status().state == mxtb::emu::JobState::Forming);
  CHECK(b.job_status().ranks == 4);

  // Formed before the circuits exist: it waits for them.
  b.form_job({0, 1, 3, 2}, spec);
  b.clock().wait_ns(5'000);
  CHECK(b.job_status().state == mxtb::emu::JobState::Forming);
  CHECK(b.job_status().ranks == 4);
  REQUIRE(b.set_port_map(mxtb::protocol::torus_map(shape, {2, 2, {0, 1, 2, 3}}).port_target) == mxtb::mailbox::FwStatus::Ok);
  // RUN_UNTIL's job bit wakes the host at each collective's end; the events say how each ended.
  int verified = 0;
  for (int i = 0; i < 200 && verified < 3; ++i) {
    b.run_until(er::run_until::kJobMask, 1'000'000);
    for (const auto& e : b.pop_events())
      if (e.kind == mxtb::emu::EmuEvent::Job) {
        CHECK(static_cast<mxtb::emu::JobOutcome>(e.a) == mxtb::emu::JobOutcome::Verified);
        CHECK(e.c == 4);
        CHECK(e.data == static_cast<uint32_t>(verified + 1));
        ++verified;
      }
  }
  CHECK(verified >= 3);
  JobStatus st = b.job_status();
  CHECK(st.verified >= 3);
  CHECK(st.aborted == 0);
  CHECK(st.wrong == 0);
  CHECK(b.messages_delivered() > 0);
  // A state restore from XPU 0 onto XPU 1 over their two circuits: a Restore event, verified.
  CHECK_THROWS_AS(b.start_restore({0}, 9, 4096), TransactionError);
  CHECK_THROWS_AS(b.start_restore({0}, 1, 100), TransactionError);
  b.start_restore({0}, 1, 16 << 10);
  std::optional<EmuEventRecord> restored;
  for (int i = 0; i < 100 && !restored; ++i) {
    b.run_until(er::run_until::kEventMask, 1'000'000);
    for (const auto& e : b.pop_events())
      if (e.kind == mxtb::emu::EmuEvent::Restore) restored = e;
  }
  REQUIRE(restored);
  CHECK(static_cast<mxtb::emu::JobOutcome>(restored->a) == mxtb::emu::JobOutcome::Verified);
  CHECK(restored->b == 2);
  CHECK(restored->data > 16384 / 8 / 2);  // cycles: at most a word per circuit and clock
  // EVENT_FILTER.jobs leaves the job's events out, counted in EVENT_FILTERED; cleared, they come again.
  b.pop_events();
  const uint32_t filtered0 = c.read(emulator(er::event_filtered::kOffset));
  b.set_event_filter(false, true);
  CHECK(c.read(emulator(er::event_filter::kOffset)) == er::event_filter::kJobsMask);
  const uint32_t verified0 = b.job_status().verified;
  b.clock().wait_ns(50'000);
  CHECK(b.job_status().verified > verified0);
  for (const auto& e : b.pop_events()) CHECK(e.kind != mxtb::emu::EmuEvent::Job);
  CHECK(c.read(emulator(er::event_filtered::kOffset)) >= filtered0 + b.job_status().verified - verified0 - 1);
  b.set_event_filter(false, false);
  b.run_until(er::run_until::kJobMask, 1'000'000);
  bool job_event = false;
  for (const auto& e : b.pop_events()) job_event |= e.kind == mxtb::emu::EmuEvent::Job;
  CHECK(job_event);
  // JOB_SELECT: this emulator runs job 0 alone; another job is a bus error and selects nothing.
  CHECK(c.read(emulator(er::job_select::kOffset)) == 0);
  CHECK_THROWS_AS(c.write(emulator(er::job_select::kOffset), 1), TransactionError);
  CHECK_THROWS_AS(b.job_status(1), TransactionError);
  CHECK(c.read(emulator(er::job_select::kOffset)) == 0);
  // Stopped: the collective in flight (if any) aborted, nothing more runs.
  c.write(emulator(er::job_ctrl::kOffset), er::job_ctrl::kStopMask);
  st = b.job_status();
  CHECK(st.state == mxtb::emu::JobState::Idle);
  b.clock().wait_ns(20'000);
  CHECK(b.job_status().verified == st.verified);

  // An emulator started without --job-xpus runs no job: forming one is refused.
  Client plain(shared_emulator().target(), quick());
  CHECK_THROWS_AS(Board(plain).form_job({0, 1}, spec), TransactionError);
}

TEST_CASE("lockstep: the same seed and the same host script give identical event logs") {
  ScriptedRun a = scripted_run(11), b = scripted_run(11);
  CHECK(a.events.size() > 20);
  CHECK(a.events == b.events);
  CHECK(a.end_ns == b.end_ns);
  CHECK(a.messages == b.messages);
  CHECK(a.messages > 0);
  CHECK(a.errors == 0);
  CHECK(a.generation >= 2);  // the tenant's map, then the failover's
  bool failover = false, fault = false;
  for (const auto& e : a.events) {
    failover |= e.kind == mxtb::emu::EmuEvent::Failover && e.a == 2 && e.b == 4;
    fault |= e.kind == mxtb::emu::EmuEvent::FaultFired;
  }
  CHECK(failover);
  CHECK(fault);
}

TEST_CASE("paced and free modes run on their own; paced holds the real-time factor") {
  {
    EmulatorProcess emu(MXTB_EXE, {"--time-mode", "free", "--preset", "electro_optic"});
    Client c(emu.target(), quick());
    CHECK(c.read(emulator(er::time_mode::kOffset)) == static_cast<uint32_t>(mxtb::emu::TimeMode::Free));
    auto t0 = c.read(emulator(er::time_ns_lo::kOffset));
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    CHECK(c.read(emulator(er::time_ns_lo::kOffset)) > t0 + 1000);
    uint32_t ppm = c.read(emulator(er::rtf_ppm::kOffset));
    CHECK(ppm > 0);        // it reports the factor it reached...
    CHECK(ppm < 1000000);  // ...far below real time on these machines
  }
  {
    const double rtf = 2e-5;  // 20 us of simulated time per wall second
    EmulatorProcess emu(MXTB_EXE, {"--time-mode", "paced", "--rtf", "2e-5", "--preset", "electro_optic"});
    Client c(emu.target(), quick());
    CHECK(c.read(emulator(er::time_mode::kOffset)) == static_cast<uint32_t>(mxtb::emu::TimeMode::Paced));
    CHECK(c.read(emulator(er::rtf_ppm::kOffset)) == 20);
    auto w0 = std::chrono::steady_clock::now();
    auto t0 = c.read(emulator(er::time_ns_lo::kOffset));
    std::this_thread::sleep_for(std::chrono::milliseconds(1000));
    auto t1 = c.read(emulator(er::time_ns_lo::kOffset));
    double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - w0).count();
    double expect_ns = wall * rtf * 1e9;
    CAPTURE(expect_ns);
    CHECK(static_cast<double>(t1 - t0) <= expect_ns * 1.2 + 2000);  // never ahead of the pace (one slice of slack)
    CHECK(static_cast<double>(t1 - t0) >= expect_ns * 0.3);         // and not stalled
  }
}

TEST_CASE("an emulator that ends on its own says how, with the end of its log") {
  const std::string log = "bridge-ended-emulator.log";
  EmulatorProcess emu(MXTB_EXE, {"--time-mode", "free", "--preset", "electro_optic"}, log);
  CHECK_FALSE(emu.ended());  // running
  Client c(emu.target(), quick());
  CHECK(c.read(emulator(er::time_mode::kOffset)) == static_cast<uint32_t>(mxtb::emu::TimeMode::Free));
  REQUIRE(kill(emu.pid(), SIGKILL) == 0);
  std::optional<std::string> how;
  for (int i = 0; i < 100 && !how; ++i) {
    how = emu.ended();
    if (!how) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  REQUIRE(how);
  CHECK(how->rfind("died of signal 9; its log: " + log, 0) == 0);
  CHECK_FALSE(emu.ended());  // told once
  CHECK(emu.stop() == -1);
  std::remove(log.c_str());
}
