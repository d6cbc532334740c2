// The tenant's job as its XPUs run it: collectives one after another (a training or decode step
// loop) over the ring the job was formed on, each with real data and checked element for element
// (sim/collective/collective.h). It owns every lane of its XPUs (the tenant's and the spares'): they carry
// the job's words and nothing else.
//
// The XPUs see the fabric only through their link layers, as real ones do:
// - Forming: a collective starts once every hop of the ring has at least one circuit Active, each
//   end trained to the other (the link layer's peer identity), no lane of the ring's XPUs is
//   half-way through training, and, after an abort (or a wrong result), those circuits have been
//   Active and no word has arrived for `quiet_cycles` (words of the aborted collective still in the
//   link layers: a link that retrains to the same peer resends them once it is Active again). The rings are planned from the circuits found
//   (sim::ring_plan), so a collective uses what the fabric gives it now.
// - Running: it ends Verified (every element exact), Wrong (an element differs, a framing error,
//   or no word moved for `stall_cycles` with every circuit Active: a lost word), or Aborted when a
//   circuit it uses trains to another peer (the controller moved it) or stays out of Active for
//   `link_loss_cycles` (its peer died, or a dark window outlasted the wait; a shorter loss is
//   survived: the link layer replays across a retrain to the same peer).
// - After an abort the job forms again on the same ring: a dark window's collective is retried
//   once the circuit is back, and one whose XPU died waits until it is formed again on a new ring
//   (the host re-forms the communicator with the spare: form()). A half-sent message is closed
//   with an end-of-message word first, so no link layer holds half a message into the next one.
#pragma once

#include "protocol/fabric_map.h"
#include "sim/collective/collective.h"
#include "sim/server/lane_program.h"
#include "sim/collective/state_transfer.h"

#include <mxtb/emu_regs.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace mxtb::sim {

struct TenantJobConfig {
  std::vector<int> xpus;               // XPUs whose every lane runs the job
  // After an abort: every circuit of the next plan Active, and no word arriving, this long before
  // the next collective starts (~13 us). The aborted collective's words still in a link layer are
  // resent as soon as a retrained link is Active again, and a lost one within the link layer's
  // REPLAY_TIMEOUT (1024 cycles): twice that lets them all drain first.
  uint64_t quiet_cycles = 2048;
  uint64_t link_loss_cycles = 3125;    // a circuit out of Active this long aborts the collective (~20 us)
  uint64_t stall_cycles = 156'250;     // every circuit Active and no word moving this long: Wrong (~1 ms)
  uint64_t gap_cycles = 0;             // between one collective's end and the next's start (the step's compute)
  size_t history = 4096;               // records kept (the oldest dropped)
};

struct TenantJobSpec {
  CollectiveOp op = CollectiveOp::AllReduce;
  DataType type = DataType::F32;
  uint64_t bytes = 64 << 10;  // nccl-tests' size: the buffer's bytes per rank
  uint64_t seed = 1;
};

// The job's states, outcomes and reasons are the emulator control block's (protocol/emu_regs.json:
// JOB_STATUS and the Job event carry them).
using emu::JobOutcome;
using emu::JobReason;
using emu::JobState;

struct TenantJobRecord {
  uint64_t seq = 0;  // 1, 2, ... over the job's life
  JobOutcome outcome = JobOutcome::Verified;
  JobReason reason = JobReason::None;
  uint64_t start_cycle = 0, end_cycle = 0;  // Verified/Wrong: the last word's delivery; Aborted: when it was given up
  int ranks = 0, rings = 0;
  uint64_t bytes = 0;                       // nccl-tests' size: count x element bytes (the spec's, rounded to whole lane words per rank)
  uint64_t wrong = 0, framing_errors = 0;
  std::string detail;                       // what ended it (which link, which element)
  bool restore = false;                     // a state restore (restore()), not a collective: rings = its circuits
};

class TenantJob : public LaneProgram {
 public:
  TenantJob(TenantJobConfig cfg, const protocol::ServerShape& shape);
  ~TenantJob() override;

  // Why the job cannot run `spec` on `ring` (XPUs in ring order), "" when it can: each reason
  // names the value.
  std::string check(const std::vector<int>& ring, const TenantJobSpec& spec) const;
  // (Re-)forms the job on `ring` (check() must pass: std::invalid_argument otherwise): a running
  // collective is aborted (Reformed) and the loop starts over on the new ring.
  void form(const std::vector<int>& ring, const TenantJobSpec& spec);
  void stop();  // aborts a running collective (Stopped); the lanes stay the job's, idle
  // Why restore() would refuse, "" when it would not.
  std::string check_restore(const std::vector<int>& sources, int dest, uint64_t bytes) const;
  // Restores `bytes` of state onto `dest` from `sources` over every circuit between them
  // (sim/collective/state_transfer.h), once those circuits are Active: a collective in flight is aborted
  // (Reformed), the restore is retried after an abort as a collective is, and the job forms again
  // on its ring after it. std::invalid_argument when check_restore() refuses.
  void restore(const std::vector<int>& sources, int dest, uint64_t bytes, uint64_t seed);

  JobState state() const { return state_; }
  const std::vector<int>& ring() const { return ring_; }
  const TenantJobSpec& spec() const { return spec_; }
  const std::vector<TenantJobRecord>& records() const { return records_; }  // the last `history`
  uint64_t records_total() const { return seq_; }                     // every record ever made
  uint64_t verified() const { return verified_; }
  uint64_t aborted() const { return aborted_; }
  uint64_t wrong() const { return wrong_; }
  uint64_t stale_words() const { return stale_words_; }  // words of aborted collectives, dropped
  uint32_t rings_running() const;  // rings of the collective in flight (0: none)
  // XPU x is in the job's ring or its restore's XPUs (the job's to use, no other job's).
  bool holds(int xpu) const;
  // A word of the job's still uses `link`: a circuit of the collective or restore in flight, or an
  // end-of-message word owed on it.
  bool busy_on(int link) const;

  bool owns(int link) const override;
  Drive drive(int link) override;
  void fire(int link) override;
  void deliver(int link, uint64_t data, bool last, uint64_t cycle) override;
  bool wants_attention() const override;
  void attach(ServerSim& sim) override;
  void after_step(ServerSim& sim) override;  // advance(sim)
  // Where after_step() is not called (a rack's job, its lanes on several servers): looks at the
  // links and starts, ends or retries what is due. Every decision falls at a call, so call it at
  // least at wake_cycle().
  void advance(const LinkView& links);
  uint64_t wake_cycle() const override;
  uint64_t messages_delivered() const override;

 private:
  void try_start(const LinkView& sim);
  LaneProgram* task() const;  // the collective or the restore in flight, or null
  // The task just started uses these circuits: watch them (their peers, how long each is out of
  // Active) from `now`.
  void watch_circuits(const std::vector<RingHop>& circuits, uint64_t now);
  void watch_running(const LinkView& sim);
  void end(const LinkView& sim, JobOutcome outcome, JobReason reason, std::string detail);
  void record(TenantJobRecord r);

  TenantJobConfig cfg_;
  protocol::ServerShape shape_;
  std::vector<uint8_t> owned_;  // per link
  JobState state_ = JobState::Idle;
  std::vector<int> ring_;
  TenantJobSpec spec_;
  std::unique_ptr<RingCollective> current_;
  std::unique_ptr<StateTransfer> transfer_;
  struct PendingRestore {
    std::vector<int> sources;
    int dest = -1;
    uint64_t bytes = 0, seed = 0;
  };
  std::optional<PendingRestore> restore_;  // asked for and not yet verified
  std::vector<int> planned_peer_;        // per link: the link at the circuit's far end in the current plan, -1
  std::vector<uint64_t> out_since_;      // per planned link: when it left Active (0: Active)
  std::vector<int> terminator_to_;       // per link: an end-of-message word owed to this far-end link (-1: none)
  bool quiet_needed_ = false;  // after an abort: wait for the link layers to deliver its last words
  std::vector<int> up_circuits_;  // the circuits try_start() last found, and since when
  uint64_t up_since_cycle_ = 0;
  uint64_t last_rx_cycle_ = 0, last_progress_cycle_ = 0, next_start_cycle_ = 0;
  uint64_t seq_ = 0, verified_ = 0, aborted_ = 0, wrong_ = 0, stale_words_ = 0, messages_done_ = 0;
  std::vector<TenantJobRecord> records_;
  const LinkView* view_ = nullptr;
};

}  // namespace mxtb::sim
