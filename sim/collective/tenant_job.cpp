#include "sim/collective/tenant_job.h"

#include "sim/server/server_sim.h"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

namespace mxtb::sim {

using link::LinkState;

namespace {

bool training(LinkState s) {
  return s == LinkState::BlockLock || s == LinkState::Ts1 || s == LinkState::Ts2 || s == LinkState::CreditInit;
}

// The elements of a rank's buffer: whole lane words for every rank (nccl-tests rounds a size to
// whole elements per rank the same way).
uint64_t job_count(const TenantJobSpec& spec, int ranks) {
  const uint64_t per_word = 8 / element_bytes(spec.type);
  const uint64_t unit = per_word * static_cast<uint64_t>(ranks);
  return spec.bytes / element_bytes(spec.type) / unit * unit;
}

}  // namespace

TenantJob::TenantJob(TenantJobConfig cfg, const protocol::ServerShape& shape) : cfg_(std::move(cfg)), shape_(shape) {
  const int links = shape_.links();
  owned_.assign(static_cast<size_t>(links), 0);
  for (int x : cfg_.xpus) {
    if (x < 0 || x >= shape_.xpus)
      throw std::invalid_argument(fmt::format("job XPU {} is not an XPU of the server (0..{})", x, shape_.xpus - 1));
    for (int l = 0; l < shape_.lanes_per_xpu; ++l) owned_[static_cast<size_t>(x * shape_.lanes_per_xpu + l)] = 1;
  }
  planned_peer_.assign(static_cast<size_t>(links), -1);
  out_since_.assign(static_cast<size_t>(links), 0);
  terminator_to_.assign(static_cast<size_t>(links), -1);
}

TenantJob::~TenantJob() = default;

std::string TenantJob::check(const std::vector<int>& ring, const TenantJobSpec& spec) const {
  const int n = static_cast<int>(ring.size());
  if (n < 2) return fmt::format("a job's ring needs at least 2 XPUs, not {}", n);
  for (int x : ring) {
    if (x < 0 || x >= shape_.xpus) return fmt::format("ring XPU {} is not an XPU of the server (0..{})", x, shape_.xpus - 1);
    if (!owned_[static_cast<size_t>(x * shape_.lanes_per_xpu)])
      return fmt::format("XPU {} does not run the job (its lanes carry traffic)", x);
    if (std::count(ring.begin(), ring.end(), x) > 1) return fmt::format("XPU {} is twice in the ring", x);
  }
  // Every ring (at most one per circuit and direction) must get at least one lane word per chunk.
  const uint64_t most_rings = 2ull * static_cast<uint64_t>(shape_.lanes_per_xpu);
  const uint64_t per_word = 8 / element_bytes(spec.type);
  const uint64_t count = job_count(spec, n);
  if (count / static_cast<uint64_t>(n) / per_word < most_rings)
    return fmt::format("{} bytes per rank is too small for {} ranks: at least {} bytes", spec.bytes, n,
                       most_rings * per_word * element_bytes(spec.type) * static_cast<uint64_t>(n));
  if (spec.bytes > (64ull << 20)) return fmt::format("{} bytes per rank is more than the job's 64 MiB", spec.bytes);
  return "";
}

void TenantJob::form(const std::vector<int>& ring, const TenantJobSpec& spec) {
  if (std::string why = check(ring, spec); !why.empty()) throw std::invalid_argument(why);
  if (task() && view_) end(*view_, JobOutcome::Aborted, JobReason::Reformed, "the job was formed again");
  restore_.reset();
  ring_ = ring;
  spec_ = spec;
  state_ = JobState::Forming;
  next_start_cycle_ = 0;
}

void TenantJob::stop() {
  if (task() && view_) end(*view_, JobOutcome::Aborted, JobReason::Stopped, "the job was stopped");
  restore_.reset();
  state_ = JobState::Idle;
}

uint32_t TenantJob::rings_running() const {
  if (transfer_) return static_cast<uint32_t>(transfer_->spec().circuits.size());
  return current_ ? static_cast<uint32_t>(current_->spec().rings.size()) : 0;
}

bool TenantJob::holds(int xpu) const {
  if (std::find(ring_.begin(), ring_.end(), xpu) != ring_.end()) return true;
  return restore_ && (restore_->dest == xpu || std::find(restore_->sources.begin(), restore_->sources.end(), xpu) != restore_->sources.end());
}

bool TenantJob::busy_on(int link) const {
  return planned_peer_[static_cast<size_t>(link)] >= 0 || terminator_to_[static_cast<size_t>(link)] >= 0;
}

std::string TenantJob::check_restore(const std::vector<int>& sources, int dest, uint64_t bytes) const {
  if (dest < 0 || dest >= shape_.xpus) return fmt::format("restore target XPU {} is not an XPU of the server (0..{})", dest, shape_.xpus - 1);
  if (!owned_[static_cast<size_t>(dest * shape_.lanes_per_xpu)]) return fmt::format("XPU {} does not run the job", dest);
  if (sources.empty()) return "a restore needs at least one XPU holding the state";
  for (int x : sources) {
    if (x < 0 || x >= shape_.xpus) return fmt::format("restore source XPU {} is not an XPU of the server (0..{})", x, shape_.xpus - 1);
    if (!owned_[static_cast<size_t>(x * shape_.lanes_per_xpu)]) return fmt::format("XPU {} does not run the job", x);
    if (x == dest) return fmt::format("XPU {} cannot restore onto itself", x);
  }
  if (bytes == 0 || bytes % 8 || bytes > (256ull << 20))
    return fmt::format("{} bytes of state: not a positive multiple of 8 of at most 256 MiB", bytes);
  return "";
}

void TenantJob::restore(const std::vector<int>& sources, int dest, uint64_t bytes, uint64_t seed) {
  if (std::string why = check_restore(sources, dest, bytes); !why.empty()) throw std::invalid_argument(why);
  if (task() && view_) end(*view_, JobOutcome::Aborted, JobReason::Reformed, "a state restore was asked for");
  restore_ = PendingRestore{sources, dest, bytes, seed};
  state_ = JobState::Restoring;
}

LaneProgram* TenantJob::task() const {
  if (current_) return current_.get();
  return transfer_.get();
}

bool TenantJob::owns(int link) const { return owned_[static_cast<size_t>(link)] != 0; }

LaneProgram::Drive TenantJob::drive(int link) {
  if (terminator_to_[static_cast<size_t>(link)] >= 0) return {true, 0, true};
  if (LaneProgram* t = task(); t && planned_peer_[static_cast<size_t>(link)] >= 0) return t->drive(link);
  return {false, 0, false};
}

void TenantJob::fire(int link) {
  if (terminator_to_[static_cast<size_t>(link)] >= 0) {
    terminator_to_[static_cast<size_t>(link)] = -1;
    return;
  }
  last_progress_cycle_ = view_ ? view_->cycle() : last_progress_cycle_;
  task()->fire(link);
}

void TenantJob::deliver(int link, uint64_t data, bool last, uint64_t cycle) {
  last_rx_cycle_ = cycle;
  if (LaneProgram* t = task(); t && planned_peer_[static_cast<size_t>(link)] >= 0 && t->owns(link)) {
    last_progress_cycle_ = cycle;
    t->deliver(link, data, last, cycle);
    return;
  }
  ++stale_words_;  // a word of an aborted collective, or an end-of-message word closing one
}

bool TenantJob::wants_attention() const { return (current_ && current_->done()) || (transfer_ && transfer_->done()); }

uint64_t TenantJob::messages_delivered() const {
  const LaneProgram* t = task();
  return messages_done_ + (t ? t->messages_delivered() : 0);
}

void TenantJob::attach(ServerSim& sim) { view_ = &sim; }

void TenantJob::after_step(ServerSim& sim) { advance(sim); }

void TenantJob::advance(const LinkView& sim) {
  view_ = &sim;
  // An owed end-of-message word is dropped when its link has trained to someone else (the link
  // layer flushed what it held) or was disabled.
  for (size_t l = 0; l < terminator_to_.size(); ++l) {
    const int to = terminator_to_[l];
    if (to < 0) continue;
    const LinkState s = sim.link_state(static_cast<int>(l));
    const EndpointIdentity p = sim.link_peer(static_cast<int>(l));
    if (s == LinkState::Disabled || (s == LinkState::Active && p.xpu * shape_.lanes_per_xpu + p.lane != to)) terminator_to_[l] = -1;
  }
  if (task()) watch_running(sim);
  if (!task() && (state_ == JobState::Forming || state_ == JobState::Restoring)) try_start(sim);
}

void TenantJob::try_start(const LinkView& sim) {
  const uint64_t now = sim.cycle();
  const int lanes = shape_.lanes_per_xpu;
  // The circuits among the ring's XPUs, as their link layers see them: both ends Active and each
  // trained to the other. Looked at every step, so that "up since" restarts whenever one changes
  // or a lane of the ring's XPUs is half-way through training (about to be Active).
  std::vector<int> port_target(static_cast<size_t>(shape_.mesh_ports), -1);
  bool settling = false, owed = false;
  std::vector<int> xpus = ring_;
  if (restore_) {
    xpus = restore_->sources;
    xpus.push_back(restore_->dest);
  }
  for (int x : xpus)
    for (int i = 0; i < lanes; ++i) {
      const int l = x * lanes + i;
      const LinkState s = sim.link_state(l);
      if (training(s)) settling = true;
      if (s != LinkState::Active) continue;
      const EndpointIdentity p = sim.link_peer(l);
      const int far = p.xpu * lanes + p.lane;
      if (p.xpu >= shape_.xpus || p.lane >= lanes || std::find(xpus.begin(), xpus.end(), p.xpu) == xpus.end()) continue;
      const EndpointIdentity back = sim.link_peer(far);
      if (sim.link_state(far) != LinkState::Active || back.xpu * lanes + back.lane != l) continue;
      if (terminator_to_[static_cast<size_t>(l)] >= 0) owed = true;  // a half message still to close on it
      port_target[static_cast<size_t>(l)] = far;
    }
  if (settling) port_target.clear();  // never equal to a settled set
  if (port_target != up_circuits_) {
    up_circuits_ = port_target;
    up_since_cycle_ = now;
  }
  if (settling || owed || now < next_start_cycle_) return;
  if (quiet_needed_ && (now - last_rx_cycle_ < cfg_.quiet_cycles || now - up_since_cycle_ < cfg_.quiet_cycles)) return;
  if (restore_) {
    // Every source must reach the target: a source without a circuit is not up yet.
    TransferSpec ts;
    ts.circuits = transfer_circuits(shape_, port_target, restore_->sources, restore_->dest);
    for (int x : restore_->sources)
      if (std::none_of(ts.circuits.begin(), ts.circuits.end(), [&](const RingHop& h) { return h.tx_link / lanes == x; }))
        return;
    ts.dest = restore_->dest;
    ts.bytes = restore_->bytes;
    ts.seed = restore_->seed;
    transfer_ = std::make_unique<StateTransfer>(ts, shape_);
    transfer_->start(now);
    watch_circuits(ts.circuits, now);
    return;
  }
  std::vector<Ring> rings;
  try {
    rings = ring_plan(shape_, port_target, ring_, true);
  } catch (const std::invalid_argument&) {
    return;  // a hop without a circuit Active: not yet (or never, until the job is formed again)
  }
  CollectiveSpec cs;
  cs.op = spec_.op;
  cs.type = spec_.type;
  cs.ranks = ring_;
  cs.rings = std::move(rings);
  cs.count = job_count(spec_, static_cast<int>(ring_.size()));
  cs.seed = spec_.seed + seq_;  // every collective its own data
  current_ = std::make_unique<RingCollective>(cs, shape_);
  current_->start(now);
  std::vector<RingHop> hops;
  for (const Ring& r : cs.rings) hops.insert(hops.end(), r.hops.begin(), r.hops.end());
  watch_circuits(hops, now);
  state_ = JobState::Running;
}

void TenantJob::watch_circuits(const std::vector<RingHop>& circuits, uint64_t now) {
  std::fill(planned_peer_.begin(), planned_peer_.end(), -1);
  std::fill(out_since_.begin(), out_since_.end(), 0);
  for (const RingHop& h : circuits) {
    planned_peer_[static_cast<size_t>(h.tx_link)] = h.rx_link;
    planned_peer_[static_cast<size_t>(h.rx_link)] = h.tx_link;
  }
  quiet_needed_ = false;
  last_progress_cycle_ = now;
}

void TenantJob::watch_running(const LinkView& sim) {
  const uint64_t now = sim.cycle();
  if (transfer_ && transfer_->done()) {
    if (transfer_->wrong())
      end(sim, JobOutcome::Wrong, JobReason::Mismatch,
          fmt::format("{} state word(s) wrong: {}", transfer_->wrong(), transfer_->first_error()));
    else
      end(sim, JobOutcome::Verified, JobReason::None, "");
    return;
  }
  if (current_ && current_->done()) {
    const uint64_t bad = current_->wrong();
    if (bad || current_->framing_errors())
      end(sim, JobOutcome::Wrong, JobReason::Mismatch,
          fmt::format("{} element(s) wrong, {} framing error(s){}", bad, current_->framing_errors(),
                      current_->first_error().empty() ? "" : ": " + current_->first_error()));
    else
      end(sim, JobOutcome::Verified, JobReason::None, "");
    next_start_cycle_ = now + cfg_.gap_cycles;
    return;
  }
  const int lanes = shape_.lanes_per_xpu;
  bool all_active = true;
  for (int l = 0; l < shape_.links(); ++l) {
    const int want = planned_peer_[static_cast<size_t>(l)];
    if (want < 0) continue;
    const LinkState s = sim.link_state(l);
    if (s == LinkState::Active) {
      const EndpointIdentity p = sim.link_peer(l);
      if (p.xpu * lanes + p.lane != want)
        return end(sim, JobOutcome::Aborted, JobReason::PeerChanged,
                   fmt::format("link {} trained to XPU {} lane {}, not to link {}", l, p.xpu, p.lane, want));
      out_since_[static_cast<size_t>(l)] = 0;
      continue;
    }
    all_active = false;
    auto& since = out_since_[static_cast<size_t>(l)];
    if (!since) since = std::max<uint64_t>(now, 1);
    if (s == LinkState::Disabled)
      return end(sim, JobOutcome::Aborted, JobReason::PeerChanged, fmt::format("link {} was disabled ({})", l,
                                                                                 link::to_string(s)));
    if (now - since >= cfg_.link_loss_cycles)
      return end(sim, JobOutcome::Aborted, JobReason::LinkLost,
                 fmt::format("link {} (XPU {} lane {}) out of Active for {} cycles", l, l / lanes, l % lanes,
                             cfg_.link_loss_cycles));
  }
  if (all_active && now - last_progress_cycle_ >= cfg_.stall_cycles)
    end(sim, JobOutcome::Wrong, JobReason::Stalled,
        fmt::format("no word moved for {} cycles with every circuit Active: a word was lost", now - last_progress_cycle_));
}

uint64_t TenantJob::wake_cycle() const {
  uint64_t wake = UINT64_MAX;
  if (task()) {
    // A circuit's loss wait expiring, or the stall wait.
    for (size_t l = 0; l < out_since_.size(); ++l)
      if (planned_peer_[l] >= 0 && out_since_[l]) wake = std::min(wake, out_since_[l] + cfg_.link_loss_cycles);
    return std::min(wake, last_progress_cycle_ + cfg_.stall_cycles);
  }
  if (state_ == JobState::Forming || state_ == JobState::Restoring) {
    wake = next_start_cycle_;
    if (quiet_needed_) wake = std::max({wake, last_rx_cycle_ + cfg_.quiet_cycles, up_since_cycle_ + cfg_.quiet_cycles});
  }
  return wake;
}

void TenantJob::end(const LinkView& sim, JobOutcome outcome, JobReason reason, std::string detail) {
  const uint64_t now = sim.cycle();
  TenantJobRecord r;
  r.outcome = outcome;
  r.reason = reason;
  r.detail = std::move(detail);
  const bool done = transfer_ ? transfer_->done() : current_->done();
  if (transfer_) {
    r.restore = true;
    r.start_cycle = transfer_->start_cycle();
    r.end_cycle = done ? transfer_->end_cycle() : now;
    r.ranks = static_cast<int>(restore_->sources.size()) + 1;
    r.rings = static_cast<int>(transfer_->spec().circuits.size());
    r.bytes = transfer_->spec().bytes;
    r.wrong = transfer_->wrong();
  } else {
    r.start_cycle = current_->start_cycle();
    r.end_cycle = done ? current_->end_cycle() : now;
    r.ranks = static_cast<int>(ring_.size());
    r.rings = static_cast<int>(current_->spec().rings.size());
    r.bytes = current_->spec().count * element_bytes(spec_.type);
    if (done) {
      r.wrong = current_->wrong();
      r.framing_errors = current_->framing_errors();
    }
  }
  // A message half-sent is closed, so that no link layer holds half of it into the next one.
  if (!done)
    for (int l = 0; l < shape_.links(); ++l)
      if (planned_peer_[static_cast<size_t>(l)] >= 0 &&
          (transfer_ ? transfer_->message_open(l) : current_->message_open(l)))
        terminator_to_[static_cast<size_t>(l)] = planned_peer_[static_cast<size_t>(l)];
  // An aborted collective's words may still be in the link layers; a wrong one's too (its counts
  // were reached with stale words among them, so some of its own are still on their way).
  if (outcome != JobOutcome::Verified) quiet_needed_ = true;
  messages_done_ += task()->messages_delivered();
  current_.reset();
  // A restore that ended verified or wrong is over (the job forms again on its ring); an aborted
  // one is retried.
  if (transfer_ && outcome != JobOutcome::Aborted) restore_.reset();
  transfer_.reset();
  std::fill(planned_peer_.begin(), planned_peer_.end(), -1);
  state_ = restore_ ? JobState::Restoring : ring_.empty() ? JobState::Idle : JobState::Forming;
  record(std::move(r));
}

void TenantJob::record(TenantJobRecord r) {
  r.seq = ++seq_;
  if (r.outcome == JobOutcome::Verified) ++verified_;
  if (r.outcome == JobOutcome::Aborted) ++aborted_;
  if (r.outcome == JobOutcome::Wrong) ++wrong_;
  if (records_.size() >= cfg_.history) records_.erase(records_.begin());
  records_.push_back(std::move(r));
}

}  // namespace mxtb::sim
