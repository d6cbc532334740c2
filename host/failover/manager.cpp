#include "manager.h"

#include "host/failover/circuits.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <stdexcept>

namespace mxtb::host::failover {

using emu::EmuEvent;
using mailbox::FwStatus;

const char* to_string(HostDisconnect d) {
  switch (d) {
    case HostDisconnect::None: return "none";
    case HostDisconnect::BeforeCommit: return "before_commit";
    case HostDisconnect::MidCommit: return "mid_commit";
    case HostDisconnect::AfterCommit: return "after_commit";
  }
  return "none";
}

FailoverManager::FailoverManager(fabric::Board& board, ManagerConfig cfg)
    : board_(board), cfg_(std::move(cfg)), watch_(board) {
  s_.lanes = cfg_.shape.lanes_per_xpu;
  s_.placement = cfg_.tenant;
  s_.free_spares = cfg_.spares;
}

FailoverManager::~FailoverManager() = default;

std::vector<int> FailoverManager::circuit_links() const { return failover::circuit_links(s_.map, board_.links()); }

mailbox::FwStatus FailoverManager::commit_live(protocol::FabricMap& m, FailoverRecord& rec) {
  return failover::commit_live(watch_, s_, m, cfg_.poll_ns, rec.timeline.notes).status;
}

// Places `m` through the mailbox and waits for its circuits; false (with a problem) when it fails.
bool FailoverManager::place(const protocol::FabricMap& m, FailoverRecord& rec, const char* why) {
  watch_.links().expect_moves(s_.map, m);
  s_.map = m;
  FwStatus st = commit_live(s_.map, rec);
  if (st != FwStatus::Ok) {
    rec.problems.push_back(fmt::format("{}: the firmware answered {}", why, mailbox::describe(st)));
    return false;
  }
  generation_ = board_.active_generation();
  std::vector<int> links = circuit_links();
  if (!wait_links_up(links, cfg_.link_up_timeout_ns)) {
    report_links_down(rec, links);
    return false;
  }
  return true;
}

uint32_t FailoverManager::watchdog_cycles() const {
  return static_cast<uint32_t>(static_cast<double>(cfg_.watchdog_ns) * cfg_.shape_clock_mhz / 1000.0);
}

bool FailoverManager::wait_living_links(uint64_t timeout_ns) {
  const int lanes = s_.lanes;
  std::vector<int> living;
  for (int l : circuit_links()) {
    int peer = s_.map.port_target[static_cast<size_t>(l)] / lanes;
    if (!contains(s_.failed, l / lanes) && !contains(s_.failed, peer)) living.push_back(l);
  }
  return wait_links_up(living, timeout_ns);
}

void FailoverManager::idle(uint64_t ns) { watch_.idle(ns); }

double FailoverManager::event_time(EmuEvent kind, std::optional<uint32_t> a, double from_ns) const {
  return watch_.event_time(kind, a, from_ns);
}

bool FailoverManager::wait_links_up(const std::vector<int>& links, uint64_t timeout_ns, bool during_failover) {
  uint64_t start = board_.clock().now_ns();
  for (;;) {
    std::vector<int> missing;
    for (int l : links)
      if (!watch_.links().active(l)) missing.push_back(l);
    if (missing.empty()) return true;
    if (during_failover && commit_failed_since(watch_.log(), handover_ns_)) {
      commit_failed_ = true;
      return false;
    }
    if (during_failover && !second_failure_) {
      // Another XPU dying meanwhile keeps its circuits down for good: it is the next failover's
      // business, not a reason to wait here.
      auto d = failed_xpu_now();
      if (d && d->xpu != current_.det.xpu && explained_by(missing, d->xpu, s_.map, s_.lanes, board_.links())) {
        second_failure_ = d->xpu;
        return true;
      }
    }
    if (board_.clock().now_ns() - start > timeout_ns) return false;
    take_events(cfg_.poll_ns);
  }
}

void FailoverManager::bring_up() {
  s_.map = protocol::torus_map(cfg_.shape, s_.placement);
  FwStatus st = board_.set_port_map(s_.map.port_target);
  if (st != FwStatus::Ok)
    throw std::runtime_error(fmt::format("placing the tenant's torus: the firmware answered {}", mailbox::describe(st)));
  generation_ = board_.active_generation();
  // From now on the controller drops every circuit if the host goes silent.
  if (cfg_.watchdog_ns) board_.enable_watchdog(watchdog_cycles());
  if (!wait_links_up(circuit_links(), cfg_.link_up_timeout_ns))
    throw std::runtime_error("the tenant's circuits did not all become Active after placing the torus");
  // Not charged to board time: the copies are made before any failure, off the failover's path.
  if (cfg_.state_bytes_per_xpu)
    copies_ = std::make_unique<StateCopies>(s_.placement.xpu_of_position, s_.placement.xpu_of_position.size() + cfg_.spares.size(),
                                            cfg_.state_bytes_per_xpu, cfg_.real_bytes_max);
  if (cfg_.job) {
    TenantJobWait w = form_job_and_wait();
    if (!w.verified)
      throw std::runtime_error(fmt::format("the tenant's job on XPUs {}: no verified collective within {} us of forming it{}{}",
                                           fmt::join(protocol::ring_xpus(s_.placement), " "), cfg_.job->first_timeout_ns / 1000.0,
                                           w.ended ? fmt::format(" (one ended {}, {})", emu::to_string(static_cast<emu::JobOutcome>(w.ended->a)),
                                                                 emu::to_string(static_cast<emu::JobReason>(w.ended->b)))
                                                   : std::string(),
                                           w.failed ? fmt::format(" (XPU {} failed)", *w.failed) : std::string()));
  }
  // The ranks' processes and their first communicator: wall time, before any failure.
  // A tenant with no job (random traffic) has no ranks to run.
  if (cfg_.comm && cfg_.job) ranks_ = std::make_unique<comm::RankGroup>(*cfg_.comm, protocol::ring_xpus(s_.placement), s_.free_spares);
  arm_next_backup();
  if (board_.is_emulator()) messages_at_bring_up_ = board_.messages_delivered();
}

void FailoverManager::arm_next_backup() {
  armed_xpu_.reset();
  armed_spare_ = -1;
  if (!cfg_.armed_xpu || s_.free_spares.empty()) return;
  int x = *cfg_.armed_xpu;
  if (s_.pending && s_.pending->xpu == x) return;  // it died during the last failover: handled next
  if (!contains(s_.placement.xpu_of_position, x)) return;  // the XPU to arm has already been replaced
  SpareChoice c = choose_spare(x, s_.free_spares, cfg_.groups, s_.failed);
  if (!c.spare) return;
  auto backup = protocol::torus_map(cfg_.shape, protocol::substitute(s_.placement, x, *c.spare));
  FwStatus st = board_.arm_backup(x, *c.spare, backup.port_target);
  if (st != FwStatus::Ok)
    throw std::runtime_error(fmt::format("arming XPU {}'s backup: the firmware answered {}", x, mailbox::describe(st)));
  armed_xpu_ = x;
  armed_spare_ = *c.spare;
  armed_at_ns_ = board_.clock().now_ns();
}

std::optional<FailoverRecord> FailoverManager::handle_next_failure(uint64_t timeout_ns, HostDisconnect disconnect) {
  std::optional<Detection> det = wait_for_failure(timeout_ns);
  if (!det) return std::nullopt;
  // The XPU's death takes its rank's process with it; the survivors' step loop fails on its own.
  if (ranks_) ranks_->kill(det->xpu);
  FailoverRecord rec = open_record(*det);
  report::Timeline& t = rec.timeline;
  Replacement next = decide(*det, t);
  s_.failed.push_back(det->xpu);
  const double decided_ns = static_cast<double>(board_.clock().now_ns());
  rec.spare = next.choice.spare;
  rec.spare_reason = next.choice.reason;
  t.notes.push_back(fmt::format("XPU {} failed; {}", det->xpu, next.choice.reason));
  if (!next.choice.spare) {
    isolate(*det, rec);
    return rec;
  }
  current_ = InFlight{*det, decided_ns, *next.choice.spare};
  if (!hand_over(rec, *det, std::move(next), disconnect)) return rec;
  await_circuits(rec, *det);
  if (disconnect == HostDisconnect::AfterCommit) {
    go_away(rec, disconnect);
    return rec;
  }
  finish(rec, false);
  return rec;
}

std::optional<Detection> FailoverManager::wait_for_failure(uint64_t timeout_ns) {
  const uint64_t start = board_.clock().now_ns();
  std::optional<Detection> det = s_.pending;
  s_.pending.reset();
  while (!det) {
    if (board_.clock().now_ns() - start > timeout_ns) return std::nullopt;
    take_events(cfg_.poll_ns);
    det = failed_xpu_now();
  }
  return det;
}

FailoverRecord FailoverManager::open_record(const Detection& det) {
  FailoverRecord rec;
  rec.failed = det.xpu;
  report::Timeline& t = rec.timeline;
  t.scenario = cfg_.scenario;
  t.seed = cfg_.seed;
  t.time_mode = board_.clock().mode();
  // When it died: the emulator says (the fault); a board only shows the first circuit going down.
  const double fault_ns = kill_fault_ns(watch_.log(), det.xpu);
  t.failure_ns = fault_ns >= 0 ? fault_ns : det.failure_ns;
  return rec;
}

// Chooses the spare and the new circuits: the host's own compute, charged to board time.
Replacement FailoverManager::decide(const Detection& det, report::Timeline& t) {
  Replacement next{SpareChoice{}, s_.placement, {}};
  if (cfg_.extra_decide_ns) board_.clock().charge_ns(cfg_.extra_decide_ns);
  auto run = [&] {  // deterministic: its cost is measured over reruns
    next = decide_replacement(det.xpu, s_.placement, s_.free_spares, s_.failed, cfg_.groups, cfg_.shape);
  };
  if (cfg_.decide_compute_ns && board_.clock().charges_compute()) {
    run();
    board_.clock().charge_ns(*cfg_.decide_compute_ns);
    t.figures["host_decide_ns"] = static_cast<double>(*cfg_.decide_compute_ns);
  } else if (uint64_t charged = board_.clock().charge_compute(run)) {
    t.figures["host_decide_ns"] = static_cast<double>(charged);
  }
  return next;
}

void FailoverManager::isolate(const Detection& det, FailoverRecord& rec) {
  report::Timeline& t = rec.timeline;
  t.degraded = true;
  t.notes.push_back(fmt::format("DEGRADED: no spare left; the tenant's torus runs without XPU {} until one is added", det.xpu));
  append_degraded_detection(t, det);
  // Take the dead XPU's circuits out of the map, so that the controller's verify of any later
  // commit is not held up by their darkness.
  const double isolate0 = static_cast<double>(board_.clock().now_ns());
  place(live_map(s_.map, s_.failed, s_.lanes), rec, "isolating the failed XPU's circuits");
  report::append_phase(t, "isolate", static_cast<double>(board_.clock().now_ns()) - isolate0, "host",
                       "the failed XPU's circuits removed from the map (mailbox, commit)");
}

void FailoverManager::go_away(FailoverRecord& rec, HostDisconnect disconnect) {
  rec.disconnected = true;
  rec.timeline.notes.push_back(fmt::format("the host disconnects {} (the watchdog, {} us, is no longer kicked)",
                                           to_string(disconnect), cfg_.watchdog_ns / 1000.0));
}

bool FailoverManager::hand_over(FailoverRecord& rec, const Detection& det, Replacement next, HostDisconnect disconnect) {
  const int spare = *next.choice.spare;
  s_.free_spares.erase(std::find(s_.free_spares.begin(), s_.free_spares.end(), spare));
  rec.fast_path = armed_xpu_ == det.xpu && armed_spare_ == spare;
  if (rec.fast_path && firmware_left_failure_to_host(det.xpu)) {
    rec.fast_path = false;
    rec.timeline.notes.push_back(fmt::format(
        "the firmware left XPU {}'s failure to the host (its events did not show XPU {} going dark first): host path", det.xpu,
        det.xpu));
  }
  // The intent is journaled first (s_.placement, s_.map): a host that goes away knows what it
  // wanted when it is back.
  protocol::FabricMap next_map = live_map(next.map, s_.failed, s_.lanes);
  watch_.links().expect_moves(s_.map, next_map);
  // On the fast path the firmware committed as the failure showed, while the host was still
  // deciding: a rollback of that commit (a second XPU dying before its verify) can be over before
  // the host hands over, and must count. Its window opens at the failure.
  handover_ns_ = rec.fast_path ? std::min(det.failure_ns, static_cast<double>(board_.clock().now_ns()))
                               : static_cast<double>(board_.clock().now_ns());
  host_commit_status_ = FwStatus::Ok;
  s_.placement = std::move(next.placement);
  s_.map = std::move(next_map);
  if (disconnect == HostDisconnect::BeforeCommit) {
    go_away(rec, disconnect);
    return false;
  }
  if (disconnect == HostDisconnect::MidCommit) {
    // The host's command is posted, never answered; on the fast path the firmware commits on its
    // own while the host is away.
    if (!rec.fast_path) board_.mailbox_post(mailbox::Opcode::SetPortMap, port_map_words(s_.map.port_target));
    go_away(rec, disconnect);
    return false;
  }
  if (!rec.fast_path) host_commit_status_ = board_.set_port_map(s_.map.port_target);
  return true;
}

void FailoverManager::await_circuits(FailoverRecord& rec, const Detection& det) {
  second_failure_.reset();
  // A host commit that verify refused is what a second failure before the verify looks like:
  // the recovery below finds out which.
  commit_failed_ = host_commit_status_ == FwStatus::VerifyFailed;
  std::vector<int> links = circuit_links();
  bool up = commit_failed_ ? false : wait_links_up(links, cfg_.link_up_timeout_ns, true);
  protocol::FabricMap intended = s_.map;
  if (commit_failed_) {
    // The controller rolled the commit back: the board still runs the map from before it. That is
    // the manager's picture of the board again (the intent stays in `intended`), so that which
    // circuits the next placement moves, and which circuits' drops count, follow the board.
    s_.map.port_target = board_.active_map(cfg_.shape.mesh_ports);
    if (auto named = name_after_rollback(watch_, s_, handover_ns_, det.xpu, cfg_.poll_ns)) second_failure_ = named;
  }
  if (second_failure_ || commit_failed_) {
    place_again(rec, det, intended);
  } else if (host_commit_status_ != FwStatus::Ok) {
    rec.problems.push_back(fmt::format("the firmware refused the new circuits: {}", mailbox::describe(host_commit_status_)));
  } else if (!up) {
    report_links_down(rec, links);
  }
}

// Another XPU died meanwhile: its circuits go dark for good, and if that happened before the
// controller's verify, the commit rolled back (verify saw them dark). Place the new map without
// them; that XPU is the next failover (handle_next_failure returns it at once).
void FailoverManager::place_again(FailoverRecord& rec, const Detection& det, const protocol::FabricMap& intended) {
  report::Timeline& t = rec.timeline;
  std::optional<Detection> d2 = failed_xpu_now();
  if (second_failure_ && (!d2 || d2->xpu != *second_failure_))
    d2 = Detection{*second_failure_, det.detect_ns, det.detect_ns, det.noticed_ns};
  if (d2 && d2->xpu != det.xpu) {
    s_.pending = d2;
    s_.failed.push_back(d2->xpu);
  }
  t.notes.push_back(fmt::format("{}{}: the new map is placed again through the mailbox{}",
                                d2 ? fmt::format("XPU {} failed during this failover", d2->xpu) : std::string("the commit failed"),
                                commit_failed_ ? " and the controller rolled the commit back (verify saw dark circuits)" : "",
                                d2 ? " without its circuits" : ""));
  if (commit_failed_) rec.fast_path = false;
  if (!d2 && commit_failed_) t.notes.push_back("verify refused the commit, yet no other XPU is found to have failed");
  // If this placement fails too, place() says so: then the fabric really refused the circuits.
  place(live_map(intended, s_.failed, s_.lanes), rec, "placing the new map again");
  if (s_.pending) s_.failed.pop_back();  // counted as failed by its own failover
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
  for (auto& p : links_down(board_, links)) rec.problems.push_back(std::move(p));
}

void FailoverManager::reconnect(FailoverRecord& rec) {
  // A restarted host: it knows what it wanted (the journal: s_.placement, s_.map) but nothing of
  // the board's present state. It reads the controller's generation and map and reconciles.
  report::Timeline& t = rec.timeline;
  const double back_ns = static_cast<double>(board_.clock().now_ns());
  watch_.links().reset(board_.link_status(), back_ns);
  bool safe = board_.controller_safe();
  if (safe) board_.clear_safe();
  uint32_t gen_before = board_.active_generation();
  bool same = active_map_is(s_.map);
  if (!same) {
    // A tenant XPU that died while the host was away keeps this commit from verifying: found and
    // taken out here, it is the next failover.
    const CommitOutcome c = failover::commit_live(watch_, s_, s_.map, cfg_.poll_ns, t.notes);
    if (c.status != FwStatus::Ok)
      rec.problems.push_back(fmt::format("reconciling: the firmware answered {}", mailbox::describe(c.status)));
    // The attempts verify refused before this commit are behind us.
    handover_ns_ = c.last_attempt_ns;
  }
  if (cfg_.watchdog_ns) board_.enable_watchdog(watchdog_cycles());
  std::vector<int> links = circuit_links();
  second_failure_.reset();
  if (!wait_links_up(links, cfg_.link_up_timeout_ns, true)) report_links_down(rec, links);
  t.notes.push_back(fmt::format("back after {} us: controller {}, generation {}, map {}; {}", (back_ns - current_.decided_ns) / 1000,
                                safe ? "in its safe state (watchdog expired), cleared" : "not in its safe state", gen_before,
                                same ? "as intended" : "not as intended", same ? "nothing to redo" : "circuits placed again"));
  reconciled_ = Reconcile{back_ns, safe, !same};
  finish(rec, true);
}

// The path after the hand-over: the hardware's phases confirmed from the controller's events and
// the firmware's report, the state restored, the communicator re-formed, the modeled constants,
// the tenant job's first collective on the new ring, and the next backup armed beside it.
void FailoverManager::finish(FailoverRecord& rec, bool reconciled) {
  report::Timeline& t = rec.timeline;
  const Detection& det = current_.det;
  const std::vector<int> links = circuit_links();
  const double all_up_seen_ns = static_cast<double>(board_.clock().now_ns());
  const fabric::FirmwareReport fw = board_.report();
  const double confirmed_ns = static_cast<double>(board_.clock().now_ns());
  confirm_firmware(rec, reconciled, fw);
  take_events(0);  // what is still queued: the circuits may already have been up
  HardwareInputs hw;
  hw.det = det;
  hw.decided_ns = current_.decided_ns;
  hw.fast_path = rec.fast_path;
  if (reconciled) hw.reconciled = reconciled_;
  hw.commit = landed_commit(watch_.log(), reconciled ? reconciled_.back_ns : det.detect_ns, t.failure_ns, links, all_up_seen_ns);
  hw.all_up_seen_ns = all_up_seen_ns;
  hw.confirmed_ns = confirmed_ns;
  hw.fw_detect_to_commit_ns = fw.last_detect_to_commit_ns;
  hw.fw_commit_to_done_ns = fw.last_commit_to_done_ns;
  hw.watchdog_ns = cfg_.watchdog_ns;
  hw.poll_ns = cfg_.poll_ns;
  append_hardware_phases(t, hw);
  if (copies_) restore_state(rec);
  const ReformResult reform = ranks_ ? reform_ranks(rec) : ReformResult{};
  append_modeled(t, cfg_.modeled,
                 !cfg_.job           ? CommunicatorFate::NoJob
                 : !s_.whole()       ? CommunicatorFate::NotFormedAgain
                 : reform.reformed   ? CommunicatorFate::Reformed
                                     : CommunicatorFate::Modeled);
  if (cfg_.job) form_tenant_job_again(rec);
  rearm(t);
  add_alternative(t, reform.alternative);
}

void FailoverManager::confirm_firmware(FailoverRecord& rec, bool reconciled, const fabric::FirmwareReport& fw) {
  const Detection& det = current_.det;
  if (fw.active_generation != board_.active_generation())
    rec.problems.push_back(fmt::format("the firmware reports generation {}, the controller {}", fw.active_generation,
                                       board_.active_generation()));
  const FirmwareCheck check{fw, firmware_failovers_, det.xpu, current_.spare, rec.fast_path, reconciled};
  bool other_died = (s_.pending && s_.pending->xpu == fw.last_failed) || contains(s_.failed, fw.last_failed);
  if (committed_other_backup(check) && !other_died)
    if (auto d = failed_xpu_now(); d && d->xpu == fw.last_failed) other_died = true;
  check_firmware_report(check, other_died, rec.problems, rec.timeline.notes);
  firmware_failovers_ = fw.failovers;
  generation_ = fw.active_generation;
}

void FailoverManager::restore_state(FailoverRecord& rec) {
  RestoreInputs in;
  in.failed = current_.det.xpu;
  in.spare = current_.spare;
  in.sources = restore_sources(s_.map, s_.placement.xpu_of_position, in.spare, s_.lanes, board_.links());
  // Its time is charged at the fabric's rate, not the host's memcpy.
  in.paged = copies_->page_back(in.failed);
  in.state_bytes = cfg_.state_bytes_per_xpu;
  in.projected_lane_gbps = cfg_.projected_lane_gbps;
  in.clock_mhz = cfg_.shape_clock_mhz;
  // With the tenant's job on the emulator, a scaled-down part goes over the RTL links and its
  // payload efficiency (what the link layer leaves of the lanes' rate) is measured.
  if (cfg_.job && board_.is_emulator() && in.sources.circuits && s_.whole()) {
    in.rtl = restore_over_rtl(watch_, s_, in.sources.xpus, in.spare, cfg_.job->restore_rtl_bytes, cfg_.job->first_timeout_ns,
                              cfg_.poll_ns);
    in.rtl_bytes = cfg_.job->restore_rtl_bytes;
    in.rtl_timeout_ns = cfg_.job->first_timeout_ns;
  }
  append_restore(rec.timeline, in, rec.problems);
  // The spare now holds the state; its copy on a peer is refreshed when the tenant resumes.
}

// The communicator: the ranks' own re-form with a real library, measured, where the host has
// them (else the scenario's constant stays).
ReformResult FailoverManager::reform_ranks(FailoverRecord& rec) {
  if (!s_.whole()) {
    rec.timeline.notes.push_back("the ranks' communicator is not formed again yet: another XPU of the ring has failed");
    return {};
  }
  ReformRequest req;
  req.ring = protocol::ring_xpus(s_.placement);
  req.failed = current_.det.xpu;
  req.spare = current_.spare;
  req.config = &*cfg_.comm;
  if (!compared_restart_) req.compare = cfg_.compare_restart;
  ReformResult r = reform_communicator(*ranks_, req, rec.timeline, rec.problems);
  if (r.compared) compared_restart_ = true;
  return r;
}

// The job's communicator formed again with the spare; the path ends at its first verified
// collective on the new ring.
void FailoverManager::form_tenant_job_again(FailoverRecord& rec) {
  report::Timeline& t = rec.timeline;
  add_collective_abort(t, watch_.log());  // the collective in flight fails on its own, beside the failover
  if (!s_.whole()) {
    t.notes.push_back("the job is not formed again yet: another XPU of its ring has failed");
    return;
  }
  TenantJobWait w = form_job_and_wait();
  const auto ring = protocol::ring_xpus(s_.placement);
  const uint32_t verified = w.verified ? board_.job_status().verified : 0;
  report_first_collective(t, w, ring, cfg_.job->spec, cfg_.job->first_timeout_ns, verified, rec.problems);
}

// Resume: traffic flows over the new circuits; re-arm the next backup.
void FailoverManager::rearm(report::Timeline& t) {
  const double rearm0 = static_cast<double>(board_.clock().now_ns());
  arm_next_backup();
  const double rearm1 = static_cast<double>(board_.clock().now_ns());
  add_rearm(t, rearm1 - rearm0, armed_xpu_, armed_spare_);
}

TenantJobWait FailoverManager::form_job_and_wait() {
  TenantJobWait w = form_tenant_job(watch_, s_, *cfg_.job, cfg_.poll_ns);
  job_formed_ns_ = w.formed_ns;
  return w;
}

std::vector<std::string> FailoverManager::check_job() {
  if (!cfg_.job || !board_.is_emulator()) return {};
  return check_tenant_job(watch_, s_, *cfg_.job, job_formed_ns_, cfg_.poll_ns);
}

bool FailoverManager::active_map_is(const protocol::FabricMap& m) {
  return board_.active_map(cfg_.shape.mesh_ports) == m.port_target;
}

std::vector<std::string> FailoverManager::check_fabric() {
  std::vector<std::string> p = check_circuits(board_, s_, generation_, cfg_.shape.mesh_ports);
  if (board_.is_emulator()) {
    uint32_t errors = board_.scoreboard_errors();
    if (errors) p.push_back(fmt::format("{} words lost, duplicated or corrupted on living XPUs' links", errors));
    if (board_.messages_delivered() <= messages_at_bring_up_) p.push_back("no traffic delivered since the bring-up");
    for (auto& line : check_job()) p.push_back(std::move(line));
  }
  return p;
}

}  // namespace mxtb::host::failover
