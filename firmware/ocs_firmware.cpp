#include "ocs_firmware.h"

#include "firmware/routing.h"

#include <mxtb/link_defs.h>
#include <mxtb/ocs_regs.h>

#include <algorithm>

namespace mxtb::firmware {

namespace reg = mxtb::ocs::reg;
using mxtb::ocs::Event;

namespace {
constexpr uint32_t kIrqHandled = reg::irq_status::kLinkDownMask | reg::irq_status::kLinkUpMask |
                                 reg::irq_status::kCommitDoneMask | reg::irq_status::kCommitFailMask |
                                 reg::irq_status::kWatchdogMask | reg::irq_status::kEventLogMask;

uint32_t field(uint32_t v, uint32_t mask, unsigned shift) { return (v & mask) >> shift; }

void say(std::string* why, std::string text) {
  if (why) *why = std::move(text);
}
}  // namespace

OcsFirmware::OcsFirmware(Hal& hal, FirmwareConfig cfg) : hal_(hal), cfg_(std::move(cfg)) {
  active_map_.assign(static_cast<size_t>(cfg_.shape.mesh_ports), -1);
  staged_map_ = active_map_;
  left_active_.assign(static_cast<size_t>(cfg_.shape.mesh_ports), std::nullopt);
}

uint32_t OcsFirmware::rd(uint32_t addr) {
  ++reads_;
  return hal_.read32(addr);
}

void OcsFirmware::wr(uint32_t addr, uint32_t v) {
  ++writes_;
  hal_.write32(addr, v);
}

FwStatus OcsFirmware::init(std::string* why) {
  auto topo = BenesTopology::create(cfg_.shape.mesh_ports);
  if (!topo) {
    say(why, topo.error());
    return FwStatus::BadMap;
  }
  topo_ = topo.value();
  if (std::string err = check_calibration(topo_->elements(), cfg_.calibration); !err.empty()) {
    say(why, "calibration: " + err);
    return FwStatus::BadMap;
  }
  if (rd(reg::id::kOffset) != reg::id::kReset) {
    say(why, "the controller's ID register does not read OCS1");
    return FwStatus::BadCommand;
  }
  uint32_t params = rd(reg::params::kOffset);
  uint32_t sizes = rd(reg::sizes::kOffset);
  int ports = static_cast<int>(field(params, reg::params::kNPortsMask, reg::params::kNPortsShift));
  int links = static_cast<int>(field(params, reg::params::kNLinksMask, reg::params::kNLinksShift));
  int elems = static_cast<int>(field(sizes, reg::sizes::kNElemsMask, reg::sizes::kNElemsShift));
  if (ports != cfg_.shape.mesh_ports || links != cfg_.shape.links() || elems != topo_->elements()) {
    say(why, "controller has " + std::to_string(ports) + " ports, " + std::to_string(links) + " links, " +
                 std::to_string(elems) + " elements; the firmware was built for " + std::to_string(cfg_.shape.mesh_ports) +
                 ", " + std::to_string(cfg_.shape.links()) + ", " + std::to_string(topo_->elements()));
    return FwStatus::BadCommand;
  }
  active_codes_.assign(static_cast<size_t>(elems), 0);
  for (int e = 0; e < elems; ++e) active_codes_[static_cast<size_t>(e)] = static_cast<uint16_t>(rd(reg::active_dac::addr(static_cast<uint32_t>(e))));
  staged_codes_.assign(static_cast<size_t>(elems), 0);
  for (int e = 0; e < elems; ++e) staged_codes_[static_cast<size_t>(e)] = static_cast<uint16_t>(rd(reg::staged_dac::addr(static_cast<uint32_t>(e))));
  wr(reg::settle_cycles::kOffset, std::max(cfg_.settle_cycles, cfg_.min_settle_cycles));
  wr(reg::dac_update_cycles::kOffset, cfg_.dac_update_cycles);
  wr(reg::verify_min_dbm::kOffset, static_cast<uint16_t>(cfg_.verify_min_code));
  wr(reg::irq_status::kOffset, kIrqHandled);
  wr(reg::irq_mask::kOffset, ~kIrqHandled & reg::irq_mask::kMaskMask);  // 1 masks a source
  active_gen_ = field(rd(reg::status::kOffset), reg::status::kActiveGenMask, reg::status::kActiveGenShift);
  next_gen_ = active_gen_ + 1;
  return FwStatus::Ok;
}

std::vector<int> port_xpus(const protocol::ServerShape& shape, int ports) {
  std::vector<int> out(static_cast<size_t>(ports), -1);
  for (int p = 0; p < shape.links() && p < ports; ++p) out[static_cast<size_t>(p)] = p / shape.lanes_per_xpu;
  return out;
}

Result<std::vector<ElementState>> route_map(const FirmwareConfig& cfg, const BenesTopology& topology, const std::vector<int>& perm,
                                            const std::vector<ElementState>& active) {
  // Each lane port's XPU, so that a rearrangement moves the changing tenant's circuits before
  // another's, and a spare-ready map leaves idle lanes in loopback.
  const std::vector<int> port_xpu = port_xpus(cfg.shape, topology.ports());
  if (cfg.spare_ready_whole_maps && !cfg.route_around_unchanged) return route_whole_map(topology, perm, port_xpu);
  return route(topology, perm, cfg.keep_unchanged_paths && !active.empty() ? &active : nullptr, cfg.route_around_unchanged, &port_xpu);
}

FwStatus OcsFirmware::prepare(const std::vector<int>& perm, Prepared& out, std::string* why) {
  if (!topo_) {
    say(why, "init() has not run");
    return FwStatus::BadCommand;
  }
  hal_.compute(cfg_.route_cost_ns);
  auto states = route_map(cfg_, *topo_, perm, active_states_);
  if (!states) {
    say(why, states.error());
    return FwStatus::BadMap;
  }
  out.moved = active_states_.empty() ? 0 : moved_circuits(*topo_, perm, active_states_, states.value());
  auto codes = dac_codes(states.value(), cfg_.calibration);
  if (!codes) {
    say(why, codes.error());
    return FwStatus::BadMap;
  }
  out.map = perm;
  out.codes = codes.value();
  out.states = states.value();
  return FwStatus::Ok;
}

void OcsFirmware::stage(const Prepared& p) {
  for (size_t i = 0; i < p.map.size(); ++i) {
    if (p.map[i] == staged_map_[i]) continue;
    uint32_t v = p.map[i] < 0 ? 0u : (reg::staged_map::kValidMask | static_cast<uint32_t>(p.map[i]));
    wr(reg::staged_map::addr(static_cast<uint32_t>(i)), v);
    staged_map_[i] = p.map[i];
  }
  for (size_t e = 0; e < p.codes.size(); ++e) {
    if (p.codes[e] == staged_codes_[e]) continue;
    wr(reg::staged_dac::addr(static_cast<uint32_t>(e)), p.codes[e]);
    staged_codes_[e] = p.codes[e];
  }
}

FwStatus OcsFirmware::commit_and_wait(const Prepared& p, std::string* why) {
  uint32_t gen = next_gen_ & 0xFFFFu;
  // The controller refuses staging and COMMIT while busy or safe (the register map): the host
  // watchdog can expire at any moment, e.g. while a failover stages its backup, and a commit the
  // firmware did not start may be running. Nothing is committed then, and what was staged stays
  // cached as staged. A busy controller is waited out and the commit tried once more.
  for (int attempt = 0;; ++attempt) {
    try {
      stage(p);
      wr(reg::commit::kOffset, gen);
      circuits_moved_ += static_cast<uint32_t>(p.moved);  // the controller moves them now, verified or not
      break;
    } catch (const BusError& e) {
      if (std::optional<FwStatus> s = commit_refused(e, attempt, why)) return *s;
    }
  }
  ++next_gen_;
  in_commit_ = true;
  last_commit_ns_ = hal_.now_ns();
  uint64_t deadline = hal_.now_ns() + cfg_.commit_timeout_ns;
  std::optional<FwStatus> outcome;
  size_t seen = events_.size();
  while (!outcome) {
    uint64_t now = hal_.now_ns();
    if (now >= deadline) break;
    // The interrupt is the fast path; the poll interval bounds the wait if one was missed.
    hal_.wait_irq(std::min<uint64_t>(deadline - now, cfg_.mailbox_poll_ns));
    drain_interrupts();
    for (; seen < events_.size() && !outcome; ++seen) {
      uint32_t info = events_[seen].info;
      auto type = static_cast<Event>(field(info, reg::event_info::kTypeMask, reg::event_info::kTypeShift));
      uint32_t data = field(info, reg::event_info::kDataMask, reg::event_info::kDataShift);
      // The host watchdog abandons any commit: the controller sweeps to its safe state.
      if (type == Event::WatchdogExpired) outcome = FwStatus::Safe;
      if (data != gen) continue;
      if (type == Event::VerifyPass || type == Event::CommitNoop) outcome = FwStatus::Ok;
      if (type == Event::CommitRejected) outcome = FwStatus::Rejected;
      if (type == Event::RollbackDone) outcome = FwStatus::VerifyFailed;
    }
  }
  in_commit_ = false;
  if (!outcome) {
    say(why, "no outcome for generation " + std::to_string(gen) + " within the commit timeout");
    return FwStatus::Timeout;
  }
  if (*outcome == FwStatus::Ok) {
    active_map_ = p.map;
    active_codes_ = p.codes;
    active_states_ = p.states;
    active_gen_ = gen;
  } else {
    uint32_t err = rd(reg::error::kOffset);
    say(why, std::string(mailbox::describe(*outcome)) + ": error code " +
                 std::to_string(field(err, reg::error::kCodeMask, reg::error::kCodeShift)) + " at index " +
                 std::to_string(field(err, reg::error::kIndexMask, reg::error::kIndexShift)));
  }
  return *outcome;
}

std::optional<FwStatus> OcsFirmware::commit_refused(const BusError& e, int attempt, std::string* why) {
  const uint64_t deadline = hal_.now_ns() + cfg_.commit_timeout_ns;
  uint32_t st = rd(reg::status::kOffset);
  while ((st & reg::status::kBusyMask) && hal_.now_ns() < deadline) {
    hal_.wait_irq(cfg_.mailbox_poll_ns);
    st = rd(reg::status::kOffset);
  }
  drain_interrupts();  // a watchdog expiry's events reset what the firmware believes active
  if (st & reg::status::kSafeMask) {
    say(why, std::string(e.what()) + ": the controller is in its safe state (host watchdog expired)");
    return FwStatus::Safe;
  }
  if (st & reg::status::kBusyMask) {
    say(why, std::string(e.what()) + ": the controller stayed busy for the commit timeout");
    return FwStatus::Rejected;
  }
  if (attempt == 0) return std::nullopt;  // it was busy and is idle now: once more
  say(why, std::string(e.what()) + ": refused again with the controller idle");
  return FwStatus::Rejected;
}

FwStatus OcsFirmware::set_port_map(const std::vector<int>& perm, std::string* why) {
  Prepared p;
  if (FwStatus s = prepare(perm, p, why); s != FwStatus::Ok) return s;
  // A backup replaces one XPU of the map it was computed for: a new map makes it stale (and
  // committing it would undo the new map), so the host re-arms for the new one. It is disarmed
  // before the commit, and stays disarmed when the commit fails: while the elements move (and
  // move back, on a rollback) links whose paths pass through them glimpse other light and drop,
  // and with a neighbour dead that looked like the armed XPU dying (its backup was committed for
  // a living XPU). The host re-arms after every placement.
  armed_xpu_.reset();
  failover_pending_ = false;
  staged_for_commit_.reset();
  return commit_and_wait(p, why);
}

FwStatus OcsFirmware::stage_map(const std::vector<int>& perm, std::string* why) {
  Prepared p;
  staged_for_commit_.reset();
  if (FwStatus s = prepare(perm, p, why); s != FwStatus::Ok) return s;
  armed_xpu_.reset();  // its staged tables are about to be overwritten
  failover_pending_ = false;
  // Staging writes are refused while a commit or the safe sweep runs, like COMMIT: waited out.
  for (int attempt = 0;; ++attempt) {
    try {
      stage(p);
      break;
    } catch (const BusError& e) {
      if (std::optional<FwStatus> s = commit_refused(e, attempt, why)) return *s;
    }
  }
  staged_for_commit_ = p;
  return FwStatus::Ok;
}

FwStatus OcsFirmware::commit_staged(std::string* why) {
  if (!staged_for_commit_) {
    say(why, "commit_staged: nothing staged since the last commit, placement or backup");
    return FwStatus::NotStaged;
  }
  const Prepared p = *staged_for_commit_;
  staged_for_commit_.reset();
  return commit_and_wait(p, why);
}

FwStatus OcsFirmware::arm_backup(int xpu, int spare, const std::vector<int>& backup, std::string* why) {
  int xpus = cfg_.shape.xpus;
  if (xpu < 0 || xpu >= xpus || spare < 0 || spare >= xpus || xpu == spare) {
    say(why, "arm: XPU " + std::to_string(xpu) + " and spare " + std::to_string(spare) + " must be distinct XPUs below " +
                 std::to_string(xpus));
    return FwStatus::BadCommand;
  }
  Prepared p;
  if (FwStatus s = prepare(backup, p, why); s != FwStatus::Ok) return s;
  staged_for_commit_.reset();  // the backup's staged tables replace what stage_map staged
  backup_ = p;
  drain_events();  // what happened before arming is not a failure of the armed XPU
  armed_cycle_ = controller_cycle();
  armed_xpu_ = xpu;
  armed_spare_ = spare;
  std::fill(left_active_.begin(), left_active_.end(), std::nullopt);
  stage(backup_);
  return FwStatus::Ok;
}

std::optional<int> OcsFirmware::armed_xpu() const { return armed_xpu_; }

uint64_t OcsFirmware::controller_cycle() {
  uint64_t lo = rd(reg::time_lo::kOffset);  // reading LO latches HI
  uint64_t hi = rd(reg::time_hi::kOffset);
  return lo | (hi << 32);
}

uint32_t OcsFirmware::drain_interrupts() {
  uint32_t st = rd(reg::irq_status::kOffset) & kIrqHandled;
  if (st) wr(reg::irq_status::kOffset, st);
  drain_events();
  return st;
}

void OcsFirmware::drain_events() {
  uint32_t n = field(rd(reg::event_count::kOffset), reg::event_count::kCountMask, reg::event_count::kCountShift);
  for (uint32_t i = 0; i < n; ++i) {
    uint64_t lo = rd(reg::event_ts_lo::kOffset);
    uint64_t hi = rd(reg::event_ts_hi::kOffset);
    uint32_t info = rd(reg::event_info::kOffset);  // reading INFO pops the entry
    LogEvent e{lo | (hi << 32), info};
    events_.push_back(e);
    on_event(e);
  }
}

void OcsFirmware::on_event(const LogEvent& e) {
  auto type = static_cast<Event>(field(e.info, reg::event_info::kTypeMask, reg::event_info::kTypeShift));
  if (type == Event::WatchdogExpired || type == Event::SafeDone) {
    // The host went silent: the controller dropped every circuit (no map, generation 0). What the
    // firmware believed active is gone, and a backup for it is stale. The host clears the safe
    // state (SAFE_CLEAR) and places its circuits again when it is back.
    std::fill(active_map_.begin(), active_map_.end(), -1);
    active_gen_ = 0;
    armed_xpu_.reset();
    failover_pending_ = false;
    staged_for_commit_.reset();  // staged for a fabric the sweep dropped: the host stages again
    active_states_.clear();
    return;
  }
  if (type != Event::LinkChange || !armed_xpu_) return;
  int link = static_cast<int>(field(e.info, reg::event_info::kIndexMask, reg::event_info::kIndexShift));
  uint32_t data = field(e.info, reg::event_info::kDataMask, reg::event_info::kDataShift);
  auto now_state = static_cast<link::LinkState>(field(e.info, reg::event_info::kCodeMask, reg::event_info::kCodeShift));
  auto prev_state = static_cast<link::LinkState>((data >> 4) & 0xF);
  auto reason = static_cast<link::Reason>(data & 0xF);
  if (e.cycle < armed_cycle_ || link < 0 || link >= cfg_.shape.mesh_ports) return;
  int peer = active_map_[static_cast<size_t>(link)];
  bool touches = link / cfg_.shape.lanes_per_xpu == *armed_xpu_ ||
                 (peer >= 0 && peer < cfg_.shape.links() && peer / cfg_.shape.lanes_per_xpu == *armed_xpu_);
  if (!touches) return;
  auto& left = left_active_[static_cast<size_t>(link)];
  if (now_state == link::LinkState::Active) {
    left.reset();  // it came back: a glitch, not a failure
    return;
  }
  // A retrain the controller asked for (a commit moved the circuit) is not a failure.
  if (prev_state != link::LinkState::Active || reason == link::Reason::RetrainRequest) return;
  left = e.cycle;
  if (failover_pending_) return;
  // Whose light went out first. A dying XPU's lasers all go dark at once: the receivers facing it
  // lose light in that cycle, and its own receivers only after its neighbours, having lost it,
  // turn their lasers off (RETRAIN: about 5 cycles later). A living XPU cut off by a dead
  // neighbour, or by a dark lane, loses light on its own receivers first and its neighbours' only
  // in answer. So a circuit counts against the armed XPU when its far end left Active no later
  // than its own end; two XPUs that die in the same cycle count against each other. (Counting a
  // circuit as down whatever its order, the first rule committed a living XPU's backup when a
  // neighbour died as dark lanes took its other circuits: regress seed 40712.) The armed XPU has
  // failed once such circuits reach the threshold and span two of its neighbours (or all of them,
  // if it has one), and none of its own lanes is Active.
  const int lanes = cfg_.shape.lanes_per_xpu;
  std::vector<int> neighbours, dark_peers;
  int dark = 0;
  for (int a = *armed_xpu_ * lanes; a < (*armed_xpu_ + 1) * lanes && a < cfg_.shape.links(); ++a) {
    int b = active_map_[static_cast<size_t>(a)];
    if (b < 0 || b >= cfg_.shape.links() || b / lanes == *armed_xpu_) continue;
    int n = b / lanes;
    if (std::find(neighbours.begin(), neighbours.end(), n) == neighbours.end()) neighbours.push_back(n);
    const auto& mine = left_active_[static_cast<size_t>(a)];
    const auto& theirs = left_active_[static_cast<size_t>(b)];
    if (!mine || !theirs || *theirs > *mine) continue;
    ++dark;
    if (std::find(dark_peers.begin(), dark_peers.end(), n) == dark_peers.end()) dark_peers.push_back(n);
  }
  size_t peers_needed = std::min<size_t>(2, neighbours.size());
  if (dark >= cfg_.failover_threshold && dark_peers.size() >= peers_needed && armed_lanes_dark()) {
    failover_pending_ = true;
    failover_event_cycle_ = e.cycle;
  }
}

// A dead XPU's lasers are all dark, and a link is Active only once both ends have heard each
// other's training: while any lane of the armed XPU is Active, the XPU is alive, whatever its
// dark circuits say (light lost one way on two of its lanes, say).
bool OcsFirmware::armed_lanes_dark() {
  const int lanes = cfg_.shape.lanes_per_xpu;
  for (int l = *armed_xpu_ * lanes; l < (*armed_xpu_ + 1) * lanes && l < cfg_.shape.links(); ++l) {
    auto state = static_cast<link::LinkState>(
        field(rd(reg::link_status::addr(static_cast<uint32_t>(l))), reg::link_status::kStateMask, reg::link_status::kStateShift));
    if (state == link::LinkState::Active) return false;
  }
  return true;
}

void OcsFirmware::fail_over(uint64_t event_cycle) {
  failover_pending_ = false;
  FailoverRecord r;
  r.failed_xpu = *armed_xpu_;
  r.spare = armed_spare_;
  r.trigger_event_cycle = event_cycle;
  r.seen_ns = hal_.now_ns();
  armed_xpu_.reset();
  std::string why;
  r.status = commit_and_wait(backup_, &why);
  r.commit_ns = last_commit_ns_;
  r.done_ns = hal_.now_ns();
  r.generation = active_gen_;
  failovers_.push_back(r);
}

void OcsFirmware::service() {
  if (hal_.wait_irq(0)) drain_interrupts();
  if (failover_pending_ && armed_xpu_ && !in_commit_) fail_over(failover_event_cycle_);
  poll_mailbox();
}

void OcsFirmware::run_until(uint64_t until_ns) {
  for (;;) {
    uint64_t now = hal_.now_ns();
    if (now >= until_ns) return;
    hal_.wait_irq(std::min<uint64_t>(cfg_.mailbox_poll_ns, until_ns - now));
    service();
  }
}

void OcsFirmware::poll_mailbox() {
  namespace mb = mxtb::mailbox;
  uint32_t bell = rd(reg::scratch::addr(mb::kDoorbell));
  if (bell == last_doorbell_) return;
  last_doorbell_ = bell;
  auto op = static_cast<mb::Opcode>(rd(reg::scratch::addr(mb::kOpcode)));
  auto read_map = [&](uint32_t first) {
    std::vector<int> map(static_cast<size_t>(cfg_.shape.mesh_ports));
    for (int p = 0; p < cfg_.shape.mesh_ports; ++p) {
      uint32_t v = rd(reg::scratch::addr(first + static_cast<uint32_t>(p)));
      map[static_cast<size_t>(p)] = v == mb::kUnusedPort ? -1 : static_cast<int>(v);
    }
    return map;
  };
  FwStatus status = FwStatus::BadCommand;
  switch (op) {
    case mb::Opcode::SetPortMap: status = set_port_map(read_map(mb::kArgs)); break;
    case mb::Opcode::StageMap: status = stage_map(read_map(mb::kArgs)); break;
    case mb::Opcode::CommitStaged: status = commit_staged(); break;
    case mb::Opcode::ArmBackup: {
      int xpu = static_cast<int>(rd(reg::scratch::addr(mb::kArgs)));
      int spare = static_cast<int>(rd(reg::scratch::addr(mb::kArgs + 1)));
      status = arm_backup(xpu, spare, read_map(mb::kArgs + 2));
      break;
    }
    case mb::Opcode::Report: {
      const FailoverRecord* last = failovers_.empty() ? nullptr : &failovers_.back();
      using W = mb::ReportWord;
      auto reply = [&](W word, uint32_t value) {
        wr(reg::scratch::addr(mb::kReplyData + static_cast<uint32_t>(word)), value);
      };
      reply(W::ActiveGen, active_gen_);
      reply(W::ArmedXpu, armed_xpu_ ? static_cast<uint32_t>(*armed_xpu_) : mb::kUnusedPort);
      reply(W::Failovers, static_cast<uint32_t>(failovers_.size()));
      reply(W::LastFailed, last ? static_cast<uint32_t>(last->failed_xpu) : mb::kUnusedPort);
      reply(W::LastSpare, last ? static_cast<uint32_t>(last->spare) : mb::kUnusedPort);
      reply(W::LastDetectToCommitNs, last ? static_cast<uint32_t>(last->commit_ns - last->seen_ns) : 0u);
      reply(W::LastCommitToDoneNs, last ? static_cast<uint32_t>(last->done_ns - last->commit_ns) : 0u);
      reply(W::CircuitsMoved, circuits_moved_);
      status = FwStatus::Ok;
      break;
    }
  }
  wr(reg::scratch::addr(mb::kReplyStatus), static_cast<uint32_t>(status));
  wr(reg::scratch::addr(mb::kReplySeq), bell);
}

}  // namespace mxtb::firmware
