#include "timeline.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

namespace mxtb::host::failover {

using emu::EmuEvent;

namespace {

// Appends a phase from where the last one ended (the failure when there is none) to `end_ns`.
void phase_to(report::Timeline& t, const char* name, double end_ns, const char* source, std::string detail) {
  double start = t.phases.empty() ? t.failure_ns : t.phases.back().end_ns;
  report::append_phase(t, name, std::max(0.0, end_ns - start), source, std::move(detail));
}

void reconcile_phases(report::Timeline& t, const HardwareInputs& in) {
  const Detection& det = in.det;
  const Reconcile& rc = *in.reconciled;
  if (!in.fast_path) {
    phase_to(t, "host_detect", det.noticed_ns, "host", "the manager sees the circuits down");
    phase_to(t, "host_decide", std::max(in.decided_ns, det.noticed_ns), "host", "spare choice and the new torus");
  }
  phase_to(t, "host_away", rc.back_ns, "host",
           fmt::format("the host is disconnected; the controller's watchdog ({} us) {}", in.watchdog_ns / 1000.0,
                       rc.was_safe ? "expired and dropped every circuit (safe state)" : "did not expire"));
  phase_to(t, "reconcile", in.commit.trained_ns, "host",
           fmt::format("the restarted host reads the generation and map{}{}, and waits for every circuit",
                       rc.was_safe ? ", clears the safe state" : "",
                       rc.replaced ? ", places its circuits again (routing, commit, settle, verify, train)" : ""));
}

void commit_phases(report::Timeline& t, const HardwareInputs& in) {
  const Detection& det = in.det;
  const LandedCommit& c = in.commit;
  if (in.fast_path) {
    phase_to(t, "firmware", c.commit_ns, "firmware", "the firmware sees the link-down events and commits the pre-armed backup");
  } else {
    phase_to(t, "host_detect", det.noticed_ns, "host",
             fmt::format("the manager sees the circuits down (it looks every {} us)", in.poll_ns / 1000.0));
    phase_to(t, "host_decide", std::max(in.decided_ns, det.noticed_ns), "host",
             "spare choice and the new torus, host compute charged");
    phase_to(t, "firmware", c.commit_ns, "firmware", "mailbox command (set port map), the firmware's routing and staging, then COMMIT");
  }
  phase_to(t, "program", c.program_ns, "rtl", "the controller writes the changed switch elements");
  phase_to(t, "settle", c.settle_ns, "rtl", "the elements settle (SETTLE_CYCLES)");
  phase_to(t, "verify", c.verify_ns, "rtl", "photodiode check of every circuit");
}

}  // namespace

void append_hardware_phases(report::Timeline& t, const HardwareInputs& in) {
  const LandedCommit& c = in.commit;
  phase_to(t, "detect", in.det.detect_ns, "rtl", "the failed XPU's lasers go dark; the second of its circuits loses its link");
  if (in.reconciled) {
    reconcile_phases(t, in);
  } else if (c.commit_ns >= 0 && c.verify_ns >= 0) {
    commit_phases(t, in);
  } else {
    phase_to(t, "reconfigure", c.trained_ns, "firmware",
             fmt::format("firmware report: detect to commit {} us, commit to done {} us", in.fw_detect_to_commit_ns / 1000.0,
                         in.fw_commit_to_done_ns / 1000.0));
  }
  if (!in.reconciled) phase_to(t, "train", c.trained_ns, "rtl", "the moved circuits' link layers retrain (identity checked) to Active");
  t.hardware_ns = t.phases.back().end_ns - t.failure_ns;
  phase_to(t, "confirm", t.phases.back().end_ns + (in.confirmed_ns - std::min(c.trained_ns, in.all_up_seen_ns)), "host",
           "the manager sees every circuit Active and reads the firmware's report");
}

void append_degraded_detection(report::Timeline& t, const Detection& det) {
  report::append_phase(t, "detect", det.detect_ns - t.failure_ns, "rtl", "the failed XPU's circuits lose light");
  report::append_phase(t, "host_detect", std::max(0.0, det.noticed_ns - det.detect_ns), "host",
                       "the manager sees the circuits down");
}

void append_modeled(report::Timeline& t, const std::vector<ModeledPhase>& modeled, CommunicatorFate fate) {
  for (const auto& m : modeled) {
    if (m.name == "communicator_reinit" && fate != CommunicatorFate::Modeled) {
      const char* why = fate == CommunicatorFate::Reformed ? "replaced by communicator_reform, measured"
                        : fate == CommunicatorFate::NoJob  ? "left out: the tenant runs no job, so no communicator"
                                                           : "left out: the job is not formed again (another XPU of its "
                                                             "ring has failed)";
      t.notes.push_back(fmt::format("communicator_reinit ({} ms, modeled) {}", m.duration_ms, why));
      continue;
    }
    report::append_phase(t, m.name, m.duration_ms * 1e6, "modeled", m.doc);
  }
}

void add_collective_abort(report::Timeline& t, const std::vector<fabric::EmuEventRecord>& log) {
  for (const auto& e : log)
    if (e.kind == EmuEvent::Job && static_cast<double>(e.time_ns) >= t.failure_ns &&
        static_cast<emu::JobOutcome>(e.a) == emu::JobOutcome::Aborted) {
      report::add_beside(t, "collective_abort", t.failure_ns, static_cast<double>(e.time_ns), "rtl",
                         fmt::format("the job's collective in flight (#{}) aborted: {}", e.data,
                                     emu::to_string(static_cast<emu::JobReason>(e.b))));
      return;
    }
}

void report_first_collective(report::Timeline& t, const TenantJobWait& w, const std::vector<int>& ring,
                             const fabric::TenantJobRequest& request, uint64_t timeout_ns, uint32_t verified_so_far,
                             std::vector<std::string>& problems) {
  if (w.verified) {
    report::append_phase(t, "first_collective", static_cast<double>(w.verified->time_ns) - w.formed_ns, "rtl",
                         fmt::format("the job formed again on XPUs {}: its first {} of {} B per rank over the RTL links, "
                                     "every element verified ({} verified so far)",
                                     fmt::join(ring, " "), emu::to_string(request.op), request.bytes, verified_so_far));
  } else if (w.ended && static_cast<emu::JobOutcome>(w.ended->a) == emu::JobOutcome::Wrong) {
    problems.push_back(fmt::format("the first collective on XPUs {} ended wrong ({})", fmt::join(ring, " "),
                                   emu::to_string(static_cast<emu::JobReason>(w.ended->b))));
  } else if (w.failed) {
    t.notes.push_back(fmt::format("the first collective on XPUs {} was interrupted: XPU {} failed", fmt::join(ring, " "),
                                  *w.failed));
  } else if (w.ended) {
    t.notes.push_back(fmt::format("the first collective on XPUs {} was interrupted: {}", fmt::join(ring, " "),
                                  emu::to_string(static_cast<emu::JobReason>(w.ended->b))));
  } else {
    problems.push_back(fmt::format("no collective on XPUs {} ended within {} us of forming the job again",
                                   fmt::join(ring, " "), timeout_ns / 1000.0));
  }
}

void add_rearm(report::Timeline& t, double rearm_ns, std::optional<int> armed_xpu, int armed_spare) {
  // After the path: the tenant already runs; the next backup is armed beside it.
  const double path_end = t.failure_ns + t.total_ns;
  report::add_beside(t, "rearm", path_end, path_end + rearm_ns, "host",
                     armed_xpu ? fmt::format("after the path: XPU {}'s backup (spare {}) routed and staged through the mailbox",
                                             *armed_xpu, armed_spare)
                               : std::string("nothing to arm: no spare left, the next failure runs degraded"));
  if (!armed_xpu) t.notes.push_back("no backup armed after this failover: no spare left");
}

void add_alternative(report::Timeline& t, std::optional<report::Alternative> alternative) {
  if (!alternative) return;
  if (const report::TimelinePhase* reform = report::find_phase(t, alternative->phase)) {
    alternative->total_ns = t.total_ns - reform->duration_ns() + alternative->phase_ns;
    t.alternatives.push_back(*alternative);
  }
}

}  // namespace mxtb::host::failover
