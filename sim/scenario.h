// Scenario files: the one loader that turns a JSON scenario into a run's configuration, with
// errors that name the file, the field and what was wrong. Format: docs/scenarios.md.
#pragma once

#include "failover_run.h"
#include "link_pair.h"

#include <nlohmann/json_fwd.hpp>

#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace mxtb::sim {

struct ScenarioError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

LinkPairConfig load_link_pair_scenario(const std::string& path);
LinkPairConfig parse_link_pair_scenario(const nlohmann::json& j, const std::string& source);

// The seeded random regression's scenario: channel impairments, traffic shapes and faults drawn
// from the seed, all of which the link must survive with exactly-once delivery.
LinkPairConfig random_link_pair_scenario(uint64_t seed);

// Sets the run's seed and everything derived from it (each channel's own error stream).
void set_seed(LinkPairConfig& cfg, uint64_t seed);

nlohmann::json to_json(const LinkPairConfig& cfg);
nlohmann::json to_json(const LinkPairResult& r);

// ---- Failover scenarios (`mxtb server --scenario`, `mxtb demo`, `mxtb regress`) ----
// Everything a failover run needs, emulated or not: the in-process run (failover_run.h) covers
// part of it today, the host failover manager over the socket bridge the rest. docs/scenarios.md.

struct XpuFailure {
  int xpu = 2;
  double at_us = 50;  // simulated us after the tenant is up and the spare armed
};

// A lane (link = xpu * lanes_per_xpu + lane) with a bit error rate and/or a dark window.
struct LaneFault {
  int link = 0;
  double ber = 0;             // from the start of the run
  double dark_from_us = 0;    // dark window, same time origin as XpuFailure::at_us
  double dark_us = 0;         // 0: no dark window
  int swap_with = -1;         // this link's and that link's receivers exchange their light (swapped fibres)
  double swap_from_us = 0;    // from then on, same time origin
};

// A phase nothing emulates: its duration is a named constant with its source.
struct ModeledPhase {
  std::string name;
  double duration_ms = 0;
  std::string doc;  // where the constant comes from (never empty)
};

enum class HostDisconnect { None, BeforeCommit, MidCommit, AfterCommit };
const char* to_string(HostDisconnect d);  // "none", "before_commit", "mid_commit", "after_commit"

struct FailoverScenario {
  std::string name = "failover";
  uint64_t seed = 1;
  std::string time_mode = "lockstep";   // lockstep | paced | free
  double clock_mhz = 156.25;
  firmware::ServerShape shape;          // 5 XPUs x 4 lanes, 32-port mesh
  SettlePreset settle = SettlePreset::ThermoOptic;
  double settle_taus = 5;
  firmware::TorusPlacement tenant{2, 2, {0, 1, 2, 3}};
  std::vector<int> spares{4};
  // The tenant XPU whose backup the failover manager pre-arms in the firmware (which holds one
  // staged backup): its failure takes the firmware's fast path, any other the host's path.
  std::optional<int> armed_xpu;
  // Kind (e.g. "power_domain") -> its groups, each a set of XPUs that fail together.
  std::map<std::string, std::vector<std::vector<int>>> failure_groups;
  std::vector<XpuFailure> failures{XpuFailure{}};  // a second entry is a double failure
  std::vector<LaneFault> lane_faults;
  HostDisconnect host_disconnect = HostDisconnect::None;
  double host_downtime_us = 300;         // how long the host stays away (longer than its watchdog)
  double watchdog_us = 200;              // the controller's host watchdog the manager arms (0: off)
  TrafficConfig traffic;
  std::vector<ModeledPhase> modeled;     // after the hardware phases, in this order
  uint64_t state_bytes_per_xpu = 0;      // inference state to restore on the spare (KV cache)
  double state_copy_gbytes_per_s = 25;   // host-memory copy stand-in bandwidth (GB/s, 1e9 B/s): mxtb server only
  double state_lane_gbps = 100;          // per fabric circuit, peer to spare (mxtb demo: restore over the fabric)
  uint64_t state_real_bytes_max = 64ull << 20;  // what the paging engine really copies (the rest is charged)
  double limit_us = 0;                   // 0: derived from the preset
  double expect_hardware_ns_max = 0;     // 0: unchecked
  double expect_total_ns_max = 1.2e9;    // 0: unchecked

  // The state restore as a modeled phase (bytes / bandwidth); none when no state is restored.
  std::optional<ModeledPhase> state_restore_phase() const;
};

FailoverScenario load_failover_scenario(const std::string& path);
FailoverScenario parse_failover_scenario(const nlohmann::json& j, const std::string& source);
// The failover regression's scenario: which XPU, when, presets, lane error rates, dark windows,
// occasional double failures and host disconnects, drawn from the seed.
FailoverScenario random_failover_scenario(uint64_t seed);
nlohmann::json to_json(const FailoverScenario& s);


}  // namespace mxtb::sim
