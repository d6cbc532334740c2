#include "manager.h"

#include "protocol/board_map.h"

#include <mxtb/ocs_regs.h>

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

namespace mxtb::host::failover {

namespace er = mxtb::emu::reg;
namespace reg = mxtb::ocs::reg;
using emu::EmuEvent;
using mailbox::FwStatus;
using link::LinkState;

const char* to_string(HostDisconnect d) {
  switch (d) {
    case HostDisconnect::None: return "none";
    case HostDisconnect::BeforeCommit: return "before_commit";
    case HostDisconnect::MidCommit: return "mid_commit";
    case HostDisconnect::AfterCommit: return "after_commit";
  }
  return "none";
}

namespace {

// How many looks (poll_ns apart) the manager takes after a rolled-back commit to find the XPU
// whose dark circuits made verify fail: its links dropped before verify, so one look normally
// does; the rest cover the events of a death a few hundred nanoseconds before verify.
constexpr int kLooksAfterRollback = 10;
constexpr int kSameLooks = 3;                 // consecutive looks that must name the same XPU
constexpr uint64_t kRollbackWaitNs = 1'000'000;  // at most, for the rollback's RollbackDone
constexpr uint64_t kRetrainNs = 10'000;       // after it: circuits it glimpsed retrain (about 4 us)
// A death's drops cascade: the neighbours lose its light, drop and turn their lasers off, then the
// dead XPU's own receivers drop, 32 ns later. A look in between sees the dead XPU still Active
// (so alive) and its neighbours down; a neighbour with one more circuit down for another reason
// (a lane's dark window) then outnumbers every other XPU (regress seed 9178). An XPU is taken as
// failed only when looks at least this far apart name it: the later one sees the cascade over.
constexpr uint64_t kSettleNs = 1'000;

uint8_t pattern_byte(int xpu, size_t i) { return static_cast<uint8_t>((i * 2654435761u >> 7) ^ (static_cast<size_t>(xpu) * 97)); }

}  // namespace

FailoverManager::FailoverManager(fabric::Board& board, ManagerConfig cfg)
    : board_(board), cfg_(std::move(cfg)), placement_(cfg_.tenant), free_spares_(cfg_.spares) {
  link_state_.assign(static_cast<size_t>(board_.links()), LinkState::Reset);
  link_down_since_.assign(static_cast<size_t>(board_.links()), -1);
  moving_.assign(static_cast<size_t>(board_.links()), false);
}

// The map without any circuit that touches a failed XPU: its light is gone, and the controller's
// verify would refuse a commit that expects light from it.
protocol::FabricMap FailoverManager::live_map(protocol::FabricMap m) const {
  const int lanes = cfg_.shape.lanes_per_xpu;
  auto dead = [&](int port) { return std::find(failed_.begin(), failed_.end(), port / lanes) != failed_.end(); };
  for (size_t i = 0; i < m.port_target.size(); ++i)
    if (m.port_target[i] >= 0 && (dead(static_cast<int>(i)) || dead(m.port_target[i]))) m.port_target[i] = -1;
  return m;
}

// Circuits that change between two maps retrain: their drops are expected, not failures.
void FailoverManager::expect_moves(const protocol::FabricMap& from, const protocol::FabricMap& to) {
  for (size_t i = 0; i < to.port_target.size() && i < moving_.size(); ++i) {
    int a = from.port_target[i], b = to.port_target[i];
    if (a == b) continue;
    // Whatever these links did before (some dropped with the failed XPU) no longer counts.
    for (int l : {static_cast<int>(i), a, b})
      if (l >= 0 && static_cast<size_t>(l) < moving_.size()) {
        moving_[static_cast<size_t>(l)] = true;
        link_down_since_[static_cast<size_t>(l)] = -1;
      }
  }
}

// The XPU whose light a verify failure since t_ns missed: the controller names the circuit's
// output port; the light comes from the input port mapped onto it.
int FailoverManager::verify_dark_xpu_since(double t_ns, const protocol::FabricMap& m) const {
  for (auto it = log_.rbegin(); it != log_.rend() && static_cast<double>(it->time_ns) >= t_ns; ++it) {
    if (it->kind != EmuEvent::Controller || static_cast<mxtb::ocs::Event>(it->a) != mxtb::ocs::Event::VerifyFail) continue;
    for (size_t i = 0; i < m.port_target.size(); ++i)
      if (m.port_target[i] == static_cast<int>(it->c)) return static_cast<int>(i) / cfg_.shape.lanes_per_xpu;
  }
  return -1;
}

FwStatus FailoverManager::commit_live(protocol::FabricMap& m, FailoverRecord& rec) {
  // Random lane faults darken a lane for at most tens of microseconds; an XPU that died stays dark.
  constexpr uint64_t kDarkWindowNs = 25'000;
  constexpr int kAttempts = 6;
  int last_dark = -1;
  FwStatus st = FwStatus::Ok;
  for (int attempt = 0; attempt < kAttempts; ++attempt) {
    const double t0 = static_cast<double>(board_.clock().now_ns());
    last_commit_ns_ = t0;
    st = board_.set_port_map(m.port_target);
    if (st != FwStatus::VerifyFailed) return st;
    take_events(0);
    int dark = verify_dark_xpu_since(t0, m);
    const bool known = std::find(failed_.begin(), failed_.end(), dark) != failed_.end();
    // An XPU with an Active lane is alive (its lasers light that link): only a dark lane of it
    // stood in verify's way, and it is waited out however long it lasts.
    bool lit = false;
    for (int l = dark * cfg_.shape.lanes_per_xpu; dark >= 0 && l < (dark + 1) * cfg_.shape.lanes_per_xpu && l < board_.links(); ++l)
      lit |= link_state_[static_cast<size_t>(l)] == LinkState::Active;
    if (dark >= 0 && dark == last_dark && !known && !lit && (!pending_ || pending_->xpu == dark)) {
      // Dark twice, a dark window apart: it died (while the host was away, or during this commit).
      rec.timeline.notes.push_back(fmt::format(
          "verify missed XPU {}'s light twice, {} us apart: it died; its circuits are taken out and it is the next failover",
          dark, kDarkWindowNs / 1000.0));
      if (!pending_) pending_ = Detection{dark, t0, t0, t0};
      failed_.push_back(dark);
      const bool is_map = &m == &map_;
      protocol::FabricMap live = live_map(m);
      failed_.pop_back();  // counted as failed by its own failover
      expect_moves(m, live);
      m = live;
      if (!is_map) map_ = live;
      last_dark = -1;
      continue;
    }
    last_dark = dark;
    const uint64_t until = board_.clock().now_ns() + kDarkWindowNs;
    while (board_.clock().now_ns() < until) take_events(std::min<uint64_t>(cfg_.poll_ns, until - board_.clock().now_ns()));
  }
  return st;
}

// Places `m` through the mailbox and waits for its circuits; false (with a problem) when it fails.
bool FailoverManager::place(const protocol::FabricMap& m, FailoverRecord& rec, const char* why) {
  expect_moves(map_, m);
  map_ = m;
  FwStatus st = commit_live(map_, rec);
  if (st != FwStatus::Ok) {
    rec.problems.push_back(fmt::format("{}: the firmware answered {}", why, mailbox::describe(st)));
    return false;
  }
  generation_ = board_.active_generation();
  std::vector<int> links = circuit_links(map_);
  if (!wait_links_up(links, cfg_.link_up_timeout_ns)) {
    report_links_down(rec, links);
    return false;
  }
  return true;
}

FailoverManager::~FailoverManager() = default;

std::vector<int> FailoverManager::circuit_links(const protocol::FabricMap& m) const {
  std::vector<int> out;
  for (int i = 0; i < board_.links(); ++i)
    if (m.port_target[static_cast<size_t>(i)] >= 0) out.push_back(i);
  return out;
}

// Links of other XPUs whose circuit ends on `xpu`, and xpu's own circuit links.
std::vector<int> FailoverManager::circuits_of(int xpu) const {
  std::vector<int> out;
  const int lanes = cfg_.shape.lanes_per_xpu;
  for (int i = 0; i < board_.links(); ++i) {
    int t = map_.port_target[static_cast<size_t>(i)];
    if (t < 0 || t / lanes == i / lanes) continue;  // unused, or a loopback
    if (i / lanes == xpu || t / lanes == xpu) out.push_back(i);
  }
  return out;
}

int FailoverManager::circuits_between(int a, int b) const {
  const int lanes = cfg_.shape.lanes_per_xpu;
  int n = 0;
  for (int i = 0; i < board_.links(); ++i) {
    int t = map_.port_target[static_cast<size_t>(i)];
    if (t >= 0 && i / lanes == a && t / lanes == b) ++n;
  }
  return n;
}

// Events since the last look, waiting up to `window_ns` of board time for one. On the emulator
// they come from its event queue; on a board, from reading LINK_STATUS (stamped when read).
uint32_t FailoverManager::watchdog_cycles() const {
  return static_cast<uint32_t>(static_cast<double>(cfg_.watchdog_ns) * cfg_.shape_clock_mhz / 1000.0);
}

bool FailoverManager::wait_living_links(uint64_t timeout_ns) {
  const int lanes = cfg_.shape.lanes_per_xpu;
  auto dead = [&](int x) { return std::find(failed_.begin(), failed_.end(), x) != failed_.end(); };
  std::vector<int> living;
  for (int l : circuit_links(map_)) {
    int peer = map_.port_target[static_cast<size_t>(l)] / lanes;
    if (!dead(l / lanes) && !dead(peer)) living.push_back(l);
  }
  return wait_links_up(living, timeout_ns);
}

void FailoverManager::idle(uint64_t ns) {
  const uint64_t until = board_.clock().now_ns() + ns;
  for (uint64_t now = board_.clock().now_ns(); now < until; now = board_.clock().now_ns())
    take_events(std::min<uint64_t>(until - now, 10'000));
}

void FailoverManager::take_events(uint64_t window_ns) {
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
      if (st[i].state != link_state_[i])
        fresh.push_back({now, EmuEvent::LinkChange, static_cast<uint32_t>(i), static_cast<uint32_t>(link_state_[i]),
                         static_cast<uint32_t>(st[i].state), static_cast<uint32_t>(st[i].reason)});
  }
  for (const auto& e : fresh) {
    if (e.kind == EmuEvent::LinkChange && e.a < link_state_.size()) {
      auto to = static_cast<LinkState>(e.c);
      bool was_up = link_state_[e.a] == LinkState::Active;
      link_state_[e.a] = to;
      // Only a circuit that was up and dropped counts towards a failure: one still training, or
      // one the controller retrained because a commit moved it, does not.
      if (to == LinkState::Active) {
        link_down_since_[e.a] = -1;
        moving_[e.a] = false;
      } else if (was_up && !moving_[e.a] && static_cast<link::Reason>(e.data) != link::Reason::RetrainRequest) {
        link_down_since_[e.a] = static_cast<double>(e.time_ns);
      }
    }
    log_.push_back(e);
  }
}

double FailoverManager::event_time(EmuEvent kind, std::optional<uint32_t> a, double from_ns) const {
  for (const auto& e : log_)
    if (e.kind == kind && static_cast<double>(e.time_ns) >= from_ns && (!a || e.a == *a)) return static_cast<double>(e.time_ns);
  return -1;
}

bool FailoverManager::wait_links_up(const std::vector<int>& links, uint64_t timeout_ns, bool during_failover) {
  uint64_t start = board_.clock().now_ns();
  for (;;) {
    std::vector<int> missing;
    for (int l : links)
      if (link_state_[static_cast<size_t>(l)] != LinkState::Active) missing.push_back(l);
    if (missing.empty()) return true;
    if (during_failover && commit_failed_since(handover_ns_)) {
      commit_failed_ = true;
      return false;
    }
    if (during_failover && !second_failure_) {
      // Another XPU dying meanwhile keeps its circuits down for good: it is the next failover's
      // business, not a reason to wait here.
      if (auto d = failed_xpu_now(); d && d->xpu != current_.det.xpu) {
        auto theirs = circuits_of(d->xpu);
        bool explained = true;
        for (int l : missing) {
          int peer = map_.port_target[static_cast<size_t>(l)];
          bool of_it = std::find(theirs.begin(), theirs.end(), l) != theirs.end() ||
                       (peer >= 0 && std::find(theirs.begin(), theirs.end(), peer) != theirs.end());
          explained &= of_it;
        }
        if (explained) {
          second_failure_ = d->xpu;
          return true;
        }
      }
    }
    if (board_.clock().now_ns() - start > timeout_ns) return false;
    take_events(cfg_.poll_ns);
  }
}

void FailoverManager::keep_state_copies() {
  // Each tenant XPU's inference state lives in its device memory; a copy is kept on a peer (the
  // paging engine's remote tier) so that a spare can take it over. Real bytes, scaled down to
  // real_bytes_max; the restore's time is charged for the full size at the fabric's rate.
  if (cfg_.state_bytes_per_xpu == 0) return;
  paging::ModelShape shape;
  shape.layers = 8;
  shape.kv_heads = 8;
  shape.head_size = 128;
  shape.tokens_per_block = 16;
  shape.dtype = paging::DType::F16;
  uint64_t real = std::min(cfg_.state_bytes_per_xpu, cfg_.real_bytes_max);
  state_blocks_ = std::max<size_t>(1, static_cast<size_t>(real / shape.block_bytes()));
  size_t xpus = placement_.xpu_of_position.size() + cfg_.spares.size();
  engine_ = std::make_unique<paging::PagingEngine>(
      shape, paging::PoolSizes{state_blocks_ * xpus, state_blocks_ * xpus, 0}, paging::make_cpu_backend());
  for (int x : placement_.xpu_of_position) {
    auto seq = static_cast<paging::SeqId>(x);
    engine_->allocate(seq, state_blocks_);
    size_t n = 0;
    for (size_t b = 0; b < state_blocks_; ++b)
      for (int l = 0; l < shape.layers; ++l)
        for (paging::Kv kv : {paging::Kv::K, paging::Kv::V}) {
          std::byte* p = engine_->chunk(seq, b, l, kv);
          for (size_t i = 0; i < shape.chunk_bytes(); ++i) p[i] = static_cast<std::byte>(pattern_byte(x, n++));
        }
    engine_->page_out(seq, paging::Tier::Remote);
  }
}

void FailoverManager::bring_up() {
  map_ = protocol::torus_map(cfg_.shape, placement_);
  FwStatus st = board_.set_port_map(map_.port_target);
  if (st != FwStatus::Ok)
    throw std::runtime_error(fmt::format("placing the tenant's torus: the firmware answered {}", mailbox::describe(st)));
  generation_ = board_.active_generation();
  // From now on the controller drops every circuit if the host goes silent.
  if (cfg_.watchdog_ns) board_.enable_watchdog(watchdog_cycles());
  if (!wait_links_up(circuit_links(map_), cfg_.link_up_timeout_ns))
    throw std::runtime_error("the tenant's circuits did not all become Active after placing the torus");
  // Not charged to board time: the copies are made before any failure, off the failover's path.
  keep_state_copies();
  if (cfg_.job) {
    JobWait w = form_job_and_wait();
    if (!w.verified)
      throw std::runtime_error(fmt::format("the tenant's job on XPUs {}: no verified collective within {} us of forming it{}{}",
                                           fmt::join(protocol::ring_xpus(placement_), " "), cfg_.job->first_timeout_ns / 1000.0,
                                           w.ended ? fmt::format(" (one ended {}, {})", emu::to_string(static_cast<emu::JobOutcome>(w.ended->a)),
                                                                 emu::to_string(static_cast<emu::JobReason>(w.ended->b)))
                                                   : std::string(),
                                           w.failed ? fmt::format(" (XPU {} failed)", *w.failed) : std::string()));
  }
  // The ranks' processes and their first communicator: wall time, before any failure.
  if (cfg_.comm) ranks_ = std::make_unique<comm::RankGroup>(*cfg_.comm, protocol::ring_xpus(placement_), free_spares_);
  arm_next_backup();
  if (board_.is_emulator()) messages_at_bring_up_ = board_.messages_delivered();
}

void FailoverManager::arm_next_backup() {
  armed_xpu_.reset();
  armed_spare_ = -1;
  if (!cfg_.armed_xpu || free_spares_.empty()) return;
  int x = *cfg_.armed_xpu;
  if (pending_ && pending_->xpu == x) return;  // it died during the last failover: handled next
  if (std::find(placement_.xpu_of_position.begin(), placement_.xpu_of_position.end(), x) == placement_.xpu_of_position.end())
    return;  // the XPU to arm has already been replaced
  SpareChoice c = choose_spare(x, free_spares_, cfg_.groups, failed_);
  if (!c.spare) return;
  auto backup = protocol::torus_map(cfg_.shape, protocol::substitute(placement_, x, *c.spare));
  FwStatus st = board_.arm_backup(x, *c.spare, backup.port_target);
  if (st != FwStatus::Ok)
    throw std::runtime_error(fmt::format("arming XPU {}'s backup: the firmware answered {}", x, mailbox::describe(st)));
  armed_xpu_ = x;
  armed_spare_ = *c.spare;
  armed_at_ns_ = board_.clock().now_ns();
}

// An XPU has failed when at least two of its circuits are down, none of its own links is Active,
// and no other such XPU sharing them has as many down: a dead XPU takes all of its circuits with
// it, each neighbour loses only its share. A dead XPU's lasers are all dark, so no link of its
// own can be Active (a link is Active only after both ends heard each other's training); an XPU
// with an Active link is alive, however many of its circuits a neighbour's death took down. That
// settles the case the counts cannot: a second XPU dying next to the first while the first's
// failover is in flight has its circuits to the spare still moving (they prove nothing), so it
// and its one living neighbour have lost the same circuits.
std::optional<FailoverManager::Detection> FailoverManager::failed_xpu_now() {
  struct Candidate {
    int xpu;
    std::vector<double> downs;  // when each of its circuits dropped, earliest first
  };
  std::vector<Candidate> most;  // the candidates with the most circuits down
  const int lanes = cfg_.shape.lanes_per_xpu;
  auto is_failed = [&](int x) { return std::find(failed_.begin(), failed_.end(), x) != failed_.end(); };
  for (int x : placement_.xpu_of_position) {
    if (is_failed(x)) continue;
    bool alive = false;
    for (int l = x * lanes; l < (x + 1) * lanes && l < board_.links(); ++l)
      alive |= link_state_[static_cast<size_t>(l)] == LinkState::Active;
    if (alive) continue;
    std::vector<double> downs;
    for (int l : circuits_of(x)) {
      // A circuit to an XPU already known to have failed says nothing about this one.
      int peer = map_.port_target[static_cast<size_t>(l)];
      int other = l / lanes == x ? peer / lanes : l / lanes;
      if (is_failed(other)) continue;
      if (link_state_[static_cast<size_t>(l)] != LinkState::Active && link_down_since_[static_cast<size_t>(l)] >= 0)
        downs.push_back(link_down_since_[static_cast<size_t>(l)]);
    }
    if (downs.size() < 2) continue;
    std::sort(downs.begin(), downs.end());
    if (!most.empty() && downs.size() < most.front().downs.size()) continue;
    if (!most.empty() && downs.size() > most.front().downs.size()) most.clear();
    most.push_back({x, std::move(downs)});
  }
  const double now = static_cast<double>(board_.clock().now_ns());
  // The evidence must keep naming the same XPU for `hold`: kSettleNs for a clear count, kRetrainNs
  // for a tie that only light tells apart.
  auto named_for = [&](const Candidate& c, bool tie) -> std::optional<Detection> {
    if (!named_ || named_->xpu != c.xpu || named_->tie != tie) named_ = Named{c.xpu, now, tie};
    if (now - named_->since_ns < static_cast<double>(tie ? kRetrainNs : kSettleNs)) return std::nullopt;
    return Detection{c.xpu, c.downs[0], c.downs[1], now};
  };
  if (most.empty()) {
    named_.reset();
    return std::nullopt;
  }
  if (most.size() == 1) return named_for(most.front(), false);

  // A tie: XPUs that died at the same instant, whose living neighbours' every circuit went to
  // them (a 2x2 torus losing both XPUs of a diagonal), leave no XPU with an Active link, and every
  // one has lost as many circuits. What still tells them apart is light: a dead XPU's lasers are
  // dark, so the far end of each of its circuits waits in Detect, while a living XPU's light keeps
  // the dead one's receivers training (BlockLock, Ts1). An XPU dark towards every peer not known to
  // have failed, for longer than any retrain takes, is dead; the earliest to drop (then the lowest id) is
  // handled first, the next look finds the other. Otherwise it is not yet clear: look again.
  auto dark = [&](int x) {
    int far_ends = 0;
    for (int l : circuits_of(x)) {
      if (l / lanes == x || is_failed(l / lanes)) continue;
      if (link_state_[static_cast<size_t>(l)] != LinkState::Detect) return false;
      ++far_ends;
    }
    return far_ends > 0;
  };
  const Candidate* pick = nullptr;
  for (const auto& c : most)
    if (dark(c.xpu) && (!pick || c.downs[0] < pick->downs[0] || (c.downs[0] == pick->downs[0] && c.xpu < pick->xpu)))
      pick = &c;
  if (!pick) {
    named_.reset();
    return std::nullopt;
  }
  return named_for(*pick, true);
}

std::optional<FailoverRecord> FailoverManager::handle_next_failure(uint64_t timeout_ns, HostDisconnect disconnect) {
  const uint64_t start = board_.clock().now_ns();
  std::optional<Detection> det = pending_;
  pending_.reset();
  while (!det) {
    if (board_.clock().now_ns() - start > timeout_ns) return std::nullopt;
    take_events(cfg_.poll_ns);
    det = failed_xpu_now();
  }
  // The XPU's death takes its rank's process with it; the survivors' step loop fails on its own.
  if (ranks_) ranks_->kill(det->xpu);
  FailoverRecord rec;
  rec.failed = det->xpu;
  report::Timeline& t = rec.timeline;
  t.scenario = cfg_.scenario;
  t.seed = cfg_.seed;
  t.time_mode = board_.clock().mode();
  // When it died: the emulator says (the fault); a board only shows the first circuit going down.
  double fault_ns = -1;
  for (const auto& e : log_)
    if (e.kind == EmuEvent::FaultFired && e.a == static_cast<uint32_t>(emu::FaultKind::KillXpu) &&
        e.b == static_cast<uint32_t>(det->xpu))
      fault_ns = static_cast<double>(e.time_ns);
  t.failure_ns = fault_ns >= 0 ? fault_ns : det->failure_ns;

  // Choose the spare and the new circuits: the host's own compute, charged to board time.
  SpareChoice choice;
  protocol::TorusPlacement next = placement_;
  protocol::FabricMap next_map;
  if (cfg_.extra_decide_ns) board_.clock().charge_ns(cfg_.extra_decide_ns);
  auto decide = [&] {  // deterministic: its cost is measured over reruns
    choice = choose_spare(det->xpu, free_spares_, cfg_.groups, failed_);
    if (choice.spare) {
      next = protocol::substitute(placement_, det->xpu, *choice.spare);
      next_map = protocol::torus_map(cfg_.shape, next);
    }
  };
  if (cfg_.decide_compute_ns && board_.clock().charges_compute()) {
    decide();
    board_.clock().charge_ns(*cfg_.decide_compute_ns);
    t.figures["host_decide_ns"] = static_cast<double>(*cfg_.decide_compute_ns);
  } else if (uint64_t charged = board_.clock().charge_compute(decide)) {
    t.figures["host_decide_ns"] = static_cast<double>(charged);
  }
  failed_.push_back(det->xpu);
  const double decided_ns = static_cast<double>(board_.clock().now_ns());
  rec.spare = choice.spare;
  rec.spare_reason = choice.reason;
  t.notes.push_back(fmt::format("XPU {} failed; {}", det->xpu, choice.reason));
  if (!choice.spare) {
    t.degraded = true;
    t.notes.push_back(fmt::format("DEGRADED: no spare left; the tenant's torus runs without XPU {} until one is added",
                                  det->xpu));
    report::append_phase(t, "detect", det->detect_ns - t.failure_ns, "rtl", "the failed XPU's circuits lose light");
    report::append_phase(t, "host_detect", std::max(0.0, det->noticed_ns - det->detect_ns), "host",
                         "the manager sees the circuits down");
    // Take the dead XPU's circuits out of the map, so that the controller's verify of any later
    // commit is not held up by their darkness.
    const double isolate0 = static_cast<double>(board_.clock().now_ns());
    place(live_map(map_), rec, "isolating the failed XPU's circuits");
    report::append_phase(t, "isolate", static_cast<double>(board_.clock().now_ns()) - isolate0, "host",
                         "the failed XPU's circuits removed from the map (mailbox, commit)");
    return rec;
  }
  free_spares_.erase(std::find(free_spares_.begin(), free_spares_.end(), *choice.spare));
  rec.fast_path = armed_xpu_ == det->xpu && armed_spare_ == *choice.spare;
  if (rec.fast_path && firmware_left_failure_to_host(det->xpu)) {
    rec.fast_path = false;
    t.notes.push_back(fmt::format("the firmware left XPU {}'s failure to the host (its events did not show XPU {} going dark first): host path",
                                  det->xpu, det->xpu));
  }
  current_ = InFlight{*det, decided_ns, *choice.spare};

  // Hand over: the firmware's pre-armed commit, or the host's through the mailbox. The intent is
  // journaled first (placement_, map_): a host that goes away knows what it wanted when it is back.
  next_map = live_map(next_map);
  expect_moves(map_, next_map);
  // On the fast path the firmware committed as the failure showed, while the host was still
  // deciding: a rollback of that commit (a second XPU dying before its verify) can be over before
  // the host hands over, and must count. Its window opens at the failure.
  handover_ns_ = rec.fast_path ? std::min(det->failure_ns, static_cast<double>(board_.clock().now_ns()))
                               : static_cast<double>(board_.clock().now_ns());
  host_commit_status_ = FwStatus::Ok;
  placement_ = next;
  map_ = next_map;
  auto go_away = [&] {
    rec.disconnected = true;
    t.notes.push_back(fmt::format("the host disconnects {} (the watchdog, {} us, is no longer kicked)",
                                  to_string(disconnect), cfg_.watchdog_ns / 1000.0));
    return rec;
  };
  if (disconnect == HostDisconnect::BeforeCommit) return go_away();
  if (!rec.fast_path) {
    if (disconnect == HostDisconnect::MidCommit) {
      std::vector<uint32_t> words;
      for (int p : map_.port_target) words.push_back(p < 0 ? mailbox::kUnusedPort : static_cast<uint32_t>(p));
      board_.mailbox_post(mailbox::Opcode::SetPortMap, words);
      return go_away();
    }
    host_commit_status_ = board_.set_port_map(map_.port_target);
  } else if (disconnect == HostDisconnect::MidCommit) {
    return go_away();  // the firmware commits on its own while the host is away
  }
  second_failure_.reset();
  // A host commit that verify refused is what a second failure before the verify looks like:
  // the recovery below finds out which.
  commit_failed_ = host_commit_status_ == FwStatus::VerifyFailed;
  std::vector<int> links = circuit_links(map_);
  bool up = commit_failed_ ? false : wait_links_up(links, cfg_.link_up_timeout_ns, true);
  protocol::FabricMap intended = map_;
  if (commit_failed_) {
    // The controller rolled the commit back: the board still runs the map from before it. That is
    // the manager's picture of the board again (the intent stays in `intended`), so that which
    // circuits the next placement moves, and which circuits' drops count, follow the board.
    map_.port_target = board_.active_map(cfg_.shape.mesh_ports);
    // Verify read a dark circuit: a second XPU that died before it, whose links dropped before
    // verify read its light. The rollback then moves the elements back (a thermo-optic settle:
    // 50 us), and circuits of living XPUs whose paths pass through them go dark meanwhile: with a
    // dead neighbour, a living XPU then has every lane down and outnumbers the dead one (regress
    // seed 6193). So look once the rollback is over and its glitches have retrained, and take an
    // XPU only when the drops keep naming it (or a transient was to blame).
    const uint64_t wait_until = board_.clock().now_ns() + kRollbackWaitNs;
    while (!rollback_done_since(handover_ns_) && board_.clock().now_ns() < wait_until) take_events(cfg_.poll_ns);
    for (uint64_t t = board_.clock().now_ns() + kRetrainNs; board_.clock().now_ns() < t;) take_events(cfg_.poll_ns);
    std::optional<int> named;
    int looks_named = 0;
    for (int look = 0; look < kLooksAfterRollback && looks_named < kSameLooks; ++look) {
      take_events(cfg_.poll_ns);
      auto d = failed_xpu_now();
      std::optional<int> now = d && d->xpu != det->xpu ? std::optional<int>(d->xpu) : std::nullopt;
      looks_named = now && now == named ? looks_named + 1 : now ? 1 : 0;
      named = now;
    }
    if (named && looks_named >= kSameLooks) second_failure_ = named;
  }
  if (second_failure_ || commit_failed_) {
    // Another XPU died meanwhile: its circuits go dark for good, and if that happened before the
    // controller's verify, the commit rolled back (verify saw them dark). Place the new map
    // without them; that XPU is the next failover (handle_next_failure returns it at once).
    std::optional<Detection> d2 = failed_xpu_now();
    if (second_failure_ && (!d2 || d2->xpu != *second_failure_)) d2 = Detection{*second_failure_, det->detect_ns, det->detect_ns, det->noticed_ns};
    if (d2 && d2->xpu != det->xpu) {
      pending_ = d2;
      failed_.push_back(d2->xpu);
    }
    t.notes.push_back(fmt::format("{}{}: the new map is placed again through the mailbox{}",
                                  d2 ? fmt::format("XPU {} failed during this failover", d2->xpu) : std::string("the commit failed"),
                                  commit_failed_ ? " and the controller rolled the commit back (verify saw dark circuits)" : "",
                                  d2 ? " without its circuits" : ""));
    if (commit_failed_) rec.fast_path = false;
    if (!d2 && commit_failed_)
      t.notes.push_back("verify refused the commit, yet no other XPU is found to have failed");
    // If this placement fails too, place() says so: then the fabric really refused the circuits.
    place(live_map(intended), rec, "placing the new map again");
    if (pending_) failed_.pop_back();  // counted as failed by its own failover
  } else if (host_commit_status_ != FwStatus::Ok) {
    rec.problems.push_back(fmt::format("the firmware refused the new circuits: {}", mailbox::describe(host_commit_status_)));
  } else if (!up) {
    report_links_down(rec, links);
  }
  if (disconnect == HostDisconnect::AfterCommit) return go_away();
  finish(rec, false);
  return rec;
}

// The firmware decides on its own whether the armed XPU died (firmware/ocs_firmware.cpp, on_event:
// whose light went out first), and leaves the failure to the host when its events do not show it
// (every neighbour dying at once, a lane that was already down). The host does not guess its
// rule: it asks. The firmware drains its event log before it answers the mailbox, so the answer
// comes after its decision on the events the host's detection saw.
bool FailoverManager::firmware_left_failure_to_host(int xpu) {
  fabric::FirmwareReport fw = board_.report();
  return fw.armed_xpu == xpu && fw.failovers == firmware_failovers_;
}

void FailoverManager::report_links_down(FailoverRecord& rec, const std::vector<int>& links) {
  std::vector<std::string> down;
  auto st = board_.link_status();  // the reason too: a wrong peer is named as such
  for (int l : links) {
    const auto& s = st[static_cast<size_t>(l)];
    if (s.state == LinkState::Active) continue;
    if (s.reason == link::Reason::WrongPeer)
      rec.problems.push_back(fmt::format("link {} trained to the wrong peer and is held Disabled (WrongPeer): a swapped fibre "
                                         "or a misrouted circuit; it carries no traffic",
                                         l));
    else
      down.push_back(fmt::format("{} ({}, {})", l, link::to_string(s.state), link::to_string(s.reason)));
  }
  if (!down.empty()) rec.problems.push_back(fmt::format("after the failover, links {} are not Active", fmt::join(down, ", ")));
}

void FailoverManager::reconnect(FailoverRecord& rec) {
  // A restarted host: it knows what it wanted (the journal: placement_, map_) but nothing of the
  // board's present state. It reads the controller's generation and map and reconciles.
  report::Timeline& t = rec.timeline;
  const double back_ns = static_cast<double>(board_.clock().now_ns());
  auto st = board_.link_status();
  for (size_t i = 0; i < st.size(); ++i) {
    link_state_[i] = st[i].state;
    link_down_since_[i] = st[i].state == LinkState::Active ? -1 : back_ns;
  }
  bool safe = board_.controller_safe();
  if (safe) board_.clear_safe();
  uint32_t gen_before = board_.active_generation();
  bool same = active_map_is(map_);
  if (!same) {
    // A tenant XPU that died while the host was away keeps this commit from verifying: found and
    // taken out here, it is the next failover.
    FwStatus s = commit_live(map_, rec);
    if (s != FwStatus::Ok) rec.problems.push_back(fmt::format("reconciling: the firmware answered {}", mailbox::describe(s)));
    // The attempts verify refused before this commit are behind us.
    handover_ns_ = last_commit_ns_;
  }
  if (cfg_.watchdog_ns) board_.enable_watchdog(watchdog_cycles());
  std::vector<int> links = circuit_links(map_);
  second_failure_.reset();
  if (!wait_links_up(links, cfg_.link_up_timeout_ns, true)) report_links_down(rec, links);
  t.notes.push_back(fmt::format("back after {} us: controller {}, generation {}, map {}; {}", (back_ns - current_.decided_ns) / 1000,
                                safe ? "in its safe state (watchdog expired), cleared" : "not in its safe state", gen_before,
                                same ? "as intended" : "not as intended", same ? "nothing to redo" : "circuits placed again"));
  reconciled_ = Reconcile{back_ns, safe, !same};
  finish(rec, true);
}

void FailoverManager::finish(FailoverRecord& rec, bool reconciled) {
  report::Timeline& t = rec.timeline;
  const Detection& det = current_.det;
  const int spare = current_.spare;
  const std::vector<int> links = circuit_links(map_);
  const double all_up_seen_ns = static_cast<double>(board_.clock().now_ns());
  fabric::FirmwareReport fw = board_.report();
  const double confirmed_ns = static_cast<double>(board_.clock().now_ns());
  if (fw.active_generation != board_.active_generation())
    rec.problems.push_back(fmt::format("the firmware reports generation {}, the controller {}", fw.active_generation,
                                       board_.active_generation()));
  if (rec.fast_path && !reconciled && (fw.last_failed != det.xpu || fw.last_spare != spare))
    rec.problems.push_back(fmt::format("the firmware's last failover was XPU {} to {}, not {} to {}", fw.last_failed,
                                       fw.last_spare, det.xpu, spare));
  // The firmware commits its pre-armed backup on its own; only ever for an XPU that died: this
  // one, or a second one that died before the host's commit disarmed the backup (then it is the
  // pending failover, and the host's placement of this one has replaced the backup's map).
  bool other_died = (pending_ && pending_->xpu == fw.last_failed) ||
                    std::find(failed_.begin(), failed_.end(), fw.last_failed) != failed_.end();
  if (fw.failovers > firmware_failovers_ && fw.last_failed != det.xpu && !other_died)
    if (auto d = failed_xpu_now(); d && d->xpu == fw.last_failed) other_died = true;
  if (fw.failovers > firmware_failovers_ && fw.last_failed != det.xpu && other_died)
    t.notes.push_back(fmt::format("XPU {} died too, before the host's commit disarmed its backup: the firmware committed "
                                  "that backup, and the host's placement for XPU {} then replaced it",
                                  fw.last_failed, det.xpu));
  if (fw.failovers > firmware_failovers_ && fw.last_failed != det.xpu && !other_died)
    rec.problems.push_back(fmt::format("the firmware committed XPU {}'s pre-armed backup, but XPU {} is the one that failed",
                                       fw.last_failed, det.xpu));
  firmware_failovers_ = fw.failovers;
  generation_ = fw.active_generation;

  // The hardware phases, from the controller's events (the emulator's copy) and the link layers:
  // those of the first commit after the detection that verified (an earlier one may have rolled
  // back; a later one only isolated a second failed XPU).
  take_events(0);  // what is still queued: the circuits may already have been up
  const double from = reconciled ? reconciled_.back_ns : det.detect_ns;
  std::optional<uint32_t> landed;
  for (const auto& e : log_)
    if (e.kind == EmuEvent::Controller && static_cast<double>(e.time_ns) >= from &&
        static_cast<mxtb::ocs::Event>(e.a) == mxtb::ocs::Event::VerifyPass) {
      landed = e.data;
      break;
    }
  double commit_ns = -1, program_ns = -1, settle_ns = -1, verify_ns = -1;
  for (const auto& e : log_) {
    if (!landed || e.kind != EmuEvent::Controller || static_cast<double>(e.time_ns) < from || e.data != *landed) continue;
    auto type = static_cast<mxtb::ocs::Event>(e.a);
    double at = static_cast<double>(e.time_ns);
    if (type == mxtb::ocs::Event::CommitStart) commit_ns = at;
    if (type == mxtb::ocs::Event::ProgramDone) program_ns = at;
    if (type == mxtb::ocs::Event::SettleDone) settle_ns = at;
    if (type == mxtb::ocs::Event::VerifyPass) verify_ns = at;
  }
  double trained_ns = -1;
  for (const auto& e : log_)
    if (e.kind == EmuEvent::LinkChange && static_cast<double>(e.time_ns) >= std::max({verify_ns, t.failure_ns, from}) &&
        static_cast<LinkState>(e.c) == LinkState::Active &&
        std::find(links.begin(), links.end(), static_cast<int>(e.a)) != links.end())
      trained_ns = std::max(trained_ns, static_cast<double>(e.time_ns));
  if (trained_ns < 0) trained_ns = all_up_seen_ns;  // nothing retrained after verify (a board: polled)

  auto phase_to = [&](const char* name, double end, const char* source, std::string detail) {
    double start = t.phases.empty() ? t.failure_ns : t.phases.back().end_ns;
    report::append_phase(t, name, std::max(0.0, end - start), source, std::move(detail));
  };
  phase_to("detect", det.detect_ns, "rtl", "the failed XPU's lasers go dark; the second of its circuits loses its link");
  if (reconciled) {
    if (!rec.fast_path) {
      phase_to("host_detect", det.noticed_ns, "host", "the manager sees the circuits down");
      phase_to("host_decide", std::max(current_.decided_ns, det.noticed_ns), "host", "spare choice and the new torus");
    }
    phase_to("host_away", reconciled_.back_ns, "host",
             fmt::format("the host is disconnected; the controller's watchdog ({} us) {}", cfg_.watchdog_ns / 1000.0,
                         reconciled_.was_safe ? "expired and dropped every circuit (safe state)" : "did not expire"));
    phase_to("reconcile", trained_ns, "host",
             fmt::format("the restarted host reads the generation and map{}{}, and waits for every circuit",
                         reconciled_.was_safe ? ", clears the safe state" : "",
                         reconciled_.replaced ? ", places its circuits again (routing, commit, settle, verify, train)" : ""));
  } else if (commit_ns >= 0 && verify_ns >= 0) {
    if (rec.fast_path) {
      phase_to("firmware", commit_ns, "firmware", "the firmware sees the link-down events and commits the pre-armed backup");
    } else {
      phase_to("host_detect", det.noticed_ns, "host",
               fmt::format("the manager sees the circuits down (it looks every {} us)", cfg_.poll_ns / 1000.0));
      phase_to("host_decide", std::max(current_.decided_ns, det.noticed_ns), "host",
               "spare choice and the new torus, host compute charged");
      phase_to("firmware", commit_ns, "firmware", "mailbox command (set port map), the firmware's routing and staging, then COMMIT");
    }
    phase_to("program", program_ns, "rtl", "the controller writes the changed switch elements");
    phase_to("settle", settle_ns, "rtl", "the elements settle (SETTLE_CYCLES)");
    phase_to("verify", verify_ns, "rtl", "photodiode check of every circuit");
  } else {
    phase_to("reconfigure", trained_ns, "firmware",
             fmt::format("firmware report: detect to commit {} us, commit to done {} us", fw.last_detect_to_commit_ns / 1000.0,
                         fw.last_commit_to_done_ns / 1000.0));
  }
  if (!reconciled) phase_to("train", trained_ns, "rtl", "the moved circuits' link layers retrain (identity checked) to Active");
  t.hardware_ns = t.phases.back().end_ns - t.failure_ns;
  phase_to("confirm", t.phases.back().end_ns + (confirmed_ns - std::min(trained_ns, all_up_seen_ns)), "host",
           "the manager sees every circuit Active and reads the firmware's report");
  // State restore: the failed XPU's state, its copy striped over its torus neighbours (the paging
  // engine's remote tier), put back on the spare over every circuit from them: with the spare in
  // the dead XPU's place those are all of the spare's lanes, so nothing needs steering.
  if (engine_) {
    std::vector<int> sources;
    int circuits = 0;
    for (int x : placement_.xpu_of_position)
      if (x != spare && circuits_between(x, spare) > 0) {
        sources.push_back(x);
        circuits += circuits_between(x, spare);
      }
    auto seq = static_cast<paging::SeqId>(det.xpu);
    paging::PageResult moved{};
    bool exact = true;
    {  // its time is charged below at the fabric's rate, not the host's memcpy
      moved = engine_->page_in(seq);
      size_t n = 0;
      const auto& shape = engine_->shape();
      for (size_t b = 0; b < state_blocks_ && exact; ++b)
        for (int l = 0; l < shape.layers && exact; ++l)
          for (paging::Kv kv : {paging::Kv::K, paging::Kv::V}) {
            const std::byte* p = engine_->chunk(seq, b, l, kv);
            for (size_t i = 0; i < shape.chunk_bytes(); ++i)
              if (p[i] != static_cast<std::byte>(pattern_byte(det.xpu, n++))) exact = false;
          }
    }
    if (!exact) rec.problems.push_back(fmt::format("XPU {}'s state came back different on the spare", det.xpu));
    if (!circuits) rec.problems.push_back("no circuit between the spare and a peer holding the state copy");
    t.figures["restore_circuits"] = circuits;
    t.figures["state_bytes"] = static_cast<double>(cfg_.state_bytes_per_xpu);
    t.figures["lane_gbps"] = cfg_.lane_gbps;
    const std::string paged = fmt::format("the paging engine (CPU backend) moved {:.1f} MiB of it for real, bit-exact: {}",
                                          static_cast<double>(moved.bytes_moved) / (1 << 20), exact ? "yes" : "NO");
    const double gib = static_cast<double>(cfg_.state_bytes_per_xpu) / (1 << 30);
    // With the tenant's job on the emulator, a scaled-down part goes over the RTL links and its
    // payload efficiency (what the link layer leaves of the lanes' rate) is measured.
    std::optional<fabric::EmuEventRecord> rtl;
    if (cfg_.job && board_.is_emulator() && circuits && job_ring_alive()) {
      const Awaited a = restore_over_rtl(sources, spare);
      rtl = a.event;
      if (a.failed)
        t.notes.push_back(fmt::format("the state restore over the RTL links was interrupted: XPU {} failed{}; its duration "
                                      "is charged at the lanes' raw rate, nothing measured it",
                                      *a.failed,
                                      std::find(sources.begin(), sources.end(), *a.failed) != sources.end()
                                          ? fmt::format(" (a source: its stripe of XPU {}'s state copy is gone with it)", det.xpu)
                                          : std::string()));
      else if (!a.event)
        rec.problems.push_back(fmt::format("the state restore over the RTL links (XPUs {} to spare {}) did not end within {} us",
                                           fmt::join(sources, ", "), spare, cfg_.job->first_timeout_ns / 1000.0));
    }
    if (rtl && static_cast<emu::JobOutcome>(rtl->a) == emu::JobOutcome::Verified && rtl->data > 0) {
      const double efficiency = static_cast<double>(cfg_.job->restore_rtl_bytes) /
                                (static_cast<double>(rtl->b) * static_cast<double>(rtl->data) * 8.0);
      const double ns = static_cast<double>(cfg_.state_bytes_per_xpu) / (circuits * cfg_.lane_gbps / 8 * efficiency);
      t.figures["restore_efficiency"] = efficiency;
      t.figures["restore_efficiency_measured"] = 1;
      report::append_phase(
          t, "state_restore", ns, "modeled",
          fmt::format("{:.2f} GiB from XPUs {} over the spare's {} circuits x {} Gb/s x {:.3f} payload efficiency, measured "
                      "on the RTL links: {} KiB over those circuits in {:.2f} us ({} cycles), every word checked; {}",
                      gib, fmt::join(sources, ", "), circuits, cfg_.lane_gbps, efficiency, cfg_.job->restore_rtl_bytes / 1024,
                      static_cast<double>(rtl->data) * 1000.0 / cfg_.shape_clock_mhz / 1000.0, rtl->data, paged));
    } else {
      if (rtl && static_cast<emu::JobOutcome>(rtl->a) == emu::JobOutcome::Wrong)
        rec.problems.push_back("the state restore over the RTL links delivered wrong words");
      else if (rtl)
        t.notes.push_back(fmt::format("the state restore over the RTL links was aborted ({})",
                                      emu::to_string(static_cast<emu::JobReason>(rtl->c))));
      const double ns = circuits ? static_cast<double>(cfg_.state_bytes_per_xpu) / (circuits * cfg_.lane_gbps / 8) : 0;
      t.figures["restore_efficiency"] = 1;  // the lanes' raw rate: nothing measured it
      t.figures["restore_efficiency_measured"] = 0;
      report::append_phase(t, "state_restore", ns, "modeled",
                           fmt::format("{:.2f} GiB from XPUs {} over the spare's {} circuit(s) x {} Gb/s; {}", gib,
                                       fmt::join(sources, ", "), circuits, cfg_.lane_gbps, paged));
    }
    // The spare now holds the state; its copy on a peer is refreshed when the tenant resumes.
  }
  // The communicator: the ranks' own re-form with a real library, measured, where the host has
  // them; else the scenario's constant.
  bool reformed = false;
  std::optional<report::Alternative> alternative;
  if (ranks_ && job_ring_alive()) {
    const auto ring = protocol::ring_xpus(placement_);
    const std::vector<int> old_ring = ranks_->ring();
    // A hot spare's re-form needs no state: it runs beside the restore (the state streams over
    // the fabric into the spare's memory while its rank joins), so only what outlasts the
    // restore is on the critical path. A relaunch starts once every rank has stopped.
    // Either begins once the survivors have stopped (ranks_abort) and the new ring is known (the
    // restore's start).
    const report::TimelinePhase* restore = report::find_phase(t, "state_restore");
    const double restore_start = restore ? restore->start_ns : t.failure_ns + t.total_ns;
    const double restore_end = restore ? restore->end_ns : restore_start;
    auto placed = [&](const comm::Reform& r) {
      return comm::place_reform(r.restart, t.failure_ns + r.abort_s * 1e9, restore_start, restore_end, r.total_s() * 1e9);
    };
    try {
      const comm::Reform r = ranks_->reform(ring);
      const bool relaunch = r.restart == comm::Restart::Relaunch;
      const double reform_ns = r.total_s() * 1e9;
      const comm::ReformPlacement at = placed(r);
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
                                 r.library, comm::to_string(r.restart), r.form_s * 1e3, r.first_s * 1e3, (restore_end - restore_start) / 1e6,
                                 on_path_ns / 1e6, reform_ns / 1e6));
      // The ranks' own collective failed beside the hardware's failover: laid from the failure,
      // as the XPU's death takes its rank's process with it.
      report::add_beside(t, "ranks_abort", t.failure_ns, t.failure_ns + r.abort_s * 1e9, "measured",
                         fmt::format("{}: the rank on XPU {} killed with its XPU and the survivors' communicator revoked by "
                                     "the host; wall time to the last survivor's step loop stopped (first: {})",
                                     r.library, det.xpu, r.abort_reason));
      t.notes.push_back(fmt::format("the job's ranks ({}): the new communicator (generation {}) on XPUs {}", r.library,
                                    ranks_->generation(), fmt::join(ring, " ")));
      if (r.wrong) rec.problems.push_back(fmt::format("the re-formed communicator's all-reduce: {} elements wrong", r.wrong));
      reformed = true;
    } catch (const comm::CommError& e) {
      rec.problems.push_back(fmt::format("the communicator's re-form failed: {}", e.what()));
    }
    // The other strategy on a group of its own, the same XPUs and the same death, in this run.
    if (reformed && cfg_.compare_restart && !compared_restart_) {
      compared_restart_ = true;
      comm::RankGroupConfig alt = *cfg_.comm;
      alt.restart = *cfg_.compare_restart;
      alt.work_dir += std::string("/compare-") + comm::to_string(alt.restart);
      try {
        comm::RankGroup group(alt, old_ring, std::vector<int>{spare});
        group.kill(det.xpu);
        const comm::Reform r = group.reform(ring);
        if (r.wrong) throw comm::CommError(fmt::format("its first all-reduce had {} elements wrong", r.wrong));
        alternative = report::Alternative{
            comm::to_string(r.restart), "communicator_reform", placed(r).on_path_ns, 0, "measured",
            fmt::format("{} {} measured in this run on a group of its own: stop {:.1f} ms, start and checkpoints {:.1f} ms, "
                        "rendezvous {:.1f} ms, first all-reduce {:.1f} ms",
                        r.library, comm::to_string(r.restart), r.stop_s * 1e3, r.start_s * 1e3, r.form_s * 1e3,
                        r.first_s * 1e3)};
      } catch (const comm::CommError& e) {
        rec.problems.push_back(fmt::format("the {} strategy measured for comparison failed: {}",
                                           comm::to_string(alt.restart), e.what()));
      }
    }
  } else if (ranks_) {
    t.notes.push_back("the ranks' communicator is not formed again yet: another XPU of the ring has failed");
  }
  for (const auto& m : cfg_.modeled) {
    if (reformed && m.name == "communicator_reinit") {
      t.notes.push_back(fmt::format("communicator_reinit ({} ms, modeled) replaced by communicator_reform, measured",
                                    m.duration_ms));
      continue;
    }
    report::append_phase(t, m.name, m.duration_ms * 1e6, "modeled", m.doc);
  }

  // The job's communicator formed again with the spare; the path ends at its first verified
  // collective on the new ring.
  if (cfg_.job) {
    // The collective in flight fails on its own (the XPUs' link layers), beside the failover.
    for (const auto& e : log_)
      if (e.kind == EmuEvent::Job && static_cast<double>(e.time_ns) >= t.failure_ns &&
          static_cast<emu::JobOutcome>(e.a) == emu::JobOutcome::Aborted) {
        report::add_beside(t, "collective_abort", t.failure_ns, static_cast<double>(e.time_ns), "rtl",
                           fmt::format("the job's collective in flight (#{}) aborted: {}", e.data,
                                       emu::to_string(static_cast<emu::JobReason>(e.b))));
        break;
      }
    if (!job_ring_alive()) {
      t.notes.push_back("the job is not formed again yet: another XPU of its ring has failed");
    } else {
      JobWait w = form_job_and_wait();
      const auto ring = protocol::ring_xpus(placement_);
      if (w.verified) {
        const fabric::JobStatus st = board_.job_status();
        report::append_phase(t, "first_collective", static_cast<double>(w.verified->time_ns) - w.formed_ns, "rtl",
                             fmt::format("the job formed again on XPUs {}: its first {} of {} B per rank over the RTL links, "
                                         "every element verified ({} verified so far)",
                                         fmt::join(ring, " "), emu::to_string(cfg_.job->spec.op), cfg_.job->spec.bytes,
                                         st.verified));
      } else if (w.ended && static_cast<emu::JobOutcome>(w.ended->a) == emu::JobOutcome::Wrong) {
        rec.problems.push_back(fmt::format("the first collective on XPUs {} ended wrong ({})", fmt::join(ring, " "),
                                           emu::to_string(static_cast<emu::JobReason>(w.ended->b))));
      } else if (w.failed) {
        t.notes.push_back(fmt::format("the first collective on XPUs {} was interrupted: XPU {} failed", fmt::join(ring, " "),
                                      *w.failed));
      } else if (w.ended) {
        t.notes.push_back(fmt::format("the first collective on XPUs {} was interrupted: {}", fmt::join(ring, " "),
                                      emu::to_string(static_cast<emu::JobReason>(w.ended->b))));
      } else {
        rec.problems.push_back(fmt::format("no collective on XPUs {} ended within {} us of forming the job again",
                                           fmt::join(ring, " "), cfg_.job->first_timeout_ns / 1000.0));
      }
    }
  }

  // Resume: traffic flows over the new circuits; re-arm the next backup.
  const double rearm0 = static_cast<double>(board_.clock().now_ns());
  arm_next_backup();
  const double rearm1 = static_cast<double>(board_.clock().now_ns());
  // After the path: the tenant already runs; the next backup is armed beside it.
  const double path_end = t.failure_ns + t.total_ns;
  report::add_beside(t, "rearm", path_end, path_end + (rearm1 - rearm0), "host",
                     armed_xpu_ ? fmt::format("after the path: XPU {}'s backup (spare {}) routed and staged through the mailbox",
                                              *armed_xpu_, armed_spare_)
                                : std::string("nothing to arm: no spare left, the next failure runs degraded"));
  if (!armed_xpu_) t.notes.push_back("no backup armed after this failover: no spare left");
  if (alternative) {
    if (const report::TimelinePhase* reform = report::find_phase(t, alternative->phase)) {
      alternative->total_ns = t.total_ns - reform->duration_ns() + alternative->phase_ns;
      t.alternatives.push_back(*alternative);
    }
  }
}

bool FailoverManager::job_ring_alive() const {
  for (int x : placement_.xpu_of_position) {
    if (std::find(failed_.begin(), failed_.end(), x) != failed_.end()) return false;
    if (pending_ && pending_->xpu == x) return false;
  }
  return true;
}

FailoverManager::Awaited FailoverManager::await_event(size_t seen, EmuEvent kind, double from_ns,
                                                     const std::function<bool(const fabric::EmuEventRecord&)>& ends) {
  Awaited w;
  const uint64_t until = board_.clock().now_ns() + cfg_.job->first_timeout_ns;
  for (size_t i = seen;;) {
    for (; i < log_.size(); ++i)
      if (log_[i].kind == kind && static_cast<double>(log_[i].time_ns) >= from_ns && ends(log_[i])) {
        w.event = log_[i];
        return w;
      }
    const uint64_t now = board_.clock().now_ns();
    if (now >= until) return w;
    take_events(std::min<uint64_t>(until - now, cfg_.poll_ns));
    // What waits for a dead XPU never comes: the failure is the next to handle, not a wait to sit out.
    if (!pending_)
      if (auto d = failed_xpu_now()) {
        pending_ = d;
        w.failed = d->xpu;
        return w;
      }
  }
}

FailoverManager::Awaited FailoverManager::restore_over_rtl(const std::vector<int>& sources, int spare) {
  const size_t seen = log_.size();
  const double started = static_cast<double>(board_.clock().now_ns());
  board_.start_restore(sources, spare, cfg_.job->restore_rtl_bytes);
  // An aborted restore is retried by the emulated XPUs; anything else ends it.
  return await_event(seen, EmuEvent::Restore, started, [](const fabric::EmuEventRecord& e) {
           return static_cast<emu::JobOutcome>(e.a) != emu::JobOutcome::Aborted;
         });
}

FailoverManager::JobWait FailoverManager::form_job_and_wait() {
  JobWait w;
  const size_t seen = log_.size();
  w.formed_ns = static_cast<double>(board_.clock().now_ns());
  board_.form_job(protocol::ring_xpus(placement_), cfg_.job->spec);
  job_formed_ns_ = w.formed_ns;
  // Aborted because it was formed again is this form's own doing; anything else ends the wait.
  const Awaited a = await_event(seen, EmuEvent::Job, w.formed_ns, [](const fabric::EmuEventRecord& e) {
    return !(static_cast<emu::JobOutcome>(e.a) == emu::JobOutcome::Aborted &&
             static_cast<emu::JobReason>(e.b) == emu::JobReason::Reformed);
  });
  w.failed = a.failed;
  if (a.event && static_cast<emu::JobOutcome>(a.event->a) == emu::JobOutcome::Verified) w.verified = a.event;
  else w.ended = a.event;
  return w;
}

std::vector<std::string> FailoverManager::check_job() {
  std::vector<std::string> p;
  if (!cfg_.job || !board_.is_emulator()) return p;
  for (const auto& e : log_)
    if (e.kind == EmuEvent::Job && static_cast<emu::JobOutcome>(e.a) == emu::JobOutcome::Wrong)
      p.push_back(fmt::format("the job's collective #{} ended wrong at {:.1f} us: {}", e.data, e.time_ns / 1000.0,
                              emu::to_string(static_cast<emu::JobReason>(e.b))));
  const fabric::JobStatus st = board_.job_status();
  if (st.wrong && p.empty()) p.push_back(fmt::format("JOB_WRONG is {}", st.wrong));
  if (!job_ring_alive()) return p;  // degraded: the job waits for a ring it cannot have
  // The tenant is whole: its job must be running verified collectives on the ring as placed.
  auto verified_since_form = [&] {
    return std::any_of(log_.begin(), log_.end(), [&](const fabric::EmuEventRecord& e) {
      return e.kind == EmuEvent::Job && static_cast<double>(e.time_ns) >= job_formed_ns_ &&
             static_cast<emu::JobOutcome>(e.a) == emu::JobOutcome::Verified;
    });
  };
  const uint64_t until = board_.clock().now_ns() + cfg_.job->first_timeout_ns;
  while (!verified_since_form() && board_.clock().now_ns() < until) take_events(cfg_.poll_ns);
  if (!verified_since_form())
    p.push_back(fmt::format("no verified collective on XPUs {} since the job was formed at {:.1f} us",
                            fmt::join(protocol::ring_xpus(placement_), " "), job_formed_ns_ / 1000.0));
  return p;
}

bool FailoverManager::rollback_done_since(double t_ns) const {
  for (auto it = log_.rbegin(); it != log_.rend() && static_cast<double>(it->time_ns) >= t_ns; ++it)
    if (it->kind == EmuEvent::Controller) {
      auto type = static_cast<mxtb::ocs::Event>(it->a);
      if (type == mxtb::ocs::Event::RollbackDone || type == mxtb::ocs::Event::CommitRejected) return true;
    }
  return false;
}

bool FailoverManager::commit_failed_since(double t_ns) const {
  for (auto it = log_.rbegin(); it != log_.rend() && static_cast<double>(it->time_ns) >= t_ns; ++it)
    if (it->kind == EmuEvent::Controller) {
      auto type = static_cast<mxtb::ocs::Event>(it->a);
      if (type == mxtb::ocs::Event::VerifyFail || type == mxtb::ocs::Event::RollbackDone ||
          type == mxtb::ocs::Event::CommitRejected)
        return true;
    }
  return false;
}

bool FailoverManager::active_map_is(const protocol::FabricMap& m) {
  return board_.active_map(cfg_.shape.mesh_ports) == m.port_target;
}

std::vector<std::string> FailoverManager::check_fabric() {
  std::vector<std::string> p;
  uint32_t gen = board_.active_generation();
  if (gen != generation_) p.push_back(fmt::format("controller generation {}, the manager expects {}", gen, generation_));
  auto active = board_.active_map(cfg_.shape.mesh_ports);
  for (int i = 0; i < cfg_.shape.mesh_ports; ++i) {
    int target = active[static_cast<size_t>(i)];
    if (target != map_.port_target[static_cast<size_t>(i)])
      p.push_back(fmt::format("ACTIVE_MAP[{}] is {}, the manager expects {}", i, target, map_.port_target[static_cast<size_t>(i)]));
  }
  auto st = board_.link_status();
  const int lanes = cfg_.shape.lanes_per_xpu;
  for (int l : circuit_links(map_)) {
    int peer = map_.port_target[static_cast<size_t>(l)] / lanes;
    bool dead = std::find(failed_.begin(), failed_.end(), l / lanes) != failed_.end() ||
                std::find(failed_.begin(), failed_.end(), peer) != failed_.end();
    if (!dead && st[static_cast<size_t>(l)].state != LinkState::Active)
      p.push_back(fmt::format("link {} is {} ({}){}", l, link::to_string(st[static_cast<size_t>(l)].state),
                              link::to_string(st[static_cast<size_t>(l)].reason),
                              st[static_cast<size_t>(l)].reason == link::Reason::WrongPeer ? ": it trained to the wrong peer" : ""));
  }
  if (board_.is_emulator()) {
    uint32_t errors = board_.scoreboard_errors();
    if (errors) p.push_back(fmt::format("{} words lost, duplicated or corrupted on living XPUs' links", errors));
    if (board_.messages_delivered() <= messages_at_bring_up_) p.push_back("no traffic delivered since the bring-up");
    for (auto& line : check_job()) p.push_back(std::move(line));
  }
  return p;
}

}  // namespace mxtb::host::failover
