// Controller firmware: turns "connect these lanes" into switch-element DAC codes (Beneš routing
// plus per-element calibration), commits them through the controller, keeps a backup map armed
// for an XPU's failure, and on that XPU's links going down commits the backup at once without a
// host round trip. Portable C++17 against Hal (hal.h): no OS calls, no exceptions.
#pragma once

#include "firmware/benes.h"
#include "firmware/calibration.h"
#include "firmware/hal.h"
#include "protocol/fabric_map.h"

#include <mxtb/mailbox.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mxtb::firmware {

struct FirmwareConfig {
  protocol::ServerShape shape;        // link i (XPU lane) is mesh port i
  std::vector<ElementCal> calibration;  // one entry per element
  uint32_t settle_cycles = 8000;        // SETTLE_CYCLES: the mesh's settle time in controller clocks
  // Verify needs every source lit. A lane that loses its old path (the spare's loopback) drops
  // its link and goes dark for the link's RETRAIN_HOLD (256 cycles) to tell its peer; settle at
  // least this long so verify never reads that gap.
  uint32_t min_settle_cycles = 512;
  uint32_t dac_update_cycles = 1;       // DAC_UPDATE_CYCLES
  int16_t verify_min_code = -2000;      // VERIFY_MIN_DBM in 0.01 dBm: -20 dBm
  uint64_t route_cost_ns = 20000;       // modelled soft-core time of one routing + code lookup
  int failover_threshold = 2;           // circuits of the armed XPU that must go dark from its end
  uint64_t commit_timeout_ns = 20'000'000;
  uint64_t mailbox_poll_ns = 10'000;    // how often the idle loop looks at the mailbox
  // Route each map from the elements' present states (routing.h: each loop of the looping
  // algorithm set the way that moves fewer elements), so that circuits that did not change keep
  // their light where the permutation allows it. On in a rack, where a mesh carries other
  // servers' circuits through its fibres (docs/rack.md); the single server's regressions ran
  // without it.
  bool keep_unchanged_paths = false;
  // With keep_unchanged_paths: route the changed circuits around those that stay first
  // (routing.h). A rack turns it on once its bring-up is over: on during the bring-up, two fibre
  // lanes of rack-2x1.json were still retraining when the served rack began to listen
  // (integration_rack_serve_lockstep), which the looping try alone does not do.
  bool route_around_unchanged = false;
  // Without route_around_unchanged (a map routed whole: a rack's bring-up), route it the
  // spare-ready way (routing.h, route_whole_map: unused lanes in loopback, the looping algorithm
  // from nothing) instead of from the present states. On in a spare-ready rack's bring-up
  // (sim/rack/spare_ready.h).
  bool spare_ready_whole_maps = false;
};

// Each mesh port's XPU as the router takes it: link i is mesh port i (XPU i / lanes), every other
// port (a fibre port) -1.
std::vector<int> port_xpus(const protocol::ServerShape& shape, int ports);

// The element states the firmware routes `perm` to under `cfg`, `active` being what its last
// commit routed (empty: nothing yet): prepare()'s rule, for whoever must predict it (a rack's
// spare-ready plan, sim/rack/spare_ready.h).
Result<std::vector<ElementState>> route_map(const FirmwareConfig& cfg, const BenesTopology& topology, const std::vector<int>& perm,
                                            const std::vector<ElementState>& active);

// The firmware's result codes are the mailbox's status codes (protocol/mailbox.json): what the
// host reads back is what the firmware decided.
using mailbox::FwStatus;


struct FailoverRecord {
  int failed_xpu = -1;
  int spare = -1;
  uint64_t trigger_event_cycle = 0;  // controller timestamp of the link-down that met the threshold
  uint64_t seen_ns = 0;              // when the firmware had read that event
  uint64_t commit_ns = 0;            // when the COMMIT write completed (after staging any stale entries)
  uint64_t done_ns = 0;              // when the commit's outcome was read
  uint32_t generation = 0;
  FwStatus status = FwStatus::Ok;
};

struct LogEvent {
  uint64_t cycle;
  uint32_t info;  // EVENT_INFO: type 3:0, code 7:4, index 15:8, data 31:16
};

class OcsFirmware {
 public:
  OcsFirmware(Hal& hal, FirmwareConfig cfg);

  // Checks the controller's identity and sizes, programs the runtime registers, unmasks the
  // interrupts the firmware handles.
  FwStatus init(std::string* why = nullptr);
  // FirmwareConfig::route_around_unchanged, from the next map on.
  void set_route_around_unchanged(bool on) { cfg_.route_around_unchanged = on; }
  // FirmwareConfig::spare_ready_whole_maps, from the next map on.
  void set_spare_ready_whole_maps(bool on) { cfg_.spare_ready_whole_maps = on; }

  // Routes and commits a port map (perm[p]: output port for input port p, -1 unused) and waits
  // for the outcome. Disarms the backup (it was computed for the old map) before committing,
  // whatever the outcome: the host re-arms after every placement.
  FwStatus set_port_map(const std::vector<int>& perm, std::string* why = nullptr);
  // The two halves of set_port_map, for a placement that lands on several boards as one (the
  // host stages on every board before it commits on any: docs/rack.md). stage_map routes and
  // stages without committing and disarms the backup (its staged tables are overwritten);
  // commit_staged commits what the last stage_map staged (NotStaged when a commit, a placement or
  // a backup came since, or none did).
  FwStatus stage_map(const std::vector<int>& perm, std::string* why = nullptr);
  FwStatus commit_staged(std::string* why = nullptr);

  // Keeps `backup` ready for XPU `xpu` failing: routed and staged now, committed by one register
  // write when at least failover_threshold of xpu's circuits go dark from xpu's end (the rule in
  // OcsFirmware::on_event).
  FwStatus arm_backup(int xpu, int spare, const std::vector<int>& backup, std::string* why = nullptr);
  std::optional<int> armed_xpu() const;

  // One pass of the main loop: interrupts, events, fast failover, the mailbox.
  void service();
  // The main loop until simulated time `until_ns`.
  void run_until(uint64_t until_ns);

  uint32_t active_generation() const { return active_gen_; }
  const std::vector<int>& active_map() const { return active_map_; }
  const std::vector<FailoverRecord>& failovers() const { return failovers_; }
  const std::vector<LogEvent>& events() const { return events_; }
  uint64_t bus_reads() const { return reads_; }
  uint64_t bus_writes() const { return writes_; }

 private:
  struct Prepared {
    std::vector<int> map;
    std::vector<uint16_t> codes;
    std::vector<ElementState> states;
    int moved = 0;  // inputs whose circuit stays but whose path the new states change (moved_circuits)
  };
  FwStatus prepare(const std::vector<int>& perm, Prepared& out, std::string* why);
  void stage(const Prepared& p);
  FwStatus commit_and_wait(const Prepared& p, std::string* why);
  // A refused staging or COMMIT write: the status to return, or nullopt to try again.
  std::optional<FwStatus> commit_refused(const BusError& e, int attempt, std::string* why);
  uint32_t rd(uint32_t addr);
  void wr(uint32_t addr, uint32_t v);
  uint32_t drain_interrupts();  // returns IRQ_STATUS bits seen
  uint64_t controller_cycle();
  void drain_events();
  void on_event(const LogEvent& e);
  bool armed_lanes_dark();  // reads the armed XPU's LINK_STATUS: none of its lanes Active
  void fail_over(uint64_t event_cycle);
  void poll_mailbox();

  Hal& hal_;
  FirmwareConfig cfg_;
  std::optional<BenesTopology> topo_;
  std::vector<int> active_map_;
  uint32_t circuits_moved_ = 0;  // over the firmware's life: ReportWord CircuitsMoved
  std::vector<uint16_t> active_codes_, staged_codes_;
  std::vector<ElementState> active_states_;  // what the last commit this firmware made routed (empty: unknown)
  std::vector<int> staged_map_;
  uint32_t active_gen_ = 0, next_gen_ = 1;
  std::optional<int> armed_xpu_;
  int armed_spare_ = -1;
  Prepared backup_;
  std::optional<Prepared> staged_for_commit_;  // stage_map's, until commit_staged or anything else stages
  // Per link of the armed XPU's circuits (either end): when it last left Active, while armed.
  std::vector<std::optional<uint64_t>> left_active_;
  uint64_t armed_cycle_ = 0;        // controller time when armed: older events do not count
  bool failover_pending_ = false;
  uint64_t failover_event_cycle_ = 0;
  bool in_commit_ = false;
  uint64_t last_commit_ns_ = 0;  // when the last COMMIT write completed
  uint32_t last_doorbell_ = 0;
  std::vector<FailoverRecord> failovers_;
  std::vector<LogEvent> events_;
  uint64_t reads_ = 0, writes_ = 0;
};

}  // namespace mxtb::firmware
