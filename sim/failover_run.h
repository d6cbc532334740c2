// One emulated-server run under SystemC with the firmware inside: program the tenant's torus,
// arm the spare, carry traffic, optionally reprogram under traffic, kill an XPU, and time every
// phase of the fast failover from the controller's event log and the link layers' transitions.
// Used by `mxtb server` and `mxtb bench reconfig` (docs/cli.md).
#pragma once

#include "sim/server_sim.h"

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mxtb::sim {

struct FailoverRunConfig {
  ServerConfig server;
  std::string calibration_file;          // traces/calibration/mesh32.json
  firmware::TorusPlacement tenant{2, 2, {0, 1, 2, 3}};
  int spare = 4;
  std::optional<int> kill_xpu = 2;
  double kill_after_armed_us = 50;       // the XPU dies this long after the backup is armed
  bool reprogram = false;                // re-place the tenant as {0, 1, 3, 2} under traffic, 50 us after it is up
  double settle_taus = 5;                // SETTLE_CYCLES = settle_taus x the mesh's time constant
  double margin_us = 30;                 // traffic kept flowing after the last link is up
  double limit_us = 0;                   // 0: derived from the preset
  uint64_t route_cost_ns = 20000;
  double progress_us = 0;                // print a progress line this often (simulated); 0: never
};

struct Phase {
  std::string name;
  double start_ns, end_ns;
  std::string source;  // rtl, firmware, modeled
};

struct FailoverRunResult {
  bool initial_map_ok = false;       // every circuit of the tenant trained
  double initial_up_ns = 0;          // from reset to all circuits Active
  bool reprogram_ok = true;
  double reprogram_ns = 0;           // reprogram command to all circuits Active again
  double armed_ns = 0;               // when the backup was armed
  bool failover_done = false;        // the firmware committed the backup
  bool all_up_after = false;         // every circuit of the new map Active at the end
  double failure_ns = 0;
  std::vector<Phase> phases;         // failure to spare Active
  double total_ns = 0;
  int collateral_links = 0;          // links neither on the failed XPU, the spare, nor their peers, that dropped during the failover
  uint64_t messages_delivered = 0, messages_after_failover_on_spare = 0;
  uint64_t scoreboard_errors = 0;
  uint64_t cycles = 0, dac_writes = 0, pd_reads = 0, bus_reads = 0, bus_writes = 0;
  double wall_s = 0;
  std::vector<std::string> failures;
  bool passed() const { return failures.empty(); }
};

// Elaborates and runs under SystemC: once per process (see sc_runner.h).
FailoverRunResult run_failover(const FailoverRunConfig& cfg);
nlohmann::json to_json(const FailoverRunConfig& cfg, const FailoverRunResult& r);

}  // namespace mxtb::sim
