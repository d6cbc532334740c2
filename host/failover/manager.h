// The failover manager: host software that keeps a tenant's torus whole. It talks to the board
// (the emulator or the FPGA board) only through the fabric client (host/fabric/board.h): places the
// tenant's circuits through the firmware's mailbox, keeps a copy of every XPU's inference state
// on a peer (the paging engine), pre-arms the firmware's fast path for one XPU, and on a failure
// chooses a spare, hands the firmware the new circuits (or confirms its pre-armed commit), waits
// for the spare's links, restores the state, re-arms, and reports every phase. docs/failover.md.
#pragma once

#include "cuda/paging.h"
#include "host/comm/rank_group.h"
#include "host/fabric/board.h"
#include "host/failover/spare.h"
#include "host/report/report.h"
#include "protocol/fabric_map.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace mxtb::host::failover {

// A phase nothing emulates: its duration is a named constant with its source.
struct ModeledPhase {
  std::string name;
  double duration_ms = 0;
  std::string doc;  // where the constant comes from (never empty)
};

// Where, in a failover, the host goes away (a crash, a lost network) to come back as a restarted host.
enum class HostDisconnect { None, BeforeCommit, MidCommit, AfterCommit };
const char* to_string(HostDisconnect d);  // "none", "before_commit", "mid_commit", "after_commit"

// The tenant's job of collectives on its XPUs (the emulator's JOB_* block stands for its ranks):
// formed on the tenant's ring once the tenant is up, and formed again on the new ring after each
// failover, whose first verified collective ends the failover path (docs/failover.md).
struct TenantJobLoop {
  fabric::TenantJobRequest spec;
  uint64_t first_timeout_ns = 2'000'000;  // board time a ring's first verified collective may take
  // The scaled-down part of the state restore carried over the RTL links (RESTORE_*), from every
  // tenant XPU with circuits to the spare: its payload efficiency sets the full-size restore's time.
  uint32_t restore_rtl_bytes = 256 << 10;
};

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
  double shape_clock_mhz = 156.25;        // the board's clock (watchdog cycles)
  uint64_t link_up_timeout_ns = 3'000'000;
  uint64_t state_bytes_per_xpu = 0;       // inference state per XPU (charged at the fabric's rate)
  double lane_gbps = 100;                 // per circuit, peer to spare
  uint64_t real_bytes_max = 16ull << 20;  // what the paging engine really copies per XPU
  std::vector<ModeledPhase> modeled;      // appended after the state restore
  std::optional<TenantJobLoop> job;       // none: the XPUs run the emulator's random traffic
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

  const protocol::TorusPlacement& placement() const { return placement_; }
  const std::vector<int>& free_spares() const { return free_spares_; }
  const std::vector<int>& failed_xpus() const { return failed_; }
  uint64_t armed_at_ns() const { return armed_at_ns_; }
  std::optional<int> armed_xpu() const { return armed_xpu_; }
  // Every event the manager has taken from the board, oldest first.
  const std::vector<fabric::EmuEventRecord>& log() const { return log_; }
  // Board time of the first event of `kind` about `a` at or after `from_ns`, or -1.
  double event_time(emu::EmuEvent kind, std::optional<uint32_t> a, double from_ns) const;

 private:
  struct Detection {
    int xpu;
    double failure_ns, detect_ns, noticed_ns;
  };
  struct InFlight {
    Detection det{};
    double decided_ns = 0;
    int spare = -1;
  };
  struct Named {  // the XPU the evidence names, since when, and whether by a tie (failed_xpu_now)
    int xpu;
    double since_ns;
    bool tie;
  };
  struct Reconcile {
    double back_ns = 0;
    bool was_safe = false, replaced = false;
  };
  void finish(FailoverRecord& rec, bool reconciled);
  protocol::FabricMap live_map(protocol::FabricMap m) const;
  void expect_moves(const protocol::FabricMap& from, const protocol::FabricMap& to);
  bool place(const protocol::FabricMap& m, FailoverRecord& rec, const char* why);
  // Commits `m` through the mailbox, again when verify refused it for a lane's dark window; an
  // XPU whose light verify misses twice, a dark window apart, has died: its circuits are taken
  // out of `m` (and of map_ when `m` is map_) and it becomes the pending failover.
  mailbox::FwStatus commit_live(protocol::FabricMap& m, FailoverRecord& rec);
  int verify_dark_xpu_since(double t_ns, const protocol::FabricMap& m) const;  // -1: none named
  bool active_map_is(const protocol::FabricMap& m);
  bool commit_failed_since(double t_ns) const;
  bool rollback_done_since(double t_ns) const;  // RollbackDone (or CommitRejected) at or after t_ns
  void report_links_down(FailoverRecord& rec, const std::vector<int>& links);
  bool firmware_left_failure_to_host(int xpu);  // the armed XPU's backup still armed, unfired
  uint32_t watchdog_cycles() const;
  void take_events(uint64_t window_ns);
  std::optional<Detection> failed_xpu_now();
  // True when every link is Active; during a failover also when the missing ones are all circuits
  // of another XPU that has just failed (second_failure_ names it).
  bool wait_links_up(const std::vector<int>& links, uint64_t timeout_ns, bool during_failover = false);
  std::vector<int> circuit_links(const protocol::FabricMap& m) const;
  void arm_next_backup();
  std::vector<int> circuits_of(int xpu) const;
  int circuits_between(int a, int b) const;
  void keep_state_copies();
  // The job formed on the tenant's ring as placed now; waits for the ring's first collective to end
  // verified, for the first to end otherwise (a circuit lost, a wrong result), for another XPU's
  // failure (then pending_, handled next), or the timeout.
  struct JobWait {
    double formed_ns = 0;
    std::optional<fabric::EmuEventRecord> verified, ended;
    std::optional<int> failed;
  };
  JobWait form_job_and_wait();
  bool job_ring_alive() const;  // no XPU of the tenant's ring has failed (or is failing)
  // Takes the board's events (those in log_ from index `seen` on, then new ones) until one of
  // `kind` at or after `from_ns` for which `ends` holds, the job's timeout, or another XPU's
  // failure (then pending_, handled next).
  struct Awaited {
    std::optional<fabric::EmuEventRecord> event;
    std::optional<int> failed;
  };
  Awaited await_event(size_t seen, emu::EmuEvent kind, double from_ns,
                      const std::function<bool(const fabric::EmuEventRecord&)>& ends);
  // The restore's scaled-down part over the RTL links (RESTORE_*): its Restore event, or none
  // (timeout, or another XPU failed: then pending_).
  Awaited restore_over_rtl(const std::vector<int>& sources, int spare);
  std::vector<std::string> check_job();

  fabric::Board& board_;
  ManagerConfig cfg_;
  protocol::TorusPlacement placement_;
  protocol::FabricMap map_;
  std::vector<int> free_spares_, failed_;
  std::optional<int> armed_xpu_;
  int armed_spare_ = -1;
  uint64_t armed_at_ns_ = 0;
  uint32_t generation_ = 0;
  uint32_t firmware_failovers_ = 0;  // the firmware's own failovers seen in its report
  std::vector<link::LinkState> link_state_;
  std::vector<double> link_down_since_;
  std::vector<bool> moving_;            // circuits a commit is moving: their drops are expected
  std::optional<Detection> pending_;    // a failure seen during the last failover, handled next
  std::vector<fabric::EmuEventRecord> log_;
  uint64_t messages_at_bring_up_ = 0;
  InFlight current_;
  std::optional<int> second_failure_;
  std::optional<Named> named_;
  bool commit_failed_ = false;
  mailbox::FwStatus host_commit_status_ = mailbox::FwStatus::Ok;
  double last_commit_ns_ = 0;  // when commit_live's last attempt started
  double handover_ns_ = 0;
  Reconcile reconciled_;
  std::unique_ptr<paging::PagingEngine> engine_;
  size_t state_blocks_ = 0;
  double job_formed_ns_ = -1;  // when the job was last formed (-1: never)
  std::unique_ptr<comm::RankGroup> ranks_;
  bool compared_restart_ = false;  // the other strategy measured (once per run)
};

}  // namespace mxtb::host::failover
