// The failover manager: host software that keeps a tenant's torus whole. It talks to the board
// (the emulator or the FPGA board) only through the fabric client (host/fabric/board.h): places the
// tenant's circuits through the firmware's mailbox, keeps a copy of every XPU's inference state
// on a peer (the paging engine), pre-arms the firmware's fast path for one XPU, and on a failure
// chooses a spare, hands the firmware the new circuits (or confirms its pre-armed commit), waits
// for the spare's links, restores the state, re-arms, and reports every phase. docs/failover.md.
//
// FailoverManager owns the state the phases share and runs them in order; each phase is a unit of
// its own: detection (detect.h), commit and confirm (commit.h), state restore (restore.h), the
// communicator's re-form (reform.h) and the timeline's assembly (timeline.h); the tenant's job of
// collectives is tenant_job.h's, and circuits.h reads the fabric map for all of them.
#pragma once

#include "host/comm/rank_group.h"
#include "host/fabric/board.h"
#include "host/failover/commit.h"
#include "host/failover/detect.h"
#include "host/failover/reform.h"
#include "host/failover/restore.h"
#include "host/failover/spare.h"
#include "host/failover/tenant_job.h"
#include "host/failover/timeline.h"
#include "host/report/report.h"
#include "protocol/fabric_map.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace mxtb::host::failover {

// Where, in a failover, the host goes away (a crash, a lost network) to come back as a restarted host.
enum class HostDisconnect { None, BeforeCommit, MidCommit, AfterCommit };
const char* to_string(HostDisconnect d);  // "none", "before_commit", "mid_commit", "after_commit"

struct ManagerConfig {
  protocol::ServerShape shape;
  protocol::TorusPlacement tenant;
  std::vector<int> spares;
  std::vector<FailureGroup> groups;
  std::optional<int> armed_xpu;           // the XPU whose backup the firmware holds staged
  uint64_t poll_ns = 2'000;               // how much time passes between the host's looks
  // Added to the host's measured compute when it decides (a slower host): the measured part
  // varies from run to run, so directed tests use this to put the host's hand-over after fast
  // hardware events at any machine speed.
  uint64_t extra_decide_ns = 0;
  // Charged for the host's decide compute instead of measuring it. The measured cost differs by
  // tens of nanoseconds from run to run, and in lockstep it moves every later host look; this
  // replays a run's recorded charge (its report's figure host_decide_ns) cycle for cycle.
  std::optional<uint64_t> decide_compute_ns;
  uint64_t watchdog_ns = 200'000;         // the controller's host watchdog (0: off), kicked at every look
  double shape_clock_mhz = 156.25;        // the board's clock (watchdog cycles; the lanes' rate, protocol::lane_gbps)
  uint64_t link_up_timeout_ns = 3'000'000;
  uint64_t state_bytes_per_xpu = 0;       // inference state per XPU (charged at the fabric's rate)
  double projected_lane_gbps = 100;       // the report's projection of the restore to a faster SerDes (0: none)
  uint64_t real_bytes_max = 16ull << 20;  // what the paging engine really copies per XPU
  std::vector<ModeledPhase> modeled;      // appended after the state restore
  std::optional<TenantJobLoop> job;       // the tenant's job of collectives; none: the emulator's random traffic
  // The job's ranks as real processes with a real collective library (host/comm/rank_group.h):
  // their communicator's re-form after a failover is measured and replaces a modeled
  // "communicator_reinit". None: that phase stays the scenario's constant.
  std::optional<comm::RankGroupConfig> comm;
  // With `comm`: the other strategy too, on a group of its own, at the first failover, so the
  // report sets the two totals side by side from one run (Timeline::alternatives).
  std::optional<comm::Restart> compare_restart;
  std::string scenario;
  uint64_t seed = 0;
};

struct FailoverRecord {
  int failed = -1;
  std::optional<int> spare;
  std::string spare_reason;
  bool fast_path = false;               // the firmware's pre-armed commit did it
  bool disconnected = false;            // the host went away during it: call reconnect() to finish
  report::Timeline timeline;
  std::vector<std::string> problems;    // invariants that did not hold
};

class FailoverManager {
 public:
  FailoverManager(fabric::Board& board, ManagerConfig cfg);
  ~FailoverManager();

  // Places the tenant's torus, waits until its circuits are Active, keeps a copy of each tenant
  // XPU's state on its torus neighbour, and pre-arms the backup. Throws std::runtime_error when
  // the fabric does not come up.
  void bring_up();
  // Waits up to `timeout_ns` of board time for an XPU to fail and handles the failure. With
  // `disconnect`, the host goes away at that point (the record says `disconnected`): the caller
  // lets the board run without it, then calls reconnect() as the restarted host.
  std::optional<FailoverRecord> handle_next_failure(uint64_t timeout_ns,
                                                    HostDisconnect disconnect = HostDisconnect::None);
  // The restarted host: reads the controller's state (safe? generation? map?), clears the safe
  // state, places its journaled circuits again if they are not active, and finishes the failover.
  void reconnect(FailoverRecord& rec);
  // Lets `ns` of board time pass while watching the board (and kicking its watchdog).
  void idle(uint64_t ns);
  // Waits (at most timeout_ns) until every circuit between living XPUs is Active: a lane's dark
  // window or a retrain in progress is a transient, not the fabric's state. False on timeout.
  bool wait_living_links(uint64_t timeout_ns);
  // The fabric as the manager believes it, checked against the controller: the active map and
  // generation, every circuit of a living XPU Active, no traffic lost. One line per problem.
  std::vector<std::string> check_fabric();

  const protocol::TorusPlacement& placement() const { return s_.placement; }
  const std::vector<int>& free_spares() const { return s_.free_spares; }
  const std::vector<int>& failed_xpus() const { return s_.failed; }
  uint64_t armed_at_ns() const { return armed_at_ns_; }
  std::optional<int> armed_xpu() const { return armed_xpu_; }
  // Every event the manager has taken from the board, oldest first.
  const std::vector<fabric::EmuEventRecord>& log() const { return watch_.log(); }
  // Board time of the first event of `kind` about `a` at or after `from_ns`, or -1.
  double event_time(emu::EmuEvent kind, std::optional<uint32_t> a, double from_ns) const;

 private:
  struct InFlight {  // the failover being handled
    Detection det{};
    double decided_ns = 0;
    int spare = -1;
  };

  // handle_next_failure's steps, in order.
  std::optional<Detection> wait_for_failure(uint64_t timeout_ns);
  FailoverRecord open_record(const Detection& det);
  Replacement decide(const Detection& det, report::Timeline& t);
  void isolate(const Detection& det, FailoverRecord& rec);  // degraded: no spare left
  // Journals the new placement and hands it over (the firmware's pre-armed commit, or the host's
  // through the mailbox); false when the host went away instead (`disconnect`).
  bool hand_over(FailoverRecord& rec, const Detection& det, Replacement next, HostDisconnect disconnect);
  // Waits for the new circuits; a second failure or a rolled-back commit places the map again.
  void await_circuits(FailoverRecord& rec, const Detection& det);
  void place_again(FailoverRecord& rec, const Detection& det, const protocol::FabricMap& intended);
  void go_away(FailoverRecord& rec, HostDisconnect disconnect);
  // finish's steps, in order: the hardware's phases confirmed, then the path after them.
  void finish(FailoverRecord& rec, bool reconciled);
  void confirm_firmware(FailoverRecord& rec, bool reconciled, const fabric::FirmwareReport& fw);
  void restore_state(FailoverRecord& rec);
  ReformResult reform_ranks(FailoverRecord& rec);
  void form_tenant_job_again(FailoverRecord& rec);
  void rearm(report::Timeline& t);

  void take_events(uint64_t window_ns) { watch_.take_events(window_ns); }
  std::optional<Detection> failed_xpu_now() { return watch_.failed_xpu_now(s_); }
  std::vector<int> circuit_links() const;  // of s_.map
  bool place(const protocol::FabricMap& m, FailoverRecord& rec, const char* why);
  mailbox::FwStatus commit_live(protocol::FabricMap& m, FailoverRecord& rec);
  bool active_map_is(const protocol::FabricMap& m);
  void report_links_down(FailoverRecord& rec, const std::vector<int>& links);
  bool firmware_left_failure_to_host(int xpu);  // the armed XPU's backup still armed, unfired
  uint32_t watchdog_cycles() const;
  // True when every link is Active; during a failover also when the missing ones are all circuits
  // of another XPU that has just failed (second_failure_ names it).
  bool wait_links_up(const std::vector<int>& links, uint64_t timeout_ns, bool during_failover = false);
  void arm_next_backup();
  TenantJobWait form_job_and_wait();  // the tenant's job formed on the ring as placed now
  std::vector<std::string> check_job();

  fabric::Board& board_;
  ManagerConfig cfg_;
  Watch watch_;      // the links and events the manager has seen
  TenantState s_;    // the tenant, its circuits, the failed XPUs and spares left, a pending failure
  std::optional<int> armed_xpu_;
  int armed_spare_ = -1;
  uint64_t armed_at_ns_ = 0;
  uint32_t generation_ = 0;
  uint32_t firmware_failovers_ = 0;  // the firmware's own failovers seen in its report
  uint64_t messages_at_bring_up_ = 0;
  InFlight current_;
  std::optional<int> second_failure_;
  bool commit_failed_ = false;
  mailbox::FwStatus host_commit_status_ = mailbox::FwStatus::Ok;
  double handover_ns_ = 0;
  Reconcile reconciled_;
  std::unique_ptr<StateCopies> copies_;
  double job_formed_ns_ = -1;  // when the job was last formed (-1: never)
  std::unique_ptr<comm::RankGroup> ranks_;
  bool compared_restart_ = false;  // the other strategy measured (once per run)
};

}  // namespace mxtb::host::failover
