// The tenant's job of collectives (sim/collective/tenant_job.h) on the emulated server: back to back and
// verified, a short dark window survived by the link layer's replay, a long one aborted and
// retried, an XPU's death aborting the collective in flight until the job is formed again on the
// spare's ring, and bad rings and sizes refused with their value named.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include "protocol/fabric_map.h"
#include "sim/collective/collective_server.h"
#include "sim/collective/job_set.h"
#include "sim/collective/tenant_job.h"

#include <doctest/doctest.h>

#include <functional>
#include <string>

using namespace mxtb;
using namespace mxtb::sim;

namespace {

const std::string kCalibration = std::string(MXTB_SOURCE_DIR) + "/traces/calibration/mesh32.json";
const protocol::ServerShape kShape{};
const std::vector<int> kRing{0, 1, 3, 2};

struct Rig {
  CollectiveServer server{kShape, 7, ServerEngine::Fast, SettlePreset::ElectroOptic, kCalibration};
  TenantJob job;
  explicit Rig(TenantJobConfig cfg = config()) : job(std::move(cfg), kShape) {
    server.place(static_torus_map(kShape), {0, 1, 2, 3});
    server.sim().set_lane_program(&job);
  }
  static TenantJobConfig config() {
    TenantJobConfig c;
    c.xpus = {0, 1, 2, 3, 4};
    return c;
  }
  ServerSim& sim() { return server.sim(); }
  // Steps until `done` or `limit` cycles; true when done.
  bool run_until(const std::function<bool()>& done, uint64_t limit) {
    const uint64_t c0 = sim().cycle();
    while (!done()) {
      if (sim().cycle() - c0 > limit) return false;
      sim().step(256);
    }
    return true;
  }
  // The first link of `ring_xpu` that the running collective sends on.
  int planned_link(int xpu) {
    for (int l = xpu * kShape.lanes_per_xpu; l < (xpu + 1) * kShape.lanes_per_xpu; ++l)
      if (job.drive(l).valid || sim().link_state(l) == link::LinkState::Active) return l;
    return -1;
  }
};

TenantJobSpec spec(uint64_t bytes = 16 << 10) {
  TenantJobSpec s;
  s.bytes = bytes;
  s.seed = 3;
  return s;
}

}  // namespace

TEST_CASE("a job of all-reduces on the placed 2x2 tenant: back to back, every one verified, on four rings") {
  Rig rig;
  rig.job.form(kRing, spec());
  REQUIRE(rig.run_until([&] { return rig.job.verified() >= 3; }, 200'000));
  CHECK(rig.job.aborted() == 0);
  CHECK(rig.job.wrong() == 0);
  for (const auto& r : rig.job.records()) {
    CHECK(r.outcome == JobOutcome::Verified);
    CHECK(r.rings == 4);
    CHECK(r.ranks == 4);
    CHECK(r.bytes == (16u << 10));
    CHECK(r.end_cycle > r.start_cycle);
  }
  // The job's messages count as the server's delivered traffic.
  CHECK(rig.sim().messages_delivered() > 0);
  // The next collective starts on the step after one ends: they follow each other closely.
  const auto& rs = rig.job.records();
  CHECK(rs[1].start_cycle - rs[0].end_cycle <= 260);
}

TEST_CASE("every op and type runs as a job and is verified") {
  Rig rig;
  for (auto op : {CollectiveOp::ReduceScatter, CollectiveOp::AllGather, CollectiveOp::AllToAll})
    for (auto type : {DataType::F32, DataType::BF16}) {
      CAPTURE(to_string(op));
      CAPTURE(to_string(type));
      TenantJobSpec s = spec(8 << 10);
      s.op = op;
      s.type = type;
      const uint64_t before = rig.job.verified();
      rig.job.form(kRing, s);
      REQUIRE(rig.run_until([&] { return rig.job.verified() > before; }, 200'000));
      CHECK(rig.job.records().back().outcome == JobOutcome::Verified);
    }
  CHECK(rig.job.wrong() == 0);
}

TEST_CASE("a dark window shorter than the loss wait is survived; a longer one aborts the collective, which is retried") {
  TenantJobConfig cfg = Rig::config();
  cfg.link_loss_cycles = 6000;
  Rig rig(cfg);
  rig.job.form(kRing, spec(256 << 10));
  REQUIRE(rig.run_until([&] { return rig.job.state() == JobState::Running; }, 100'000));
  rig.sim().step(2000);  // well inside the collective
  REQUIRE(rig.job.state() == JobState::Running);
  const int l = rig.planned_link(1);
  REQUIRE(l >= 0);
  const uint64_t retrains = rig.sim().link_report(l).retrains;
  rig.sim().dark_lane(l, 200);  // the link drops and retrains to the same peer: replayed, not lost
  REQUIRE(rig.run_until([&] { return rig.job.records_total() >= 1; }, 400'000));
  CHECK(rig.sim().link_report(l).retrains > retrains);  // it did drop
  CHECK(rig.job.records().back().outcome == JobOutcome::Verified);
  CHECK(rig.job.aborted() == 0);

  REQUIRE(rig.run_until([&] { return rig.job.state() == JobState::Running; }, 100'000));
  rig.sim().step(2000);
  rig.sim().dark_lane(l, 20'000);  // longer than the wait
  REQUIRE(rig.run_until([&] { return rig.job.aborted() >= 1; }, 100'000));
  const TenantJobRecord abort = rig.job.records().back();
  CHECK(abort.outcome == JobOutcome::Aborted);
  CHECK(abort.reason == JobReason::LinkLost);
  CAPTURE(abort.detail);
  CHECK(abort.detail.find("out of Active") != std::string::npos);
  // Retried on the same ring once the circuit is back (or with the circuits still Active meanwhile).
  const uint64_t verified = rig.job.verified();
  REQUIRE(rig.run_until([&] { return rig.job.verified() > verified; }, 600'000));
  CHECK(rig.job.wrong() == 0);
}

// The retry after a dark window must wait for the aborted collective's words: the retrained link
// resends them once it is Active again. A retry that started as soon as every circuit was Active
// (the circuits unchanged since before the window) took them as its own and ended wrong (the
// demo's job-lane-dark-during-collective scenario, before the fix).
TEST_CASE("a retry after a dark window never takes the aborted collective's resent words as its own") {
  for (uint64_t dark : {4688u, 9000u, 20'000u}) {
    CAPTURE(dark);
    TenantJobConfig cfg = Rig::config();
    cfg.link_loss_cycles = 1563;
    Rig rig(cfg);
    TenantJobSpec s = spec(64 << 10);
    s.op = CollectiveOp::ReduceScatter;
    rig.job.form(kRing, s);
    REQUIRE(rig.run_until([&] { return rig.job.verified() >= 2 && rig.job.state() == JobState::Running; }, 200'000));
    rig.sim().step(1500);
    rig.sim().dark_lane(1, dark);
    REQUIRE(rig.run_until([&] { return rig.job.aborted() >= 1; }, 100'000));
    const uint64_t verified = rig.job.verified();
    REQUIRE(rig.run_until([&] { return rig.job.verified() >= verified + 3; }, 600'000));
    CHECK(rig.job.wrong() == 0);
    CHECK(rig.job.stale_words() > 0);
  }
}

TEST_CASE("an XPU dies: the collective in flight aborts, the job waits, and the ring formed again on the spare verifies") {
  Rig rig;
  rig.job.form(kRing, spec(256 << 10));
  REQUIRE(rig.run_until([&] { return rig.job.state() == JobState::Running; }, 100'000));
  rig.sim().step(2000);
  rig.sim().kill_xpu(3);
  REQUIRE(rig.run_until([&] { return rig.job.aborted() >= 1; }, 100'000));
  CHECK(rig.job.records().back().reason == JobReason::LinkLost);
  // No ring without XPU 3's circuits: the job waits, it does not run on what is left.
  rig.sim().step(50'000);
  CHECK(rig.job.state() == JobState::Forming);
  CHECK(rig.job.verified() == 0);
  // The failover: XPU 3's circuits to the spare, then the communicator formed again with it.
  const auto moved = protocol::torus_map(kShape, protocol::substitute({2, 2, {0, 1, 2, 3}}, 3, 4)).port_target;
  rig.server.place(moved, {0, 1, 2, 4});
  rig.job.form({0, 1, 4, 2}, spec(256 << 10));
  REQUIRE(rig.run_until([&] { return rig.job.verified() >= 1; }, 400'000));
  const TenantJobRecord& first = rig.job.records().back();
  CHECK(first.outcome == JobOutcome::Verified);
  CHECK(first.rings == 4);
  CHECK(rig.job.wrong() == 0);
}

TEST_CASE("a state restore onto the spare over every circuit into it: each word checked, then the job runs again") {
  Rig rig;
  rig.job.form(kRing, spec(16 << 10));
  REQUIRE(rig.run_until([&] { return rig.job.verified() >= 1; }, 200'000));
  rig.sim().kill_xpu(3);
  const auto moved = protocol::torus_map(kShape, protocol::substitute({2, 2, {0, 1, 2, 3}}, 3, 4)).port_target;
  rig.server.place(moved, {0, 1, 2, 4});
  // XPU 3's neighbours (1 and 2) hold its state's copy; each has two circuits to the spare.
  rig.job.restore({1, 2}, 4, 128 << 10, 9);
  CHECK(rig.job.state() == JobState::Restoring);
  REQUIRE(rig.run_until([&] { return !rig.job.records().empty() && rig.job.records().back().restore &&
                                     rig.job.records().back().outcome != JobOutcome::Aborted; }, 400'000));
  const TenantJobRecord r = rig.job.records().back();
  CHECK(r.outcome == JobOutcome::Verified);
  CHECK(r.rings == 4);  // every lane of the spare
  CHECK(r.bytes == (128u << 10));
  CHECK(r.wrong == 0);
  // Payload efficiency: the link layer's framing and acknowledgements leave most of the lanes' rate.
  const double efficiency = static_cast<double>(r.bytes) / (4.0 * static_cast<double>(r.end_cycle + 1 - r.start_cycle) * 8.0);
  CHECK(efficiency > 0.80);
  CHECK(efficiency < 0.95);
  // The job forms again on its ring; formed on the new ring, it runs verified.
  rig.job.form({0, 1, 4, 2}, spec(16 << 10));
  const uint64_t v = rig.job.verified();
  REQUIRE(rig.run_until([&] { return rig.job.verified() > v; }, 200'000));
  CHECK(rig.job.wrong() == 0);

  CHECK(rig.job.check_restore({1}, 1, 4096) == "XPU 1 cannot restore onto itself");
  CHECK(rig.job.check_restore({}, 4, 4096) == "a restore needs at least one XPU holding the state");
  CHECK(rig.job.check_restore({1}, 4, 100) == "100 bytes of state: not a positive multiple of 8 of at most 256 MiB");
  CHECK(rig.job.check_restore({1}, 9, 4096) == "restore target XPU 9 is not an XPU of the server (0..4)");
}

TEST_CASE("a state transfer catches a corrupted, lost or misplaced word") {
  TransferSpec ts;
  ts.circuits = {{0, 16}, {1, 17}};
  ts.dest = 4;
  ts.bytes = 64 * 8;
  ts.message_words = 16;
  auto run = [&](const std::function<void(int, uint64_t&, bool&, int&)>& tamper) {
    StateTransfer t(ts, kShape);
    t.start(0);
    uint64_t cycle = 0;
    for (int step = 0; step < 200 && !t.done(); ++step)
      for (const RingHop& h : ts.circuits) {
        auto d = t.drive(h.tx_link);
        if (!d.valid) continue;
        t.fire(h.tx_link);
        int deliver = 1;
        tamper(h.rx_link, d.data, d.last, deliver);
        for (int k = 0; k < deliver; ++k) t.deliver(h.rx_link, d.data, d.last, ++cycle);
      }
    return std::pair<bool, uint64_t>{t.done(), t.wrong()};
  };
  CHECK(run([](int, uint64_t&, bool&, int&) {}) == std::pair<bool, uint64_t>{true, 0});
  int n = 0;
  CHECK(run([&](int, uint64_t& d, bool&, int&) { if (n++ == 10) d ^= 4; }).second == 1);
  n = 0;
  CHECK(!run([&](int, uint64_t&, bool&, int& k) { if (n++ == 10) k = 0; }).first);  // lost: never done
  n = 0;
  CHECK(run([&](int, uint64_t&, bool& last, int&) { if (n++ == 3) last = true; }).second == 1);
  CHECK_THROWS_WITH_AS(StateTransfer(TransferSpec{{}, 4, 64, 1, 16}, kShape), "no circuit into XPU 4 to restore over",
                       std::invalid_argument);
}

TEST_CASE("forming the job again aborts the collective in flight, and its stale words never reach the next one") {
  Rig rig;
  rig.job.form(kRing, spec(256 << 10));
  REQUIRE(rig.run_until([&] { return rig.job.state() == JobState::Running; }, 100'000));
  rig.sim().step(1500);
  rig.job.form(kRing, spec(32 << 10));
  CHECK(rig.job.records().back().reason == JobReason::Reformed);
  REQUIRE(rig.run_until([&] { return rig.job.verified() >= 2; }, 400'000));
  CHECK(rig.job.stale_words() > 0);  // the aborted collective's words in flight, dropped
  CHECK(rig.job.wrong() == 0);
  rig.job.stop();
  CHECK(rig.job.state() == JobState::Idle);
}

TEST_CASE("a bad ring or size is refused, naming it") {
  TenantJobConfig cfg;
  cfg.xpus = {0, 1, 2, 3};
  TenantJob job(cfg, kShape);
  CHECK(job.check({0}, spec()).find("at least 2 XPUs, not 1") != std::string::npos);
  CHECK(job.check({0, 1, 4}, spec()).find("XPU 4 does not run the job") != std::string::npos);
  CHECK(job.check({0, 1, 7}, spec()).find("ring XPU 7 is not an XPU") != std::string::npos);
  CHECK(job.check({0, 1, 1}, spec()).find("XPU 1 is twice") != std::string::npos);
  CHECK(job.check({0, 1, 3, 2}, spec(64)).find("64 bytes per rank is too small") != std::string::npos);
  CHECK(job.check({0, 1, 3, 2}, spec()).empty());
  CHECK_THROWS_AS(job.form({0}, spec()), std::invalid_argument);
  CHECK(job.state() == JobState::Idle);
  CHECK_THROWS_WITH_AS(TenantJob({{9}}, kShape), "job XPU 9 is not an XPU of the server (0..4)", std::invalid_argument);
}

// Several tenants' jobs on one set of lanes (sim/collective/job_set.h): each lane belongs to the
// job whose ring holds its XPU, an XPU of another job's ring is refused by name, and one job's
// XPU dying aborts that job alone while the other keeps verifying.
TEST_CASE("two jobs side by side: each verifies on its own XPUs, neither may take the other's, a death aborts one only") {
  CollectiveServer server{kShape, 7, ServerEngine::Fast, SettlePreset::ElectroOptic, kCalibration};
  TenantJobConfig cfg;
  cfg.xpus = {0, 1, 2, 3, 4};
  JobSet jobs(2, cfg, kShape);
  server.place(static_torus_map(kShape), {0, 1, 2, 3});  // 0-1 and 2-3 joined along x, 0-2 and 1-3 along y
  server.sim().set_lane_program(&jobs);
  auto run_until = [&](const std::function<bool()>& done, uint64_t limit) {
    const uint64_t c0 = server.sim().cycle();
    while (!done()) {
      if (server.sim().cycle() - c0 > limit) return false;
      server.sim().step(256);
    }
    return true;
  };
  CHECK(jobs.check(0, {0, 1}, spec()).empty());
  jobs.job(0).form({0, 1}, spec());
  CHECK(jobs.check(1, {1, 3}, spec()) == "XPU 1 is job 0's");
  CHECK(jobs.check(2, {2, 3}, spec()) == "job 2 does not exist (0..1)");
  CHECK(jobs.check_restore(1, {0}, 4, 64) == "XPU 0 is job 0's");
  REQUIRE(jobs.check(1, {2, 3}, spec()).empty());
  jobs.job(1).form({2, 3}, spec());
  REQUIRE(run_until([&] { return jobs.job(0).verified() >= 3 && jobs.job(1).verified() >= 3; }, 400'000));
  CHECK(jobs.job(0).aborted() + jobs.job(1).aborted() == 0);
  CHECK(jobs.job(0).wrong() + jobs.job(1).wrong() == 0);
  CHECK(jobs.records_total() == jobs.job(0).records_total() + jobs.job(1).records_total());
  // Job 0 loses XPU 1: it aborts and waits; job 1 goes on verifying, never aborted.
  jobs.job(0).form({0, 1}, spec(256 << 10));
  REQUIRE(run_until([&] { return jobs.job(0).state() == JobState::Running; }, 100'000));
  const uint64_t verified1 = jobs.job(1).verified();
  server.sim().kill_xpu(1);
  REQUIRE(run_until([&] { return jobs.job(0).aborted() >= 1 && jobs.job(1).verified() >= verified1 + 5; }, 400'000));
  CHECK(jobs.job(0).records().back().reason == JobReason::LinkLost);
  CHECK(jobs.job(1).aborted() == 0);
  CHECK(jobs.job(1).wrong() == 0);
}
