#include "commit.h"

#include "host/failover/circuits.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

namespace mxtb::host::failover {

using emu::EmuEvent;
using mailbox::FwStatus;
using mxtb::ocs::Event;

namespace {

// Whether one of the controller's events at or after t_ns (read newest first) is of a kind `of_kind` takes.
template <class F>
bool any_controller_event_since(const std::vector<fabric::EmuEventRecord>& log, double t_ns, F&& of_kind) {
  for (auto it = log.rbegin(); it != log.rend() && static_cast<double>(it->time_ns) >= t_ns; ++it)
    if (it->kind == EmuEvent::Controller && of_kind(static_cast<Event>(it->a))) return true;
  return false;
}

}  // namespace

int verify_dark_xpu_since(const std::vector<fabric::EmuEventRecord>& log, double t_ns, const protocol::FabricMap& m,
                          int lanes) {
  for (auto it = log.rbegin(); it != log.rend() && static_cast<double>(it->time_ns) >= t_ns; ++it) {
    if (it->kind != EmuEvent::Controller || static_cast<Event>(it->a) != Event::VerifyFail) continue;
    for (size_t i = 0; i < m.port_target.size(); ++i)
      if (m.port_target[i] == static_cast<int>(it->c)) return static_cast<int>(i) / lanes;
  }
  return -1;
}

bool commit_failed_since(const std::vector<fabric::EmuEventRecord>& log, double t_ns) {
  return any_controller_event_since(log, t_ns, [](Event e) {
    return e == Event::VerifyFail || e == Event::RollbackDone || e == Event::CommitRejected;
  });
}

bool rollback_done_since(const std::vector<fabric::EmuEventRecord>& log, double t_ns) {
  return any_controller_event_since(log, t_ns, [](Event e) { return e == Event::RollbackDone || e == Event::CommitRejected; });
}

std::vector<uint32_t> port_map_words(const std::vector<int>& port_target) {
  std::vector<uint32_t> words;
  for (int p : port_target) words.push_back(p < 0 ? mailbox::kUnusedPort : static_cast<uint32_t>(p));
  return words;
}

void SameLooks::see(std::optional<int> xpu) {
  looks = xpu && xpu == named ? looks + 1 : xpu ? 1 : 0;
  named = xpu;
}

LandedCommit landed_commit(const std::vector<fabric::EmuEventRecord>& log, double from_ns, double failure_ns,
                           const std::vector<int>& links, double seen_up_ns) {
  std::optional<uint32_t> landed;
  for (const auto& e : log)
    if (e.kind == EmuEvent::Controller && static_cast<double>(e.time_ns) >= from_ns &&
        static_cast<Event>(e.a) == Event::VerifyPass) {
      landed = e.data;
      break;
    }
  LandedCommit c;
  for (const auto& e : log) {
    if (!landed || e.kind != EmuEvent::Controller || static_cast<double>(e.time_ns) < from_ns || e.data != *landed) continue;
    auto type = static_cast<Event>(e.a);
    double at = static_cast<double>(e.time_ns);
    if (type == Event::CommitStart) c.commit_ns = at;
    if (type == Event::ProgramDone) c.program_ns = at;
    if (type == Event::SettleDone) c.settle_ns = at;
    if (type == Event::VerifyPass) c.verify_ns = at;
  }
  for (const auto& e : log)
    if (e.kind == EmuEvent::LinkChange && static_cast<double>(e.time_ns) >= std::max({c.verify_ns, failure_ns, from_ns}) &&
        static_cast<link::LinkState>(e.c) == link::LinkState::Active &&
        std::find(links.begin(), links.end(), static_cast<int>(e.a)) != links.end())
      c.trained_ns = std::max(c.trained_ns, static_cast<double>(e.time_ns));
  if (c.trained_ns < 0) c.trained_ns = seen_up_ns;  // nothing retrained after verify (a board: polled)
  return c;
}

bool committed_other_backup(const FirmwareCheck& c) {
  return c.fw.failovers > c.failovers_before && c.fw.last_failed != c.failed;
}

void check_firmware_report(const FirmwareCheck& c, bool other_died, std::vector<std::string>& problems,
                           std::vector<std::string>& notes) {
  const fabric::FirmwareReport& fw = c.fw;
  if (c.fast_path && !c.reconciled && (fw.last_failed != c.failed || fw.last_spare != c.spare))
    problems.push_back(fmt::format("the firmware's last failover was XPU {} to {}, not {} to {}", fw.last_failed,
                                   fw.last_spare, c.failed, c.spare));
  // The firmware commits its pre-armed backup on its own; only ever for an XPU that died: this
  // one, or a second one that died before the host's commit disarmed the backup (then it is the
  // pending failover, and the host's placement of this one has replaced the backup's map).
  if (committed_other_backup(c) && other_died)
    notes.push_back(fmt::format("XPU {} died too, before the host's commit disarmed its backup: the firmware committed "
                                "that backup, and the host's placement for XPU {} then replaced it",
                                fw.last_failed, c.failed));
  if (committed_other_backup(c) && !other_died)
    problems.push_back(fmt::format("the firmware committed XPU {}'s pre-armed backup, but XPU {} is the one that failed",
                                   fw.last_failed, c.failed));
}

CommitOutcome commit_live(Watch& w, TenantState& s, protocol::FabricMap& m, uint64_t poll_ns,
                          std::vector<std::string>& notes) {
  // Random lane faults darken a lane for at most tens of microseconds; an XPU that died stays dark.
  constexpr uint64_t kDarkWindowNs = 25'000;
  constexpr int kAttempts = 6;
  fabric::Board& board = w.board();
  int last_dark = -1;
  CommitOutcome out;
  for (int attempt = 0; attempt < kAttempts; ++attempt) {
    const double t0 = static_cast<double>(board.clock().now_ns());
    out.last_attempt_ns = t0;
    out.status = board.set_port_map(m.port_target);
    if (out.status != FwStatus::VerifyFailed) return out;
    w.take_events(0);
    int dark = verify_dark_xpu_since(w.log(), t0, m, s.lanes);
    const bool known = contains(s.failed, dark);
    // An XPU with an Active lane is alive (its lasers light that link): only a dark lane of it
    // stood in verify's way, and it is waited out however long it lasts.
    const bool lit = w.links().lit(dark, s.lanes);
    if (dark >= 0 && dark == last_dark && !known && !lit && (!s.pending || s.pending->xpu == dark)) {
      // Dark twice, a dark window apart: it died (while the host was away, or during this commit).
      notes.push_back(fmt::format(
          "verify missed XPU {}'s light twice, {} us apart: it died; its circuits are taken out and it is the next failover",
          dark, kDarkWindowNs / 1000.0));
      if (!s.pending) s.pending = Detection{dark, t0, t0, t0};
      std::vector<int> dead = s.failed;
      dead.push_back(dark);  // not in s.failed: counted as failed by its own failover
      const bool is_map = &m == &s.map;
      protocol::FabricMap live = live_map(m, dead, s.lanes);
      w.links().expect_moves(m, live);
      m = live;
      if (!is_map) s.map = live;
      last_dark = -1;
      continue;
    }
    last_dark = dark;
    const uint64_t until = board.clock().now_ns() + kDarkWindowNs;
    while (board.clock().now_ns() < until) w.take_events(std::min<uint64_t>(poll_ns, until - board.clock().now_ns()));
  }
  return out;
}

std::vector<std::string> links_down(fabric::Board& board, const std::vector<int>& links) {
  std::vector<std::string> problems, down;
  auto st = board.link_status();  // the reason too: a wrong peer is named as such
  for (int l : links) {
    const auto& s = st[static_cast<size_t>(l)];
    if (s.state == link::LinkState::Active) continue;
    if (s.reason == link::Reason::WrongPeer)
      problems.push_back(fmt::format("link {} trained to the wrong peer and is held Disabled (WrongPeer): a swapped fibre "
                                     "or a misrouted circuit; it carries no traffic",
                                     l));
    else
      down.push_back(fmt::format("{} ({}, {})", l, link::to_string(s.state), link::to_string(s.reason)));
  }
  if (!down.empty()) problems.push_back(fmt::format("after the failover, links {} are not Active", fmt::join(down, ", ")));
  return problems;
}

std::vector<std::string> check_circuits(fabric::Board& board, const TenantState& s, uint32_t generation, int mesh_ports) {
  std::vector<std::string> p;
  uint32_t gen = board.active_generation();
  if (gen != generation) p.push_back(fmt::format("controller generation {}, the manager expects {}", gen, generation));
  auto active = board.active_map(mesh_ports);
  for (int i = 0; i < mesh_ports; ++i) {
    int target = active[static_cast<size_t>(i)];
    if (target != s.map.port_target[static_cast<size_t>(i)])
      p.push_back(fmt::format("ACTIVE_MAP[{}] is {}, the manager expects {}", i, target, s.map.port_target[static_cast<size_t>(i)]));
  }
  auto st = board.link_status();
  const int lanes = s.lanes;
  for (int l : circuit_links(s.map, board.links())) {
    int peer = s.map.port_target[static_cast<size_t>(l)] / lanes;
    bool dead = contains(s.failed, l / lanes) || contains(s.failed, peer);
    const fabric::LinkStatus& ls = st[static_cast<size_t>(l)];
    if (!dead && ls.state != link::LinkState::Active)
      p.push_back(fmt::format("link {} is {} ({}){}", l, link::to_string(ls.state), link::to_string(ls.reason),
                              ls.reason == link::Reason::WrongPeer ? ": it trained to the wrong peer" : ""));
  }
  return p;
}

std::optional<int> name_after_rollback(Watch& w, const TenantState& s, double since_ns, int failing, uint64_t poll_ns) {
  fabric::Board& board = w.board();
  // Verify read a dark circuit: a second XPU that died before it, whose links dropped before
  // verify read its light. The rollback then moves the elements back (a thermo-optic settle:
  // 50 us), and circuits of living XPUs whose paths pass through them go dark meanwhile: with a
  // dead neighbour, a living XPU then has every lane down and outnumbers the dead one (regress
  // seed 6193). So look once the rollback is over and its glitches have retrained, and take an
  // XPU only when the drops keep naming it (or a transient was to blame).
  const uint64_t wait_until = board.clock().now_ns() + kRollbackWaitNs;
  while (!rollback_done_since(w.log(), since_ns) && board.clock().now_ns() < wait_until) w.take_events(poll_ns);
  for (uint64_t t = board.clock().now_ns() + kRetrainNs; board.clock().now_ns() < t;) w.take_events(poll_ns);
  SameLooks same;
  for (int look = 0; look < kLooksAfterRollback && same.looks < kSameLooks; ++look) {
    w.take_events(poll_ns);
    auto d = w.failed_xpu_now(s);
    same.see(d && d->xpu != failing ? std::optional<int>(d->xpu) : std::nullopt);
  }
  return same.settled() ? same.named : std::nullopt;
}

}  // namespace mxtb::host::failover
