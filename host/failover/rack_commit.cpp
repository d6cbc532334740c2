#include "host/failover/rack_commit.h"

#include "host/fabric/client.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <set>
#include <stdexcept>
#include <thread>

namespace mxtb::host::failover {

namespace mb = mxtb::mailbox;

const char* to_string(RackStep s) {
  switch (s) {
    case RackStep::Check: return "check";
    case RackStep::Stage: return "stage";
    case RackStep::Hold: return "hold";
    case RackStep::Release: return "release";
    case RackStep::Phase1: return "phase1";
    case RackStep::Phase2: return "phase2";
    case RackStep::Verify: return "verify";
    case RackStep::Rollback: return "rollback";
  }
  return "?";
}

const char* to_string(RackOutcome o) {
  switch (o) {
    case RackOutcome::Committed: return "committed";
    case RackOutcome::Refused: return "refused";
    case RackOutcome::RolledBack: return "rolled back";
    case RackOutcome::Unresolved: return "unresolved";
  }
  return "?";
}

namespace {

// Which input of a server sends its light to an output port (-1: none).
int source_of(const std::vector<int>& map, int output) {
  auto it = std::find(map.begin(), map.end(), output);
  return it == map.end() ? -1 : static_cast<int>(it - map.begin());
}

// Each strand of the wiring: `arrive(here, far)`, light leaving far's output port arriving at
// here's input port.
template <typename F>
void for_each_strand(const std::vector<protocol::RackFibre>& wiring, F&& arrive) {
  for (const protocol::RackFibre& f : wiring) {
    arrive(f.a, f.b);
    arrive(f.b, f.a);
  }
}

}  // namespace

std::vector<std::vector<int>> rack_phase1(const protocol::RackShape& shape, const std::vector<protocol::RackFibre>& wiring,
                                          const std::vector<std::vector<int>>& from, const std::vector<std::vector<int>>& to) {
  const int S = shape.servers();
  if (static_cast<int>(from.size()) != S || static_cast<int>(to.size()) != S)
    throw std::invalid_argument(fmt::format("rack_phase1: {} and {} maps for {} servers", from.size(), to.size(), S));
  std::vector<std::vector<int>> out = to;
  for_each_strand(wiring, [&](const protocol::FibreEnd& here, const protocol::FibreEnd& far) {
    const auto h = static_cast<size_t>(here.server), fs = static_cast<size_t>(far.server);
    const auto in = static_cast<size_t>(here.port);
    if (out[h][in] < 0) return;
    // A far board outside the change (its map all -1 on both sides: RackCommit::maps) keeps
    // sending what it sends, and so does a far output unused before and after: neither source
    // changes, and the input stays lit. Leaving it unused would free its elements to the changed
    // circuits' paths in phase 1 and break a circuit that stays (until 2026-12-07: every fibre
    // circuit into a board whose spare was in its own server).
    const int src_from = source_of(from[fs], far.port), src_to = source_of(to[fs], far.port);
    if (src_from != src_to || (src_from < 0) != (src_to < 0)) out[h][in] = -1;  // lit only once the far board's phase 1 is in
  });
  return out;
}

std::vector<std::pair<int, int>> circuits_from_dead(const protocol::RackShape& shape, const std::vector<protocol::RackFibre>& wiring,
                                                    const std::vector<std::vector<int>>& maps,
                                                    const std::vector<protocol::RackXpu>& dead) {
  const int ports = shape.server.mesh_ports;
  if (static_cast<int>(maps.size()) != shape.servers() ||
      std::any_of(maps.begin(), maps.end(), [&](const std::vector<int>& m) { return static_cast<int>(m.size()) != ports; }))
    throw std::invalid_argument(fmt::format("circuits_from_dead: {} maps for {} servers of {} ports", maps.size(), shape.servers(), ports));
  auto dead_lane = [&](int server, int input) {
    if (input < 0 || input >= shape.server.links()) return false;
    const protocol::RackXpu x{server, input / shape.server.lanes_per_xpu};
    return std::find(dead.begin(), dead.end(), x) != dead.end();
  };
  std::vector<std::pair<int, int>> out;
  for (int s = 0; s < shape.servers(); ++s)
    for (int in = 0; in < shape.server.links(); ++in)
      if (maps[static_cast<size_t>(s)][static_cast<size_t>(in)] >= 0 && dead_lane(s, in)) out.emplace_back(s, in);
  for_each_strand(wiring, [&](const protocol::FibreEnd& here, const protocol::FibreEnd& far) {
    if (maps[static_cast<size_t>(here.server)][static_cast<size_t>(here.port)] >= 0 &&
        dead_lane(far.server, source_of(maps[static_cast<size_t>(far.server)], far.port)))
      out.emplace_back(here.server, here.port);
  });
  std::sort(out.begin(), out.end());
  return out;
}

namespace {

std::string join(const std::vector<int>& v) { return fmt::format("{}", fmt::join(v, " ")); }

class Procedure {
 public:
  Procedure(std::vector<RackBoard>& boards, const RackCommitOptions& o) : boards_(boards), o_(o) {
    for (const RackBoard& b : boards)
      if (b.server < 0 || b.server >= o.shape.servers() || !b.board)
        throw std::invalid_argument(fmt::format("rack commit: server {} is not one of the rack's {} (or has no board client)",
                                                b.server, o.shape.servers()));
  }

  RackCommitResult commit() {
    // check: the journal against every board, nothing staged yet.
    for (RackBoard& b : boards_) {
      const std::vector<int> active = read_map(b, RackStep::Check);
      if (!answered_) return refuse(fmt::format("server {} did not answer the check: {}", b.server, last_error_));
      if (active != b.before)
        return refuse(fmt::format("server {} runs a map other than the journal's (ACTIVE_MAP {}, journal {}): nothing staged",
                                  b.server, join(active), join(b.before)));
      const bool safe = with_board(b, RackStep::Check, [](fabric::Board& x) { return x.controller_safe(); });
      if (!answered_) return refuse(fmt::format("server {} did not answer the check: {}", b.server, last_error_));
      if (safe) return refuse(fmt::format("server {} is in its safe state: nothing staged", b.server));
    }
    const auto phase1 = rack_phase1(o_.shape, o_.wiring, maps(&RackBoard::before), maps(&RackBoard::after));
    // stage: the whole map routed on every board, then its phase 1 staged for the commit.
    for (RackBoard& b : boards_) {
      const std::vector<int>& p1 = phase1[static_cast<size_t>(b.server)];
      if (b.after == b.before) continue;
      for (const std::vector<int>* m : {static_cast<const std::vector<int>*>(&b.after), &p1}) {
        const auto st = mailbox(b, RackStep::Stage, [&](fabric::Board& x) { return x.stage_port_map(*m); });
        if (st != mb::FwStatus::Ok)
          return refuse(fmt::format("server {} did not stage its {}: {}; nothing was committed", b.server,
                                    m == &b.after ? "map" : "first phase", outcome(st)));
      }
    }
    // hold: no link of any board trains to light passing between two boards' commits.
    if (std::string why = hold_links(true); !why.empty()) return recover(why);
    // commit: phase 1 on each board in turn, then phase 2.
    for (RackBoard& b : boards_) {
      const std::vector<int>& p1 = phase1[static_cast<size_t>(b.server)];
      if (p1 == b.before) continue;
      const auto st = committed(b, RackStep::Phase1, p1, [](fabric::Board& x) { return x.commit_staged(); });
      if (st != mb::FwStatus::Ok)
        return recover(fmt::format("server {}'s first phase: {}", b.server, outcome(st)));
    }
    for (RackBoard& b : boards_) {
      const std::vector<int>& p1 = phase1[static_cast<size_t>(b.server)];
      if (p1 == b.after) continue;
      const auto st = committed(b, RackStep::Phase2, b.after, [&](fabric::Board& x) { return x.set_port_map(b.after); });
      if (st != mb::FwStatus::Ok)
        return recover(fmt::format("server {}'s second phase: {}", b.server, outcome(st)));
    }
    if (std::string why = hold_links(false); !why.empty()) return recover(why);
    if (std::string why = verify(); !why.empty()) return recover(why);
    return std::move(result_);
  }

  // A client the caller knows may be out of step: a fresh one before its first use.
  void reconnect_first(int server) { silent_.insert(server); }

  // Every board to its `before`, from what it runs now.
  RackCommitResult recover(const std::string& why) {
    result_.why = why;
    std::vector<std::vector<int>> now = maps(&RackBoard::before);
    std::vector<bool> known(boards_.size(), true);
    for (size_t i = 0; i < boards_.size(); ++i) {
      RackBoard& b = boards_[i];
      std::vector<int> active = read_map(b, RackStep::Rollback);
      if (!answered_) {
        known[i] = false;
        continue;
      }
      now[static_cast<size_t>(b.server)] = active;
    }
    auto target = maps(&RackBoard::before);
    // Circuits whose light starts at an XPU the host knows dead: dark, left out without a verify,
    // on the boards that answer (a silent board runs them until its recovery leaves them out:
    // named left out here, they were not, and the boards disagreed with the record).
    for (const auto& [server, input] : circuits_from_dead(o_.shape, o_.wiring, target, o_.dead)) {
      bool answers = false;
      for (size_t i = 0; i < boards_.size(); ++i) answers = answers || (boards_[i].server == server && known[i]);
      if (!answers) continue;
      target[static_cast<size_t>(server)][static_cast<size_t>(input)] = -1;
      result_.left_out.emplace_back(server, input);
      for (RackBoard& b : boards_)
        if (b.server == server) record(b, RackStep::Rollback, false, fmt::format("the circuit from input {} left out: its light starts at a dead XPU", input));
    }
    auto phase1 = rack_phase1(o_.shape, o_.wiring, now, target);
    for (size_t i = 0; i < boards_.size(); ++i)
      if (known[i]) {
        hold(boards_[i], true);
        if (!answered_) known[i] = false;
      }
    for (int phase = 1; phase <= 2; ++phase)
      for (size_t i = 0; i < boards_.size(); ++i) {
        RackBoard& b = boards_[i];
        const auto s = static_cast<size_t>(b.server);
        std::vector<int>& m = phase == 1 ? phase1[s] : target[s];
        if (!known[i] || now[s] == m) continue;
        auto st = committed(b, RackStep::Rollback, m, [&](fabric::Board& x) { return x.set_port_map(m); });
        // Dark after every dark window: the circuit onto the output the controller names has lost
        // its source since `before` ran (a second XPU died, a fibre was cut). Left out, the rest
        // goes back; at most one circuit a lane of the board.
        for (int left = 0; answered_ && st == mb::FwStatus::VerifyFailed && left < o_.shape.server.links(); ++left) {
          const int port = with_board(b, RackStep::Rollback, [](fabric::Board& x) { return x.verify_fail_port(); });
          if (!answered_) break;
          const auto it = std::find(m.begin(), m.end(), port);
          if (it == m.end()) break;
          const int input = static_cast<int>(it - m.begin());
          for (auto* mm : {&phase1[s], &target[s]})
            if ((*mm)[static_cast<size_t>(input)] == port) (*mm)[static_cast<size_t>(input)] = -1;
          result_.left_out.push_back({b.server, input});
          record(b, RackStep::Rollback, false, fmt::format("output {} dark: the circuit from input {} left out", port, input));
          st = committed(b, RackStep::Rollback, m, [&](fabric::Board& x) { return x.set_port_map(m); });
        }
        if (!answered_) {
          known[i] = false;
          continue;
        }
        if (st != mb::FwStatus::Ok) {
          // Its controller kept what it ran (a rollback of its own): read what that is.
          now[s] = read_map(b, RackStep::Rollback);
          if (!answered_) known[i] = false;
          if (now[s] != target[s]) result_.why += fmt::format("; server {}'s rollback: {}", b.server, mb::describe(st));
          continue;
        }
        now[s] = m;
      }
    // Released wherever the board answers, whatever it runs (a board left held keeps its links out
    // of training: rack_recover releases it later).
    for (size_t i = 0; i < boards_.size(); ++i) {
      hold(boards_[i], false);
      if (!answered_) known[i] = false;
    }
    for (size_t i = 0; i < boards_.size(); ++i) {
      RackBoard& b = boards_[i];
      if (known[i] && read_map(b, RackStep::Rollback) == target[static_cast<size_t>(b.server)] && answered_) continue;
      result_.unresolved.push_back(b.server);
    }
    if (!result_.left_out.empty()) {
      std::string dark;
      for (const auto& [server, input] : result_.left_out) dark += fmt::format("{}server {} input {}", dark.empty() ? "" : ", ", server, input);
      result_.why += fmt::format("; rolled back without the circuits gone dark since ({})", dark);
    }
    result_.outcome = result_.unresolved.empty() ? RackOutcome::RolledBack : RackOutcome::Unresolved;
    return std::move(result_);
  }

 private:
  std::vector<std::vector<int>> maps(std::vector<int> RackBoard::*which) const {
    // Servers outside the change keep whatever they run: the same map on both sides.
    std::vector<std::vector<int>> out(static_cast<size_t>(o_.shape.servers()));
    for (const RackBoard& b : boards_) out[static_cast<size_t>(b.server)] = b.*which;
    const int ports = o_.shape.server.mesh_ports;
    for (auto& m : out)
      if (m.empty()) m.assign(static_cast<size_t>(ports), -1);
    return out;
  }

  RackCommitResult refuse(const std::string& why) {
    result_.outcome = RackOutcome::Refused;
    result_.why = why;
    return std::move(result_);
  }


  // A board's client, or a fresh one when it stopped answering, until the deadline.
  template <typename F>
  auto with_board(RackBoard& b, RackStep step, F&& f) -> decltype(f(*b.board)) {
    if (o_.before_step) o_.before_step(b.server, step);
    const auto deadline = std::chrono::steady_clock::now() + o_.answer_deadline;
    answered_ = true;
    for (bool first = true;; first = false) {
      try {
        // A client that once went unanswered may be out of step with its board: a fresh one.
        if ((!first || silent_.count(b.server)) && b.reconnect) {
          b.board = b.reconnect();
          silent_.erase(b.server);
        }
        record_start(b);
        auto r = f(*b.board);
        return r;
      } catch (const std::exception& e) {  // a timeout, a mailbox with no answer, a refused connection
        last_error_ = e.what();
        // Only a step that changes nothing, or one that can be written again (the hold), is asked
        // again: a commit that may have landed is read back by the rollback instead.
        if (step == RackStep::Stage || step == RackStep::Phase1 || step == RackStep::Phase2 || step == RackStep::Verify) break;
        if (std::chrono::steady_clock::now() >= deadline) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
    }
    answered_ = false;
    silent_.insert(b.server);
    record(b, step, false, "no answer: " + last_error_);
    return decltype(f(*b.board))();
  }

  // LINK_HOLD on one board (a step of its own: Hold or Release); answered_ says whether it took.
  void hold(RackBoard& b, bool on) {
    const RackStep step = on ? RackStep::Hold : RackStep::Release;
    with_board(b, step, [&](fabric::Board& x) {
      x.hold_links(on);
      return true;
    });
    if (answered_) record(b, step, true, on ? "LINK_HOLD 1" : "LINK_HOLD 0");
  }
  // Every board of the transaction held or released; the first that did not answer, named.
  std::string hold_links(bool on) {
    for (RackBoard& b : boards_) {
      hold(b, on);
      if (!answered_) return fmt::format("server {} did not answer its {}: {}", b.server, on ? "hold" : "release", last_error_);
    }
    return {};
  }

  std::vector<int> read_map(RackBoard& b, RackStep step) {
    auto m = with_board(b, step, [&](fabric::Board& x) { return x.active_map(o_.shape.server.mesh_ports); });
    if (answered_) record(b, step, true, "ACTIVE_MAP " + join(m));
    return m;
  }

  // The firmware's answer; a board that gave none answers Timeout (last_error_ says why).
  template <typename F>
  mb::FwStatus mailbox(RackBoard& b, RackStep step, F&& f) {
    const mb::FwStatus st = with_board(b, step, [&](fabric::Board& x) { return f(x); });
    if (!answered_) return mb::FwStatus::Timeout;
    record(b, step, st == mb::FwStatus::Ok, std::string(mb::describe(st)));
    return st;
  }
  // A commit, and again a dark window later when verify refused it: a lane of a circuit whose far
  // end is still training (one direction lit, the other not yet) goes dark for its retrain hold now
  // and then, and verify can read one of those gaps. A dead XPU stays dark through every attempt.
  template <typename F>
  mb::FwStatus committed(RackBoard& b, RackStep step, const std::vector<int>& map, F&& first) {
    mb::FwStatus st = mailbox(b, step, first);
    for (int attempt = 1; attempt < o_.verify_attempts && answered_ && st == mb::FwStatus::VerifyFailed; ++attempt) {
      with_board(b, step, [&](fabric::Board& x) {
        x.clock().wait_ns(o_.dark_window_ns);
        return true;
      });
      if (!answered_) break;
      st = mailbox(b, step, [&](fabric::Board& x) { return x.set_port_map(map); });
    }
    return st;
  }
  std::string outcome(mb::FwStatus st) const { return answered_ ? std::string(mb::describe(st)) : "no answer: " + last_error_; }

  std::string verify() {
    for (RackBoard& b : boards_) {
      const std::vector<int> active = read_map(b, RackStep::Verify);
      if (!answered_) return fmt::format("server {} did not answer the verify: {}", b.server, last_error_);
      if (active != b.after) return fmt::format("server {} runs {} after the commit, not {}", b.server, join(active), join(b.after));
    }
    // Every lane the new maps use trains to Active (the far ends' light and link layers included).
    for (RackBoard& b : boards_) {
      std::vector<int> lanes;
      for (int p = 0; p < o_.shape.server.links(); ++p)
        if (b.after[static_cast<size_t>(p)] >= 0) lanes.push_back(p);
      std::vector<int> down;
      const bool ok = with_board(b, RackStep::Verify, [&](fabric::Board& x) {
        const uint64_t until = x.clock().now_ns() + o_.link_up_timeout_ns;
        for (;;) {
          const auto st = x.link_status();
          down.clear();
          for (int l : lanes)
            if (st[static_cast<size_t>(l)].state != link::LinkState::Active) down.push_back(l);
          if (down.empty()) return true;
          if (x.clock().now_ns() >= until) return false;
          x.clock().wait_ns(o_.poll_ns);
        }
      });
      if (!answered_) return fmt::format("server {} did not answer the verify: {}", b.server, last_error_);
      record(b, RackStep::Verify, ok, ok ? fmt::format("{} lanes Active", lanes.size()) : "lanes not Active: " + join(down));
      if (!ok)
        return fmt::format("server {}'s lanes {} not Active {} us after the commit", b.server, join(down),
                           o_.link_up_timeout_ns / 1000.0);
    }
    return {};
  }

  void record_start(RackBoard& b) {
    try {
      start_ns_ = b.board->clock().now_ns();
    } catch (const std::exception&) {
      start_ns_ = 0;
    }
  }
  void record(RackBoard& b, RackStep step, bool ok, std::string detail) {
    uint64_t end = start_ns_;
    if (answered_) try {
        end = b.board->clock().now_ns();
      } catch (const std::exception&) {
      }
    result_.steps.push_back({b.server, step, ok, std::move(detail), start_ns_, end});
  }

  std::vector<RackBoard>& boards_;
  const RackCommitOptions& o_;
  RackCommitResult result_;
  bool answered_ = true;
  std::string last_error_;
  std::set<int> silent_;  // servers whose client went unanswered: reconnected before their next use
  uint64_t start_ns_ = 0;
};

}  // namespace

RackCommitResult rack_commit(std::vector<RackBoard>& boards, const RackCommitOptions& o) { return Procedure(boards, o).commit(); }

RackCommitResult rack_recover(std::vector<RackBoard>& boards, const RackCommitOptions& o) {
  // Its boards' clients were left by a transaction that could not reach them: fresh ones.
  Procedure p(boards, o);
  for (const RackBoard& b : boards) p.reconnect_first(b.server);
  return p.recover("recovery");
}

}  // namespace mxtb::host::failover
