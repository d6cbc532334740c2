#include "detect.h"

#include "host/failover/circuits.h"

#include <mxtb/emu_regs.h>

#include <algorithm>

namespace mxtb::host::failover {

namespace er = mxtb::emu::reg;
using emu::EmuEvent;
using link::LinkState;

bool TenantState::whole() const {
  for (int x : placement.xpu_of_position) {
    if (contains(failed, x)) return false;
    if (pending && pending->xpu == x) return false;
  }
  return true;
}

LinkView::LinkView(int links)
    : state(static_cast<size_t>(links), LinkState::Reset),
      down_since(static_cast<size_t>(links), -1),
      moving(static_cast<size_t>(links), false) {}

void LinkView::apply(const fabric::EmuEventRecord& e) {
  if (e.kind != EmuEvent::LinkChange || e.a >= state.size()) return;
  auto to = static_cast<LinkState>(e.c);
  bool was_up = state[e.a] == LinkState::Active;
  state[e.a] = to;
  // Only a circuit that was up and dropped counts towards a failure: one still training, or one
  // the controller retrained because a commit moved it, does not.
  if (to == LinkState::Active) {
    down_since[e.a] = -1;
    moving[e.a] = false;
  } else if (was_up && !moving[e.a] && static_cast<link::Reason>(e.data) != link::Reason::RetrainRequest) {
    down_since[e.a] = static_cast<double>(e.time_ns);
  }
}

void LinkView::expect_moves(const protocol::FabricMap& from, const protocol::FabricMap& to) {
  for (size_t i = 0; i < to.port_target.size() && i < moving.size(); ++i) {
    int a = from.port_target[i], b = to.port_target[i];
    if (a == b) continue;
    for (int l : {static_cast<int>(i), a, b})
      if (l >= 0 && static_cast<size_t>(l) < moving.size()) {
        moving[static_cast<size_t>(l)] = true;
        down_since[static_cast<size_t>(l)] = -1;
      }
  }
}

void LinkView::reset(const std::vector<fabric::LinkStatus>& status, double now_ns) {
  for (size_t i = 0; i < status.size(); ++i) {
    state[i] = status[i].state;
    down_since[i] = status[i].state == LinkState::Active ? -1 : now_ns;
  }
}

bool LinkView::lit(int xpu, int lanes) const {
  for (int l = xpu * lanes; xpu >= 0 && l < (xpu + 1) * lanes && static_cast<size_t>(l) < state.size(); ++l)
    if (active(l)) return true;
  return false;
}

// An XPU has failed when at least two of its circuits are down, none of its own links is Active,
// and no other such XPU sharing them has as many down: a dead XPU takes all of its circuits with
// it, each neighbour loses only its share. A dead XPU's lasers are all dark, so no link of its
// own can be Active (a link is Active only after both ends heard each other's training); an XPU
// with an Active link is alive, however many of its circuits a neighbour's death took down. That
// settles the case the counts cannot: a second XPU dying next to the first while the first's
// failover is in flight has its circuits to the spare still moving (they prove nothing), so it
// and its one living neighbour have lost the same circuits.
std::optional<Suspect> suspect_failed_xpu(const TenantState& s, const LinkView& links) {
  std::vector<Suspect> most;  // the candidates with the most circuits down
  const int lanes = s.lanes;
  const int n_links = static_cast<int>(links.state.size());
  auto is_failed = [&](int x) { return contains(s.failed, x); };
  for (int x : s.placement.xpu_of_position) {
    if (is_failed(x) || links.lit(x, lanes)) continue;
    std::vector<double> downs;
    for (int l : circuits_of(s.map, x, lanes, n_links)) {
      // A circuit to an XPU already known to have failed says nothing about this one.
      int peer = s.map.port_target[static_cast<size_t>(l)];
      int other = l / lanes == x ? peer / lanes : l / lanes;
      if (is_failed(other)) continue;
      if (!links.active(l) && links.down_since[static_cast<size_t>(l)] >= 0)
        downs.push_back(links.down_since[static_cast<size_t>(l)]);
    }
    if (downs.size() < 2) continue;
    std::sort(downs.begin(), downs.end());
    if (!most.empty() && downs.size() < most.front().downs.size()) continue;
    if (!most.empty() && downs.size() > most.front().downs.size()) most.clear();
    most.push_back({x, std::move(downs), false});
  }
  if (most.empty()) return std::nullopt;
  if (most.size() == 1) return most.front();

  // A tie: XPUs that died at the same instant, whose living neighbours' every circuit went to
  // them (a 2x2 torus losing both XPUs of a diagonal), leave no XPU with an Active link, and every
  // one has lost as many circuits. What still tells them apart is light: a dead XPU's lasers are
  // dark, so the far end of each of its circuits waits in Detect, while a living XPU's light keeps
  // the dead one's receivers training (BlockLock, Ts1). An XPU dark towards every peer not known to
  // have failed, for longer than any retrain takes, is dead; the earliest to drop (then the lowest id) is
  // handled first, the next look finds the other. Otherwise it is not yet clear: look again.
  auto dark = [&](int x) {
    int far_ends = 0;
    for (int l : circuits_of(s.map, x, lanes, n_links)) {
      if (l / lanes == x || is_failed(l / lanes)) continue;
      if (links.state[static_cast<size_t>(l)] != LinkState::Detect) return false;
      ++far_ends;
    }
    return far_ends > 0;
  };
  const Suspect* pick = nullptr;
  for (const auto& c : most)
    if (dark(c.xpu) && (!pick || c.downs[0] < pick->downs[0] || (c.downs[0] == pick->downs[0] && c.xpu < pick->xpu)))
      pick = &c;
  if (!pick) return std::nullopt;
  Suspect out = *pick;
  out.tie = true;
  return out;
}

std::optional<Detection> Naming::look(const std::optional<Suspect>& suspect, double now_ns) {
  if (!suspect) {
    named_.reset();
    return std::nullopt;
  }
  const Suspect& c = *suspect;
  if (!named_ || named_->xpu != c.xpu || named_->tie != c.tie) named_ = Named{c.xpu, now_ns, c.tie};
  if (now_ns - named_->since_ns < static_cast<double>(c.tie ? kRetrainNs : kSettleNs)) return std::nullopt;
  return Detection{c.xpu, c.downs[0], c.downs[1], now_ns};
}

bool explained_by(const std::vector<int>& missing, int xpu, const protocol::FabricMap& m, int lanes, int links) {
  const std::vector<int> theirs = circuits_of(m, xpu, lanes, links);
  bool explained = true;
  for (int l : missing) {
    int peer = m.port_target[static_cast<size_t>(l)];
    explained &= contains(theirs, l) || (peer >= 0 && contains(theirs, peer));
  }
  return explained;
}

Replacement decide_replacement(int failed, const protocol::TorusPlacement& tenant, const std::vector<int>& free_spares,
                               const std::vector<int>& already_failed, const std::vector<FailureGroup>& groups,
                               const protocol::ServerShape& shape) {
  Replacement r{choose_spare(failed, free_spares, groups, already_failed), tenant, {}};
  if (r.choice.spare) {
    r.placement = protocol::substitute(tenant, failed, *r.choice.spare);
    r.map = protocol::torus_map(shape, r.placement);
  }
  return r;
}

double kill_fault_ns(const std::vector<fabric::EmuEventRecord>& log, int xpu) {
  double fault_ns = -1;
  for (const auto& e : log)
    if (e.kind == EmuEvent::FaultFired && e.a == static_cast<uint32_t>(emu::FaultKind::KillXpu) &&
        e.b == static_cast<uint32_t>(xpu))
      fault_ns = static_cast<double>(e.time_ns);
  return fault_ns;
}

Watch::Watch(fabric::Board& board) : board_(board), links_(board.links()) {}

void Watch::take_events(uint64_t window_ns) {
  std::vector<fabric::EmuEventRecord> fresh;
  board_.kick();  // the host is alive
  if (board_.is_emulator()) {
    board_.run_until(er::run_until::kEventMask, window_ns);
    fresh = board_.pop_events();
  } else {
    board_.clock().wait_ns(window_ns);
    auto st = board_.link_status();
    uint64_t now = board_.clock().now_ns();
    for (size_t i = 0; i < st.size(); ++i)
      if (st[i].state != links_.state[i])
        fresh.push_back({now, EmuEvent::LinkChange, static_cast<uint32_t>(i), static_cast<uint32_t>(links_.state[i]),
                         static_cast<uint32_t>(st[i].state), static_cast<uint32_t>(st[i].reason)});
  }
  for (const auto& e : fresh) {
    links_.apply(e);
    log_.push_back(e);
  }
}

void Watch::idle(uint64_t ns) {
  const uint64_t until = board_.clock().now_ns() + ns;
  for (uint64_t now = board_.clock().now_ns(); now < until; now = board_.clock().now_ns())
    take_events(std::min<uint64_t>(until - now, 10'000));
}

std::optional<Detection> Watch::failed_xpu_now(const TenantState& s) {
  std::optional<Suspect> suspect = suspect_failed_xpu(s, links_);
  return naming_.look(suspect, static_cast<double>(board_.clock().now_ns()));
}

double Watch::event_time(EmuEvent kind, std::optional<uint32_t> a, double from_ns) const {
  for (const auto& e : log_)
    if (e.kind == kind && static_cast<double>(e.time_ns) >= from_ns && (!a || e.a == *a)) return static_cast<double>(e.time_ns);
  return -1;
}

Watch::Awaited Watch::await_event(TenantState& s, size_t seen, EmuEvent kind, double from_ns, uint64_t timeout_ns,
                                  uint64_t poll_ns, const std::function<bool(const fabric::EmuEventRecord&)>& ends) {
  Awaited w;
  const uint64_t until = board_.clock().now_ns() + timeout_ns;
  for (size_t i = seen;;) {
    for (; i < log_.size(); ++i)
      if (log_[i].kind == kind && static_cast<double>(log_[i].time_ns) >= from_ns && ends(log_[i])) {
        w.event = log_[i];
        return w;
      }
    const uint64_t now = board_.clock().now_ns();
    if (now >= until) return w;
    take_events(std::min<uint64_t>(until - now, poll_ns));
    if (!s.pending)
      if (auto d = failed_xpu_now(s)) {
        s.pending = d;
        w.failed = d->xpu;
        return w;
      }
  }
}

}  // namespace mxtb::host::failover
