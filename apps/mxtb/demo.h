// The main job as a function: a failover scenario run end to end. Starts the emulator (`mxtb sim`)
// as a child process on loopback with the scenario, connects the fabric client, runs the failover
// (host/failover/run.h) over IPbus exactly as against a board, and writes the report files.
// `mxtb demo` prints what it returns; `mxtb bench reconfig` runs it once per settle preset.
#pragma once

#include "apps/mxtb/scenario.h"
#include "host/fabric/client.h"
#include "host/comm/rank_group.h"
#include "host/failover/run.h"

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace mxtb::app {

struct DemoOptions {
  std::string out_dir = "out";  // scenario.json, emulator.log, report.json, timeline.json/.svg, waves.fst
  bool waves = true;            // a waveform window around the first failure (out_dir/waves.fst)
  // Milestones as they happen (the emulator's address, the tenant placed, ...); none when empty.
  std::function<void(const std::string&)> progress;
  // The IPbus stress harness's knobs (tools/ipbus_stress.py): the client's time per attempt, and
  // `mxtb sim --inject-stall MS/EVERY` (empty: none).
  std::chrono::milliseconds ipbus_timeout{1000};
  std::string inject_stall;
  // The emulator's IPbus target, rtl or cpp (resolve_ipbus_target: the flag, the scenario's, MXTB_IPBUS_TARGET).
  std::string ipbus_target = "rtl";
  // The job's ranks as processes with a real collective library, restarted this way after a
  // failure (their re-form measured); none: the scenario's modeled communicator_reinit.
  std::optional<host::comm::Restart> restart;
  // With `restart`: the other strategy measured too, in the same run (the report's alternative total).
  std::optional<host::comm::Restart> compare_restart;
};

struct DemoRun {
  host::failover::FailoverRunResult failover;
  double wall_s = 0;                  // the whole run, the emulator's start included
  uint64_t sim_ns = 0;                // board time at the end
  host::fabric::ClientStats client;
  std::vector<std::string> written;   // report files
};

// Throws UsageError for a scenario the demo cannot measure (not lockstep); everything that
// happens on the board ends up in DemoRun::failover.failures.
DemoRun run_demo(const FailoverScenario& s, const DemoOptions& o);

// The demo's JSON (mxtb demo --json, the regression's per-seed file): the scenario, the report,
// each failover, the failures.
nlohmann::json demo_json(const FailoverScenario& s, const DemoRun& r);

}  // namespace mxtb::app
