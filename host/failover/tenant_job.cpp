#include "tenant_job.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

namespace mxtb::host::failover {

using emu::EmuEvent;
using emu::JobOutcome;

TenantJobWait form_tenant_job(Watch& w, TenantState& s, const TenantJobLoop& job, uint64_t poll_ns) {
  fabric::Board& board = w.board();
  TenantJobWait out;
  const size_t seen = w.log().size();
  out.formed_ns = static_cast<double>(board.clock().now_ns());
  board.form_job(protocol::ring_xpus(s.placement), job.spec);
  // Aborted because it was formed again is this form's own doing; anything else ends the wait.
  const Watch::Awaited a = w.await_event(s, seen, EmuEvent::Job, out.formed_ns, job.first_timeout_ns, poll_ns,
                                         [](const fabric::EmuEventRecord& e) {
                                           return !(static_cast<JobOutcome>(e.a) == JobOutcome::Aborted &&
                                                    static_cast<emu::JobReason>(e.b) == emu::JobReason::Reformed);
                                         });
  out.failed = a.failed;
  if (a.event && static_cast<JobOutcome>(a.event->a) == JobOutcome::Verified) out.verified = a.event;
  else out.ended = a.event;
  return out;
}

std::vector<std::string> check_tenant_job(Watch& w, const TenantState& s, const TenantJobLoop& job, double formed_ns,
                                          uint64_t poll_ns) {
  fabric::Board& board = w.board();
  std::vector<std::string> p;
  const std::vector<fabric::EmuEventRecord>& log = w.log();
  for (const auto& e : log)
    if (e.kind == EmuEvent::Job && static_cast<JobOutcome>(e.a) == JobOutcome::Wrong)
      p.push_back(fmt::format("the job's collective #{} ended wrong at {:.1f} us: {}", e.data, e.time_ns / 1000.0,
                              emu::to_string(static_cast<emu::JobReason>(e.b))));
  const fabric::JobStatus st = board.job_status();
  if (st.wrong && p.empty()) p.push_back(fmt::format("JOB_WRONG is {}", st.wrong));
  if (!s.whole()) return p;  // degraded: the job waits for a ring it cannot have
  // The tenant is whole: its job must be running verified collectives on the ring as placed.
  auto verified_since_form = [&] {
    return std::any_of(log.begin(), log.end(), [&](const fabric::EmuEventRecord& e) {
      return e.kind == EmuEvent::Job && static_cast<double>(e.time_ns) >= formed_ns &&
             static_cast<JobOutcome>(e.a) == JobOutcome::Verified;
    });
  };
  const uint64_t until = board.clock().now_ns() + job.first_timeout_ns;
  while (!verified_since_form() && board.clock().now_ns() < until) w.take_events(poll_ns);
  if (!verified_since_form())
    p.push_back(fmt::format("no verified collective on XPUs {} since the job was formed at {:.1f} us",
                            fmt::join(protocol::ring_xpus(s.placement), " "), formed_ns / 1000.0));
  return p;
}

}  // namespace mxtb::host::failover
