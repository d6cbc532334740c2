// Detection: what the failover manager sees of the board and which XPU it takes as failed. The
// manager's picture of the tenant (TenantState), every link's state as the events it took say
// (LinkView), the reading of that evidence (suspect_failed_xpu, then Naming's hold), and the
// decision that replaces a failed XPU (decide_replacement) are pure, and tested on their own
// (testbench/host/failover/test_detect.cpp); Watch takes the board's events. docs/failover.md.
#pragma once

#include "host/fabric/board.h"
#include "host/failover/spare.h"
#include "protocol/fabric_map.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

namespace mxtb::host::failover {

// A death's drops cascade: the neighbours lose its light, drop and turn their lasers off, then the
// dead XPU's own receivers drop, 32 ns later. A look in between sees the dead XPU still Active
// (so alive) and its neighbours down; a neighbour with one more circuit down for another reason
// (a lane's dark window) then outnumbers every other XPU (regress seed 9178). An XPU is taken as
// failed only when looks at least this far apart name it: the later one sees the cascade over.
inline constexpr uint64_t kSettleNs = 1'000;
// A retrain is over within this (it takes about 4 us): a tie that only light tells apart must
// hold this long, and circuits a rolled-back commit glimpsed have retrained after it.
inline constexpr uint64_t kRetrainNs = 10'000;

// A failed XPU as the manager found it: its first circuit's drop, its second (the failure shows),
// and when the manager saw it, in board time.
struct Detection {
  int xpu;
  double failure_ns, detect_ns, noticed_ns;
};

// What the manager believes of the tenant and its circuits, shared by its phases.
struct TenantState {
  int lanes = 4;                       // per XPU
  protocol::TorusPlacement placement;  // the journal: the tenant as the host wants it placed
  protocol::FabricMap map;             // the circuits the host asked for
  std::vector<int> free_spares, failed;
  std::optional<Detection> pending;    // a failure seen during the last failover, handled next

  // No XPU of the tenant as placed has failed or is failing (pending): its ring is whole.
  bool whole() const;
};

// Every link's state as the events the manager took say; when each circuit that was up dropped
// (-1: it is up, or its drop does not count); which circuits a commit is moving (their drops are
// expected, not failures).
struct LinkView {
  std::vector<link::LinkState> state;
  std::vector<double> down_since;
  std::vector<bool> moving;

  explicit LinkView(int links = 0);
  // A LinkChange event (others, and links out of range, change nothing).
  void apply(const fabric::EmuEventRecord& e);
  // Circuits that change between two maps retrain: whatever their links did before (some dropped
  // with the failed XPU) no longer counts.
  void expect_moves(const protocol::FabricMap& from, const protocol::FabricMap& to);
  // A restarted host's first look (LINK_STATUS): every link not Active counts as down since now.
  void reset(const std::vector<fabric::LinkStatus>& status, double now_ns);
  bool active(int link) const { return state[static_cast<size_t>(link)] == link::LinkState::Active; }
  // One of the XPU's own links is Active: its lasers light it, so it is alive.
  bool lit(int xpu, int lanes) const;
};

// The XPU the evidence points at: the most circuits down (at least two), none of its own links
// Active; on a tie, the one dark towards every peer not known to have failed.
struct Suspect {
  int xpu;
  std::vector<double> downs;  // when each of its circuits dropped, earliest first
  bool tie;                   // others had as many down: only light told it apart
};
std::optional<Suspect> suspect_failed_xpu(const TenantState& s, const LinkView& links);

// The evidence must keep naming the same XPU for a while (kSettleNs for a clear count, kRetrainNs
// for a tie) before the manager takes it as failed.
class Naming {
 public:
  std::optional<Detection> look(const std::optional<Suspect>& suspect, double now_ns);

 private:
  struct Named {  // the XPU the evidence names, since when, and whether by a tie
    int xpu;
    double since_ns;
    bool tie;
  };
  std::optional<Named> named_;
};

// Whether every link in `missing` is a circuit of `xpu` (or ends on one): that XPU's death
// explains them.
bool explained_by(const std::vector<int>& missing, int xpu, const protocol::FabricMap& m, int lanes, int links);

// The spare and the new circuits for a failed XPU: the host's own compute (charged to board time).
struct Replacement {
  SpareChoice choice;
  protocol::TorusPlacement placement;  // the spare in the failed XPU's place (unchanged when degraded)
  protocol::FabricMap map;             // its torus (empty when degraded)
};
Replacement decide_replacement(int failed, const protocol::TorusPlacement& tenant, const std::vector<int>& free_spares,
                               const std::vector<int>& already_failed, const std::vector<FailureGroup>& groups,
                               const protocol::ServerShape& shape);

// When the emulator's fault injector killed `xpu` (its last KillXpu), or -1: a board shows none.
double kill_fault_ns(const std::vector<fabric::EmuEventRecord>& log, int xpu);

// The manager's eyes on the board: takes its events (the emulator's event queue, or LINK_STATUS
// read on a board), keeps the link view and every event, and names a failed XPU at each look.
class Watch {
 public:
  explicit Watch(fabric::Board& board);

  fabric::Board& board() { return board_; }
  LinkView& links() { return links_; }
  const LinkView& links() const { return links_; }
  // Every event taken from the board, oldest first.
  const std::vector<fabric::EmuEventRecord>& log() const { return log_; }

  // Events since the last look, waiting up to `window_ns` of board time for one; kicks the
  // controller's watchdog (the host is alive).
  void take_events(uint64_t window_ns);
  // Lets `ns` of board time pass while watching.
  void idle(uint64_t ns);
  // The XPU the evidence has named long enough, if any (one look at the clock).
  std::optional<Detection> failed_xpu_now(const TenantState& s);
  // Board time of the first event of `kind` about `a` at or after `from_ns`, or -1.
  double event_time(emu::EmuEvent kind, std::optional<uint32_t> a, double from_ns) const;

  // What a wait for an event ended with: the event, or an XPU's failure, or neither (the timeout).
  struct Awaited {
    std::optional<fabric::EmuEventRecord> event;
    std::optional<int> failed;
  };
  // Takes the board's events (those in the log from index `seen` on, then new ones, looking every
  // `poll_ns`) until one of `kind` at or after `from_ns` for which `ends` holds, or `timeout_ns` of
  // board time. What waits for a dead XPU never comes: an XPU found failed while none is pending
  // ends the wait and becomes s.pending, the next failover.
  Awaited await_event(TenantState& s, size_t seen, emu::EmuEvent kind, double from_ns, uint64_t timeout_ns, uint64_t poll_ns,
                      const std::function<bool(const fabric::EmuEventRecord&)>& ends);

 private:
  fabric::Board& board_;
  LinkView links_;
  std::vector<fabric::EmuEventRecord> log_;
  Naming naming_;
};

}  // namespace mxtb::host::failover
