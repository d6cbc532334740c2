#include "host/failover/restore.h"

#include <doctest/doctest.h>

namespace report = mxtb::host::report;
using namespace mxtb::host::failover;
using mxtb::emu::JobOutcome;
using mxtb::emu::JobReason;

namespace {

constexpr uint64_t kGiB = 1ull << 30;

// A Restore event: its outcome, the circuits it used, a reason, its cycles.
mxtb::host::fabric::EmuEventRecord restore_event(JobOutcome o, uint32_t circuits, uint32_t cycles,
                                                 JobReason why = JobReason::None) {
  return {200'000, mxtb::emu::EmuEvent::Restore, static_cast<uint32_t>(o), circuits, static_cast<uint32_t>(why), cycles};
}

// XPU 2 failed, spare 4 in its place: XPUs 0 and 3 hold the copy, over the spare's four circuits.
RestoreInputs inputs() {
  RestoreInputs in;
  in.failed = 2;
  in.spare = 4;
  in.sources = {{0, 3}, 4};
  in.paged = {16u << 20, true};
  in.state_bytes = 4 * kGiB;
  in.clock_mhz = 156.25;  // 10 Gb/s lanes
  in.projected_lane_gbps = 100;
  in.rtl_bytes = 256 << 10;
  in.rtl_timeout_ns = 2'000'000;
  return in;
}

report::Timeline after_confirm() {
  report::Timeline t;
  t.failure_ns = 100'000;
  report::append_phase(t, "confirm", 60'000, "host", "");
  return t;
}

}  // namespace

TEST_CASE("restore: the payload efficiency and the full-size restore's time") {
  // 256 KiB over 4 circuits in 9,287 cycles against a 64-bit word per circuit and cycle.
  CHECK(restore_efficiency(256 << 10, 4, 9287) == doctest::Approx(262144.0 / 297184.0));
  CHECK(restore_efficiency(256 << 10, 4, 9287) == doctest::Approx(0.882).epsilon(1e-3));
  CHECK(restore_efficiency(1024, 1, 128) == 1.0);
  // 4 GiB over 4 circuits of 100 Gb/s (50 bytes per ns together): 85.9 ms at the raw rate.
  CHECK(restore_ns(4 * kGiB, 4, 100) == doctest::Approx(85'899'345.92));
  CHECK(restore_ns(4 * kGiB, 4, 100, 0.5) == doctest::Approx(2 * 85'899'345.92));
  CHECK(restore_ns(4 * kGiB, 2, 100) == doctest::Approx(2 * 85'899'345.92));
  CHECK(restore_ns(4 * kGiB, 0, 100) == 0);
}

TEST_CASE("restore: the sources are the XPUs with circuits to the spare") {
  const mxtb::protocol::TorusPlacement t{2, 2, {0, 1, 4, 3}};
  const auto map = mxtb::protocol::torus_map(mxtb::protocol::ServerShape{}, t);
  const RestoreSources s = restore_sources(map, t.xpu_of_position, 4, 4, 20);
  CHECK(s.xpus == std::vector<int>{0, 3});
  CHECK(s.circuits == 4);
  const RestoreSources none = restore_sources(map, {0, 1, 2, 3}, 2, 4, 20);  // XPU 2 is out of this map
  CHECK(none.xpus.empty());
  CHECK(none.circuits == 0);
}

TEST_CASE("restore: measured on the RTL links, the phase is charged at the measured efficiency") {
  report::Timeline t = after_confirm();
  RestoreInputs in = inputs();
  in.rtl = RtlRestore{restore_event(JobOutcome::Verified, 4, 9287), std::nullopt};
  std::vector<std::string> problems;
  append_restore(t, in, problems);
  CHECK(problems.empty());
  CHECK(t.notes.empty());
  const report::TimelinePhase* p = report::find_phase(t, "state_restore");
  REQUIRE(p);
  CHECK(p->start_ns == 160'000);
  // At the emulated lanes' 10 Gb/s (64-bit words at 156.25 MHz), the clock's and no other.
  CHECK(p->duration_ns() == doctest::Approx(858'993'459.2 * 297184.0 / 262144.0));
  CHECK(p->source == "modeled");
  CHECK(p->detail.find("4.00 GiB from XPUs 0, 3 over the spare's 4 circuits x 10 Gb/s (64-bit words at 156.25 MHz) x "
                       "0.882 payload efficiency") == 0);
  CHECK(p->detail.find("256 KiB over those circuits in 59.44 us (9287 cycles)") != std::string::npos);
  CHECK(p->detail.find("moved 16.0 MiB of it for real, bit-exact: yes") != std::string::npos);
  CHECK(t.figures.at("restore_efficiency") == doctest::Approx(0.88209).epsilon(1e-4));
  CHECK(t.figures.at("restore_efficiency_measured") == 1);
  CHECK(t.figures.at("restore_circuits") == 4);
  CHECK(t.figures.at("state_bytes") == 4.0 * kGiB);
  CHECK(t.figures.at("lane_gbps") == 10);
  // The projection to 100 Gb/s SerDes lanes: apart, with the measured efficiency, never on the path.
  REQUIRE(t.projection);
  CHECK(t.projection->lane_gbps == 100);
  CHECK(t.projection->state_restore_ns == doctest::Approx(85'899'345.92 * 297184.0 / 262144.0));
  CHECK(t.total_ns == doctest::Approx(60'000 + p->duration_ns()));
  RestoreInputs other_clock = inputs();  // a 312.5 MHz board: 20 Gb/s lanes, half the time
  other_clock.clock_mhz = 312.5;
  other_clock.projected_lane_gbps = 0;
  report::Timeline u = after_confirm();
  append_restore(u, other_clock, problems);
  CHECK(report::find_phase(u, "state_restore")->duration_ns() == doctest::Approx(858'993'459.2 / 2));
  CHECK(u.figures.at("lane_gbps") == 20);
  CHECK_FALSE(u.projection);
}

TEST_CASE("restore: without a measurement the lanes' raw rate; an interruption, an abort, wrong words and a bad copy named") {
  std::vector<std::string> problems;
  report::Timeline raw = after_confirm();
  append_restore(raw, inputs(), problems);  // no tenant job: nothing over the RTL links
  REQUIRE(report::find_phase(raw, "state_restore"));
  CHECK(report::find_phase(raw, "state_restore")->duration_ns() == doctest::Approx(858'993'459.2));
  CHECK(report::find_phase(raw, "state_restore")->detail ==
        "4.00 GiB from XPUs 0, 3 over the spare's 4 circuit(s) x 10 Gb/s (64-bit words at 156.25 MHz); the paging engine "
        "(CPU backend) moved 16.0 MiB of it for real, bit-exact: yes");
  REQUIRE(raw.projection);
  CHECK(raw.projection->state_restore_ns == doctest::Approx(85'899'345.92));
  CHECK(raw.figures.at("restore_efficiency") == 1);
  CHECK(raw.figures.at("restore_efficiency_measured") == 0);
  CHECK(problems.empty());

  RestoreInputs in = inputs();
  in.rtl = RtlRestore{std::nullopt, 3};  // a source died while the state streamed
  report::Timeline t = after_confirm();
  append_restore(t, in, problems);
  CHECK(problems.empty());
  REQUIRE(t.notes.size() == 1);
  CHECK(t.notes[0] == "the state restore over the RTL links was interrupted: XPU 3 failed (a source: its stripe of XPU 2's "
                      "state copy is gone with it); its duration is charged at the lanes' raw rate, nothing measured it");
  CHECK(t.figures.at("restore_efficiency_measured") == 0);

  in.rtl = RtlRestore{restore_event(JobOutcome::Aborted, 4, 0, JobReason::LinkLost), std::nullopt};
  t = after_confirm();
  append_restore(t, in, problems);
  CHECK(t.notes == std::vector<std::string>{"the state restore over the RTL links was aborted (LinkLost)"});

  in.rtl = RtlRestore{};  // it never ended
  append_restore(t, in, problems);
  in.rtl = RtlRestore{restore_event(JobOutcome::Wrong, 4, 9000, JobReason::Mismatch), std::nullopt};
  append_restore(t, in, problems);
  in.paged.exact = false;
  in.sources = {};
  in.rtl.reset();
  append_restore(t, in, problems);
  CHECK(problems == std::vector<std::string>{
                        "the state restore over the RTL links (XPUs 0, 3 to spare 4) did not end within 2000 us",
                        "the state restore over the RTL links delivered wrong words",
                        "XPU 2's state came back different on the spare",
                        "no circuit between the spare and a peer holding the state copy"});
  CHECK(t.phases.back().duration_ns() == 0);  // no circuit: nothing charged
}

TEST_CASE("restore: the copies come back bit-exact from the paging engine's remote tier") {
  // 1 MiB per XPU: two 512 KiB blocks (8 layers x 8 KV heads x 128 x 16 tokens x fp16, K and V).
  StateCopies copies({0, 1, 2, 3}, 5, 4 * kGiB, 1 << 20);
  const StateCopies::PagedBack back = copies.page_back(2);
  CHECK(back.exact);
  CHECK(back.bytes_moved == 1u << 20);
  CHECK(copies.page_back(0).exact);
}
