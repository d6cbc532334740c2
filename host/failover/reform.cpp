#include "reform.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace mxtb::host::failover {

RestoreWindow restore_window(const report::Timeline& t) {
  const report::TimelinePhase* restore = report::find_phase(t, "state_restore");
  const double start = restore ? restore->start_ns : t.failure_ns + t.total_ns;
  return {start, restore ? restore->end_ns : start};
}

comm::ReformPlacement place(const comm::Reform& r, double failure_ns, const RestoreWindow& w) {
  return comm::place_reform(r.restart, failure_ns + r.abort_s * 1e9, w.start_ns, w.end_ns, r.total_s() * 1e9);
}

void add_reform_phases(report::Timeline& t, const comm::Reform& r, int failed_xpu, const RestoreWindow& w) {
  const bool relaunch = r.restart == comm::Restart::Relaunch;
  const double reform_ns = r.total_s() * 1e9;
  const comm::ReformPlacement at = place(r, t.failure_ns, w);
  const double on_path_ns = at.on_path_ns;
  if (!relaunch) {
    const double from = at.start_ns;
    report::add_beside(t, "hot_spare_reform", from, from + reform_ns, "measured",
                       fmt::format("{} hot spare: the whole re-form, rendezvous and connections ({:.1f} ms) and the "
                                   "first all-reduce checked ({:.1f} ms), beside state_restore",
                                   r.library, r.form_s * 1e3, r.first_s * 1e3));
  }
  report::append_phase(
      t, "communicator_reform", on_path_ns, "measured",
      relaunch ? fmt::format("{} {}: every rank stopped ({:.1f} ms), {} rank processes started and their checkpoints "
                             "read back ({:.1f} ms), rendezvous and connections from scratch ({:.1f} ms), the first "
                             "all-reduce checked ({:.1f} ms); wall time on this host",
                             r.library, comm::to_string(r.restart), r.stop_s * 1e3, r.ranks, r.start_s * 1e3, r.form_s * 1e3,
                             r.first_s * 1e3)
               : fmt::format("{} {}: the survivors and the waiting spare rendezvous and connect ({:.1f} ms), the first "
                             "all-reduce checked ({:.1f} ms); wall time on this host; it runs beside state_restore "
                             "({:.1f} ms), so {:.1f} ms of its {:.1f} ms are on the critical path",
                             r.library, comm::to_string(r.restart), r.form_s * 1e3, r.first_s * 1e3,
                             (w.end_ns - w.start_ns) / 1e6, on_path_ns / 1e6, reform_ns / 1e6));
  // The ranks' own collective failed beside the hardware's failover: laid from the failure, as the
  // XPU's death takes its rank's process with it.
  report::add_beside(t, "ranks_abort", t.failure_ns, t.failure_ns + r.abort_s * 1e9, "measured",
                     fmt::format("{}: the rank on XPU {} killed with its XPU and the survivors' communicator revoked by "
                                 "the host; wall time to the last survivor's step loop stopped (first: {})",
                                 r.library, failed_xpu, r.abort_reason));
}

report::Alternative alternative_of(const comm::Reform& r, double failure_ns, const RestoreWindow& w) {
  return report::Alternative{
      comm::to_string(r.restart), "communicator_reform", place(r, failure_ns, w).on_path_ns, 0, "measured",
      fmt::format("{} {} measured in this run on a group of its own: stop {:.1f} ms, start and checkpoints {:.1f} ms, "
                  "rendezvous {:.1f} ms, first all-reduce {:.1f} ms",
                  r.library, comm::to_string(r.restart), r.stop_s * 1e3, r.start_s * 1e3, r.form_s * 1e3, r.first_s * 1e3)};
}

ReformResult reform_communicator(comm::RankGroup& ranks, const ReformRequest& req, report::Timeline& t,
                                 std::vector<std::string>& problems) {
  ReformResult out;
  const std::vector<int> old_ring = ranks.ring();
  const RestoreWindow w = restore_window(t);
  try {
    const comm::Reform r = ranks.reform(req.ring);
    add_reform_phases(t, r, req.failed, w);
    t.notes.push_back(fmt::format("the job's ranks ({}): the new communicator (generation {}) on XPUs {}", r.library,
                                  ranks.generation(), fmt::join(req.ring, " ")));
    if (r.wrong) problems.push_back(fmt::format("the re-formed communicator's all-reduce: {} elements wrong", r.wrong));
    out.reformed = true;
  } catch (const comm::CommError& e) {
    problems.push_back(fmt::format("the communicator's re-form failed: {}", e.what()));
  }
  // The other strategy on a group of its own, the same XPUs and the same death, in this run.
  if (!out.reformed || !req.compare || !req.config) return out;
  out.compared = true;
  comm::RankGroupConfig alt = *req.config;
  alt.restart = *req.compare;
  alt.work_dir += std::string("/compare-") + comm::to_string(alt.restart);
  try {
    comm::RankGroup group(alt, old_ring, std::vector<int>{req.spare});
    group.kill(req.failed);
    const comm::Reform r = group.reform(req.ring);
    if (r.wrong) throw comm::CommError(fmt::format("its first all-reduce had {} elements wrong", r.wrong));
    out.alternative = alternative_of(r, t.failure_ns, w);
  } catch (const comm::CommError& e) {
    problems.push_back(fmt::format("the {} strategy measured for comparison failed: {}", comm::to_string(alt.restart),
                                   e.what()));
  }
  return out;
}

}  // namespace mxtb::host::failover
