// Scenario files: the one loader that turns a JSON scenario into a run's configuration, with
// errors that name the file, the field and what was wrong, and the one conversion of a failover
// scenario into each part's own configuration: the emulator's (sim::EmulatorConfig) and the
// failover run's (host::failover::FailoverRun, with the manager's config). The scenario file is
// the program's and the test tools': neither sim/ nor host/ knows it. Format: docs/scenarios.md.
#pragma once

#include "host/failover/run.h"
#include "protocol/fabric_map.h"
#include "sim/collective/collective.h"
#include "sim/emulator/emulator.h"
#include "sim/link/link_pair.h"
#include "sim/rack/rack_config.h"
#include "sim/mesh/photonic_mesh.h"

#include <nlohmann/json.hpp>

#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace mxtb::app {

struct ScenarioError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

using sim::LinkPairConfig;
using sim::LinkPairResult;

LinkPairConfig load_link_pair_scenario(const std::string& path);
LinkPairConfig parse_link_pair_scenario(const nlohmann::json& j, const std::string& source);

// The seeded random regression's scenario: channel impairments, traffic shapes and faults drawn
// from the seed, all of which the link must survive with exactly-once delivery.
LinkPairConfig random_link_pair_scenario(uint64_t seed);

// Sets the run's seed and everything derived from it (each channel's own error stream).
void set_seed(LinkPairConfig& cfg, uint64_t seed);

nlohmann::json to_json(const LinkPairConfig& cfg);
nlohmann::json to_json(const LinkPairResult& r);

// ---- Failover scenarios (`mxtb demo`, `mxtb sim --scenario`, `mxtb regress`) ----

using host::failover::HostDisconnect;
using host::failover::ModeledPhase;
using host::failover::ScheduledLaneFault;
using host::failover::XpuFailure;

struct FailoverScenario {
  std::string name = "failover";
  uint64_t seed = 1;
  std::string time_mode = "lockstep";   // lockstep | paced | free
  // The emulator's IPbus target, rtl | cpp; none: the demo's --ipbus-target, else MXTB_IPBUS_TARGET,
  // else rtl (apps/mxtb/engine_options.h).
  std::optional<std::string> ipbus_target;
  double clock_mhz = 156.25;
  protocol::ServerShape shape;          // 5 XPUs x 4 lanes, 32-port mesh
  sim::SettlePreset settle = sim::SettlePreset::ThermoOptic;
  double settle_taus = 5;
  protocol::TorusPlacement tenant{2, 2, {0, 1, 2, 3}};
  std::vector<int> spares{4};
  // The tenant XPU whose backup the failover manager pre-arms in the firmware (which holds one
  // staged backup): its failure takes the firmware's fast path, any other the host's path.
  std::optional<int> armed_xpu;
  // Kind (e.g. "power_domain") -> its groups, each a set of XPUs that fail together.
  std::map<std::string, std::vector<std::vector<int>>> failure_groups;
  std::vector<XpuFailure> failures{XpuFailure{}};  // a second entry is a double failure
  std::vector<ScheduledLaneFault> lane_faults;
  HostDisconnect host_disconnect = HostDisconnect::None;
  double host_downtime_us = 300;         // how long the host stays away (longer than its watchdog)
  double watchdog_us = 200;              // the controller's host watchdog the manager arms (0: off)
  // Added to the host's measured compute when it decides (ManagerConfig::extra_decide_ns): a
  // slower host, so that a directed test orders the hand-over after fast hardware events.
  double host_decide_extra_us = 0;
  // Charged for the host's decide compute instead of measuring it (ManagerConfig::
  // decide_compute_ns): a run's recorded figure host_decide_ns replays it exactly.
  std::optional<uint64_t> host_decide_ns;
  sim::TrafficConfig traffic;
  std::vector<ModeledPhase> modeled;     // after the hardware phases, in this order
  uint64_t state_bytes_per_xpu = 0;      // inference state to restore on the spare (KV cache)
  double state_copy_gbytes_per_s = 25;   // accepted for older scenario files; not used
  // The restore's projection to a faster SerDes than the emulated lanes (protocol::lane_gbps of
  // clock_mhz), reported apart and never summed (report::Projection); 0: none.
  double state_projected_lane_gbps = 100;
  uint64_t state_real_bytes_max = 64ull << 20;  // what the paging engine really copies (the rest is charged)
  // The tenant's job of collectives (sim/collective/tenant_job.h): its XPUs and the spares run it instead
  // of random traffic, and every failover ends at the first verified collective on the new ring.
  struct Collective {
    sim::CollectiveOp op = sim::CollectiveOp::AllReduce;
    sim::DataType type = sim::DataType::F32;
    uint64_t bytes = 64 << 10;   // nccl-tests' size, per rank
    double link_loss_us = 20;    // a circuit out of Active this long aborts the collective in flight
    double gap_us = 0;           // between collectives (the step's compute)
  };
  std::optional<Collective> collective;
  double limit_us = 0;                   // per failure; 0: 5 ms
  double expect_hardware_ns_max = 0;     // 0: unchecked
  double expect_total_ns_max = 0;        // 0: unchecked
  // The path without state_restore against the prototype's 1.2 s, which swapped circuits and
  // relaunched its job, moving no state (report::swap_relaunch_ns); 0: unchecked.
  double expect_swap_relaunch_ns_max = 1.2e9;
};

FailoverScenario load_failover_scenario(const std::string& path);
FailoverScenario parse_failover_scenario(const nlohmann::json& j, const std::string& source);
// The failover regression's scenario: which XPU, when, presets, lane error rates, dark windows,
// occasional double failures and host disconnects, drawn from the seed.
FailoverScenario random_failover_scenario(uint64_t seed);
nlohmann::json to_json(const FailoverScenario& s);

// The emulator's part of a scenario: shape, clock, settle, traffic, seed, time mode. Throws
// ScenarioError naming `source` (the file) when it asks for a server the emulator cannot build.
sim::EmulatorConfig emulator_config(const FailoverScenario& s, const std::string& source,
                                    const std::string& calibration_file);
// The host's part: the manager's configuration, the faults to arm, the expectations.
host::failover::FailoverRun failover_run(const FailoverScenario& s);

// ---- Rack scenarios (`mxtb rack`, docs/rack.md) ----

// A rack file: the servers' torus and fibres, every server's shape and settle, the tenant, the run
// and the fibres' faults, checked whole (sim::rack::check_rack) before anything starts: errors
// name the file and the field or the fibre. `calibration_file`: every server's mesh calibration.
// A single server's failover scenario (no "rack" section, a field only such a scenario has) is a
// rack of one (rack_of_one), and `was_failover_scenario` says so.
sim::rack::RackConfig load_rack_scenario(const std::string& path, const std::string& calibration_file,
                                         bool* was_failover_scenario = nullptr);
// A failover scenario as a rack of one: its server as `mxtb sim` runs it (emulator_config: shape,
// clock, settle, extinction, traffic, seed), bare, the host placing the tenant. Its failures,
// spares, job and state are the host's (`mxtb demo`), not the rack's.
sim::rack::RackConfig rack_of_one(const FailoverScenario& s, const std::string& source, const std::string& calibration_file);
// A rack file's JSON as read, before parse_rack_scenario (ScenarioError naming it if unreadable).
nlohmann::json read_rack_file(const std::string& path);
sim::rack::RackConfig parse_rack_scenario(const nlohmann::json& j, const std::string& source, const std::string& calibration_file);
// A tenant as a rack file writes it ({dim_x, dim_y, xpus: [[server, xpu], ...]}), which
// parse_rack_scenario reads back.
nlohmann::json rack_placement_json(const protocol::RackPlacement& p);
// The rack's configuration as the report names it (name, seed, servers, wiring with each fibre's
// latency and loss, tenant, run).
nlohmann::json to_json(const sim::rack::RackConfig& cfg);

// A random rack failover for `mxtb regress --rack` (docs/rack.md, "The rack campaign"), drawn from
// its seed alone: a rack file of traces/scenarios/rack/ with the seed for its traffic and perhaps
// a fibre cut, the XPUs that die one after another, and perhaps another XPU dying during one of
// the host's transactions.
struct RackSeedPlan {
  nlohmann::json scenario;         // the rack file's JSON with "seed" (and "faults") drawn
  std::string base;                // the rack file it starts from (its name in traces/scenarios/rack/)
  // Per death, in order: which of the tenant's XPUs at that moment (a fraction of the placement's
  // size), and the board time from the last failover's end to it.
  std::vector<double> pick;
  std::vector<uint64_t> gap_ns;
  // The death (index) during whose transaction another XPU dies (-1: none), before which of the
  // transaction's steps (0 hold, 1 phase 1, 2 phase 2, 3 release, 4 verify), on which of its
  // boards (a fraction of their count), which XPU (a fraction of the other tenant XPUs) and how
  // long after the step begins.
  int second_during = -1;
  int second_step = 0;
  double second_board = 0, second_xpu = 0;
  uint64_t second_delay_ns = 0;
  int cut_fibre = -1;              // a fibre cut at cut_at_us (-1: none)
  double cut_at_us = 0;
  // The death (index) during whose transaction a board stops answering (-1: none): the first
  // board to reach the step (1 phase 1, 2 phase 2, 3 release) goes silent for silent_ms of wall
  // time: shorter than the host's client gives a board (the transaction goes on), longer (rolled
  // back on every board), or longer than that and the host's answer deadline together
  // (unresolved, then recovered once it answers). Drawn after everything above, so a seed's other
  // draws are what they were before it existed.
  int silent_during = -1;
  int silent_step = 0;
  uint64_t silent_ms = 0;
  // The tenant runs its job of collectives (three seeds in four; drawn last): op (emu::JobOp),
  // bfloat16 or float, bytes per rank. Each failover then ends at its first verified collective.
  bool job = false;
  int job_op = 0;
  bool job_bf16 = false;
  uint32_t job_bytes = 0;
  // A lane fault on one tenant lane (one seed in three; drawn after the job): none, a dark window
  // shorter than the job's link-loss wait (1-15 us), or bit errors from then on (1e-7 to 1e-5),
  // `lane_at_us` after the rack is up (before, during or after the failovers). Which lane: a
  // fraction of the tenant's XPUs as placed at the start, and a lane of it.
  enum class LaneFault { None, Dark, Ber } lane_fault = LaneFault::None;
  double lane_xpu = 0;
  int lane = 0;
  double lane_at_us = 0;
  double lane_dark_us = 0, lane_ber = 0;
  // The migration baseline instead (one seed in six, from a stream of its own so that every other
  // seed's draws are what they were): the rack's bring-up torus left as it is (a static torus), the
  // job on a block of it (half the torus, at a random corner), the first death in it migrated. Such
  // a seed has one death, a job, and no other fault.
  bool migrate = false;
  int slice_x0 = 0, slice_y0 = 0, slice_dx = 0, slice_dy = 0;
  // Several tenants instead of the rack's one (one seed in five of the others, from a stream of
  // its own): their shapes ("2x2,2x2"), placed by the allocator into the scenario's "tenants";
  // the deaths fall in tenant 0, every other tenant runs its own job (with a job) and must not
  // notice. Such a seed cuts no fibre (a cut under another tenant's circuit aborts its collective
  // by design).
  std::string tenants;
};
RackSeedPlan rack_seed_plan(uint64_t seed, const std::string& racks_dir);

}  // namespace mxtb::app
