// `mxtb demo --sweep`: the what-if grid recomputed from one run's timeline (apps/mxtb/demo_sweep.h).
#include "apps/mxtb/demo_sweep.h"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <set>

using namespace mxtb::app;
using namespace mxtb::host;

namespace {

// A run as the manager reports it with --restart both: 4 GiB over 4 circuits x 100 Gb/s at 0.882,
// the hot spare's 65 ms re-form beside the restore, the relaunch's 196 ms measured beside the run.
report::Timeline measured_run() {
  report::Timeline t;
  t.failure_ns = 50'000;
  report::append_phase(t, "detect", 35, "rtl", "");
  report::append_phase(t, "train", 56'800, "rtl", "");
  t.hardware_ns = t.total_ns;
  report::append_phase(t, "confirm", 11'100, "host", "");
  const double bytes = 4.0 * (1ull << 30), restore_ns = bytes / (4 * 100.0 / 8 * 0.882);
  report::append_phase(t, "state_restore", restore_ns, "modeled", "");
  const double restore_start = t.phases.back().start_ns;
  report::append_phase(t, "communicator_reform", 0, "measured", "");
  report::append_phase(t, "first_collective", 23'600, "rtl", "");
  report::add_beside(t, "hot_spare_reform", restore_start, restore_start + 65.3e6, "measured", "");
  report::add_beside(t, "rearm", t.failure_ns + t.total_ns, t.failure_ns + t.total_ns, "host", "");
  t.alternatives.push_back({"relaunch", "communicator_reform", 196e6, t.total_ns + 196e6, "measured", ""});
  t.figures = {{"restore_efficiency", 0.882}, {"restore_efficiency_measured", 1}, {"state_bytes", bytes},
               {"lane_gbps", 100}, {"restore_circuits", 4}};
  REQUIRE(report::check_timeline(t).empty());
  return t;
}

}  // namespace

TEST_CASE("demo sweep: at the run's own point it gives the run's totals, both strategies") {
  const report::Timeline t = measured_run();
  const SweepInputs in = sweep_inputs(t);
  CHECK(in.lanes == 4);
  CHECK(in.efficiency == doctest::Approx(0.882));
  CHECK(in.before_restore_ns == doctest::Approx(35 + 56'800 + 11'100));
  CHECK(in.after_reform_ns == doctest::Approx(23'600));
  const SweepPoint hot = sweep_point(in, 4, 100, 4, comm::Restart::HotSpare);
  CHECK(hot.total_ns == doctest::Approx(t.total_ns));
  CHECK(hot.reform_ns == 0);  // 65 ms hides behind a 97 ms restore
  CHECK(hot.largest == "state_restore");
  const SweepPoint relaunch = sweep_point(in, 4, 100, 4, comm::Restart::Relaunch);
  CHECK(relaunch.total_ns == doctest::Approx(t.alternatives[0].total_ns));
  CHECK(relaunch.largest == "communicator_reform");
}

TEST_CASE("demo sweep: the restore scales with bytes over lanes x rate; the hot spare's re-form shows once it outlasts it") {
  const SweepInputs in = sweep_inputs(measured_run());
  const SweepPoint base = sweep_point(in, 4, 100, 4, comm::Restart::HotSpare);
  CHECK(sweep_point(in, 8, 100, 4, comm::Restart::HotSpare).restore_ns == doctest::Approx(2 * base.restore_ns));
  CHECK(sweep_point(in, 4, 100, 1, comm::Restart::HotSpare).restore_ns == doctest::Approx(4 * base.restore_ns));
  CHECK(sweep_point(in, 4, 200, 4, comm::Restart::HotSpare).restore_ns == doctest::Approx(base.restore_ns / 2));
  // 1 GiB at 200 Gb/s over 4 lanes: 12 ms of restore, so 53 ms of the 65 ms re-form are on the path.
  const SweepPoint fast = sweep_point(in, 1, 200, 4, comm::Restart::HotSpare);
  CHECK(fast.reform_ns == doctest::Approx(65.3e6 - fast.restore_ns));
  CHECK(fast.total_ns == doctest::Approx(in.before_restore_ns + 65.3e6 + in.after_reform_ns));
  CHECK(fast.largest == "communicator_reform");
  // The relaunch always adds all of its re-form after the restore.
  const SweepPoint rl = sweep_point(in, 1, 200, 4, comm::Restart::Relaunch);
  CHECK(rl.total_ns == doctest::Approx(in.before_restore_ns + fast.restore_ns + 196e6 + in.after_reform_ns));

  const auto points = sweep(in);
  CHECK(points.size() == 2 * 5 * 5 * 4);
  for (const auto& p : points) {
    CHECK(p.total_ns == doctest::Approx(p.failover_ns + p.restore_ns + p.reform_ns + p.rest_ns));
    if (p.restart == comm::Restart::HotSpare)  // never slower than relaunching at the same point
      CHECK(p.total_ns <= sweep_point(in, p.state_gib, p.lane_gbps, p.lanes, comm::Restart::Relaunch).total_ns);
  }
  const auto j = sweep_json(in, points);
  CHECK(j["points"].size() == points.size());
  CHECK(j["inputs"]["restore_efficiency"].get<double>() == doctest::Approx(0.882));
  const std::string table = format_sweep(in, points);
  CHECK(table.find("hot-spare: total at 100 Gb/s per lane") != std::string::npos);
  CHECK(table.find("relaunch") != std::string::npos);
  CHECK_THROWS_AS(sweep_point(in, 0, 100, 4, comm::Restart::HotSpare), std::invalid_argument);
}

TEST_CASE("demo sweep: no re-form starts before the survivors have stopped") {
  report::Timeline t = measured_run();
  const double restore_start = report::find_phase(t, "state_restore")->start_ns;
  report::add_beside(t, "ranks_abort", t.failure_ns, t.failure_ns + 5e6, "measured", "");  // 5 ms
  const SweepInputs in = sweep_inputs(t);
  CHECK(in.ranks_abort_ns == doctest::Approx(5e6));
  CHECK(restore_start - t.failure_ns < 5e6);
  // 1 GiB at 200 Gb/s over 4 lanes: a 12 ms restore; the hot spare's 65.3 ms re-form starts at 5 ms.
  const SweepPoint p = sweep_point(in, 1, 200, 4, comm::Restart::HotSpare);
  CHECK(p.reform_ns == doctest::Approx(5e6 + 65.3e6 - (in.before_restore_ns + p.restore_ns)));
  CHECK(p.total_ns == doctest::Approx(5e6 + 65.3e6 + in.after_reform_ns));
  // Behind a 97 ms restore it is still hidden.
  CHECK(sweep_point(in, 4, 100, 4, comm::Restart::HotSpare).reform_ns == 0);
}

TEST_CASE("demo sweep: a run without what it recomputes from is refused, naming what is missing") {
  auto error_of = [](const report::Timeline& t) {
    try {
      sweep_inputs(t);
    } catch (const std::runtime_error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  report::Timeline no_relaunch = measured_run();
  no_relaunch.alternatives.clear();
  CHECK(error_of(no_relaunch).find("--restart both") != std::string::npos);
  report::Timeline no_restore = measured_run();
  no_restore.phases.erase(no_restore.phases.begin() + 3);
  CHECK(error_of(no_restore) == "the run has no state_restore phase (degraded, or no state to restore)");
  report::Timeline no_figure = measured_run();
  no_figure.figures.erase("lane_gbps");
  CHECK(error_of(no_figure) == "the run's report has no figure 'lane_gbps'");
  report::Timeline bad_eff = measured_run();
  bad_eff.figures["restore_efficiency"] = 1.5;
  CHECK(error_of(bad_eff) == "the run's restore efficiency 1.5 is outside (0, 1]");
}
