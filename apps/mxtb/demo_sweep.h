// `mxtb demo --sweep`: what the failover path would take at other state sizes, lane rates, lanes
// granted to the restore and restart strategies, recomputed from one run's measured phases (the
// hot spare and the relaunch measured side by side in it). Only state_restore and
// communicator_reform depend on those knobs; every other phase stays as measured. docs/failover.md,
// "What-if sweep".
#pragma once

#include "host/comm/rank_group.h"
#include "host/report/report.h"

#include <nlohmann/json_fwd.hpp>

#include <string>
#include <vector>

namespace mxtb::app {

// What one run measured that the sweep recomputes from.
struct SweepInputs {
  double before_restore_ns = 0;   // the failure to the start of state_restore (hardware, confirm)
  double after_reform_ns = 0;     // the end of communicator_reform to the end of the path (first_collective)
  double efficiency = 1;          // the link layer's payload efficiency, measured on the RTL links
  bool efficiency_measured = false;
  double ranks_abort_ns = 0;      // the failure to the survivors' step loop stopped (no re-form starts before)
  double hot_spare_reform_ns = 0; // the hot spare's whole re-form (rendezvous and first all-reduce)
  double relaunch_reform_ns = 0;  // the relaunch's (stop, start and checkpoints, rendezvous, first all-reduce)
  double state_bytes = 0, lane_gbps = 0;  // the run's own point
  int lanes = 0;
  double target_ns = 1.2e9;
};

// Throws std::runtime_error naming what the timeline lacks (a run without the state restore, or
// without both strategies measured: demo --restart both).
SweepInputs sweep_inputs(const host::report::Timeline& t);

struct SweepPoint {
  double state_gib = 0, lane_gbps = 0;
  int lanes = 0;
  host::comm::Restart restart = host::comm::Restart::HotSpare;
  double failover_ns = 0;  // before_restore_ns: the hardware's failover and the host's confirm
  double restore_ns = 0;   // bytes over lanes x rate x efficiency
  double reform_ns = 0;    // on the critical path: hot spare, what outlasts the restore; relaunch, all of it
  double rest_ns = 0;      // after_reform_ns: the first verified collective
  double total_ns = 0;
  std::string largest;     // the phase to attack first
};

struct SweepGrid {
  std::vector<double> state_gib{1, 2, 4, 8, 16};
  std::vector<double> lane_gbps{10, 25, 50, 100, 200};  // 10: the emulated lane (64-bit words at 156.25 MHz)
  std::vector<int> lanes{1, 2, 3, 4};
};

SweepPoint sweep_point(const SweepInputs& in, double state_gib, double lane_gbps, int lanes, host::comm::Restart r);
std::vector<SweepPoint> sweep(const SweepInputs& in, const SweepGrid& grid = {});

std::string format_sweep(const SweepInputs& in, const std::vector<SweepPoint>& points);
nlohmann::json sweep_json(const SweepInputs& in, const std::vector<SweepPoint>& points);

}  // namespace mxtb::app
