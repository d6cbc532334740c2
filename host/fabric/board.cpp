#include "host/fabric/board.h"

#include "protocol/board_map.h"
#include "protocol/job_ring.h"

#include <mxtb/ocs_regs.h>

#include <fmt/format.h>

#include <algorithm>

#include <cstring>

namespace mxtb::host::fabric {

namespace reg = mxtb::ocs::reg;
namespace er = mxtb::emu::reg;
namespace mb = mxtb::mailbox;
using protocol::controller;
using protocol::emulator;

Board::Board(Client& c) : c_(c), clock_(make_clock(c)) {
  emulator_ = clock_->mode() != "wall";
  uint32_t params = c_.read(controller(reg::params::kOffset));
  links_ = static_cast<int>((params & reg::params::kNLinksMask) >> reg::params::kNLinksShift);
  // Carry on the mailbox's sequence: the firmware answers only a doorbell it has not seen.
  auto w = c_.read_block(controller(reg::scratch::kOffset, mb::kDoorbell), 1);
  seq_ = std::max(w[0], c_.read(controller(reg::scratch::kOffset, mb::kReplySeq)));
}

std::vector<LinkStatus> Board::link_status() {
  auto w = c_.read_block(controller(reg::link_status::kOffset), static_cast<uint32_t>(links_));
  std::vector<LinkStatus> out;
  for (uint32_t v : w)
    out.push_back(LinkStatus{static_cast<link::LinkState>((v & reg::link_status::kStateMask) >> reg::link_status::kStateShift),
                             static_cast<link::Reason>((v & reg::link_status::kReasonMask) >> reg::link_status::kReasonShift)});
  return out;
}

uint32_t Board::active_generation() {
  return (c_.read(controller(reg::status::kOffset)) & reg::status::kActiveGenMask) >> reg::status::kActiveGenShift;
}

std::vector<int> Board::active_map(int ports) {
  auto w = c_.read_block(controller(reg::active_map::kOffset), static_cast<uint32_t>(ports));
  std::vector<int> out;
  for (uint32_t v : w)
    out.push_back((v & reg::active_map::kValidMask)
                      ? static_cast<int>((v & reg::active_map::kTargetMask) >> reg::active_map::kTargetShift)
                      : -1);
  return out;
}

mxtb::ocs::State Board::controller_state() {
  return static_cast<mxtb::ocs::State>((c_.read(controller(reg::status::kOffset)) & reg::status::kStateMask) >>
                                       reg::status::kStateShift);
}

bool Board::controller_safe() { return (c_.read(controller(reg::status::kOffset)) & reg::status::kSafeMask) != 0; }
void Board::hold_links(bool hold) { c_.write(controller(reg::link_hold::kOffset), hold ? reg::link_hold::kHoldMask : 0u); }
int Board::verify_fail_port() {
  return static_cast<int>(c_.read(controller(reg::verify_fail::kOffset)) & reg::verify_fail::kPortMask);
}
bool Board::links_held() { return (c_.read(controller(reg::link_hold::kOffset)) & reg::link_hold::kHoldMask) != 0; }

void Board::clear_safe() { c_.write(controller(reg::safe_clear::kOffset), reg::safe_clear::kClearMask); }

void Board::enable_watchdog(uint32_t cycles) {
  c_.write(controller(reg::watchdog_timeout::kOffset), cycles);
  watchdog_ = cycles != 0;
}

void Board::kick() {
  if (watchdog_) c_.write(controller(reg::watchdog_kick::kOffset), 1);
}

uint32_t Board::mailbox_post(mb::Opcode op, const std::vector<uint32_t>& args) {
  // Arguments and opcode first, the doorbell last: the firmware reads them once it sees the bell.
  std::vector<uint32_t> words{static_cast<uint32_t>(op)};
  words.insert(words.end(), args.begin(), args.end());
  c_.queue_write(controller(reg::scratch::kOffset, mb::kOpcode), words);
  c_.queue_write(controller(reg::scratch::kOffset, mb::kDoorbell), {++seq_});
  c_.dispatch();
  return seq_;
}

mb::FwStatus Board::mailbox(mb::Opcode op, const std::vector<uint32_t>& args, uint64_t timeout_ns, uint64_t poll_ns) {
  mailbox_post(op, args);
  uint64_t start = clock_->now_ns();
  for (;;) {
    if (watchdog_) c_.queue_write(controller(reg::watchdog_kick::kOffset), {1});
    auto reply_p = c_.queue_read(controller(reg::scratch::kOffset, mb::kReplySeq), 2);
    c_.dispatch();
    const auto& reply = reply_p.values();
    if (reply[0] == seq_) return static_cast<mb::FwStatus>(reply[1]);
    if (clock_->now_ns() - start > timeout_ns)
      throw MailboxError(fmt::format("firmware mailbox: no answer to opcode {} (sequence {}) within {} us of {} time",
                                     static_cast<uint32_t>(op), seq_, timeout_ns / 1000, clock_->mode()));
    clock_->wait_ns(poll_ns);
  }
}

namespace {
std::vector<uint32_t> map_words(const std::vector<int>& perm, std::vector<uint32_t> prefix) {
  for (int t : perm) prefix.push_back(t < 0 ? mb::kUnusedPort : static_cast<uint32_t>(t));
  return prefix;
}
}  // namespace

mb::FwStatus Board::set_port_map(const std::vector<int>& perm) { return mailbox(mb::Opcode::SetPortMap, map_words(perm, {})); }
mb::FwStatus Board::stage_port_map(const std::vector<int>& perm) { return mailbox(mb::Opcode::StageMap, map_words(perm, {})); }
mb::FwStatus Board::commit_staged() { return mailbox(mb::Opcode::CommitStaged, {}); }

mb::FwStatus Board::arm_backup(int xpu, int spare, const std::vector<int>& backup) {
  return mailbox(mb::Opcode::ArmBackup, map_words(backup, {static_cast<uint32_t>(xpu), static_cast<uint32_t>(spare)}));
}

FirmwareReport Board::report() {
  auto st = mailbox(mb::Opcode::Report, {});
  if (st != mb::FwStatus::Ok) throw MailboxError(fmt::format("firmware report answered {}", mb::describe(st)));
  auto w = c_.read_block(controller(reg::scratch::kOffset, mb::kReplyData), 8);
  auto word = [&](mb::ReportWord i) { return w[static_cast<size_t>(i)]; };
  FirmwareReport r;
  r.active_generation = word(mb::ReportWord::ActiveGen);
  if (word(mb::ReportWord::ArmedXpu) != mb::kUnusedPort) r.armed_xpu = static_cast<int>(word(mb::ReportWord::ArmedXpu));
  r.failovers = word(mb::ReportWord::Failovers);
  r.last_failed = static_cast<int>(word(mb::ReportWord::LastFailed));
  r.last_spare = static_cast<int>(word(mb::ReportWord::LastSpare));
  r.last_detect_to_commit_ns = word(mb::ReportWord::LastDetectToCommitNs);
  r.last_commit_to_done_ns = word(mb::ReportWord::LastCommitToDoneNs);
  r.circuits_moved = word(mb::ReportWord::CircuitsMoved);
  return r;
}

void Board::need_emulator(const char* what) const {
  if (!emulator_) throw std::logic_error(fmt::format("{}: {} is a board, not the emulator", what, c_.target()));
}

void Board::arm_fault(emu::FaultKind kind, uint32_t target, uint32_t value, uint64_t at_ns) {
  need_emulator("arm_fault");
  c_.queue_write(emulator(er::fault_at_lo::kOffset),
                 {static_cast<uint32_t>(at_ns), static_cast<uint32_t>(at_ns >> 32), target, value, static_cast<uint32_t>(kind)});
  c_.dispatch();
}

uint32_t Board::run_until(uint32_t mask, uint64_t timeout_ns) {
  need_emulator("run_until");
  // In pieces of at most kTimeControlStepNs, like EmulatorClock::wait_ns.
  for (;;) {
    uint64_t step = std::min<uint64_t>(timeout_ns, kTimeControlStepNs);
    c_.queue_write(emulator(er::run_timeout_ns::kOffset), {static_cast<uint32_t>(step), mask});
    auto result = c_.queue_read(emulator(er::run_result::kOffset));
    c_.dispatch(time_control_timeout(c_, step));
    timeout_ns -= step;
    if (result.value() || timeout_ns == 0) return result.value();
  }
}

std::vector<EmuEventRecord> Board::pop_events() {
  need_emulator("pop_events");
  std::vector<EmuEventRecord> out;
  for (;;) {
    uint32_t n = c_.read(emulator(er::event_count::kOffset));
    if (n == 0) return out;
    // Head then pop, one entry per pair, as many pairs as fit a few packets. Each packet takes its
    // board cycles (about 10 a pair through the board top: a drain of a thousand events after a
    // safe sweep runs past the watchdog's 200 us), so it kicks the watchdog too.
    std::vector<Pending> heads;
    if (watchdog_) c_.queue_write(controller(reg::watchdog_kick::kOffset), {1});
    for (uint32_t i = 0; i < std::min<uint32_t>(n, 64); ++i) {
      heads.push_back(c_.queue_read(emulator(er::event_head::kOffset), 4));
      c_.queue_write(emulator(er::event_pop::kOffset), {1});
    }
    c_.dispatch();
    for (const auto& h : heads) {
      const auto& w = h.values();
      out.push_back(EmuEventRecord{uint64_t{w[0]} | uint64_t{w[1]} << 32, static_cast<emu::EmuEvent>(w[2] & 0xFF),
                                   (w[2] >> 8) & 0xFF, (w[2] >> 16) & 0xFF, w[2] >> 24, w[3]});
    }
  }
}

uint64_t Board::messages_delivered() {
  need_emulator("messages_delivered");
  auto w = c_.read_block(emulator(er::messages_lo::kOffset), 2);
  return uint64_t{w[0]} | uint64_t{w[1]} << 32;
}

uint32_t Board::scoreboard_errors() {
  need_emulator("scoreboard_errors");
  return c_.read(emulator(er::scoreboard_errors::kOffset));
}

uint32_t Board::scoreboard_words_lost() {
  need_emulator("scoreboard_words_lost");
  return c_.read(emulator(er::scoreboard_words_lost::kOffset));
}

uint32_t Board::xpu_alive() {
  need_emulator("xpu_alive");
  return c_.read(emulator(er::xpu_alive::kOffset));
}

void Board::queue_job_select(int job) {
  if (job < 0 || job > static_cast<int>(er::job_select::kJobMask)) throw std::invalid_argument(fmt::format("job {} does not fit JOB_SELECT", job));
  c_.queue_write(emulator(er::job_select::kOffset), {static_cast<uint32_t>(job)});
}

void Board::form_job(const std::vector<int>& ring, const TenantJobRequest& spec, int job) {
  need_emulator("form_job");
  queue_job_select(job);
  const uint32_t spec_word = static_cast<uint32_t>(spec.op) << er::job_spec::kOpShift |
                             static_cast<uint32_t>(spec.type) << er::job_spec::kTypeShift;
  // JOB_RING where the ring fits it (8 XPUs numbered 0..14, the single server's), JOB_RANKS
  // otherwise (64 XPUs numbered 0..254: a rack's).
  if (ring.size() <= 8 && std::all_of(ring.begin(), ring.end(), [](int x) { return x >= 0 && x <= protocol::job_ring_max_xpu(4); })) {
    c_.queue_write(emulator(er::job_ring::kOffset),
                   {protocol::pack_job_ring(ring, 4, 1)[0], spec_word, spec.bytes, spec.seed, er::job_ctrl::kFormMask});
    c_.dispatch();
    return;
  }
  const size_t most = 4 * er::job_ranks::kCount;
  if (ring.size() > most) throw std::invalid_argument(fmt::format("a job's ring has at most {} XPUs, not {}", most, ring.size()));
  for (int x : ring)
    if (x < 0 || x > protocol::job_ring_max_xpu(8)) throw std::invalid_argument(fmt::format("XPU {} does not fit JOB_RANKS (0..254)", x));
  c_.queue_write(emulator(er::job_ranks::kOffset), protocol::pack_job_ring(ring, 8, er::job_ranks::kCount));
  c_.queue_write(emulator(er::job_spec::kOffset), {spec_word, spec.bytes, spec.seed, er::job_ctrl::kFormRanksMask});
  c_.dispatch();
}

void Board::set_event_filter(bool unmapped_lanes, bool jobs) {
  need_emulator("set_event_filter");
  c_.write(emulator(er::event_filter::kOffset),
           (unmapped_lanes ? er::event_filter::kUnmappedLanesMask : 0) | (jobs ? er::event_filter::kJobsMask : 0));
}

JobStatus Board::job_status(int job) {
  need_emulator("job_status");
  queue_job_select(job);
  auto w = c_.read_block(emulator(er::job_status::kOffset), 4);
  JobStatus s;
  s.state = static_cast<emu::JobState>((w[0] & er::job_status::kStateMask) >> er::job_status::kStateShift);
  s.ranks = static_cast<int>((w[0] & er::job_status::kRanksWideMask) >> er::job_status::kRanksWideShift);
  s.rings = static_cast<int>((w[0] & er::job_status::kRingsMask) >> er::job_status::kRingsShift);
  s.verified = w[1];
  s.aborted = w[2];
  s.wrong = w[3];
  return s;
}

void Board::start_restore(const std::vector<int>& sources, int dest, uint32_t bytes) {
  need_emulator("start_restore");
  uint32_t mask = 0;
  for (int x : sources) {
    if (x < 0 || x > 31) throw std::invalid_argument(fmt::format("XPU {} does not fit RESTORE_SRC", x));
    mask |= 1u << x;
  }
  c_.queue_write(emulator(er::restore_src::kOffset),
                 {mask, static_cast<uint32_t>(dest), bytes, er::restore_ctrl::kStartMask});
  c_.dispatch();
}

}  // namespace mxtb::host::fabric
