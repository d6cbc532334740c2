#include "host/failover/commit.h"

#include <doctest/doctest.h>

using namespace mxtb::host::failover;
using mxtb::emu::EmuEvent;
using mxtb::host::fabric::EmuEventRecord;
using mxtb::host::fabric::FirmwareReport;
using mxtb::link::LinkState;
using mxtb::ocs::Event;

namespace {

// The controller's event as the emulator copies it: a type, code, index (an output port) and data
// (the commit's generation).
EmuEventRecord ctl(uint64_t at, Event e, uint32_t index = 0, uint32_t generation = 0) {
  return {at, EmuEvent::Controller, static_cast<uint32_t>(e), 0, index, generation};
}

EmuEventRecord up(uint64_t at, int link) {
  return {at, EmuEvent::LinkChange, static_cast<uint32_t>(link), static_cast<uint32_t>(LinkState::CreditInit),
          static_cast<uint32_t>(LinkState::Active), 0};
}

}  // namespace

TEST_CASE("commit: verify's dark XPU is the one whose port feeds the output port it names") {
  mxtb::protocol::FabricMap m;
  m.port_target.assign(32, -1);
  m.port_target[6] = 9;   // XPU 1's lane 2 lights output port 9
  m.port_target[13] = 2;  // XPU 3's lane 1 lights output port 2
  const std::vector<EmuEventRecord> log{ctl(100, Event::VerifyFail, 2, 4), ctl(500, Event::VerifyFail, 9, 5),
                                        ctl(520, Event::RollbackDone, 0, 5)};
  CHECK(verify_dark_xpu_since(log, 400, m, 4) == 1);
  CHECK(verify_dark_xpu_since(log, 50, m, 4) == 1);   // the latest refusal first
  CHECK(verify_dark_xpu_since(log, 600, m, 4) == -1);  // none since
  CHECK(verify_dark_xpu_since({ctl(100, Event::VerifyFail, 2, 4)}, 0, m, 4) == 3);
  CHECK(verify_dark_xpu_since({ctl(100, Event::VerifyFail, 30, 4)}, 0, m, 4) == -1);  // nothing mapped onto it
}

TEST_CASE("commit: a failed commit and its rollback, read from the controller's events since a time") {
  const std::vector<EmuEventRecord> refused{ctl(100, Event::CommitStart), ctl(200, Event::VerifyFail, 9)};
  CHECK(commit_failed_since(refused, 150));
  CHECK_FALSE(commit_failed_since(refused, 250));
  CHECK_FALSE(rollback_done_since(refused, 0));  // refused, not yet rolled back
  const std::vector<EmuEventRecord> rolled{ctl(200, Event::VerifyFail, 9), ctl(260, Event::RollbackDone)};
  CHECK(rollback_done_since(rolled, 250));
  CHECK(commit_failed_since(rolled, 250));
  CHECK(rollback_done_since({ctl(90, Event::CommitRejected)}, 0));
  CHECK(commit_failed_since({ctl(90, Event::CommitRejected)}, 0));
  CHECK_FALSE(commit_failed_since({ctl(90, Event::VerifyPass), up(95, 3)}, 0));
}

TEST_CASE("commit: SetPortMap's words name an unused port as the mailbox's unused port") {
  CHECK(port_map_words({3, -1, 0}) == std::vector<uint32_t>{3, mxtb::mailbox::kUnusedPort, 0});
  CHECK(port_map_words({}).empty());
}

TEST_CASE("commit: after a rollback an XPU counts only when three looks running name it") {
  SameLooks s;
  s.see(2);
  s.see(2);
  CHECK_FALSE(s.settled());
  s.see(2);
  CHECK(s.settled());
  CHECK(*s.named == 2);
  CHECK(s.looks == 3);
  s.see(3);  // another XPU: counting starts again
  CHECK(s.looks == 1);
  s.see(std::nullopt);
  CHECK(s.looks == 0);
  CHECK_FALSE(s.settled());
}

TEST_CASE("commit: the commit that landed is the first that verified; its phases and the spare's training") {
  // Generation 5 rolled back; generation 6 verified; the links to the spare trained after it.
  const std::vector<EmuEventRecord> log{
      ctl(100, Event::CommitStart, 0, 5), ctl(150, Event::ProgramDone, 0, 5), ctl(200, Event::SettleDone, 0, 5),
      ctl(210, Event::VerifyFail, 9, 5),  ctl(260, Event::RollbackDone, 0, 5), ctl(300, Event::CommitStart, 0, 6),
      up(320, 3),  // before verify: an earlier retrain, not this commit's
      ctl(350, Event::ProgramDone, 0, 6), ctl(400, Event::SettleDone, 0, 6), ctl(450, Event::VerifyPass, 0, 6),
      up(500, 3), up(520, 7), up(600, 9),  // link 9 is not one of the new circuits
      ctl(700, Event::CommitStart, 0, 7), ctl(800, Event::VerifyPass, 0, 7)};
  const LandedCommit c = landed_commit(log, 50, 40, {3, 7}, 999);
  CHECK(c.commit_ns == 300);
  CHECK(c.program_ns == 350);
  CHECK(c.settle_ns == 400);
  CHECK(c.verify_ns == 450);
  CHECK(c.trained_ns == 520);
  // From after generation 6's verify: generation 7 landed, and nothing trained after it.
  const LandedCommit later = landed_commit(log, 460, 40, {3, 7}, 999);
  CHECK(later.commit_ns == 700);
  CHECK(later.verify_ns == 800);
  CHECK(later.program_ns == -1);
  CHECK(later.trained_ns == 999);  // what the manager saw instead (a board, polled)
  // No commit seen (the firmware's fast path on a board): training counts from the failure.
  const LandedCommit none = landed_commit({up(30, 3), up(90, 7)}, 20, 50, {3, 7}, 999);
  CHECK(none.commit_ns == -1);
  CHECK(none.verify_ns == -1);
  CHECK(none.trained_ns == 90);
}

TEST_CASE("commit: the firmware's report confirms the fast path, or names the backup it committed wrongly") {
  FirmwareCheck c;
  c.fw.failovers = 1;
  c.fw.last_failed = 2;
  c.fw.last_spare = 4;
  c.failed = 2;
  c.spare = 4;
  c.fast_path = true;
  std::vector<std::string> problems, notes;
  CHECK_FALSE(committed_other_backup(c));
  check_firmware_report(c, false, problems, notes);
  CHECK(problems.empty());
  CHECK(notes.empty());

  c.fw.last_spare = 5;
  check_firmware_report(c, false, problems, notes);
  CHECK(problems == std::vector<std::string>{"the firmware's last failover was XPU 2 to 5, not 2 to 4"});
  c.reconciled = true;  // a restarted host does not hold the firmware to it
  problems.clear();
  check_firmware_report(c, false, problems, notes);
  CHECK(problems.empty());

  // XPU 0's backup committed while XPU 2 is this failover: right only if XPU 0 died too.
  c = FirmwareCheck{};
  c.fw.failovers = 3;
  c.fw.last_failed = 0;
  c.failovers_before = 2;
  c.failed = 2;
  CHECK(committed_other_backup(c));
  check_firmware_report(c, true, problems, notes);
  REQUIRE(notes.size() == 1);
  CHECK(notes[0] == "XPU 0 died too, before the host's commit disarmed its backup: the firmware committed that backup, "
                    "and the host's placement for XPU 2 then replaced it");
  CHECK(problems.empty());
  check_firmware_report(c, false, problems, notes);
  CHECK(problems == std::vector<std::string>{"the firmware committed XPU 0's pre-armed backup, but XPU 2 is the one that failed"});
  c.failovers_before = 3;  // already seen: nothing new
  CHECK_FALSE(committed_other_backup(c));
}
