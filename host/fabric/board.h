// Typed access to the board through the fabric client: the controller's link states and
// generation, the firmware's mailbox (protocol/mailbox.json), and, on the emulator, faults, run
// until an event, and the event queue. What host software (the failover manager, the tests)
// calls instead of raw addresses. docs/protocol.md.
#pragma once

#include "host/fabric/client.h"
#include "host/fabric/clock.h"

#include <mxtb/emu_regs.h>
#include <mxtb/link_defs.h>
#include <mxtb/mailbox.h>
#include <mxtb/ocs_regs.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace mxtb::host::fabric {

struct MailboxError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct FirmwareReport {
  uint32_t active_generation = 0;
  std::optional<int> armed_xpu;
  uint32_t failovers = 0;
  int last_failed = -1, last_spare = -1;
  uint32_t last_detect_to_commit_ns = 0, last_commit_to_done_ns = 0;
  uint32_t circuits_moved = 0;  // ReportWord CircuitsMoved: stayed in a map, moved by its routing
};

struct LinkStatus {
  link::LinkState state;
  link::Reason reason;
};

struct EmuEventRecord {
  uint64_t time_ns;
  emu::EmuEvent kind;
  uint32_t a, b, c, data;
  bool operator==(const EmuEventRecord& o) const {
    return time_ns == o.time_ns && kind == o.kind && a == o.a && b == o.b && c == o.c && data == o.data;
  }
};

struct TenantJobRequest {
  emu::JobOp op = emu::JobOp::AllReduce;
  emu::JobType type = emu::JobType::Float;
  uint32_t bytes = 64 << 10;  // nccl-tests' size: bytes per rank
  uint32_t seed = 1;
};

struct JobStatus {
  emu::JobState state = emu::JobState::Idle;
  int ranks = 0, rings = 0;
  uint32_t verified = 0, aborted = 0, wrong = 0;
};

class Board {
 public:
  // Reads the controller's sizes and the mailbox's sequence numbers (a restarted host carries on
  // where the last one stopped).
  explicit Board(Client& c);

  Client& client() { return c_; }
  Clock& clock() { return *clock_; }
  bool is_emulator() const { return emulator_; }
  int links() const { return links_; }

  // ---- controller ----
  std::vector<LinkStatus> link_status();  // one block read of LINK_STATUS[0..links)
  uint32_t active_generation();           // STATUS.active_gen
  std::vector<int> active_map(int ports);  // ACTIVE_MAP[0..ports): target port, -1 where unused
  mxtb::ocs::State controller_state();
  bool controller_safe();  // STATUS.safe: the watchdog expired and SAFE_CLEAR has not been written
  // LINK_HOLD: while held, links without a circuit or with one through a fibre expect no one, as
  // while a commit runs; releasing retrains them as a commit's end does (a placement across boards).
  void hold_links(bool hold);
  bool links_held();
  int verify_fail_port();  // VERIFY_FAIL.port: the output whose photodiode failed the last verify
  void clear_safe();       // SAFE_CLEAR
  // The controller's host watchdog: expires `cycles` clock cycles after the last kick and sends the
  // controller to its safe state (0: off). Once enabled, the mailbox's polling kicks it too.
  void enable_watchdog(uint32_t cycles);
  void kick();

  // ---- firmware mailbox: answered status, or MailboxError when no answer comes ----
  mailbox::FwStatus mailbox(mailbox::Opcode op, const std::vector<uint32_t>& args,
                             uint64_t timeout_ns = 50'000'000, uint64_t poll_ns = 5'000);
  // Rings the doorbell and returns without waiting for the answer (what a host that goes away
  // mid-command has done); the sequence number it used.
  uint32_t mailbox_post(mailbox::Opcode op, const std::vector<uint32_t>& args);
  mailbox::FwStatus set_port_map(const std::vector<int>& perm);
  // The halves of set_port_map (StageMap, CommitStaged): staged on every board of a rack-wide
  // placement before any commits (host/failover/rack_commit.h).
  mailbox::FwStatus stage_port_map(const std::vector<int>& perm);
  mailbox::FwStatus commit_staged();
  mailbox::FwStatus arm_backup(int xpu, int spare, const std::vector<int>& backup);
  FirmwareReport report();

  // ---- emulator control block (std::logic_error on a board) ----
  void arm_fault(emu::FaultKind kind, uint32_t target, uint32_t value, uint64_t at_ns = 0);
  // RUN_UNTIL: which masked conditions held (0: timeout).
  uint32_t run_until(uint32_t mask, uint64_t timeout_ns);
  std::vector<EmuEventRecord> pop_events();
  uint64_t messages_delivered();
  uint32_t scoreboard_errors();
  uint32_t scoreboard_words_lost();  // SCOREBOARD_WORDS_LOST
  uint32_t xpu_alive();
  // The tenant's job of collectives (JOB_*): stands for the job's ranks on the XPUs, whose
  // communicator the host (re-)forms. form_job throws IpbusError (a bus error) when the emulator
  // runs no job or refuses the ring or size; its log names why.
  // `job`: which of the emulator's jobs (JOB_SELECT; a rack of several tenants runs one a tenant,
  // every other emulator job 0 only), written in the same packet as the form or the reads.
  // EVENT_FILTER: the event queue leaves out the link changes of lanes without a circuit in the
  // board's active map (a rack's idle XPUs training on stray light), and/or the jobs' events (a
  // rack's jobs are every board's: one board's queue carries them).
  void set_event_filter(bool unmapped_lanes, bool jobs);
  void form_job(const std::vector<int>& ring, const TenantJobRequest& spec, int job = 0);
  JobStatus job_status(int job = 0);
  // RESTORE_*: `bytes` of state restored onto `dest` from `sources` over the RTL links (its end is
  // a Restore event). IpbusError (a bus error) when refused.
  void start_restore(const std::vector<int>& sources, int dest, uint32_t bytes);

 private:
  void need_emulator(const char* what) const;
  // JOB_SELECT = job, queued ahead of the job registers it addresses (same packet).
  void queue_job_select(int job);
  Client& c_;
  std::unique_ptr<Clock> clock_;
  bool emulator_ = false;
  int links_ = 0;
  uint32_t seq_ = 0;
  bool watchdog_ = false;
};

}  // namespace mxtb::host::fabric
