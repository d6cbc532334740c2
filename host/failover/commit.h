// Commit and confirm: placing circuits through the firmware's mailbox, and what the controller's
// events, its link status and the firmware's report say of it. commit_live commits again when verify refused a
// commit for a lane's dark window and takes out an XPU it finds dead; name_after_rollback finds
// the XPU whose death rolled a commit back. The readings of the event log (a verify's dark XPU, a
// rollback, the commit that landed and its phases) and of the firmware's report are pure, and
// tested on their own (testbench/host/failover/test_commit.cpp). docs/failover.md.
#pragma once

#include "host/fabric/board.h"
#include "host/failover/detect.h"
#include "protocol/fabric_map.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mxtb::host::failover {

// How many looks (poll_ns apart) the manager takes after a rolled-back commit to find the XPU
// whose dark circuits made verify fail: its links dropped before verify, so one look normally
// does; the rest cover the events of a death a few hundred nanoseconds before verify.
inline constexpr int kLooksAfterRollback = 10;
inline constexpr int kSameLooks = 3;                    // consecutive looks that must name the same XPU
inline constexpr uint64_t kRollbackWaitNs = 1'000'000;  // at most, for the rollback's RollbackDone

// The XPU whose light a verify failure since t_ns missed (-1: none named): the controller names
// the circuit's output port; the light comes from the input port mapped onto it in `m`.
int verify_dark_xpu_since(const std::vector<fabric::EmuEventRecord>& log, double t_ns, const protocol::FabricMap& m,
                          int lanes);
// A commit failed since t_ns: VerifyFail, RollbackDone or CommitRejected.
bool commit_failed_since(const std::vector<fabric::EmuEventRecord>& log, double t_ns);
// Its rollback is over: RollbackDone (or CommitRejected) at or after t_ns.
bool rollback_done_since(const std::vector<fabric::EmuEventRecord>& log, double t_ns);
// SetPortMap's words for a map (an unused port as mailbox::kUnusedPort).
std::vector<uint32_t> port_map_words(const std::vector<int>& port_target);

// Looks after a rolled-back commit: the same XPU named kSameLooks looks running settles it.
struct SameLooks {
  std::optional<int> named;
  int looks = 0;
  void see(std::optional<int> xpu);
  bool settled() const { return named && looks >= kSameLooks; }
};

// The hardware phases of the first commit at or after `from_ns` that verified (an earlier one may
// have rolled back; a later one only isolated a second failed XPU): when the controller started
// it, programmed, settled and verified (-1: not seen), and when the last of `links` trained to
// Active after the verify, the failure and `from_ns` (`seen_up_ns` when none retrained: a board,
// polled).
struct LandedCommit {
  double commit_ns = -1, program_ns = -1, settle_ns = -1, verify_ns = -1;
  double trained_ns = -1;
};
LandedCommit landed_commit(const std::vector<fabric::EmuEventRecord>& log, double from_ns, double failure_ns,
                           const std::vector<int>& links, double seen_up_ns);

// The firmware's report against what the host knows of this failover.
struct FirmwareCheck {
  fabric::FirmwareReport fw;
  uint32_t failovers_before = 0;  // the firmware's own failovers seen before this one
  int failed = -1, spare = -1;
  bool fast_path = false, reconciled = false;
};
// The firmware committed a pre-armed backup for an XPU other than this failover's.
bool committed_other_backup(const FirmwareCheck& c);
// The fast path's last failover must be this one; a backup committed for another XPU is right
// only when that XPU died too (`other_died`: before the host's commit disarmed the backup).
void check_firmware_report(const FirmwareCheck& c, bool other_died, std::vector<std::string>& problems,
                           std::vector<std::string>& notes);

// Commits `m` through the mailbox, again (a dark window later) when verify refused it for a lane's
// dark window. An XPU whose light verify misses twice, a dark window apart, has died: its circuits
// are taken out of `m` (and of s.map when `m` is not s.map), it becomes s.pending (the next
// failover) and a note says so. The firmware's last answer, and when its attempt started.
struct CommitOutcome {
  mailbox::FwStatus status = mailbox::FwStatus::Ok;
  double last_attempt_ns = 0;
};
CommitOutcome commit_live(Watch& w, TenantState& s, protocol::FabricMap& m, uint64_t poll_ns,
                          std::vector<std::string>& notes);

// After a placement: each link of `links` trained to the wrong peer, then those not Active, as
// problems (LINK_STATUS, reasons included).
std::vector<std::string> links_down(fabric::Board& board, const std::vector<int>& links);
// The fabric as the manager believes it (s.map, `generation`) against the controller: the active
// generation, ACTIVE_MAP[0..mesh_ports), every circuit between living XPUs Active.
std::vector<std::string> check_circuits(fabric::Board& board, const TenantState& s, uint32_t generation, int mesh_ports);

// After verify refused a commit: waits for its rollback and the retrain after it, then looks until
// the drops name one XPU other than `failing` kSameLooks looks running (none: no look settled).
std::optional<int> name_after_rollback(Watch& w, const TenantState& s, double since_ns, int failing, uint64_t poll_ns);

}  // namespace mxtb::host::failover
