#include "host/failover/timeline.h"

#include <doctest/doctest.h>

#include <string>
#include <vector>

using namespace mxtb::host::failover;
using mxtb::emu::EmuEvent;
using mxtb::emu::JobOutcome;
using mxtb::emu::JobReason;
using mxtb::host::fabric::EmuEventRecord;
namespace report = mxtb::host::report;

namespace {

// XPU 2 died at 100 us; its second circuit dropped 200 ns later; the host saw it 2 us after that
// and had decided 200 ns later; its commit landed (start, program, settle 50 us, verify) and the
// spare's circuits trained by 158 us; the host saw them at 159 us and had read the report by 160 us.
HardwareInputs host_path() {
  HardwareInputs in;
  in.det = Detection{2, 100'100, 100'200, 102'200};
  in.decided_ns = 102'400;
  in.commit = LandedCommit{103'900, 104'000, 154'000, 154'100, 158'000};
  in.all_up_seen_ns = 159'000;
  in.confirmed_ns = 160'000;
  in.fw_detect_to_commit_ns = 1'500;
  in.fw_commit_to_done_ns = 52'000;
  in.watchdog_ns = 200'000;
  in.poll_ns = 2'000;
  return in;
}

report::Timeline failed_at(double ns) {
  report::Timeline t;
  t.failure_ns = ns;
  return t;
}

std::vector<std::string> names(const std::vector<report::TimelinePhase>& phases) {
  std::vector<std::string> out;
  for (const auto& p : phases) out.push_back(p.name);
  return out;
}

std::vector<double> durations(const report::Timeline& t) {
  std::vector<double> out;
  for (const auto& p : t.phases) out.push_back(p.duration_ns());
  return out;
}

}  // namespace

TEST_CASE("timeline: the host path's phases from the failure to the host's confirmation") {
  report::Timeline t = failed_at(100'000);
  append_hardware_phases(t, host_path());
  CHECK(names(t.phases) == std::vector<std::string>{"detect", "host_detect", "host_decide", "firmware", "program", "settle",
                                                    "verify", "train", "confirm"});
  CHECK(durations(t) == std::vector<double>{200, 2'000, 200, 1'500, 100, 50'000, 100, 3'900, 2'000});
  CHECK(t.hardware_ns == 58'000);  // the failure to the last spare circuit Active
  CHECK(t.total_ns == 60'000);     // and the host's confirmation, from their training to the report read
  CHECK(t.phases[1].detail == "the manager sees the circuits down (it looks every 2 us)");
  CHECK(t.phases[1].source == "host");
  CHECK(t.phases[3].source == "firmware");
  CHECK(t.phases[7].source == "rtl");
  CHECK(report::check_timeline(t).empty());
}

TEST_CASE("timeline: the fast path goes from the detection to the firmware's commit; without its events, the firmware's report") {
  report::Timeline t = failed_at(100'000);
  HardwareInputs in = host_path();
  in.fast_path = true;
  in.commit.commit_ns = 101'700;
  append_hardware_phases(t, in);
  CHECK(names(t.phases) == std::vector<std::string>{"detect", "firmware", "program", "settle", "verify", "train", "confirm"});
  CHECK(t.phases[1].duration_ns() == 1'500);
  CHECK(t.phases[1].detail == "the firmware sees the link-down events and commits the pre-armed backup");

  report::Timeline board = failed_at(100'000);
  in.commit = LandedCommit{};
  in.commit.trained_ns = 158'000;
  append_hardware_phases(board, in);
  CHECK(names(board.phases) == std::vector<std::string>{"detect", "reconfigure", "train", "confirm"});
  CHECK(board.phases[1].duration_ns() == 57'800);
  CHECK(board.phases[1].detail == "firmware report: detect to commit 1.5 us, commit to done 52 us");
  CHECK(board.phases[2].duration_ns() == 0);
  CHECK(board.hardware_ns == 58'000);
}

TEST_CASE("timeline: a restarted host's failover shows the time away and the reconcile, no training of its own") {
  report::Timeline t = failed_at(100'000);
  HardwareInputs in = host_path();
  in.reconciled = Reconcile{450'000, true, true};
  in.commit.trained_ns = 470'000;
  in.all_up_seen_ns = 470'500;
  in.confirmed_ns = 471'000;
  append_hardware_phases(t, in);
  CHECK(names(t.phases) == std::vector<std::string>{"detect", "host_detect", "host_decide", "host_away", "reconcile", "confirm"});
  CHECK(durations(t) == std::vector<double>{200, 2'000, 200, 347'600, 20'000, 1'000});
  CHECK(t.phases[3].detail == "the host is disconnected; the controller's watchdog (200 us) expired and dropped every circuit "
                              "(safe state)");
  CHECK(t.phases[4].detail == "the restarted host reads the generation and map, clears the safe state, places its circuits "
                              "again (routing, commit, settle, verify, train), and waits for every circuit");
  CHECK(t.hardware_ns == 370'000);
}

TEST_CASE("timeline: a degraded failover's detection, and the modeled constants after the path") {
  report::Timeline t = failed_at(100'000);
  append_degraded_detection(t, Detection{2, 100'100, 100'200, 102'200});
  CHECK(durations(t) == std::vector<double>{200, 2'000});

  const std::vector<ModeledPhase> modeled{{"communicator_reinit", 500, "NCCL init"}, {"resume", 2.5, "the job's first step"}};
  report::Timeline m = failed_at(0);
  append_modeled(m, modeled, CommunicatorFate::Modeled);
  CHECK(names(m.phases) == std::vector<std::string>{"communicator_reinit", "resume"});
  CHECK(m.phases[0].duration_ns() == 500e6);
  CHECK(m.phases[0].detail == "NCCL init");
  report::Timeline r = failed_at(0);
  append_modeled(r, modeled, CommunicatorFate::Reformed);  // measured: the re-form takes the constant's place
  CHECK(names(r.phases) == std::vector<std::string>{"resume"});
  CHECK(r.notes == std::vector<std::string>{"communicator_reinit (500 ms, modeled) replaced by communicator_reform, measured"});
  // No communicator to re-form: no job at all, or a job that waits for a ring it cannot have.
  for (auto fate : {CommunicatorFate::NoJob, CommunicatorFate::NotFormedAgain}) {
    report::Timeline n = failed_at(0);
    append_modeled(n, modeled, fate);
    CHECK(names(n.phases) == std::vector<std::string>{"resume"});
    REQUIRE(n.notes.size() == 1);
    CHECK(n.notes[0].find("communicator_reinit (500 ms, modeled) left out: ") == 0);
  }
}

TEST_CASE("timeline: the tenant job's collective in flight aborts beside the path; its first verified one ends the path") {
  report::Timeline t = failed_at(100'000);
  const auto job = [](uint64_t at, JobOutcome o, JobReason why, uint32_t seq) {
    return EmuEventRecord{at, EmuEvent::Job, static_cast<uint32_t>(o), static_cast<uint32_t>(why), 4, seq};
  };
  add_collective_abort(t, {job(90'000, JobOutcome::Aborted, JobReason::Stopped, 6), job(95'000, JobOutcome::Verified, JobReason::None, 7),
                           job(120'000, JobOutcome::Aborted, JobReason::LinkLost, 8),
                           job(130'000, JobOutcome::Aborted, JobReason::Reformed, 9)});
  REQUIRE(t.beside.size() == 1);
  CHECK(t.beside[0].name == "collective_abort");
  CHECK(t.beside[0].end_ns == 120'000);
  CHECK(t.beside[0].detail == "the job's collective in flight (#8) aborted: LinkLost");

  report::append_phase(t, "confirm", 60'000, "host", "");
  mxtb::host::fabric::TenantJobRequest request;
  request.bytes = 64 << 10;
  TenantJobWait w;
  w.formed_ns = 200'000;
  w.verified = job(223'600, JobOutcome::Verified, JobReason::None, 10);
  std::vector<std::string> problems;
  report_first_collective(t, w, {0, 1, 4, 3}, request, 2'000'000, 9, problems);
  CHECK(problems.empty());
  REQUIRE(t.phases.size() == 2);
  CHECK(t.phases[1].name == "first_collective");
  CHECK(t.phases[1].duration_ns() == 23'600);
  CHECK(t.phases[1].detail == "the job formed again on XPUs 0 1 4 3: its first AllReduce of 65536 B per rank over the RTL "
                              "links, every element verified (9 verified so far)");

  TenantJobWait wrong;
  wrong.ended = job(210'000, JobOutcome::Wrong, JobReason::Mismatch, 10);
  report_first_collective(t, wrong, {0, 1, 4, 3}, request, 2'000'000, 0, problems);
  report_first_collective(t, TenantJobWait{}, {0, 1, 4, 3}, request, 2'000'000, 0, problems);
  CHECK(problems == std::vector<std::string>{"the first collective on XPUs 0 1 4 3 ended wrong (Mismatch)",
                                             "no collective on XPUs 0 1 4 3 ended within 2000 us of forming the job again"});
  TenantJobWait failed;
  failed.failed = 3;
  report_first_collective(t, failed, {0, 1, 4, 3}, request, 2'000'000, 0, problems);
  TenantJobWait lost;
  lost.ended = job(210'000, JobOutcome::Aborted, JobReason::LinkLost, 10);
  report_first_collective(t, lost, {0, 1, 4, 3}, request, 2'000'000, 0, problems);
  CHECK(t.notes == std::vector<std::string>{"the first collective on XPUs 0 1 4 3 was interrupted: XPU 3 failed",
                                            "the first collective on XPUs 0 1 4 3 was interrupted: LinkLost"});
  CHECK(t.phases.size() == 2);  // none of those ends the path
}

TEST_CASE("timeline: the re-arm lies after the path; the other strategy's total swaps its phase in") {
  report::Timeline t = failed_at(100'000);
  report::append_phase(t, "confirm", 60'000, "host", "");
  t.hardware_ns = 58'000;
  report::append_phase(t, "communicator_reform", 2e6, "measured", "");
  add_rearm(t, 3'000, 0, 4);
  REQUIRE(t.beside.size() == 1);
  CHECK(t.beside[0].name == "rearm");
  CHECK(t.beside[0].start_ns == 100'000 + 2'060'000);
  CHECK(t.beside[0].duration_ns() == 3'000);
  CHECK(t.beside[0].detail == "after the path: XPU 0's backup (spare 4) routed and staged through the mailbox");
  CHECK(t.notes.empty());
  add_rearm(t, 0, std::nullopt, -1);
  CHECK(t.beside[1].detail == "nothing to arm: no spare left, the next failure runs degraded");
  CHECK(t.notes == std::vector<std::string>{"no backup armed after this failover: no spare left"});

  add_alternative(t, std::nullopt);
  CHECK(t.alternatives.empty());
  add_alternative(t, report::Alternative{"relaunch", "communicator_reform", 260e6, 0, "measured", ""});
  REQUIRE(t.alternatives.size() == 1);
  CHECK(t.alternatives[0].total_ns == doctest::Approx(60'000 + 260e6));
  add_alternative(t, report::Alternative{"other", "no_such_phase", 1, 0, "measured", ""});
  CHECK(t.alternatives.size() == 1);  // a phase the path lacks: nothing to swap
  CHECK(report::check_timeline(t).empty());
}
