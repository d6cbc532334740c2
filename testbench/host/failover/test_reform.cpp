#include "host/failover/reform.h"

#include <doctest/doctest.h>

using namespace mxtb::host::failover;
using mxtb::host::comm::Reform;
using mxtb::host::comm::Restart;
namespace report = mxtb::host::report;

namespace {

// Failed at 100 us; the spare's circuits up 58 us later, confirmed at 160 us; a 50 ms state
// restore from then.
report::Timeline with_restore() {
  report::Timeline t;
  t.failure_ns = 100'000;
  report::append_phase(t, "confirm", 60'000, "host", "");
  t.hardware_ns = 58'000;
  report::append_phase(t, "state_restore", 50e6, "modeled", "");
  return t;
}

// The survivors stopped 4 ms after the death; rendezvous 80 ms, first all-reduce 20 ms.
Reform hot_spare() {
  Reform r;
  r.restart = Restart::HotSpare;
  r.library = "gloo";
  r.ranks = 4;
  r.abort_s = 0.004;
  r.abort_reason = "XPU 1: connection reset";
  r.form_s = 0.080;
  r.first_s = 0.020;
  return r;
}

Reform relaunch() {
  Reform r = hot_spare();
  r.restart = Restart::Relaunch;
  r.stop_s = 0.010;
  r.start_s = 0.150;
  return r;
}

// The timeline with `r`'s phases added, XPU 2 the failed one.
report::Timeline reformed(const Reform& r) {
  report::Timeline t = with_restore();
  add_reform_phases(t, r, 2, restore_window(t));
  return t;
}

}  // namespace

TEST_CASE("reform: the restore's window, or an empty one at the path's end") {
  const RestoreWindow w = restore_window(with_restore());
  CHECK(w.start_ns == 160'000);
  CHECK(w.end_ns == doctest::Approx(50'160'000));
  report::Timeline none;
  none.failure_ns = 100'000;
  report::append_phase(none, "confirm", 60'000, "host", "");
  const RestoreWindow e = restore_window(none);
  CHECK(e.start_ns == 160'000);
  CHECK(e.end_ns == 160'000);
}

TEST_CASE("reform: a hot spare's re-form runs beside the restore; only what outlasts it is on the path") {
  const report::Timeline t = reformed(hot_spare());
  // It begins once the survivors stopped (4.1 ms) and ends 100 ms later: 54.0 ms past the restore.
  const report::TimelinePhase* p = report::find_phase(t, "communicator_reform");
  REQUIRE(p);
  CHECK(p->start_ns == doctest::Approx(50'160'000));
  CHECK(p->duration_ns() == doctest::Approx(104'100'000 - 50'160'000));
  CHECK(p->source == "measured");
  CHECK(p->detail.find("gloo hot-spare: the survivors and the waiting spare rendezvous and connect (80.0 ms), the first "
                       "all-reduce checked (20.0 ms); wall time on this host; it runs beside state_restore (50.0 ms), "
                       "so 53.9 ms of its 100.0 ms are on the critical path") == 0);
  REQUIRE(t.beside.size() == 2);
  CHECK(t.beside[0].name == "hot_spare_reform");
  CHECK(t.beside[0].start_ns == doctest::Approx(4'100'000));
  CHECK(t.beside[0].end_ns == doctest::Approx(104'100'000));
  CHECK(t.beside[1].name == "ranks_abort");
  CHECK(t.beside[1].start_ns == 100'000);
  CHECK(t.beside[1].end_ns == doctest::Approx(4'100'000));
  CHECK(t.beside[1].detail.find("the rank on XPU 2 killed with its XPU") != std::string::npos);
  CHECK(t.beside[1].detail.find("(first: XPU 1: connection reset)") != std::string::npos);
  CHECK(report::check_timeline(t).empty());

  // A re-form shorter than the restore adds nothing to the path.
  Reform quick = hot_spare();
  quick.form_s = 0.010;
  quick.first_s = 0.005;
  CHECK(report::find_phase(reformed(quick), "communicator_reform")->duration_ns() == 0);
}

TEST_CASE("reform: a relaunch starts after the restore and is all on the path; as an alternative it replaces the re-form") {
  const report::Timeline t = reformed(relaunch());
  const RestoreWindow w = restore_window(with_restore());
  const report::TimelinePhase* p = report::find_phase(t, "communicator_reform");
  REQUIRE(p);
  CHECK(p->duration_ns() == doctest::Approx(260e6));  // stop 10 + start 150 + rendezvous 80 + first 20 ms
  CHECK(p->detail.find("gloo relaunch: every rank stopped (10.0 ms), 4 rank processes started and their checkpoints "
                       "read back (150.0 ms)") == 0);
  REQUIRE(t.beside.size() == 1);  // ranks_abort only
  CHECK(t.beside[0].name == "ranks_abort");

  const report::Alternative a = alternative_of(relaunch(), 100'000, w);
  CHECK(a.name == "relaunch");
  CHECK(a.phase == "communicator_reform");
  CHECK(a.phase_ns == doctest::Approx(260e6));
  CHECK(a.total_ns == 0);  // settled once the path is complete (timeline.h, add_alternative)
  CHECK(a.detail.find("gloo relaunch measured in this run on a group of its own: stop 10.0 ms") == 0);
  CHECK(place(hot_spare(), 100'000, w).on_path_ns == doctest::Approx(53'940'000));
}
