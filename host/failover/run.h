// A failover run, the main job's body: one failover scenario against a board. The manager places
// the tenant and pre-arms a spare, the faults are armed through the emulator's control block, a
// waveform window opens shortly before the first failure, every failure is handled (a host
// disconnect included), the fabric is checked, and the failovers' timelines become one report. `mxtb demo`,
// `mxtb bench reconfig` and the tests call it; it talks to the board only through host/fabric.
// docs/failover.md.
#pragma once

#include "host/fabric/board.h"
#include "host/failover/manager.h"
#include "host/report/report.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace mxtb::host::failover {

// An XPU that dies, `at_us` of board time after the tenant is up and the spare armed.
struct XpuFailure {
  int xpu = 2;
  double at_us = 50;
};

// A lane (link = xpu * lanes_per_xpu + lane) with a bit error rate and/or a dark window, and/or
// its receiver's fibre swapped with another link's. Times count from the same origin as XpuFailure.
struct ScheduledLaneFault {
  int link = 0;
  double ber = 0;           // from the start of the run
  double dark_from_us = 0;
  double dark_us = 0;       // 0: no dark window
  int swap_with = -1;       // this link's and that link's receivers exchange their light
  double swap_from_us = 0;
};

struct FailoverRun {
  ManagerConfig manager;
  std::vector<XpuFailure> failures;            // a second entry is a double failure
  std::vector<ScheduledLaneFault> lane_faults;
  HostDisconnect host_disconnect = HostDisconnect::None;  // hits the first failover
  double host_downtime_us = 300;               // how long the host stays away
  bool waves = false;                          // open the emulator's waveform window (WAVE_CTRL)
  uint64_t failure_timeout_ns = 5'000'000;     // how long to wait for each failure
  double expect_hardware_ns_max = 0;           // 0: unchecked
  double expect_total_ns_max = 0;              // 0: unchecked
  double expect_swap_relaunch_ns_max = 0;      // report::swap_relaunch_ns; 0: unchecked
};

struct FailoverRunResult {
  report::Timeline timeline;             // the first failover's, with the later ones as notes
  std::vector<FailoverRecord> records;   // one per failover handled
  std::vector<std::string> failures;     // everything that did not hold; empty: passed
  bool passed() const { return failures.empty(); }
};

// Runs `run` on `board` (the emulator: faults need its control block). Never throws for what
// happens on the board: errors end up in `failures`. `progress` gets one line per milestone.
FailoverRunResult run_failover(fabric::Board& board, const FailoverRun& run,
                               const std::function<void(const std::string&)>& progress = {});

}  // namespace mxtb::host::failover
