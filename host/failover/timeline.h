// The failover's timeline as the manager assembles it from what it measured: the hardware phases
// from the failure to the spare's circuits Active and the host's confirmation (fast path, host
// path, or a restarted host's reconcile), the scenario's modeled constants, the tenant job's
// collective aborting and its first verified collective on the new ring, the next backup re-armed
// beside the path, and the other restart strategy's total. Pure: every input is a plain value the
// manager measured, so the assembly is tested on its own (testbench/host/failover/test_timeline.cpp).
// The state restore's phase is restore.h's, the re-form's reform.h's. docs/failover.md, docs/report.md.
#pragma once

#include "host/fabric/board.h"
#include "host/failover/commit.h"
#include "host/failover/detect.h"
#include "host/failover/tenant_job.h"
#include "host/report/report.h"

#include <cstdint>
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

// What a restarted host found when it came back (FailoverManager::reconnect).
struct Reconcile {
  double back_ns = 0;
  bool was_safe = false, replaced = false;
};

struct HardwareInputs {
  Detection det{};
  double decided_ns = 0;                 // the host had chosen the spare and the new torus
  bool fast_path = false;
  std::optional<Reconcile> reconciled;   // the host went away and came back
  LandedCommit commit;
  double all_up_seen_ns = 0;             // the manager saw every circuit Active
  double confirmed_ns = 0;               // and had read the firmware's report
  uint32_t fw_detect_to_commit_ns = 0, fw_commit_to_done_ns = 0;  // the firmware's report
  uint64_t watchdog_ns = 0, poll_ns = 0;
};
// The phases from the failure (t.failure_ns) to the host's confirmation, each starting where the
// previous ended, and t.hardware_ns (the failure to the last spare link Active).
void append_hardware_phases(report::Timeline& t, const HardwareInputs& in);
// A degraded failover's detection (no spare: nothing is committed for it).
void append_degraded_detection(report::Timeline& t, const Detection& det);
// What became of the job's communicator at a failover: the modeled communicator_reinit stands
// only for a communicator that is re-formed and not measured.
enum class CommunicatorFate {
  Modeled,         // re-formed, not measured here (demo --restart none): the scenario's constant
  Reformed,        // the ranks' re-form measured (communicator_reform)
  NoJob,           // the tenant runs no job (random traffic): there is no communicator
  NotFormedAgain,  // another XPU of the ring has failed: the job waits for a ring it cannot have
};
// The scenario's modeled constants, communicator_reinit only where `fate` is Modeled (a note says
// why it is left out otherwise).
void append_modeled(report::Timeline& t, const std::vector<ModeledPhase>& modeled, CommunicatorFate fate);

// The job's collective in flight at the failure, aborted on its own beside the failover.
void add_collective_abort(report::Timeline& t, const std::vector<fabric::EmuEventRecord>& log);
// The path ends at the job's first verified collective on the new ring (first_collective);
// otherwise a note (interrupted) or a problem (wrong, none in time). `verified_so_far`: JOB_STATUS.
void report_first_collective(report::Timeline& t, const TenantJobWait& w, const std::vector<int>& ring,
                             const fabric::TenantJobRequest& request, uint64_t timeout_ns, uint32_t verified_so_far,
                             std::vector<std::string>& problems);
// The next backup armed after the path (`rearm_ns` of board time), beside it.
void add_rearm(report::Timeline& t, double rearm_ns, std::optional<int> armed_xpu, int armed_spare);
// The other strategy's total, once the path is complete: the total with its phase in place of the path's.
void add_alternative(report::Timeline& t, std::optional<report::Alternative> alternative);

}  // namespace mxtb::host::failover
