// Communicator re-form: the tenant job's ranks (real processes with a real collective library,
// host/comm/rank_group.h) form their communicator again on the new ring after a failover, measured
// in wall time; with a comparison asked for, the other restart strategy too, on a group of its own,
// at the first failover. Where the re-form lies on the path (comm::place_reform against the state
// restore) and the phases it adds are pure, and tested on their own
// (testbench/host/failover/test_reform.cpp). docs/failover.md, "The communicator".
#pragma once

#include "host/comm/rank_group.h"
#include "host/report/report.h"

#include <optional>
#include <string>
#include <vector>

namespace mxtb::host::failover {

// The state restore's window on the path; without one, an empty window at the path's end so far.
// Either re-form begins once the survivors have stopped and the new ring is known (the restore's
// start): a hot spare's runs beside the restore, a relaunch starts once every rank has stopped.
struct RestoreWindow {
  double start_ns = 0, end_ns = 0;
};
RestoreWindow restore_window(const report::Timeline& t);

// Where `r` lies against the restore, its survivors' stop counted from the failure.
comm::ReformPlacement place(const comm::Reform& r, double failure_ns, const RestoreWindow& w);

// The re-form's phases: communicator_reform on the path (what outlasts the restore for a hot
// spare, all of it for a relaunch), the hot spare's whole re-form beside the restore, and the
// ranks' own collective failing beside the hardware's failover (ranks_abort, from the failure).
void add_reform_phases(report::Timeline& t, const comm::Reform& r, int failed_xpu, const RestoreWindow& w);
// The same failover with `r` (the other strategy) in communicator_reform's place; its total is
// settled once the path is complete.
report::Alternative alternative_of(const comm::Reform& r, double failure_ns, const RestoreWindow& w);

struct ReformRequest {
  std::vector<int> ring;                  // the new ring: the spare in the failed XPU's place
  int failed = -1, spare = -1;
  const comm::RankGroupConfig* config = nullptr;  // the ranks' own (the comparison's group starts from it)
  std::optional<comm::Restart> compare;   // the other strategy to measure beside (none: not this time)
};
struct ReformResult {
  bool reformed = false;                  // measured: it replaces a modeled communicator_reinit
  bool compared = false;                  // the comparison was tried (it is made once per run)
  std::optional<report::Alternative> alternative;
};
// Re-forms `ranks` on req.ring and adds its phases and note to `t`; a failed re-form or comparison
// is a problem.
ReformResult reform_communicator(comm::RankGroup& ranks, const ReformRequest& req, report::Timeline& t,
                                 std::vector<std::string>& problems);

}  // namespace mxtb::host::failover
